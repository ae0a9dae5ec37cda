// Golden tests: every op against real PyTorch. The fixtures (inputs, results, reprs, error texts)
// come from test/fixtures/gen_ops.py (torch 1.13, CPU); OPS below mirrors its run_op table.
// A failing case here is a deviation of GradLab from PyTorch: fix the runtime, not the fixture.

import { readFileSync } from "node:fs";
import { describe, it, expect } from "vitest";
import * as torch from "../src/index.ts";
import { OP_TABLE } from "../src/api/install.ts";
import type { Tensor } from "../src/index.ts";

type Raw = number | boolean | string | Raw[];
interface Gen {
  shape: number[];
  a: number;
  b: number;
  m: number;
  shift: number;
  div: number;
}
interface InputSpec {
  data?: Raw;
  gen?: Gen;
  dtype: "float32" | "int32" | "bool";
  tf?: Array<[string, ...unknown[]]>;
}
interface OutSpec {
  shape: number[];
  dtype: string;
  data: Raw;
}
interface Case {
  name: string;
  group: string;
  op: string;
  inputs: InputSpec[];
  kw: Record<string, any>;
  outs: OutSpec[];
  version?: number;
}
interface ErrorCase {
  name: string;
  op: string;
  inputs: InputSpec[];
  kw: Record<string, any>;
  error: string;
  message: string;
}
interface ReprCase {
  name: string;
  data: Raw;
  shape: number[];
  dtype: "float32" | "int32" | "bool";
  requires_grad: boolean;
  repr: string;
}

const fixtures = JSON.parse(readFileSync(new URL("./fixtures/ops.json", import.meta.url), "utf8")) as {
  torch: string;
  cases: Case[];
  errors: ErrorCase[];
  reprs: ReprCase[];
};

const RTOL = 1e-4;
const ATOL = 1e-5;

// ---------------------------------------------------------------- inputs

function decode(v: Raw): any {
  if (Array.isArray(v)) return v.map(decode);
  if (v === "nan") return NaN;
  if (v === "inf") return Infinity;
  if (v === "-inf") return -Infinity;
  return v;
}

function nest(flat: unknown[], shape: number[]): unknown {
  if (shape.length === 0) return flat[0];
  if (shape.length === 1) return flat.slice();
  const step = shape[0] ? flat.length / shape[0] : 0;
  return Array.from({ length: shape[0] }, (_, i) => nest(flat.slice(i * step, (i + 1) * step), shape.slice(1)));
}

function genData(g: Gen): unknown {
  const n = g.shape.reduce((a, b) => a * b, 1);
  const flat = Array.from({ length: n }, (_, i) => (((i * g.a + g.b) % g.m) - g.shift) / g.div);
  return nest(flat, g.shape);
}

function applyTf(x: Tensor, tf: Array<[string, ...any[]]> | undefined): Tensor {
  for (const [m, ...args] of tf ?? []) {
    switch (m) {
      case "t":
        x = x.t();
        break;
      case "permute":
        x = x.permute(args[0]);
        break;
      case "getitem":
        x = x.getitem(args[0]);
        break;
      case "expand":
        x = x.expand(args[0]);
        break;
      case "view":
        x = x.view(args[0]);
        break;
      case "reshape":
        x = x.reshape(args[0]);
        break;
      case "transpose":
        x = x.transpose(args[0], args[1]);
        break;
      case "select":
        x = x.select(args[0], args[1]);
        break;
      case "narrow":
        x = x.narrow(args[0], args[1], args[2]);
        break;
      case "unsqueeze":
        x = x.unsqueeze(args[0]);
        break;
      case "squeeze":
        x = args.length ? x.squeeze(args[0]) : x.squeeze();
        break;
      case "flatten":
        x = x.flatten(...args);
        break;
      case "contiguous":
        x = x.contiguous();
        break;
      default:
        throw new Error(`unknown transform ${m}`);
    }
  }
  return x;
}

function build(spec: InputSpec): Tensor {
  const data = spec.gen ? genData(spec.gen) : decode(spec.data as Raw);
  return applyTf(torch.tensor(data as any, { dtype: spec.dtype }), spec.tf);
}

// ---------------------------------------------------------------- op table (mirrors gen_ops.py)

type Result = Tensor | Tensor[] | { out: Tensor; version: number };

