/**
 * check.ts — the exercise checker the GradLab tutorials import.
 * 练习自动检查器：每个检查打印 ✓（通过）或 ✗（未通过，附提示）。
 *
 * In a notebook cell (this file sits next to the notebooks; solutions/ imports "../check.ts"):
 *
 *   import { check } from "./check.ts";
 *   await check.equal("loss value", loss, 6.5);            // numbers, arrays, strings, booleans or tensors
 *   check.memory("your peak", predicted, torch.cuda.max_memory_allocated());  // the answer, then the figure: bytes, printed in MiB
 *   await check.grad("w.grad", w, [1, 2, 3]);               // compares w.grad with the expected values
 *   check.raises("crash is gone", () => loss.backward());   // or check.no_error: see below
 *   check.ok("loop is flat", growth === 0, "hint...");      // any condition
 *
 * Every check prints one line (two with the hint) and returns nothing (in a browser, GradLab Lite, `memory`
 * prints "?" instead of ✗ where the browser's figure may be the one that is off: see `memory`); none throws, so a notebook with an unsolved
 * exercise still runs to the end (the failing line is the ✗). The last argument of each check is a
 * hint shown only on failure. Tensors are read with `await t.tolist()`, so `equal` and `grad` are async:
 * write `await` in front of them. For a question whose answer the ✗ line must not give away, pass
 * `{ reveal: false }` to `equal` or `memory`: the line then shows only the value that was checked. Numbers compare with a tolerance (`tol`, default 1e-4 relative+absolute;
 * for `memory`, exact bytes unless `tol_bytes` is given).
 *
 * This module is plain TypeScript with no GradLab import: it works on any object with `tolist()`.
 * It is part of the tutorials, not of GradLab's API (and not of PyTorch's).
 */

type Value = unknown;
interface HasToList {
  tolist(): Promise<unknown> | unknown;
}
const isTensorLike = (v: unknown): v is HasToList => typeof v === "object" && v !== null && typeof (v as HasToList).tolist === "function";

async function plain(v: Value): Promise<unknown> {
  return isTensorLike(v) ? await v.tolist() : v;
}

function close(a: unknown, b: unknown, tol: number): boolean {
  if (typeof a === "number" && typeof b === "number") {
    if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
    return Math.abs(a - b) <= tol * (1 + Math.abs(b));
  }
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => close(x, b[i], tol));
  return a === b;
}

function show(v: unknown): string {
  const s = JSON.stringify(v, (_k, x) => (typeof x === "number" && !Number.isInteger(x) ? Number(x.toPrecision(6)) : x));
  if (s === undefined) return String(v);
  return s.length > 120 ? `${s.slice(0, 117)}...` : s;
}

const MiB = (b: number) => (Math.abs(b) < 2 ** 20 ? `${b} B` : `${(b / 2 ** 20).toFixed(2)} MiB`);

function report(name: string, pass: boolean, detail: string, hint?: string): void {
  if (pass) console.log(`✓ ${name}`);
  else console.log(`✗ ${name}: ${detail}${hint ? `\n  hint · 提示: ${hint}` : ""}`);
}

/**
 * Whether memory figures here are PyTorch's: GradLab reclaims tensors no variable names before every
 * figure where the platform lets it (Node). In a browser (GradLab Lite) a tensor the cell transform
 * cannot follow stays counted until the browser's collector runs, so a figure may be larger than
 * PyTorch's (see `memory`).
 */
function exactMemory(): boolean {
  const stats = (globalThis as { torch?: { cuda?: { memory_stats?: () => Record<string, number> } } }).torch?.cuda?.memory_stats?.();
  return stats?.["reclaim.synchronous"] !== 0;
}

