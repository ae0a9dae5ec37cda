// Issue 21, first-order items, against torch 1.13 (test/fixtures/gen_issue21.py writes issue21.json):
// `inplace` is honoured wherever it is accepted; every option of the functional API, the nn modules and
// the creation functions is either implemented or raises (enumerated, with a completeness check); dtype
// is validated at run time; oversized requests never poison the allocator; backward's and div's
// PyTorch spellings; inference_mode(false, fn).
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";
import type { Tensor } from "../src/index.ts";

const nn = torch.nn;
const F = torch.nn.functional;
const fx = JSON.parse(readFileSync(new URL("./fixtures/issue21.json", import.meta.url), "utf8"));

beforeAll(async () => {
  await torch.cuda.init();
});

const X = [
  [-1.5, 0.5, -0.25, 2.0],
  [0.75, -2.0, 1.25, -0.5],
];

/** type(node).__name__, as the fixtures record it. */
const nodeName = (n: { toString(): string } | null | undefined): string | null => (n ? (/^<(\w+) object/.exec(String(n))?.[1] ?? String(n)) : null);

/** Runs `fn` and returns what it threw as {type, message}, or null. */
function raised(fn: () => unknown): { type: string; message: string } | null {
  try {
    fn();
  } catch (e) {
    return { type: (e as Error).name, message: (e as Error).message };
  }
  return null;
}

describe("inplace is honoured (torch 1.13's values, nodes and gradients)", () => {
  const cases: Record<string, (v: Tensor) => Tensor> = {
    "F.relu(v, inplace=True)": (v) => F.relu(v, { inplace: true }),
    "F.relu(v, True)": (v) => F.relu(v, true),
    "nn.ReLU(inplace=True)(v)": (v) => new nn.ReLU({ inplace: true })(v) as Tensor,
  };
  for (const [label, act] of Object.entries(cases)) {
    it(`${label} on a view writes its base (CopySlices), as torch`, async () => {
      const want = fx.inplace[label];
      const x = torch.tensor(X, { requires_grad: true });
      const h = x.mul(1);
      const r = act(h.getitem(":, 2:"));
      expect(await h.tolist()).toEqual(want.h);
      expect(nodeName(h.grad_fn)).toBe(want.h_grad_fn);
      expect(nodeName(r.grad_fn)).toBe(want.r_grad_fn);
      expect(h._version).toBe(want.h_version);
      h.mul(torch.arange(8).view(2, 4)).sum().backward();
      expect(await x.grad!.tolist()).toEqual(want.x_grad);
    });
  }

  it("F.dropout(h, p, training, inplace) and nn.Dropout({inplace}) write h (MulBackward0), as torch", async () => {
    const x = torch.tensor(X, { requires_grad: true });
    let h = x.mul(1);
    const r = F.dropout(h, 0.5, true, true);
    expect(r === h).toBe(fx.inplace.dropout_inplace.same);
    expect(nodeName(r.grad_fn)).toBe(fx.inplace.dropout_inplace.grad_fn);
    expect(h._version).toBe(fx.inplace.dropout_inplace.version);
    // Each element is 0 or twice its input (p = 0.5): the write happened on h itself.
    const xs = (await x.tolist()) as number[][];
    ((await h.tolist()) as number[][]).forEach((row, i) => row.forEach((v, j) => expect([0, 2 * xs[i][j]]).toContain(v)));
    h = x.mul(1);
    F.dropout(h, { p: 1, inplace: true });
    expect(await h.tolist()).toEqual(fx.inplace.dropout_p1.h);
    expect(nodeName(h.grad_fn)).toBe(fx.inplace.dropout_p1.grad_fn);
    h = x.mul(1);
    const m = new nn.Dropout(0.5, { inplace: true });
    m.train();
    const before = await h.tolist();
    m(h);
    expect(h._version).toBe(1);
    expect(await h.tolist()).not.toEqual(before);
    m.eval();
    const g = x.mul(1);
    expect(m(g) === g).toBe(fx.inplace.dropout_eval_inplace.same);
    expect(g._version).toBe(fx.inplace.dropout_eval_inplace.version);
  });
});

