// torch.nn and torch.optim against real PyTorch (test/fixtures/gen_nn.py, torch 1.13, CPU): training
// curves of a small MLP and a small transformer block from the same initial weights and data, hooks'
// arguments and order, loss and embedding values and gradients; plus the module API (names, state
// dicts, modes, zero_grad's memory, hooks, default initialisation) and memory categories.

import { readFileSync } from "node:fs";
import { describe, it, expect } from "vitest";
import * as torch from "../src/index.ts";
import * as optim from "../src/optim/index.ts";
import type { Tensor } from "../src/index.ts";

const nn = torch.nn;
const F = torch.nn.functional;
const fx = JSON.parse(readFileSync(new URL("./fixtures/nn.json", import.meta.url), "utf8"));

const flat = (v: unknown): number[] => (Array.isArray(v) ? v.flatMap(flat) : [v as number]);
async function values(t: Tensor): Promise<number[]> {
  return Array.from(await t.data());
}
function expectClose(actual: number[], expected: number[], rtol = 1e-4, atol = 1e-6): void {
  expect(actual.length).toBe(expected.length);
  actual.forEach((a, i) => {
    if (!(Math.abs(a - expected[i]) <= atol + rtol * Math.abs(expected[i]))) {
      throw new Error(`element ${i}: ${a} vs PyTorch ${expected[i]} (all: ${actual.slice(0, 8)} vs ${expected.slice(0, 8)})`);
    }
  });
}

/** The generator's Block, attribute for attribute. */
class Block extends nn.Module {
  d: number;
  emb: InstanceType<typeof nn.Embedding>;
  ln1: InstanceType<typeof nn.LayerNorm>;
  q: InstanceType<typeof nn.Linear>;
  k: InstanceType<typeof nn.Linear>;
  v: InstanceType<typeof nn.Linear>;
  o: InstanceType<typeof nn.Linear>;
  ln2: InstanceType<typeof nn.LayerNorm>;
  mlp: InstanceType<typeof nn.Sequential>;
  drop: InstanceType<typeof nn.Dropout>;
  head: InstanceType<typeof nn.Linear>;
  constructor(vocab: number, d: number, hidden: number) {
    super();
    this.d = d;
    this.emb = new nn.Embedding(vocab, d);
    this.ln1 = new nn.LayerNorm(d);
    this.q = new nn.Linear(d, d);
    this.k = new nn.Linear(d, d);
    this.v = new nn.Linear(d, d);
    this.o = new nn.Linear(d, d);
    this.ln2 = new nn.LayerNorm(d);
    this.mlp = new nn.Sequential(new nn.Linear(d, hidden), new nn.GELU(), new nn.Linear(hidden, d));
    this.drop = new nn.Dropout(0.0);
    this.head = new nn.Linear(d, vocab);
  }
  override forward(idx: Tensor): Tensor {
    const x = this.emb(idx);
    const h = this.ln1(x);
    const [q, k, v] = [this.q(h), this.k(h), this.v(h)];
    const att = this.drop(q.matmul(k.transpose(-2, -1)).div(Math.sqrt(this.d)).softmax(-1));
    const x2 = x.add(this.o(att.matmul(v)));
    const x3 = x2.add(this.drop(this.mlp(this.ln2(x2))));
    return this.head(x3);
  }
}

const mlp = () => new nn.Sequential(new nn.Linear(4, 16), new nn.ReLU(), new nn.Linear(16, 3));
const makeBlock = () => new Block(fx.training.block.dims.vocab, fx.training.block.dims.d, fx.training.block.dims.hidden);
const OPT: Record<string, new (p: any, o: any) => optim.Optimizer> = { SGD: optim.SGD, Adam: optim.Adam, AdamW: optim.AdamW };

/** 20 steps of zero_grad / loss / backward / step, each in a scope; the losses read at the end. */
async function train(_model: torch.nn.Module, opt: optim.Optimizer, lossFn: () => Tensor, steps = 20): Promise<number[]> {
  const losses: Tensor[] = [];
  for (let i = 0; i < steps; i++) {
    losses.push(
      torch.scope(() => {
        opt.zero_grad();
        const loss = lossFn();
        loss.backward();
        opt.step();
        return loss;
      }),
    );
  }
  const out: number[] = [];
  for (const l of losses) out.push((await l.item()) as number);
  return out;
}

