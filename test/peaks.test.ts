// Issue 21: first forward, backward and optimizer-step peaks of every nn module and loss equal the
// figures derived from torch 1.13's own allocations for the same program (test/fixtures/gen_peaks.py:
// torch's CPU allocator events, replayed as 512-byte blocks, torch's CPU-only scratch dropped). Each
// figure is the peak above what was allocated when the phase began, and what the phase leaves.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";
import type { Tensor } from "../src/index.ts";

const nn = torch.nn;
const F = torch.nn.functional;
const fx = JSON.parse(readFileSync(new URL("./fixtures/peaks.json", import.meta.url), "utf8"));
const { B, D, H } = fx as { B: number; D: number; H: number };

type Figures = { peak: number; net: number };
/** opt "forward": the forward phase only (selective checkpointing: gen_peaks.py says why). */
type Program = [make: () => torch.nn.Module, inputs: () => Tensor[], loss: (m: any, ...a: Tensor[]) => Tensor, opt?: "sgd" | "adam" | "forward"];

const seq = (n: number, d: number) => torch.randn([n, d], { requires_grad: true });
/**
 * CPython frees an expression's intermediate as soon as the next call has consumed it (refcount), not
 * at the end of the statement: `m(x).mul(w).sum()` is run as the same chain here, each intermediate
 * (and a temporary argument) dropped once the next step returned; what autograd saved stays.
 */
function chain(first: Tensor, ...steps: Array<(t: Tensor) => Tensor>): Tensor {
  let cur = first;
  for (const step of steps) {
    const next = step(cur);
    if (next !== cur) cur.dispose();
    cur = next;
  }
  return cur;
}
/** y * arange(H), the arange a temporary of the call (as in Python). */
const mulAr = (y: Tensor) => {
  const a = torch.arange(0, H, 1, { dtype: "float32" });
  try {
    return y.mul(a);
  } finally {
    a.dispose();
  }
};
const sum = (y: Tensor) => y.sum();
const mul2 = (y: Tensor) => y.mul(2);

/**
 * test/checkpoint-labs.test.ts's DeepBlock: linear2(drop(gelu(linear1(x)))) + x, written as Python code
 * rebinds a variable (`h = self.act(h)`): a dropped intermediate is freed at the next reclamation, as
 * CPython frees it at its last reference, though forward runs in a scope (memory/lifetime.ts holds
 * records, not handles). This file is not a cell: written as nested calls (`linear2(act(linear1(x)))`),
 * forward would keep linear1's output until it returns, since V8's interpreter keeps a call's argument
 * in a register of the caller's frame. A cell's nested calls peak as torch's: the cell transform gives
 * such operands frames of their own (kernel/executor/temporaries.ts; test/pytorch-style-labs.test.ts).
 */
class DeepBlock extends nn.Module {
  linear1: torch.nn.Linear;
  act = new nn.GELU();
  drop = new nn.Dropout(0);
  linear2: torch.nn.Linear;
  constructor(dim: number) {
    super();
    this.linear1 = new nn.Linear(dim, dim);
    this.linear2 = new nn.Linear(dim, dim);
  }
  override forward(x: Tensor): Tensor {
    let h = this.linear1(x) as Tensor;
    h = this.act(h) as Tensor;
    h = this.drop(h) as Tensor;
    h = this.linear2(h) as Tensor;
    return h.add(x);
  }
}
const { checkpoint, create_selective_checkpoint_contexts } = torch.utils.checkpoint;
/** Blocks each under checkpoint(use_reentrant: false), or selective checkpointing keeping `keep`'s outputs. */
class Checkpointed extends nn.Module {
  blocks: torch.nn.ModuleList;
  constructor(
    layers: number,
    dim: number,
    readonly keep: string[] | null = null,
  ) {
    super();
    this.blocks = new nn.ModuleList(Array.from({ length: layers }, () => new DeepBlock(dim)));
  }
  override forward(x: Tensor): Tensor {
    const keep = this.keep;
    const context_fn = keep ? () => create_selective_checkpoint_contexts(keep) : undefined;
    let h = x;
    for (const b of this.blocks) h = checkpoint((t: Tensor) => b(t) as Tensor, h, { use_reentrant: false, context_fn });
    return h;
  }
}