// ---- every option, enumerated ----

/** A call with every option GradLab implements, each at a non-default value where it has one. */
type Call = (opts: Record<string, unknown>) => unknown;
interface Entry {
  /** How the function or module is called, given its options object. */
  call: Call;
  /** The options it implements, with a value to pass. */
  supported: Record<string, unknown>;
  /** PyTorch's options GradLab does not implement, with a non-default value (must raise). */
  unsupported: Record<string, unknown>;
}

const t23 = () => torch.randn(2, 3);
const target = () => torch.tensor([0, 2], { dtype: "int32" });

const FUNCTIONAL: Record<string, Entry> = {
  relu: { call: (o) => F.relu(t23(), o), supported: { inplace: true }, unsupported: {} },
  gelu: { call: (o) => F.gelu(t23(), o), supported: { approximate: "tanh" }, unsupported: {} },
  softmax: { call: (o) => F.softmax(t23(), o), supported: { dim: 0, dtype: "float32", _stacklevel: 3 }, unsupported: { dtype: "int32" } },
  log_softmax: { call: (o) => F.log_softmax(t23(), o), supported: { dim: 0, dtype: "float32", _stacklevel: 3 }, unsupported: { dtype: "int32" } },
  layer_norm: { call: (o) => F.layer_norm(t23(), [3], o), supported: { weight: torch.ones(3), bias: torch.zeros(3), eps: 1e-3 }, unsupported: {} },
  linear: { call: (o) => F.linear(t23(), torch.randn(4, 3), o), supported: { bias: torch.zeros(4) }, unsupported: {} },
  dropout: { call: (o) => F.dropout(t23(), o), supported: { p: 0.25, training: true, inplace: true }, unsupported: {} },
  embedding: {
    call: (o) => F.embedding(target(), torch.randn(3, 2), o),
    supported: { padding_idx: 1 },
    unsupported: { max_norm: 1, norm_type: 1, scale_grad_by_freq: true, sparse: true },
  },
  nll_loss: {
    call: (o) => F.nll_loss(t23().log_softmax(1), target(), o),
    supported: { reduction: "sum", ignore_index: 2 },
    unsupported: { weight: torch.ones(3), size_average: false, reduce: false },
  },
  cross_entropy: {
    call: (o) => F.cross_entropy(t23(), target(), o),
    supported: { reduction: "sum", ignore_index: 2 },
    unsupported: { weight: torch.ones(3), label_smoothing: 0.1, size_average: false, reduce: false },
  },
  mse_loss: { call: (o) => F.mse_loss(t23(), t23(), o), supported: { reduction: "sum" }, unsupported: { size_average: false, reduce: false } },
  // No options: any extra argument is refused (Python's arity error).
  sigmoid: { call: (o) => (F.sigmoid as (...a: unknown[]) => Tensor)(t23(), o), supported: {}, unsupported: {} },
  tanh: { call: (o) => (F.tanh as (...a: unknown[]) => Tensor)(t23(), o), supported: {}, unsupported: {} },
};
/** The aten-level ops F also exports take positional arguments only (torch.native_layer_norm(x, shape, w, b, eps)). */
const POSITIONAL_ONLY = ["native_layer_norm", "native_dropout"];

