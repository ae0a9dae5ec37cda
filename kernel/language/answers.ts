// What complete_request and inspect_request answer: the TypeScript language service (types,
// signatures, docs) merged with live values. Shared by the server kernel (handlers/complete.ts) and
// GradLab Lite's Worker, each with its own LanguageClient.
import { liveCompletions, liveInspect, namesInCode } from "./live.ts";
import type { LanguageClient } from "./service-client.ts";

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

export interface CompleteAnswer {
  status: "ok";
  matches: string[];
  cursor_start: number;
  cursor_end: number;
  metadata: { _jupyter_types_experimental: { start: number; end: number; text: string; type: string }[] };
}

/** complete_reply's content for a request's (unchecked) code and cursor_pos. */
export async function completeAnswer(service: LanguageClient, rawCode: unknown, rawCursor: unknown): Promise<CompleteAnswer> {
  const code = String(rawCode ?? "");
  const cursor = cursorIn(code, rawCursor);
  const live = liveCompletions(code, cursor);
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
  // Names that start with "_" (the runtime's internals beside PyTorch's `_saved_self`, `_version`) come
  // after the others unless the student typed the underscore, as IPython keeps them out of the way; they
  // stay listed, since the course reads `grad_fn._saved_*`.
  if (!code.slice(live.start, cursor).startsWith("_")) {
    const order = types.map((t, i) => ({ t, i, under: t.text.startsWith("_") })).sort((a, b) => Number(a.under) - Number(b.under) || a.i - b.i);
    return {
      status: "ok",
      matches: order.map((o) => matches[o.i]),
      cursor_start: live.start,
      cursor_end: live.end,
      metadata: { _jupyter_types_experimental: order.map((o) => o.t) },
    };
  }
  return { status: "ok", matches, cursor_start: live.start, cursor_end: live.end, metadata: { _jupyter_types_experimental: types } };
}

/** inspect_reply's text for a request's (unchecked) code and cursor_pos; null when nothing is known. */
export async function inspectAnswer(service: LanguageClient, rawCode: unknown, rawCursor: unknown): Promise<string | null> {
  const code = String(rawCode ?? "");
  const cursor = cursorIn(code, rawCursor);
  // on no name (e.g. just after `torch.matmul(` or between its arguments) describe the callee, as
  // IPython does
  const at = nameAt(code, cursor) ? cursor : (calleeEnd(code, cursor) ?? cursor);
  return inspectText(service, code, at);
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
export async function inspectText(service: LanguageClient, code: string, cursor: number): Promise<string | null> {
  const ts = code.length <= LS_MAX_CODE ? await service.inspect(code, cursor) : null;
  const live = liveInspect(code, cursor);
  const parts: string[] = [];
  if (ts?.signature) parts.push(ts.signature);
  if (ts?.docs) parts.push(ts.docs);
  if (live) parts.push((ts ? "Value: " : "") + live.text);
  return parts.length ? parts.join("\n\n") : null;
}