function runOp(op: string, xs: Tensor[], kw: Record<string, any>): Result {
  const x = xs[0];
  switch (op) {
    case "gelu":
      return torch.nn.functional.gelu(x, { approximate: kw.approximate ?? "none" });
    case "clamp":
      return x.clamp(kw.min ?? null, kw.max ?? null);
    case "where": {
      const a = "a" in kw ? kw.a : xs[1];
      const b = "b" in kw ? kw.b : "a" in kw ? xs[1] : xs[2];
      return torch.where(x, a, b);
    }
    case "sum":
    case "mean": {
      if ("dim" in kw) return x[op](kw.dim, { keepdim: kw.keepdim ?? false });
      if (kw.keepdim) return x[op](undefined, { keepdim: true });
      return x[op]();
    }
    case "argmax":
    case "argmin": {
      if ("dim" in kw) return x[op](kw.dim, { keepdim: kw.keepdim ?? false });
      if (kw.keepdim) return x[op](undefined, { keepdim: true });
      return x[op]();
    }
    case "max":
    case "min": {
      if ("dim" in kw) {
        const r = x[op](kw.dim, { keepdim: kw.keepdim ?? false });
        return [r.values, r.indices];
      }
      return x[op]();
    }
    case "var":
    case "std": {
      const opts: Record<string, unknown> = {};
      if ("unbiased" in kw) opts.unbiased = kw.unbiased;
      if ("correction" in kw) opts.correction = kw.correction;
      if ("dim" in kw) return x[op](kw.dim, { keepdim: kw.keepdim ?? false, ...opts });
      return x[op](opts);
    }
    case "softmax":
      return x.softmax(kw.dim);
    case "log_softmax":
      return x.log_softmax(kw.dim);
    case "layer_norm": {
      const w = kw.weight ? xs[1] : null;
      const b = kw.bias ? xs[kw.weight ? 2 : 1] : null;
      return torch.nn.functional.layer_norm(x, kw.normalized_shape, w, b, kw.eps ?? 1e-5);
    }
    case "matmul":
      return torch.matmul(xs[0], xs[1]);
    case "mm":
      return torch.mm(xs[0], xs[1]);
    case "bmm":
      return torch.bmm(xs[0], xs[1]);
    case "addmm":
      return torch.addmm(xs[0], xs[1], xs[2], { beta: kw.beta ?? 1, alpha: kw.alpha ?? 1 });
    case "identity":
      return x;
    case "contiguous":
      return x.contiguous();
    case "clone":
      return x.clone();
    case "arange": {
      const [a, b, c] = kw.args as number[];
      const opts = kw.dtype ? { dtype: kw.dtype } : undefined;
      if (kw.args.length === 1) return torch.arange(a, undefined, opts);
      if (kw.args.length === 2) return torch.arange(a, b, opts);
      return torch.arange(a, b, c, opts);
    }
    case "linspace":
      return torch.linspace(kw.args[0], kw.args[1], kw.args[2]);
    case "zeros":
      return kw.dtype ? torch.zeros(kw.shape, { dtype: kw.dtype }) : torch.zeros(kw.shape);
    case "ones":
      return kw.dtype ? torch.ones(kw.shape, { dtype: kw.dtype }) : torch.ones(kw.shape);
    case "full":
      return torch.full(kw.shape, kw.value, kw.dtype ? { dtype: kw.dtype } : undefined);
    case "zeros_like":
      return torch.zeros_like(x);
    case "ones_like":
      return torch.ones_like(x);
    case "full_like":
      return torch.full_like(x, kw.value);
    case "inplace": {
      const base = x;
      const v0 = base._version;
      const tgt = applyTf(base, kw.target);
      // {"$in": i} is input i; {"$view": tf} is a view of the base itself (aliasing the output).
      const args = ((kw.args ?? []) as any[]).map((a) => (a !== null && typeof a === "object" ? ("$in" in a ? xs[a.$in] : applyTf(base, a.$view)) : a));
      const m = kw.method as string;
      if (m === "setitem") base.setitem(args[0], args[1]);
      else if (m === "clamp_") tgt.clamp_(kw.min ?? null, kw.max ?? null);
      else if ("alpha" in kw) (tgt as any)[m](...args, { alpha: kw.alpha });
      else (tgt as any)[m](...args);
      return { out: base, version: base._version - v0 };
    }
  }
  // Every other op is called as the op table declares its method: the other operand (a tensor, or the
  // fixture's scalar), then alpha.
  if (!OP_TABLE.has(op)) throw new Error(`unknown op ${op}`);
  const other = xs.length > 1 ? [xs[1]] : "scalar" in kw ? [kw.scalar] : [];
  return "alpha" in kw ? (x as any)[op](...other, { alpha: kw.alpha }) : (x as any)[op](...other);
}