const MODULES: Record<string, Entry> = {
  Linear: { call: (o) => new nn.Linear(3, 2, o)(t23()), supported: { bias: false, device: "cuda", dtype: "float32" }, unsupported: { dtype: "int32" } },
  LayerNorm: {
    call: (o) => new nn.LayerNorm(3, o)(t23()),
    supported: { eps: 1e-3, elementwise_affine: false, device: "webgpu:0", dtype: "float32" },
    unsupported: {},
  },
  Embedding: {
    call: (o) => new nn.Embedding(3, 2, o)(target()),
    supported: { padding_idx: 0, device: "cuda:0", dtype: "float32" },
    unsupported: { max_norm: 1, norm_type: 1, scale_grad_by_freq: true, sparse: true },
  },
  ReLU: { call: (o) => new nn.ReLU(o)(t23()), supported: { inplace: true }, unsupported: {} },
  GELU: { call: (o) => new nn.GELU(o)(t23()), supported: { approximate: "tanh" }, unsupported: {} },
  Softmax: { call: (o) => new nn.Softmax(o)(t23()), supported: { dim: 0 }, unsupported: {} },
  Dropout: { call: (o) => new nn.Dropout(o)(t23()), supported: { p: 0.25, inplace: true }, unsupported: {} },
  MSELoss: { call: (o) => new nn.MSELoss(o)(t23(), t23()), supported: { reduction: "sum" }, unsupported: { size_average: false, reduce: false } },
  CrossEntropyLoss: {
    call: (o) => new nn.CrossEntropyLoss(o)(t23(), target()),
    supported: { reduction: "none", ignore_index: 1 },
    unsupported: { weight: torch.ones(3), label_smoothing: 0.1, size_average: false, reduce: false },
  },
  NLLLoss: {
    call: (o) => new nn.NLLLoss(o)(t23().log_softmax(1), target()),
    supported: { reduction: "none", ignore_index: 1 },
    unsupported: { weight: torch.ones(3), size_average: false, reduce: false },
  },
  Tanh: { call: (o) => new (nn.Tanh as unknown as new (...a: unknown[]) => torch.nn.Module)(o), supported: {}, unsupported: {} },
  Sigmoid: { call: (o) => new (nn.Sigmoid as unknown as new (...a: unknown[]) => torch.nn.Module)(o), supported: {}, unsupported: {} },
};
/** Modules without keyword arguments in PyTorch either (Identity takes and ignores any, as torch's). */
const NO_OPTIONS = ["Module", "Parameter", "Identity", "Sequential", "ModuleList", "functional", "init"];

const FACTORY = { dtype: "float32", requires_grad: true, device: "cuda" };
const FACTORY_UNSUPPORTED = { layout: "sparse_coo", pin_memory: true, memory_format: "channels_last", out: torch.empty(2), names: ["a"] };
const CREATION: Record<string, Entry> = {
  tensor: { call: (o) => torch.tensor([1, 2], o), supported: FACTORY, unsupported: FACTORY_UNSUPPORTED },
  scalar_tensor: { call: (o) => torch.scalar_tensor(1, o), supported: FACTORY, unsupported: FACTORY_UNSUPPORTED },
  empty: { call: (o) => torch.empty([2], o), supported: FACTORY, unsupported: FACTORY_UNSUPPORTED },
  zeros: { call: (o) => torch.zeros([2], o), supported: FACTORY, unsupported: FACTORY_UNSUPPORTED },
  ones: { call: (o) => torch.ones([2], o), supported: FACTORY, unsupported: FACTORY_UNSUPPORTED },
  full: { call: (o) => torch.full([2], 3, o), supported: FACTORY, unsupported: FACTORY_UNSUPPORTED },
  empty_like: { call: (o) => torch.empty_like(torch.ones(2), o), supported: FACTORY, unsupported: FACTORY_UNSUPPORTED },
  zeros_like: { call: (o) => torch.zeros_like(torch.ones(2), o), supported: FACTORY, unsupported: FACTORY_UNSUPPORTED },
  ones_like: { call: (o) => torch.ones_like(torch.ones(2), o), supported: FACTORY, unsupported: FACTORY_UNSUPPORTED },
  full_like: { call: (o) => torch.full_like(torch.ones(2), 3, o), supported: FACTORY, unsupported: FACTORY_UNSUPPORTED },
  rand_like: { call: (o) => torch.rand_like(torch.ones(2), o), supported: FACTORY, unsupported: FACTORY_UNSUPPORTED },
  randn_like: { call: (o) => torch.randn_like(torch.ones(2), o), supported: FACTORY, unsupported: FACTORY_UNSUPPORTED },
  arange: { call: (o) => torch.arange(0, 1, 0.25, o), supported: FACTORY, unsupported: FACTORY_UNSUPPORTED },
  linspace: { call: (o) => torch.linspace(0, 1, 5, o), supported: FACTORY, unsupported: FACTORY_UNSUPPORTED },
  rand: { call: (o) => torch.rand([2], o), supported: FACTORY, unsupported: { ...FACTORY_UNSUPPORTED, generator: {} } },
  randn: { call: (o) => torch.randn([2], o), supported: FACTORY, unsupported: { ...FACTORY_UNSUPPORTED, generator: {} } },
  randint: { call: (o) => torch.randint(0, 5, [2], o), supported: { dtype: "int32", device: "cuda" }, unsupported: { ...FACTORY_UNSUPPORTED, generator: {} } },
};

