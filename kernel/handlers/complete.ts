// complete_request and inspect_request: the TypeScript language service (types, signatures, docs)
// merged with live values.
import type { HandlerContext, Request } from "./context.ts";
import { liveCompletions, liveInspect, namesInCode } from "../language/live.ts";
import { languageService } from "../language/client.ts";

/** Code longer than this is completed and inspected from live values only: the language service
 *  would take seconds to check it, and every later request would wait behind it. */
const LS_MAX_CODE = 100_000;
/** How long a completion waits for a language service that is still loading (the first Tab after a
 *  kernel starts, longer on a busy machine) before it answers from live values and the names the code
 *  spells; the service keeps loading for the next Tab. */
const LS_FIRST_WAIT_MS = Number(process.env.GRADLAB_LS_FIRST_WAIT_MS ?? 300);

/** cursor_pos as a position in code: a client may send anything (1e308, -1, "x", null). */
function cursorIn(code: string, pos: unknown): number {
  const n = pos == null ? code.length : Number(pos);
  if (!Number.isFinite(n)) return n > 0 ? code.length : 0;
  return Math.min(code.length, Math.max(0, Math.trunc(n)));
}

export async function completeRequest(k: HandlerContext, msg: Request<"complete_request">): Promise<void> {
  const code = String(msg.content?.code ?? "");
  const cursor = cursorIn(code, msg.content?.cursor_pos);
  const live = liveCompletions(code, cursor);
  const service = languageService();
  const fits = code.length <= LS_MAX_CODE;
  let ready = fits && (service.loaded || (await service.whenLoaded(LS_FIRST_WAIT_MS)));
  const spelled = ready ? [] : namesInCode(code, cursor);
  // Nothing to answer with meanwhile (a member after a dot that no live value has, as in
  // `greeting.toUpp` before the cell ran): an empty reply would be wrong, so wait for the service.
  if (!ready && fits && live.matches.length === 0 && spelled.length === 0) ready = true;
  const ts = ready ? await service.complete(code, cursor) : null;
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
  // without the service (still loading): the names the cell itself spells, which it would have offered
  for (const m of spelled) {
    if (seen.has(m)) continue;
    seen.add(m);
    matches.push(m);
    types.push({ start: live.start, end: live.end, text: m, type: "text" });
  }
  k.reply(msg, "complete_reply", {
    status: "ok",
    matches,
    cursor_start: live.start,
    cursor_end: live.end,
    metadata: { _jupyter_types_experimental: types },
  });
}

export async function inspectRequest(k: HandlerContext, msg: Request<"inspect_request">): Promise<void> {
  const code = String(msg.content?.code ?? "");
  const cursor = cursorIn(code, msg.content?.cursor_pos);
  // on no name (e.g. just after `torch.matmul(` or between its arguments) describe the callee, as
  // IPython does
  const at = nameAt(code, cursor) ? cursor : (calleeEnd(code, cursor) ?? cursor);
  const text = await inspectText(code, at);
  k.reply(
    msg,
    "inspect_reply",
    text == null ? { status: "ok", found: false, data: {}, metadata: {} } : { status: "ok", found: true, data: { "text/plain": text }, metadata: {} },
  );
}

/** The identifier chain touching the cursor ("" when none). */
function nameAt(code: string, cursor: number): string {
  return (/[\w$.]*$/.exec(code.slice(Math.max(0, cursor - 200), cursor))?.[0] ?? "") + (/^[\w$]*/.exec(code.slice(cursor, cursor + 200))?.[0] ?? "");
}

/** End of the callee of the innermost call whose parentheses hold the cursor (`f` in `f(a, |`), or
 *  null. Looks back at most 10,000 characters; strings and comments are not parsed. */
function calleeEnd(code: string, cursor: number): number | null {
  let depth = 0;
  for (let i = cursor - 1; i >= 0 && i >= cursor - 10_000; i--) {
    const c = code[i];
    if (c === ")" || c === "]" || c === "}") depth++;
    else if (c === "[" || c === "{") {
      if (depth === 0) return null;
      depth--;
    } else if (c === "(") {
      if (depth > 0) {
        depth--;
        continue;
      }
      let end = i;
      while (end > 0 && /\s/.test(code[end - 1])) end--;
      return end > 0 && /[\w$]/.test(code[end - 1]) ? end : null;
    }
  }
  return null;
}

/** Type signature and docs from TypeScript, then the live value; null when nothing is known. */
export async function inspectText(code: string, cursor: number): Promise<string | null> {
  const ts = code.length <= LS_MAX_CODE ? await languageService().inspect(code, cursor) : null;
  const live = liveInspect(code, cursor);
  const parts: string[] = [];
  if (ts?.signature) parts.push(ts.signature);
  if (ts?.docs) parts.push(ts.docs);
  if (live) parts.push((ts ? "Value: " : "") + live.text);
  return parts.length ? parts.join("\n\n") : null;
}