// ---------------------------------------------------------------- comparison

function flat(v: unknown): unknown[] {
  return Array.isArray(v) ? v.flatMap(flat) : [v];
}

function close(got: unknown, want: unknown, dtype: string): boolean {
  if (dtype !== "float32") return got === want;
  const g = got as number;
  const w = want as number;
  if (Number.isNaN(w)) return Number.isNaN(g);
  if (!Number.isFinite(w)) return g === w;
  return Math.abs(g - w) <= ATOL + RTOL * Math.abs(w);
}

/** One line per side ("shape=[2, 3] dtype=float32 values=ok"), so a failure reads as expected vs got. */
async function summary(out: Tensor, want: OutSpec): Promise<{ got: string; expected: string }> {
  const expected = `shape=[${want.shape.join(", ")}] dtype=${want.dtype} values=ok`;
  let values = "not compared (shape differs)";
  if (out.shape.length === want.shape.length && out.shape.every((s, i) => s === want.shape[i])) {
    const wantFlat = flat(decode(want.data));
    const gotFlat = flat(await out.tolist());
    const bad: string[] = [];
    for (let i = 0; i < wantFlat.length; i++) {
      if (!close(gotFlat[i], wantFlat[i], want.dtype)) bad.push(`[${i}] expected ${wantFlat[i]} got ${gotFlat[i]}`);
    }
    values = bad.length ? `${bad.length}/${wantFlat.length} differ: ${bad.slice(0, 6).join("; ")}` : "ok";
  }
  return { got: `shape=[${out.shape.join(", ")}] dtype=${out.dtype} values=${values}`, expected };
}

async function check(out: Tensor, want: OutSpec): Promise<void> {
  const { got, expected } = await summary(out, want);
  expect(got, `got ${got}`).toBe(expected);
}

// ---------------------------------------------------------------- suites

const groups = new Map<string, Case[]>();
for (const c of fixtures.cases) groups.set(c.group, [...(groups.get(c.group) ?? []), c]);

describe(`ops vs PyTorch ${fixtures.torch}`, () => {
  for (const [group, cases] of groups) {
    describe(group, () => {
      for (const c of cases) {
        it(c.name, async () => {
          const xs = c.inputs.map(build);
          const r = runOp(c.op, xs, c.kw);
          // Known difference: torch sums int32 in int64; GradLab has no int64 and keeps the integer
          // dtype it has, int32 (README "No int64"). The values must be exact.
          if ((c.op === "sum" || c.op === "prod") && xs[0].dtype === "int32" && r instanceof torch.Tensor) {
            expect(r.dtype).toBe("int32");
            await check(r, c.outs[0]);
            return;
          }
          if (Array.isArray(r)) {
            expect(r.length).toBe(c.outs.length);
            for (let i = 0; i < r.length; i++) await check(r[i], c.outs[i]);
          } else if ("version" in r && !(r instanceof torch.Tensor)) {
            await check(r.out, c.outs[0]);
            expect({ versionDelta: r.version }).toEqual({ versionDelta: c.version });
          } else {
            await check(r as Tensor, c.outs[0]);
          }
        });
      }
    });
  }
});

describe("errors vs PyTorch", () => {
  for (const c of fixtures.errors) {
    it(c.name, async () => {
      let thrown: unknown = null;
      try {
        const xs = c.inputs.map(build);
        const r = runOp(c.op, xs, c.kw);
        const outs = Array.isArray(r) ? r : r instanceof torch.Tensor ? [r] : [r.out];
        for (const t of outs) await t.tolist();
      } catch (e) {
        thrown = e;
      }
      expect(thrown, "expected the op to throw").toBeInstanceOf(Error);
      const e = thrown as Error;
      expect(`${e.name}: ${e.message}`).toBe(`${c.error}: ${c.message}`);
    });
  }
});

describe("repr vs PyTorch", () => {
  for (const c of fixtures.reprs) {
    it(c.name, async () => {
      let t = torch.tensor(decode(c.data), { dtype: c.dtype, requires_grad: c.requires_grad });
      if (t.shape.length !== c.shape.length || t.shape.some((s, i) => s !== c.shape[i])) t = t.reshape(c.shape);
      const r = await t.repr();
      expect(r, `got:\n${r}\nexpected:\n${c.repr}\n`).toBe(c.repr);
    });
  }
});
