// A cell's type warnings (`warning TS2322 (Cell [3], line 1:7): ...` on stderr): the language service
// checks the cell while it runs, and the warnings are published with the cell's output. Shared by the
// server kernel's execute_request and GradLab Lite's Worker, each with its own LanguageClient.
import { isPlainJs } from "../executor/transform.ts";
import type { LanguageClient, TsDiagnostic } from "./service-client.ts";

const TYPECHECK = process.env.GRADLAB_TYPECHECK !== "0";
/** How long a reply may wait for type diagnostics after its cell ended (default: not at all, so
 *  checking never delays a reply; diagnostics that come later are published when they come). */
const TYPECHECK_WAIT_MS = Number(process.env.GRADLAB_TYPECHECK_WAIT_MS ?? 0);

/** Type-checks a TypeScript cell while it runs. The first TypeScript cell only starts loading the
 *  checker. */
export function typeCheck(ls: LanguageClient, code: string): Promise<TsDiagnostic[] | null> | null {
  if (!TYPECHECK || isPlainJs(code)) return null;
  if (!ls.loaded) {
    ls.warm();
    return null;
  }
  return ls.diagnostics(code);
}

/** Publishes the cell's type warnings through `write` (the cell's stderr): before its reply when they
 *  are ready by then (or within TYPECHECK_WAIT_MS), otherwise when they come. */
export async function reportTypeErrors(write: (text: string) => void, pending: Promise<TsDiagnostic[] | null>, label: string): Promise<void> {
  const show = (diags: TsDiagnostic[] | null) => {
    if (!diags?.length) return;
    write(diags.map((d) => `\x1b[33mwarning\x1b[0m TS${d.code} (${label}, line ${d.line}:${d.col}): ${d.text}\n`).join(""));
  };
  let settled = false;
  const done = pending.then(
    (d) => {
      settled = true;
      return d;
    },
    () => null,
  );
  await Promise.resolve(); // a result already there settles now
  if (!settled && TYPECHECK_WAIT_MS > 0) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([done, new Promise<void>((r) => (timer = setTimeout(r, TYPECHECK_WAIT_MS)))]);
    clearTimeout(timer);
  }
  if (settled) show(await done);
  else void done.then(show);
}
