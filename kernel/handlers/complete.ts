// complete_request and inspect_request: the TypeScript language service (types, signatures, docs)
// merged with live values.
import type { Kernel } from "../kernel.ts";
import type { Message } from "../wire/message.ts";
import { liveCompletions, liveInspect } from "../language/live.ts";
import { languageService } from "../language/client.ts";

/** Code longer than this is completed and inspected from live values only: the language service
 *  would take seconds to check it, and every later request would wait behind it. */
export const LS_MAX_CODE = 100_000;

/** cursor_pos as a position in code: a client may send anything (1e308, -1, "x", null). */
export function cursorIn(code: string, pos: unknown): number {
  const n = pos == null ? code.length : Number(pos);
  if (!Number.isFinite(n)) return n > 0 ? code.length : 0;
  return Math.min(code.length, Math.max(0, Math.trunc(n)));
}

export async function completeRequest(k: Kernel, msg: Message): Promise<void> {
  const code = String(msg.content?.code ?? "");
  const cursor = cursorIn(code, msg.content?.cursor_pos);
  const live = liveCompletions(code, cursor);
  const ts = code.length <= LS_MAX_CODE ? await languageService(k).complete(code, cursor) : null;
  const seen = new Set<string>();
  const matches: string[] = [];
  const types: { start: number; end: number; text: string; type: string }[] = [];
  for (const e of ts?.entries ?? []) {
    if (seen.has(e.name) || !e.name.startsWith(code.slice(live.start, cursor))) continue;
    seen.add(e.name);
    matches.push(e.name);
    types.push({ start: live.start, end: live.end, text: e.name, type: e.kind });
  }
  for (const m of live.matches) {
    if (seen.has(m)) continue;
    seen.add(m);
    matches.push(m);
    types.push({ start: live.start, end: live.end, text: m, type: "value" });
  }
  k.reply(msg, "complete_reply", {
    status: "ok",
    matches,
    cursor_start: live.start,
    cursor_end: live.end,
    metadata: { _jupyter_types_experimental: types },
  });
}

export async function inspectRequest(k: Kernel, msg: Message): Promise<void> {
  const code = String(msg.content?.code ?? "");
  const cursor = cursorIn(code, msg.content?.cursor_pos);
  const text = await inspectText(k, code, cursor);
  k.reply(msg, "inspect_reply", text == null ? { status: "ok", found: false, data: {}, metadata: {} } : { status: "ok", found: true, data: { "text/plain": text }, metadata: {} });
}

/** Type signature and docs from TypeScript, then the live value; null when nothing is known. */
export async function inspectText(k: Kernel, code: string, cursor: number): Promise<string | null> {
  const ts = code.length <= LS_MAX_CODE ? await languageService(k).inspect(code, cursor) : null;
  const live = liveInspect(code, cursor);
  const parts: string[] = [];
  if (ts?.signature) parts.push(ts.signature);
  if (ts?.docs) parts.push(ts.docs);
  if (live) parts.push((ts ? "Value: " : "") + live.text);
  return parts.length ? parts.join("\n\n") : null;
}
