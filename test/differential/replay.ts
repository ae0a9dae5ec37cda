// Replays one program of test/fixtures/diff.json (made by test/fixtures/gen_diff.py in torch 1.13)
// against GradLab: each statement's TypeScript text runs as written, then errors, memory_allocated
// after every statement, and at the end every live variable (shape, dtype, values, requires_grad,
// is_leaf, grad_fn name and next_functions, _version, and .grad of leaves) are compared with torch's.
// Returns the mismatches, one line each, naming the statement or variable.
import * as torch from "../../src/index.ts";
import { currentDevice } from "../../src/memory/devices.ts";

/**
 * memory_allocated as torch.cuda reports it. torch.cuda's figure first reclaims handles user code can
 * no longer reach (a full GC, milliseconds); the allocator's raw figure is the same whenever nothing
 * is waiting for collection, so the GC runs only when the raw figure is not the one expected.
 */
const raw = () => currentDevice().allocator.allocated.all.current;
function allocated(expected: number): number {
  const r = raw();
  return r === expected ? r : torch.cuda.memory_allocated();
}

type Raw = number | boolean | string | null | Raw[];
interface Statement {
  py: string;
  ts: string;
  error: string | null;
  memory: number;
}
interface NodeInfo {
  name: string;
  /** null: compare the name only (the second-order tier's first-order gradients). */
  next: Array<[string | null, number]> | null;
}
interface Final {
  shape: number[];
  dtype: string;
  requires_grad: boolean;
  is_leaf: boolean;
  grad_fn: NodeInfo | null;
  graph: string[];
  /** null: not compared (the second-order tier's first-order gradients). */
  version: number | null;
  data: Raw;
  grad?: Raw | null;
}
export interface Program {
  id: number;
  /** The second-order tier's: which ops, and whether it is one op's Hessian-vector product. */
  ops?: string[];
  single?: boolean;
  issue?: number;
  statements: Statement[];
  final: Record<string, Final>;
  python: string;
  typescript: string;
  /** Bytes torch still holds once every variable is deleted (a reference cycle an in-place write made:
   *  gen_diff.py's leaked_bytes); absent when nothing is. */
  leaked?: number;
}

const RTOL = 1e-4;
// layer_norm scales rounding errors by rstd (up to 1/sqrt(eps) = 316): near-zero outputs differ by ~1e-5.
const ATOL = 5e-5;

const decode = (v: Raw): unknown => (Array.isArray(v) ? v.map(decode) : v === "nan" ? NaN : v === "inf" ? Infinity : v === "-inf" ? -Infinity : v);
const flat = (v: unknown): unknown[] => (Array.isArray(v) ? v.flatMap(flat) : [v]);

function close(got: unknown, want: unknown, slack = 0): boolean {
  if (typeof want !== "number" || typeof got !== "number") return got === want;
  if (Number.isNaN(want)) return Number.isNaN(got);
  if (!Number.isFinite(want)) return got === want;
  return Math.abs(got - want) <= ATOL + RTOL * Math.abs(want) + slack;
}

/**
 * Compares values. `scaled` (the second-order tier): an element may also be off by 1e-5 of the tensor's
 * largest magnitude, the float32 rounding of a sum whose terms cancel (second derivatives of
 * layer_norm are such sums: torch's float32 result is itself 1e-4 away from float64 there).
 */
function sameValues(got: unknown, want: Raw, scaled = false): string | null {
  const g = flat(got);
  const w = flat(decode(want));
  if (g.length !== w.length) return `${g.length} values, torch ${w.length}`;
  const bad: string[] = [];
  const big = scaled ? Math.max(0, ...w.map((v) => (typeof v === "number" && Number.isFinite(v) ? Math.abs(v) : 0))) : 0;
  for (let i = 0; i < w.length; i++) if (!close(g[i], w[i], 1e-5 * big)) bad.push(`[${i}] ${String(g[i])} vs torch ${String(w[i])}`);
  return bad.length ? bad.slice(0, 3).join("; ") : null;
}

const nodeText = (n: NodeInfo | null) => (n ? (n.next === null ? n.name : `${n.name}(${n.next.map(([m, nr]) => `${m ?? "None"}:${nr}`).join(", ")})`) : "None");
function nodeOf(t: torch.Tensor): NodeInfo | null {
  const fn = t.grad_fn as unknown as { name(): string; next_functions: Array<[{ name(): string } | null, number]> } | null;
  if (!fn) return null;
  return { name: fn.name(), next: fn.next_functions.map(([m, nr]) => [m ? m.name() : null, nr] as [string | null, number]) };
}

type AnyNode = { name(): string; next_functions: Array<[AnyNode | null, number]> };
/** The graph under t's grad_fn, as gen_diff.py's graph() writes it. */
function graphOf(t: torch.Tensor, limit = 24): string[] {
  const out: string[] = [];
  const seen = new Set<AnyNode>();
  const visit = (n: AnyNode | null) => {
    if (!n || seen.has(n) || out.length >= limit) return;
    seen.add(n);
    out.push(`${n.name()}(${n.next_functions.map(([m, nr]) => `${m ? m.name() : "None"}:${nr}`).join(", ")})`);
    for (const [m] of n.next_functions) visit(m);
  };
  visit(t.grad_fn as unknown as AnyNode | null);
  return out;
}