export const check = {
  /** Values equal (numbers within `tol`); tensors are compared by their values. */
  async equal(name: string, actual: Value, expected: Value, hint?: string, opts: { tol?: number; reveal?: boolean } = {}): Promise<void> {
    const a = await plain(actual),
      e = await plain(expected);
    const detail = opts.reveal === false ? `got ${show(a)}, which is not it` : `got ${show(a)}, expected ${show(e)}`;
    return report(name, close(a, e, opts.tol ?? 1e-4), detail, hint);
  },

  /**
   * An answer in bytes (`actual_bytes`: a prediction, or a count the student's code made) equals the
   * expected bytes (± tol_bytes). `expected_bytes` is usually a figure the notebook measured, and
   * `figure` says what kind of figure it is, which matters only in a browser (GradLab Lite), where a
   * tensor the cell transform cannot follow stays counted until the browser collects it:
   * - "allocated" (the default): bytes allocated, a peak, or a difference of two such figures read in one
   *   synchronous stretch of code (no `await` between them). A browser's figure is then at least PyTorch's
   *   (a tensor not yet collected only adds to it; finalisers run between tasks, never inside one), so an
   *   answer above it is wrong there too (✗), and one below it gets "?" (no verdict);
   * - "freed": bytes freed (autograd's releases): a storage that a tensor not yet collected also holds is
   *   not freed in the browser, so its figure is at most PyTorch's: an answer below it is wrong (✗), one
   *   above gets "?";
   * - "exact": the figure does not depend on what was collected: a count from shapes, a constant, or a
   *   figure read in one synchronous stretch in which every tensor made is disposed, named, saved by the
   *   graph, or freed by autograd or by the cell transform (notebooks 00, 06 and 09; the Lite tier checks
   *   that the browser prints the server's figure there).
   */
  memory(
    name: string,
    actual_bytes: number | null | undefined,
    expected_bytes: number,
    hint?: string,
    opts: { tol_bytes?: number; reveal?: boolean; figure?: "allocated" | "freed" | "exact" } = {},
  ): void {
    const tol = opts.tol_bytes ?? 0;
    const answered = typeof actual_bytes === "number";
    const ok = answered && Math.abs(actual_bytes - expected_bytes) <= tol;
    const got = answered ? MiB(actual_bytes) : String(actual_bytes);
    // In a browser an answer that equals the figure is right (PyTorch's figure, unless the browser still
    // counted a tensor the student also counted: no answer the course's hints lead to). One that differs on
    // the side where the browser's figure may be off may be right too: no ✗ then.
    const figure = opts.figure ?? "allocated";
    const maybeRight = answered && figure !== "exact" && (figure === "allocated" ? actual_bytes < expected_bytes - tol : actual_bytes > expected_bytes + tol);
    if (!ok && maybeRight && !exactMemory()) {
      const count = opts.reveal === false ? "not this browser's count" : `expected ${MiB(expected_bytes)} by this browser's count`;
      console.log(
        `? ${name}: got ${got}, ${count}, which may ${figure === "allocated" ? "still include tensors PyTorch has freed" : "miss bytes PyTorch has freed"}: no verdict here (run the notebook on a GradLab server for one)${hint ? `\n  hint · 提示: ${hint}` : ""}`,
      );
      return;
    }
    report(name, ok, opts.reveal === false ? `got ${got}, which is not it` : `got ${got}, expected ${MiB(expected_bytes)}`, hint);
  },

  /** The leaf's `.grad` has the expected values (`null` expects no gradient). */
  async grad(name: string, leaf: { grad: Value } | null | undefined, expected: Value, hint?: string, opts: { tol?: number } = {}): Promise<void> {
    const g = leaf?.grad ?? null;
    const a = g === null ? null : await plain(g),
      e = await plain(expected);
    return report(name, close(a, e, opts.tol ?? 1e-4), `.grad is ${show(a)}, expected ${show(e)}`, hint);
  },

  /** `fn` runs without throwing (an error is reported, not rethrown). */
  no_error(name: string, fn: () => unknown, hint?: string): void {
    try {
      fn();
      report(name, true, "");
    } catch (e) {
      report(name, false, `it raised ${(e as Error).name}: ${String((e as Error).message).split("\n")[0]}`, hint);
    }
  },

  /** `fn` throws, and its message matches `pattern` when given. */
  raises(name: string, fn: () => unknown, pattern?: RegExp, hint?: string): void {
    try {
      fn();
    } catch (e) {
      const msg = String((e as Error).message);
      report(name, !pattern || pattern.test(msg), `raised, but the message was: ${msg.split("\n")[0]}`, hint);
      return;
    }
    report(name, false, "no error was raised", hint);
  },

  /** Any condition. */
  ok(name: string, condition: boolean, hint?: string, detail = "the condition is false"): void {
    report(name, condition, detail, hint);
  },
};