const PROGRAMS: Record<string, Program> = {
  Linear: [() => new nn.Linear(D, H), () => [seq(B, D)], (m, x) => chain(m(x), sum)],
  "Linear(bias=False)": [() => new nn.Linear(D, H, { bias: false }), () => [seq(B, D)], (m, x) => chain(m(x), sum)],
  "Linear+Adam": [() => new nn.Linear(D, H), () => [seq(B, D)], (m, x) => chain(m(x), sum), "adam"],
  LayerNorm: [() => new nn.LayerNorm(H), () => [seq(B, H)], (m, x) => chain(m(x), mulAr, sum)],
  "LayerNorm(elementwise_affine=False)": [() => new nn.LayerNorm(H, { elementwise_affine: false }), () => [seq(B, H)], (m, x) => chain(m(x), mulAr, sum)],
  ReLU: [() => new nn.ReLU(), () => [seq(B, H)], (m, x) => chain(m(x), sum)],
  "ReLU(inplace=True)": [() => new nn.ReLU({ inplace: true }), () => [seq(B, H)], (m, x) => chain(x.mul(1), (h) => m(h), sum)],
  GELU: [() => new nn.GELU(), () => [seq(B, H)], (m, x) => chain(m(x), sum)],
  "GELU(approximate='tanh')": [() => new nn.GELU({ approximate: "tanh" }), () => [seq(B, H)], (m, x) => chain(m(x), sum)],
  Tanh: [() => new nn.Tanh(), () => [seq(B, H)], (m, x) => chain(m(x), sum)],
  Sigmoid: [() => new nn.Sigmoid(), () => [seq(B, H)], (m, x) => chain(m(x), sum)],
  Softmax: [() => new nn.Softmax(1), () => [seq(B, H)], (m, x) => chain(m(x), mulAr, sum)],
  Identity: [() => new nn.Identity(), () => [seq(B, H)], (m, x) => chain(m(x), mul2, sum)],
  "Dropout(p=0)": [() => new nn.Dropout(0), () => [seq(B, H)], (m, x) => chain(m(x), mul2, sum)],
  "Dropout(eval)": [() => new nn.Dropout(0.5).eval(), () => [seq(B, H)], (m, x) => chain(m(x), mul2, sum)],
  "Sequential(Linear, ReLU, Linear)": [
    () => new nn.Sequential(new nn.Linear(D, H), new nn.ReLU(), new nn.Linear(H, D)),
    () => [seq(B, D)],
    (m, x) => chain(m(x), sum),
  ],
  ModuleList: [() => new nn.ModuleList([new nn.Linear(D, D), new nn.Linear(D, D)]), () => [seq(B, D)], (m, x) => chain(m.at(0)(x), (h) => m.at(1)(h), sum)],
  Embedding: [
    () => new nn.Embedding(16, D),
    () => [
      torch.tensor(
        [
          [1, 2, 3, 1],
          [0, 5, 5, 9],
        ],
        { dtype: "int32" },
      ),
    ],
    (m, i) => chain(m(i), sum),
  ],
  MSELoss: [() => new nn.MSELoss(), () => [seq(B, D), torch.randn(B, D)], (m, x, y) => m(x, y)],
  "MSELoss(reduction='sum')": [() => new nn.MSELoss({ reduction: "sum" }), () => [seq(B, D), torch.randn(B, D)], (m, x, y) => m(x, y)],
  CrossEntropyLoss: [() => new nn.CrossEntropyLoss(), () => [seq(B, D), torch.tensor([1, 0, 31, 7], { dtype: "int32" })], (m, x, y) => m(x, y)],
  NLLLoss: [() => new nn.NLLLoss(), () => [seq(B, D), torch.tensor([1, 0, 31, 7], { dtype: "int32" })], (m, x, y) => chain(x.log_softmax(1), (lp) => m(lp, y))],
  "checkpoint(use_reentrant=False) x 3 DeepBlock": [() => new Checkpointed(3, D), () => [seq(B, D)], (m, x) => chain(m(x), sum)],
  "checkpoint(use_reentrant=False) x 1 DeepBlock": [() => new Checkpointed(1, D), () => [seq(B, D)], (m, x) => chain(m(x), sum)],
  "checkpoint(use_reentrant=False) x 4 DeepBlock (H wide)": [() => new Checkpointed(4, H), () => [seq(2 * B, H)], (m, x) => chain(m(x), sum)],
  "selective checkpoint(['addmm']) x 3 DeepBlock, forward": [() => new Checkpointed(3, D, ["addmm"]), () => [seq(B, D)], (m, x) => chain(m(x), sum), "forward"],
  "selective checkpoint(['gelu']) x 3 DeepBlock, forward": [() => new Checkpointed(3, D, ["gelu"]), () => [seq(B, D)], (m, x) => chain(m(x), sum), "forward"],
  "block: Linear-LayerNorm-GELU-Linear + MSE": [
    () => new nn.Sequential(new nn.Linear(D, H), new nn.LayerNorm(H), new nn.GELU(), new nn.Linear(H, D)),
    () => [seq(B, D), torch.randn(B, D)],
    (m, x, y) => chain(m(x), (o) => F.mse_loss(o, y)),
  ],
};