describe("training matches PyTorch step by step", () => {
  const m = fx.training.mlp;
  for (const run of m.runs) {
    it(`MLP + MSE, ${run.opt} ${JSON.stringify(run.kw)}`, async () => {
      const model = mlp();
      model.load_state_dict(m.init);
      const x = torch.tensor(m.x);
      const y = torch.tensor(m.y);
      const opt = new OPT[run.opt](model.parameters(), run.kw);
      const losses = await train(model, opt, () => F.mse_loss(model(x), y));
      expectClose(losses, run.losses, 1e-4);
      for (const [k, v] of Object.entries(model.state_dict())) expectClose(await values(v), flat(run.final[k]), 1e-3, 1e-5);
    });
  }
  const b = fx.training.block;
  for (const run of b.runs) {
    it(`transformer block + CrossEntropy, ${run.opt} ${JSON.stringify(run.kw)}`, async () => {
      const model = makeBlock();
      model.load_state_dict(b.init);
      const idx = torch.tensor(b.idx, { dtype: "int32" });
      const tgt = torch.tensor(b.tgt, { dtype: "int32" });
      const opt = new OPT[run.opt](model.parameters(), run.kw);
      const V = b.dims.vocab;
      const losses = await train(model, opt, () => F.cross_entropy(model(idx).view(-1, V), tgt.view(-1)));
      expectClose(losses, run.losses, 1e-4);
      expect(losses[19]).toBeLessThan(losses[0] / 4);
    });
  }
});

describe("module structure as PyTorch names it", () => {
  it("named_parameters, state_dict keys, named_modules and repr", () => {
    const model = makeBlock();
    expect([...model.named_parameters()].map(([n]) => n)).toEqual(fx.training.block.named_parameters);
    expect(Object.keys(model.state_dict())).toEqual(fx.training.block.state_dict_keys);
    expect([...model.named_modules()].map(([n]) => n)).toEqual(fx.training.block.modules);
    expect(model.repr()).toBe(fx.training.block.repr);
    const m = mlp();
    expect([...m.named_parameters()].map(([n]) => n)).toEqual(fx.training.mlp.named_parameters);
    expect(String(m)).toBe(fx.training.mlp.repr);
    expect(m[0]).toBeInstanceOf(nn.Linear);
    expect(m.at(-1)).toBe(m[2]);
    expect(m.length).toBe(3);
    expect([...m].map((c) => c._get_name())).toEqual(["Linear", "ReLU", "Linear"]);
    expect([...m.children()].length).toBe(3);
    expect([...model.parameters()].every((p) => p instanceof nn.Parameter && p.is_leaf && p.requires_grad)).toBe(true);
  });

  it("register_parameter / register_buffer / add_module, buffers in state_dict, ModuleList", () => {
    class Net extends nn.Module {
      layers = new nn.ModuleList([new nn.Linear(2, 2), new nn.Linear(2, 2, { bias: false })]);
      scale = new nn.Parameter(torch.ones(2));
      constructor() {
        super();
        this.register_buffer("running", torch.zeros(2));
        this.register_buffer("tmp", torch.zeros(1), { persistent: false });
        this.register_parameter("unused", null);
      }
    }
    const net = new Net();
    expect([...net.named_parameters()].map(([n]) => n)).toEqual(["scale", "layers.0.weight", "layers.0.bias", "layers.1.weight"]);
    expect([...net.named_buffers()].map(([n]) => n)).toEqual(["running", "tmp"]);
    expect(Object.keys(net.state_dict())).toEqual(["scale", "running", "layers.0.weight", "layers.0.bias", "layers.1.weight"]);
    expect(net.layers.length).toBe(2);
    expect(() => net(torch.ones(2))).toThrow('Module [Net] is missing the required "forward" function');
    expect(String(net.layers)).toBe(
      "ModuleList(\n  (0): Linear(in_features=2, out_features=2, bias=True)\n  (1): Linear(in_features=2, out_features=2, bias=False)\n)",
    );
  });

  it("load_state_dict: PyTorch's errors for missing, unexpected and mis-sized keys; strict=false", async () => {
    const a = new nn.Linear(3, 2);
    const sd = a.state_dict();
    const b = new nn.Linear(3, 2);
    b.load_state_dict(sd);
    expect(await values(b.weight)).toEqual(await values(a.weight));
    expect(() => b.load_state_dict({ weight: sd.weight, extra: sd.bias })).toThrow(
      'Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "bias". \n\tUnexpected key(s) in state_dict: "extra". ',
    );
    expect(() => b.load_state_dict({ weight: torch.zeros(2, 2), bias: sd.bias })).toThrow(
      "Error(s) in loading state_dict for Linear:\n\tsize mismatch for weight: copying a param with shape torch.Size([2, 2]) from checkpoint, the shape in current model is torch.Size([2, 3]).",
    );
    expect(b.load_state_dict({ weight: sd.weight, extra: sd.bias }, { strict: false })).toEqual({ missing_keys: ["bias"], unexpected_keys: ["extra"] });
  });
});