describe("every option is implemented or raises, never dropped", () => {
  it("the tables cover every export of torch.nn.functional, torch.nn and the creation functions", () => {
    expect(Object.keys(F).sort()).toEqual([...Object.keys(FUNCTIONAL), ...POSITIONAL_ONLY].sort());
    expect(Object.keys(nn).sort()).toEqual([...Object.keys(MODULES), ...NO_OPTIONS].sort());
  });

  for (const [group, table] of Object.entries({ "F.": FUNCTIONAL, "nn.": MODULES, "torch.": CREATION })) {
    for (const [name, e] of Object.entries(table)) {
      it(`${group}${name}`, () => {
        // Every implemented option together, then each one alone, runs.
        if (Object.keys(e.supported).length > 0) {
          expect(() => e.call({ ...e.supported })).not.toThrow();
          for (const [k, v] of Object.entries(e.supported)) expect(() => e.call({ [k]: v }), k).not.toThrow();
        }
        // A keyword the function does not take is refused by name (Python's TypeError).
        const unknown = raised(() => e.call({ ...e.supported, banana: 1 }));
        expect(unknown?.type).toBe("TypeError");
        expect(unknown?.message).toMatch(Object.keys(e.supported).length > 0 ? /unexpected keyword argument 'banana'/ : /takes 1 positional argument/);
        // PyTorch's options GradLab lacks raise at any non-default value, naming the option.
        for (const [k, v] of Object.entries(e.unsupported)) {
          const r = raised(() => e.call({ [k]: v }));
          expect(r, `${name}({${k}: ${String(v)}})`).not.toBeNull();
          expect(r!.message).toContain(k);
        }
      });
    }
  }

  it("PyTorch's texts for an unknown keyword, a bad reduction, a non-tensor input, extra arguments, bad approximate", () => {
    const t = torch.tensor([2, 4], { requires_grad: true });
    const kw = fx.keywords;
    expect(raised(() => F.relu(t, { foo: 1 } as never))).toEqual(kw.relu_foo);
    expect(raised(() => new nn.ReLU({ foo: 1 } as never))).toEqual(kw.ReLU_foo);
    expect(raised(() => F.mse_loss(t, t, { reduction: "banana" as never }))).toEqual(kw.mse_reduction);
    expect(raised(() => torch.maximum(1 as never, t))).toEqual(kw.maximum_int);
    expect(raised(() => (F.tanh as (...a: unknown[]) => Tensor)(t, true))).toEqual(kw.tanh_two);
    expect(raised(() => F.gelu(t, { approximate: "banana" as never }))).toEqual(kw.gelu_bad);
    expect(raised(() => torch.randn([2], { dtype: "int32" }))).toEqual(kw.randn_int);
    expect(raised(() => torch.rand([2], { dtype: "int32" }))).toEqual(kw.rand_int);
  });
});