/** One phase's figures on the current device: the peak above the start, and the net change. */
function phase(fn: () => void): Figures {
  const start = torch.cuda.memory_allocated();
  torch.cuda.reset_peak_memory_stats();
  fn();
  return { peak: torch.cuda.max_memory_allocated() - start, net: torch.cuda.memory_allocated() - start };
}

function run([make, inputs, lossFn, opt]: Program): Record<string, Figures> {
  return torch.cuda.simulate({}, () => {
    const model = make();
    const args = inputs();
    const params = [...model.parameters()];
    const optimizer = params.length
      ? opt === "adam"
        ? new torch.optim.Adam(params, { lr: 0.01 })
        : new torch.optim.SGD(params, { lr: 0.1, momentum: 0.9 })
      : null;
    let loss: Tensor | null = null;
    const out: Record<string, Figures> = {};
    // As Python's `loss = loss_fn(model, *args)`: the statement's temporaries die with it.
    out.forward = phase(() => {
      loss = torch.scope(() => lossFn(model, ...args));
    });
    if (opt === "forward") return out;
    out.backward = phase(() => loss!.backward());
    if (optimizer) out.step = phase(() => optimizer.step());
    return out;
  });
}

describe("first forward, backward and step peaks equal torch 1.13's (every nn module and loss)", () => {
  it("covers every module and loss torch.nn exports", () => {
    const covered = new Set(Object.keys(PROGRAMS).flatMap((k) => k.match(/[A-Z][A-Za-z]+/g) ?? []));
    const modules = Object.keys(nn).filter((k) => /^[A-Z]/.test(k) && !["Module", "Parameter"].includes(k));
    expect(modules.filter((m) => !covered.has(m))).toEqual([]);
  });
  for (const [name, prog] of Object.entries(PROGRAMS)) {
    it(name, () => {
      const got = run(prog);
      expect(got, `GradLab ${JSON.stringify(got)}\n  torch ${JSON.stringify(fx.programs[name])}`).toEqual(fx.programs[name]);
    });
  }
});

describe("Sequential drops an intermediate once consumed, as Python's rebinding does", () => {
  it("a forward hook that keeps a module's output (detached, as hooks must here) still reads it", async () => {
    const kept: Tensor[] = [];
    const model = new nn.Sequential(new nn.Linear(4, 8), new nn.ReLU(), new nn.Linear(8, 2));
    model.at(0).register_forward_hook((_m, _i, out) => {
      kept.push((out as Tensor).detach());
    });
    const y = model(torch.ones(3, 4)) as Tensor;
    expect(y.shape).toEqual([3, 2]);
    expect(((await kept[0].tolist()) as number[][]).length).toBe(3);
  });

  it("without hooks the Linear output between modules is freed before the last Linear allocates", () => {
    torch.cuda.simulate({}, () => {
      const model = new nn.Sequential(new nn.Linear(256, 256), new nn.ReLU(), new nn.Linear(256, 256));
      const x = torch.randn(256, 256); // 256 KiB activations, no grad: nothing is saved
      const base = torch.cuda.memory_allocated();
      torch.cuda.reset_peak_memory_stats();
      torch.no_grad(() => model(x));
      // Linear 1's output and ReLU's, then ReLU's and Linear 2's: two activations at a time, never three.
      expect(torch.cuda.max_memory_allocated() - base).toBe(2 * 256 * 1024);
    });
  });
});