describe("modes, zero_grad and memory", () => {
  it("train/eval reach every submodule; Dropout drops only in training", async () => {
    const seq = new nn.Sequential(new nn.Linear(4, 4), new nn.Dropout(0.5));
    expect(seq.training && seq[1].training).toBe(true);
    const x = torch.ones(2000);
    const d = seq[1];
    const kept = await values(d(x));
    const zeros = kept.filter((v) => v === 0).length;
    expect(zeros).toBeGreaterThan(800);
    expect(zeros).toBeLessThan(1200);
    expect(kept.every((v) => v === 0 || v === 2)).toBe(true);
    seq.eval();
    expect(seq.training || seq[0].training || seq[1].training).toBe(false);
    expect(await values(d(x))).toEqual(Array(2000).fill(1));
    seq.train();
    expect(seq[1].training).toBe(true);
  });

  it("zero_grad(set_to_none) frees the gradients' bytes; zeroing in place keeps them", async () => {
    const model = mlp();
    const x = torch.randn(8, 4);
    const grads = () => [...model.parameters()].map((p) => p.grad);
    torch.scope(() => model(x).sum().backward());
    const gradBytes = grads().reduce((s, g) => s + Math.ceil(g!.nbytes / 512) * 512, 0);
    expect(grads().every((g) => g && g.storage.category === "gradient")).toBe(true);
    const before = torch.cuda.memory_allocated();
    model.zero_grad({ set_to_none: false });
    expect(torch.cuda.memory_allocated()).toBe(before);
    expect((await values(grads()[0]!)).every((v) => v === 0)).toBe(true);
    model.zero_grad();
    expect(grads().every((g) => g === null)).toBe(true);
    expect(before - torch.cuda.memory_allocated()).toBe(gradBytes);
  });

  it("a module call frees its forward's temporaries (DESIGN.md: forward runs in a scope)", () => {
    class Wasteful extends nn.Module {
      override forward(x: Tensor): Tensor {
        const a = x.mul(2);
        const b = a.add(1);
        return b.exp().sum();
      }
    }
    const m = new Wasteful();
    const x = torch.randn(1024);
    torch.no_grad(() => {
      const before = torch.cuda.memory_allocated();
      const out = m(x);
      expect(torch.cuda.memory_allocated() - before).toBe(512);
      out.dispose();
    });
  });

  it("parameters, optimizer state and gradients are tagged with their memory category", () => {
    const model = mlp();
    const opt = new optim.Adam(model.parameters(), { lr: 0.01, amsgrad: true });
    const sgd = new optim.SGD([...model.parameters()].slice(0, 1), { lr: 0.1, momentum: 0.9 });
    torch.scope(() => {
      F.mse_loss(model(torch.randn(3, 4)), torch.randn(3, 3)).backward();
      opt.step();
      sgd.step();
    });
    for (const p of model.parameters()) {
      expect(p.storage.category).toBe("parameter");
      const st = opt.state.get(p)!;
      expect(st.step).toBe(1);
      for (const k of ["exp_avg", "exp_avg_sq", "max_exp_avg_sq"]) {
        expect(st[k].storage.category).toBe("optimizer_state");
        expect(st[k].disposed).toBe(false);
      }
    }
    expect(sgd.state.get((model[0] as InstanceType<typeof nn.Linear>).weight)!.momentum_buffer.storage.category).toBe("optimizer_state");
    const p = new nn.Parameter(torch.zeros(3), { requires_grad: false });
    expect(p.requires_grad).toBe(false);
    expect(p.storage.category).toBe("parameter");
  });

  it("optimizer state_dict / load_state_dict resume training exactly", async () => {
    const x = torch.tensor(fx.training.mlp.x);
    const y = torch.tensor(fx.training.mlp.y);
    const a = mlp();
    a.load_state_dict(fx.training.mlp.init);
    const optA = new optim.Adam(a.parameters(), { lr: 0.01 });
    await train(a, optA, () => F.mse_loss(a(x), y), 3);
    const b = mlp();
    b.load_state_dict(a.state_dict());
    const optB = new optim.Adam(b.parameters(), { lr: 0.5 });
    optB.load_state_dict(optA.state_dict());
    expect(optB.param_groups[0].lr).toBe(0.01);
    const la = await train(a, optA, () => F.mse_loss(a(x), y), 3);
    const lb = await train(b, optB, () => F.mse_loss(b(x), y), 3);
    expect(lb).toEqual(la);
    expectClose(la, fx.training.mlp.runs[2].losses.slice(3, 6), 1e-4);
  });
});