const errText = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message.split("\n")[0]}` : String(e));

/**
 * Runs the program; returns its mismatches against torch. Everything it made is disposed afterwards.
 * A memory figure is only taken after a reclaim (a full GC) when the allocator's raw figure disagrees
 * with torch's; that reclaim may also free what earlier programs dropped, so a program with a memory
 * mismatch is run again with `settle`: everything earlier is reclaimed first, and that run decides.
 */
export async function replay(p: Program, opts: ReplayOptions = { memory: true }): Promise<string[]> {
  const first = await run(p, false, opts);
  return opts.memory && first.some((l) => /memory_allocated|^cleanup/.test(l)) ? run(p, true, opts) : first;
}

/**
 * memory: compare memory_allocated after each statement and after cleanup (the first-order tier does).
 * scaledTolerance: see sameValues (the second-order tier).
 */
export interface ReplayOptions {
  memory: boolean;
  scaledTolerance?: boolean;
}

async function run(p: Program, settle: boolean, opts: ReplayOptions): Promise<string[]> {
  const out: string[] = [];
  const env: Record<string, unknown> = {};
  for (const s of p.statements) {
    const m = /^(v\d+) = /.exec(s.ts);
    if (m) env[m[1]] = undefined;
  }
  // Memory is compared as what each statement changed (so one difference does not repeat in every
  // later statement). torch.cuda.memory_allocated() first reclaims whatever earlier programs dropped,
  // so nothing collected later shows up as a change in this program.
  const base = settle ? torch.cuda.memory_allocated() : raw();
  let prevGot = 0;
  let prevWant = 0;
  try {
    for (let i = 0; i < p.statements.length; i++) {
      const s = p.statements[i];
      // Sloppy-mode body: `with (env)` gives the statement the program's variables by name.
      const run = new Function("env", "torch", `with (env) { ${s.ts}; }`) as (env: unknown, t: typeof torch) => void;
      let err: string | null = null;
      try {
        run(env, torch);
      } catch (e) {
        err = errText(e);
      }
      if (err !== s.error) {
        out.push(`stmt ${i} \`${s.ts}\`: ${err === null ? "no error" : `raised ${err}`}, torch ${s.error === null ? "no error" : `raised ${s.error}`}`);
        if (s.error === null) return out; // the rest of the program depends on this statement
      }
      if (!opts.memory) continue;
      const got = allocated(base + prevGot + s.memory - prevWant) - base;
      if (got - prevGot !== s.memory - prevWant) {
        out.push(`stmt ${i} \`${s.ts}\`: memory_allocated changed by ${got - prevGot}, torch ${s.memory - prevWant}`);
      }
      prevGot = got;
      prevWant = s.memory;
    }
    // Final state of every variable torch still has.
    const names = Object.keys(p.final);
    const reads = await Promise.all(
      names.map(async (k) => {
        const t = env[k] as torch.Tensor | undefined;
        if (!(t instanceof torch.Tensor)) return null;
        const g = t.is_leaf && t.requires_grad ? t.grad : null;
        try {
          return { data: await t.tolist(), grad: g ? await g.tolist() : null, error: null as string | null };
        } catch (e) {
          return { data: null, grad: null, error: errText(e) };
        }
      }),
    );
    names.forEach((k, j) => {
      const want = p.final[k];
      const t = env[k] as torch.Tensor | undefined;
      if (!(t instanceof torch.Tensor)) {
        out.push(`final ${k}: missing in GradLab`);
        return;
      }
      const r = reads[j]!;
      if (r.error) {
        out.push(`final ${k}: reading it raised ${r.error}`);
        return;
      }
      if (t.shape.join() !== want.shape.join() || t.ndim !== want.shape.length) out.push(`final ${k}: shape [${t.shape}], torch [${want.shape}]`);
      else {
        const v = sameValues(r.data, want.data, opts.scaledTolerance);
        if (v) out.push(`final ${k}: values differ: ${v}`);
      }
      if (t.dtype !== want.dtype) out.push(`final ${k}: dtype ${t.dtype}, torch ${want.dtype}`);
      if (t.requires_grad !== want.requires_grad) out.push(`final ${k}: requires_grad ${t.requires_grad}, torch ${want.requires_grad}`);
      if (t.is_leaf !== want.is_leaf) out.push(`final ${k}: is_leaf ${t.is_leaf}, torch ${want.is_leaf}`);
      const got = nodeOf(t);
      if (got && want.grad_fn?.next === null) got.next = null;
      const n = nodeText(got);
      if (n !== nodeText(want.grad_fn)) out.push(`final ${k}: grad_fn ${n}, torch ${nodeText(want.grad_fn)}`);
      else if (want.graph.length || !want.grad_fn) {
        // Deeper in the graph (nodes of deleted variables and of composite ops), first difference only.
        const g = graphOf(t);
        const j = want.graph.findIndex((w, i) => g[i] !== w);
        if (j >= 0 || g.length !== want.graph.length) {
          const i = j >= 0 ? j : Math.min(g.length, want.graph.length);
          out.push(`final ${k}: graph node ${i} ${g[i] ?? "(none)"}, torch ${want.graph[i] ?? "(none)"}`);
        }
      }
      if (want.version !== null && t._version !== want.version) out.push(`final ${k}: _version ${t._version}, torch ${want.version}`);
      if ("grad" in want) {
        if ((want.grad === null) !== (r.grad === null))
          out.push(`final ${k}: grad ${r.grad === null ? "None" : "set"}, torch ${want.grad === null ? "None" : "set"}`);
        else if (want.grad !== null && want.grad !== undefined) {
          const v = sameValues(r.grad, want.grad, opts.scaledTolerance);
          if (v) out.push(`final ${k}: grad differs: ${v}`);
        }
      }
    });
  } finally {
    for (const v of Object.values(env).flat()) if (v instanceof torch.Tensor && !v.disposed) v.dispose();
  }
  if (!opts.memory) return out;
  const left = allocated(base) - base;
  const want = p.leaked ?? 0;
  if (left !== want) out.push(`cleanup: ${left} bytes still allocated after every variable was disposed, torch ${want}`);
  return out;
}