describe("creation functions validate dtype at run time", () => {
  for (const fn of ["zeros", "ones", "empty", "randn", "rand", "tensor", "full", "arange"] as const) {
    it(`torch.${fn} refuses {dtype: "banana"} and "float64", and records nothing`, () => {
      const make: Record<typeof fn, (o: object) => unknown> = {
        zeros: (o) => torch.zeros([2], o),
        ones: (o) => torch.ones([2], o),
        empty: (o) => torch.empty([2], o),
        randn: (o) => torch.randn([2], o),
        rand: (o) => torch.rand([2], o),
        tensor: (o) => torch.tensor([1, 2], o),
        full: (o) => torch.full([2], 1, o),
        arange: (o) => torch.arange(0, 2, 1, o),
      };
      const before = torch.cuda.memory_allocated();
      for (const d of ["banana", "float64"]) {
        const r = raised(() => make[fn]({ dtype: d }));
        expect(r?.type).toBe("TypeError");
        expect(r?.message).toBe(`${fn}(): argument 'dtype' must be torch.dtype (GradLab has torch.float32, torch.int32 and torch.bool), not "${d}"`);
      }
      expect(torch.cuda.memory_allocated()).toBe(before);
      expect(raised(() => make[fn]({ device: "cpu" }))?.message).toMatch(/device='cpu' is not available here/);
    });
  }
});