describe("hooks", () => {
  async function rec(v: unknown): Promise<unknown> {
    if (v === null || v === undefined) return null;
    if (v instanceof torch.Tensor) return v.tolist();
    if (Array.isArray(v)) return Promise.all(v.map(rec));
    throw new Error(`unexpected ${v}`);
  }
  const keep = (v: unknown): unknown => (v instanceof torch.Tensor ? v.detach() : Array.isArray(v) ? v.map(keep) : v);

  for (const c of fx.hooks) {
    it(`forward-pre, forward and full backward hooks: order and arguments (x.requires_grad=${c.x_requires_grad})`, async () => {
      const net = new nn.Sequential(new nn.Linear(3, 4), new nn.ReLU(), new nn.Linear(4, 2));
      net.load_state_dict(c.init);
      const x = torch.tensor(c.x, { requires_grad: c.x_requires_grad });
      const events: unknown[][] = [];
      const names = new Map([...net.named_modules()].map(([n, m]) => [m, n || "net"]));
      for (const m of net.modules()) {
        m.register_forward_pre_hook((mod, inp) => void events.push(["forward_pre", names.get(mod), keep(inp)]));
        m.register_forward_hook((mod, inp, o) => void events.push(["forward", names.get(mod), keep(inp), keep(o)]));
        m.register_full_backward_hook((mod, gi, go) => void events.push(["backward", names.get(mod), keep(gi), keep(go)]));
      }
      torch.scope(() => net(x).mul(torch.tensor(c.w)).sum().backward());
      expect(events.map((e) => `${e[0]} ${e[1]}`)).toEqual(c.events.map((e: unknown[]) => `${e[0]} ${e[1]}`));
      for (let i = 0; i < events.length; i++) {
        const [mine, theirs] = [await rec(events[i].slice(2)), c.events[i].slice(2)];
        expect(JSON.stringify(mine, (_k, v) => (v === null ? "None" : v)).replace(/[\d.e-]+/g, "#")).toBe(
          JSON.stringify(theirs, (_k, v) => (v === null ? "None" : v)).replace(/[\d.e-]+/g, "#"),
        );
        expectClose(
          flat(mine).filter((v) => v !== null),
          flat(theirs).filter((v) => v !== null),
          1e-4,
          1e-6,
        );
      }
    });
  }

  it("backward pre-hooks run before backward hooks and may replace grad_output; handles remove hooks", async () => {
    const lin = new nn.Linear(3, 2);
    const x = torch.randn(4, 3, { requires_grad: true });
    const log: string[] = [];
    const h1 = lin.register_full_backward_pre_hook((_m, go) => {
      log.push("pre");
      return [go[0]!.mul(2)];
    });
    const h2 = lin.register_full_backward_hook((_m, gi, go) => void log.push(`hook ${gi[0]!.shape} ${go[0]!.shape}`));
    torch.scope(() => lin(x).sum().backward());
    expect(log).toEqual(["pre", "hook 4,3 4,2"]);
    expect(new Set(await values(lin.bias!.grad!))).toEqual(new Set([8]));
    h1.remove();
    h2.remove();
    lin.zero_grad();
    x.grad = null;
    torch.scope(() => lin(x).sum().backward());
    expect(log.length).toBe(2);
    expect(new Set(await values(lin.bias!.grad!))).toEqual(new Set([4]));
  });

  it("forward pre-hooks may replace the input and forward hooks the output", async () => {
    const relu = new nn.ReLU();
    relu.register_forward_pre_hook((_m, inp) => (inp[0] as Tensor).neg());
    const h = relu.register_forward_hook((_m, _i, out) => (out as Tensor).add(1));
    expect(await values(relu(torch.tensor([-2, 3])))).toEqual([3, 1]);
    h.remove();
    expect(await values(relu(torch.tensor([-2, 3])))).toEqual([2, 0]);
  });
});

describe("losses and embedding against PyTorch", () => {
  for (const c of fx.losses) {
    it(`${c.fn} ${c.reduction ?? ""}${c.padding_idx !== undefined ? ` padding_idx=${c.padding_idx}` : ""}`, async () => {
      if (c.fn === "embedding") {
        const w = torch.tensor(c.weight, { requires_grad: true });
        const e = F.embedding(torch.tensor(c.ids, { dtype: "int32" }), w, c.padding_idx);
        expect(e.grad_fn!.name()).toBe(c.grad_fn);
        e.mul(torch.tensor(c.g)).sum().backward();
        expectClose(await values(e), flat(c.value));
        expectClose(await values(w.grad!), flat(c.grad));
        return;
      }
      const x = torch.tensor(c.input, { requires_grad: true });
      const t = c.fn === "mse_loss" ? torch.tensor(c.target, { requires_grad: true }) : torch.tensor(c.target, { dtype: "int32" });
      const src = c.fn === "nll_loss" ? F.log_softmax(x, 1) : x;
      const loss = (F as any)[c.fn](src, t, { reduction: c.reduction });
      expect(loss.grad_fn.name()).toBe(c.grad_fn);
      (c.reduction === "none" ? loss.sum() : loss).backward();
      expectClose(await values(loss), flat(c.value));
      expectClose(await values(x.grad!), flat(c.grad));
      if (c.grad_target) expectClose(await values(t.grad!), flat(c.grad_target));
    });
  }

  it("index dtype errors in PyTorch's words", () => {
    expect(() => F.embedding(torch.tensor([0, 1]), torch.randn(3, 2))).toThrow(
      "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.FloatTensor instead (while checking arguments for embedding)",
    );
    expect(() => F.nll_loss(torch.randn(2, 3), torch.tensor([0, 1]))).toThrow("expected scalar type Long but found Float");
  });

  it("loss modules: CrossEntropyLoss with ignore_index, MSELoss", async () => {
    const logits = torch.tensor([
      [1, 2, 3],
      [1, 1, 1],
    ]);
    const ce = new nn.CrossEntropyLoss({ ignore_index: 0 });
    const v = (await ce(logits, torch.tensor([2, 0], { dtype: "int32" })).item()) as number;
    expect(v).toBeCloseTo(-Math.log(Math.exp(3) / (Math.exp(1) + Math.exp(2) + Math.exp(3))), 5);
    expect(await new nn.MSELoss({ reduction: "sum" })(torch.tensor([1, 2]), torch.tensor([0, 0])).item()).toBe(5);
  });
});

describe("default initialisation has PyTorch's distributions", () => {
  it("Linear: U(±1/√fan_in) for weight and bias; Embedding N(0,1); LayerNorm ones/zeros", async () => {
    torch.manual_seed(0);
    const lin = new nn.Linear(64, 128);
    const bound = 1 / Math.sqrt(64);
    const w = await values(lin.weight);
    expect(Math.max(...w.map(Math.abs))).toBeLessThanOrEqual(bound);
    expect(Math.max(...w)).toBeGreaterThan(0.95 * bound);
    expect(Math.min(...w)).toBeLessThan(-0.95 * bound);
    const mean = w.reduce((a, b) => a + b, 0) / w.length;
    const variance = w.reduce((a, b) => a + (b - mean) ** 2, 0) / w.length;
    expect(Math.abs(mean)).toBeLessThan(0.01);
    expect(variance).toBeCloseTo(bound ** 2 / 3, 3);
    const b = await values(lin.bias!);
    expect(Math.max(...b.map(Math.abs))).toBeLessThanOrEqual(bound);
    const e = await values(new nn.Embedding(100, 50).weight);
    const em = e.reduce((a, b) => a + b, 0) / e.length;
    const es = Math.sqrt(e.reduce((a, b) => a + (b - em) ** 2, 0) / e.length);
    expect(Math.abs(em)).toBeLessThan(0.05);
    expect(Math.abs(es - 1)).toBeLessThan(0.05);
    const ln = new nn.LayerNorm(5);
    expect(await values(ln.weight!)).toEqual([1, 1, 1, 1, 1]);
    expect(await values(ln.bias!)).toEqual([0, 0, 0, 0, 0]);
    const pad = new nn.Embedding(4, 3, { padding_idx: 1 });
    expect(await values(pad.weight.select(0, 1))).toEqual([0, 0, 0]);
    expect(nn.init._calculate_fan_in_and_fan_out(torch.empty(3, 4, 5))).toEqual([20, 15]);
    const xw = nn.init.xavier_uniform_(torch.empty(30, 20));
    expect(Math.max(...(await values(xw)).map(Math.abs))).toBeLessThanOrEqual(Math.sqrt(6 / 50));
  });
});