describe("an over-limit request never poisons the allocator", () => {
  it("torch.zeros([2**31]) raises before reserving; later large tensors work; empty_cache returns to zero", async () => {
    const p = await torch.cuda.get_device_properties();
    const n = Math.max(2 ** 31, Math.ceil((p.limits.maxBufferSize + 1) / 4));
    torch.cuda.empty_cache();
    const reserved = torch.cuda.memory_reserved();
    const allocated = torch.cuda.memory_allocated();
    for (let i = 0; i < 2; i++) {
      expect(() => torch.zeros([n])).toThrow(/larger than this adapter's maxBufferSize/);
      expect(torch.cuda.memory_reserved()).toBe(reserved);
      expect(torch.cuda.memory_allocated()).toBe(allocated);
    }
    // A tensor over one binding (40 Mi elements, 160 MiB) still computes, in its own segment.
    const big = torch.ones([40 * 2 ** 20]);
    expect(await big.sum().item()).toBe(40 * 2 ** 20);
    big.dispose();
    torch.cuda.empty_cache();
    expect(torch.cuda.memory_reserved()).toBe(reserved);
  });
});

describe("PyTorch's spellings", () => {
  it("loss.backward({retain_graph: true}) and torch.autograd.backward(t, {retain_graph}) are accepted", async () => {
    const t = torch.tensor([2, 4], { requires_grad: true });
    const loss = t.mul(2).sum();
    loss.backward({ retain_graph: true });
    loss.backward();
    expect(await t.grad!.tolist()).toEqual(fx.keywords.backward_retain);
    const l2 = t.mul(3).sum();
    torch.autograd.backward(l2, { retain_graph: true } as never);
    expect(() => l2.backward({ retain_grap: true } as never)).toThrow("backward() got an unexpected keyword argument 'retain_grap'");
  });

  for (const f of ["add", "sub", "mul", "div"] as const) {
    it(`torch.${f}(1, t) records what torch records`, async () => {
      const want = fx.keywords[`${f}(1, t)`];
      const t = torch.tensor([2, 4], { requires_grad: true });
      const r = { add: torch.add, sub: torch.sub, mul: torch.mul, div: torch.div }[f](1 as never, t);
      expect(await r.tolist()).toEqual(want.value);
      expect(nodeName(r.grad_fn)).toBe(want.grad_fn);
      expect(r.grad_fn!.next_functions.map(([n]) => nodeName(n))).toEqual(want.next);
      r.sum().backward();
      expect(await t.grad!.tolist()).toEqual(want.grad);
    });
  }

  it("torch.inference_mode(false, fn) calls fn with inference mode off, and returns its value", () => {
    let ran = false;
    const v = torch.inference_mode(() =>
      torch.inference_mode(false, () => {
        ran = true;
        return torch.is_inference_mode_enabled();
      }),
    );
    expect(ran).toBe(true);
    expect(v).toBe(false);
    expect(torch.inference_mode(true, () => torch.ones(1)).is_inference()).toBe(true);
  });
});

describe("error texts and nodes as torch 1.13 (issue 21's fuzzed differences)", () => {
  it("layer_norm checks normalized_shape, weight and bias before the input, by shape", () => {
    const x = torch.randn(2, 3);
    const e = fx.errors;
    expect(raised(() => F.layer_norm(x, [4], torch.ones(3)))).toEqual(e.ln_weight_before_input);
    expect(raised(() => F.layer_norm(x, [3, 1], torch.ones(3)))).toEqual(e.ln_weight_shape);
    expect(raised(() => F.layer_norm(x, [3], torch.ones(3), torch.ones(4)))).toEqual(e.ln_bias);
    expect(raised(() => F.layer_norm(x, []))).toEqual(e.ln_empty);
    expect(raised(() => F.layer_norm(x, [2]))).toEqual(e.ln_input);
  });

  for (const [tg, eg] of [
    [true, false],
    [false, true],
    [true, true],
  ] as const) {
    it(`pow(t, T)'s saved result modified in place raises (t requires grad: ${tg}, T: ${eg})`, () => {
      const t = torch.tensor([1.5, 2.0], { requires_grad: tg });
      const T = torch.tensor([2.0, 3.0], { requires_grad: eg });
      const r = torch.pow(t, T);
      r.add_(1);
      expect(raised(() => r.sum().backward())).toEqual(fx.errors[`pow_result_${tg ? "True" : "False"}_${eg ? "True" : "False"}`]);
    });
  }

  it("anomaly mode keeps the error's own text (the forward traceback travels beside it)", () => {
    torch.autograd.set_detect_anomaly(true);
    try {
      const t = torch.tensor([1, 2, 3], { requires_grad: true });
      const y = t.exp();
      y.add_(1);
      expect(raised(() => y.sum().backward())).toEqual(fx.errors.anomaly);
    } finally {
      torch.autograd.set_detect_anomaly(false);
    }
  });

  for (const [index, want] of Object.entries(fx.setitem as Record<string, unknown>)) {
    if (typeof want !== "string" || index.includes("=")) continue;
    it(`w[${index}] = 2.0 records ${want}`, () => {
      const w = torch.randn([4, 3], { requires_grad: true }).mul(1);
      w.setitem(index, 2.0);
      expect(nodeName(w.grad_fn)).toBe(want);
      expect(w._version).toBe(1);
    });
  }

  it("w[...] = a 0-dim tensor fills (FillBackward3, its gradient the sum); a row or a same-shape tensor is copied", async () => {
    const a = torch.randn([4, 3], { requires_grad: true });
    const c = torch.tensor(3.0, { requires_grad: true });
    const w = a.mul(1);
    w.setitem("...", c);
    const want = fx.setitem["... = 0-dim tensor"];
    expect(nodeName(w.grad_fn)).toBe(want.node);
    expect(w.grad_fn!.next_functions.map(([n]) => nodeName(n))).toEqual(want.next);
    w.sum().backward();
    expect(await c.grad!.item()).toBe(want.c_grad);
    const r = a.mul(1);
    r.setitem("...", torch.ones(3));
    expect(nodeName(r.grad_fn)).toBe(fx.setitem["... = row"]);
    const s = torch.randn([1, 3], { requires_grad: true }).mul(1);
    s.setitem(":1", torch.ones(1, 3));
    expect(nodeName(s.grad_fn)).toBe(fx.setitem[":1 = same shape"]);
    const z = torch.randn(4, { requires_grad: true }).sum();
    z.setitem("...", 1.5);
    expect(nodeName(z.grad_fn)).toBe(fx.setitem["0-dim ... = 1.5"]);
  });
});
