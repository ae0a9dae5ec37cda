// Autograd as the article shows it: its printed outputs (addresses aside), the in-place crash, the
// engine freeing saved activations node by node, grad modes, custom Functions, hooks, anomaly mode.
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";

const noAddr = (s: string) => s.replace(/0x[0-9a-f]+/g, "0x…");

describe("the article's autograd blocks", () => {
  it("blocks 5–6: leaves, requires_grad and grad_fn", () => {
    const x = torch.tensor([2.0, 3.0], { requires_grad: true });
    const w = torch.tensor([1.5, 2.5], { requires_grad: true });
    const b = torch.tensor([0.5, 0.5], { requires_grad: true });
    const y = x.mul(w).add(b);
    const loss = y.sum();
    const out = [
      torch.f`x.is_leaf: ${x.is_leaf}, x.requires_grad: ${x.requires_grad}, x.grad_fn: ${x.grad_fn}`,
      torch.f`y.is_leaf: ${y.is_leaf}, y.requires_grad: ${y.requires_grad}, y.grad_fn: ${y.grad_fn}`,
      torch.f`loss.grad_fn: ${loss.grad_fn}`,
    ].map(noAddr);
    expect(out).toEqual([
      "x.is_leaf: True, x.requires_grad: True, x.grad_fn: None",
      "y.is_leaf: False, y.requires_grad: True, y.grad_fn: <AddBackward0 object at 0x…>",
      "loss.grad_fn: <SumBackward0 object at 0x…>",
    ]);
  });

  it("blocks 9–10: walking next_functions", () => {
    const x = torch.randn(2, 3, { requires_grad: true });
    const w = torch.randn(3, 4, { requires_grad: true });
    const b = torch.randn(4, { requires_grad: true });
    const h = torch.matmul(x, w);
    const y = h.add(b);
    const loss = y.sum();
    const add = loss.grad_fn!.next_functions[0][0]!;
    const mm = add.next_functions[0][0]!;
    const lines = [
      torch.f`1. loss.grad_fn: ${loss.grad_fn}`,
      torch.f`2. loss.grad_fn.next_functions: ${loss.grad_fn!.next_functions}`,
      torch.f`3. add_node.next_functions: ${add.next_functions}`,
      torch.f`4. mm_node.next_functions: ${mm.next_functions}`,
    ].map(noAddr);
    expect(lines).toEqual([
      "1. loss.grad_fn: <SumBackward0 object at 0x…>",
      "2. loss.grad_fn.next_functions: ((<AddBackward0 object at 0x…>, 0),)",
      "3. add_node.next_functions: ((<MmBackward0 object at 0x…>, 0), (<AccumulateGrad object at 0x…>, 0))",
      "4. mm_node.next_functions: ((<AccumulateGrad object at 0x…>, 0), (<AccumulateGrad object at 0x…>, 0))",
    ]);
    const accX = mm.next_functions[0][0] as torch.autograd.AccumulateGrad;
    expect(accX.variable._meta).toBe(x._meta);
    expect(add.sequence_nr()).toBeGreaterThan(mm.sequence_nr());
    expect(loss.grad_fn!.sequence_nr()).toBeGreaterThan(add.sequence_nr());
  });

  it("blocks 17–18: relu then y += 1 crashes backward with PyTorch's message", () => {
    const x = torch.randn(4, 4, { requires_grad: true });
    const y = torch.relu(x);
    y.add_(1.0);
    const loss = y.sum();
    expect(() => loss.backward()).toThrow(
      "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [4, 4]], which is output 0 of ReluBackward0, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).",
    );
  });

  it("lab inplace_bug_reproduce prints what PyTorch prints", async () => {
    const lines: string[] = [];
    const a = torch.tensor([1.0, 2.0, 3.0], { requires_grad: true });
    const b = a.mul(2.0);
    lines.push(`初始状态: b._version = ${b._version}`);
    b.add_(10.0);
    lines.push(`原地修改后: b._version = ${b._version}`);
    try {
      b.pow(2).sum().backward();
    } catch (e) {
      lines.push("[捕获预期中的 RuntimeError 崩溃!]", `错误信息前缀: ${String((e as Error).message).split("\n")[0]}`);
    }
    const aSafe = torch.tensor([1.0, 2.0, 3.0], { requires_grad: true });
    const bClean = aSafe.mul(2.0).add(10.0);
    bClean.pow(2).sum().backward();
    lines.push(`安全反向传播成功！a_safe.grad = ${await aSafe.grad!.repr()}`);
    // Real PyTorch does not crash here: b**2 saves b *after* the add_, so versions match.
    expect(lines).toEqual(["初始状态: b._version = 0", "原地修改后: b._version = 1", "安全反向传播成功！a_safe.grad = tensor([48., 56., 64.])"]);
    expect(await a.grad!.tolist()).toEqual([48, 56, 64]);
  });
});

describe("the engine frees saved activations node by node", () => {
  const B = 64;
  const D = 256;
  const L = 4;
  const act = B * D * 4; // 64 KiB per activation
  const param = D * D * 4;

  function build() {
    torch.manual_seed(0);
    const x = torch.randn(B, D);
    const Ws = Array.from({ length: L }, () => torch.scope(() => torch.randn(D, D).mul(0.05)).requires_grad_());
    // Only the graph keeps the activations: every handle made in the scope but the loss is disposed.
    const loss = torch.scope(() => {
      let h = x;
      for (const W of Ws) h = h.matmul(W).relu();
      return h.sum();
    });
    return { x, Ws, loss };
  }

  it("releases each ReLU output when its last saver has run, and keeps nothing after", async () => {
    await torch.gc();
    const base = torch.cuda.memory_allocated();
    const { x, Ws, loss } = build();
    const before = torch.cuda.memory_allocated();
    expect(before - base).toBe(act + L * param + L * act + 512); // x, weights, saved ReLU outputs, loss
    const events = torch.autograd.trace(() => loss.backward());
    const releases = events.filter((e) => e.step === "release").map((e) => [e.node, e.detail.bytes_freed]);
    expect(releases).toEqual([
      ["SumBackward0", 0],
      ...Array.from({ length: L }, () => [
        ["ReluBackward0", act], // its result, now held by nothing
        ["MmBackward0", 0], // its input is still saved by the ReLU below (or is x)
        ["torch::autograd::AccumulateGrad", 0],
      ]).flat(),
    ]);
    const applied = events.filter((e) => e.step === "apply").map((e) => e.node);
    expect(applied[0]).toBe("SumBackward0");
    expect(applied.filter((n) => n === "torch::autograd::AccumulateGrad")).toHaveLength(L);
    expect(torch.cuda.memory_allocated() - base).toBe(act + L * param + L * param + 512); // + weight grads
    expect(() => loss.backward()).toThrow(/Trying to backward through the graph a second time/);
    torch.del(x, loss, ...Ws);
    expect(torch.cuda.memory_allocated()).toBe(base);
  });

  it("with retain_graph nothing is released, and a second backward accumulates", async () => {
    await torch.gc();
    const base = torch.cuda.memory_allocated();
    const { x, Ws, loss } = build();
    const before = torch.cuda.memory_allocated();
    const events = torch.autograd.trace(() => loss.backward(null, { retain_graph: true }));
    expect(events.filter((e) => e.step === "release")).toHaveLength(0);
    expect(torch.cuda.memory_allocated() - before).toBe(L * param);
    const g1 = await torch.scope(() => Ws[0].grad!.sum().item());
    loss.backward();
    const g2 = await torch.scope(() => Ws[0].grad!.sum().item());
    expect(g2).toBeCloseTo(2 * (g1 as number), 2);
    expect(torch.cuda.memory_allocated() - base).toBe(act + 2 * L * param + 512);
    torch.del(x, loss, ...Ws);
    expect(torch.cuda.memory_allocated()).toBe(base);
  });

  it("dropping the loss frees the graph's saved tensors without any backward", async () => {
    await torch.gc();
    const base = torch.cuda.memory_allocated();
    const { x, Ws, loss } = build();
    loss.dispose();
    expect(torch.cuda.memory_allocated() - base).toBe(act + L * param);
    torch.del(x, ...Ws);
    expect(torch.cuda.memory_allocated()).toBe(base);
  });
});

describe("grad modes", () => {
  const w = torch.ones(3, { requires_grad: true });

  it("no_grad as a callback and as a guard; enable_grad inside", () => {
    const y = torch.no_grad(() => w.mul(2));
    expect(y.requires_grad).toBe(false);
    expect(y.grad_fn).toBeNull();
    {
      using _g = torch.no_grad();
      expect(torch.is_grad_enabled()).toBe(false);
      const z = torch.enable_grad(() => w.mul(2));
      expect(z.grad_fn?.name()).toBe("MulBackward0");
    }
    expect(torch.is_grad_enabled()).toBe(true);
    const guard = torch.set_grad_enabled(false);
    expect(w.mul(3).requires_grad).toBe(false);
    guard.exit();
    expect(w.mul(3).requires_grad).toBe(true);
  });

  it("inference_mode makes inference tensors that autograd refuses", () => {
    const t = torch.inference_mode(() => {
      expect(torch.is_inference_mode_enabled()).toBe(true);
      expect(torch.is_grad_enabled()).toBe(false);
      return torch.ones(3).mul(2);
    });
    expect(t.is_inference()).toBe(true);
    expect(torch.ones(3).is_inference()).toBe(false);
    expect(() => t.mul(w)).toThrow(/Inference tensors cannot be saved for backward/);
    expect(() => t.add_(1)).toThrow(
      "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.",
    );
    expect(t.clone().is_inference()).toBe(false);
  });

  it("a view or detach() of an inference tensor is an inference tensor, as in torch 1.13", async () => {
    // torch 1.13 (test/fixtures: see the issue 23 exercise 08): t.detach() and t[1:] stay inference
    // tensors; autograd refuses to save them; a detached one may be written in place, a view may not.
    const t = torch.inference_mode(() => torch.ones(3));
    const d = t.detach();
    const s = t.getitem("1:");
    expect([d.is_inference(), s.is_inference(), t.view(3).is_inference()]).toEqual([true, true, true]);
    expect(() => d.mul(w)).toThrow(/Inference tensors cannot be saved for backward/);
    expect(() => s.add_(1)).toThrow(/Inplace update to inference tensor outside InferenceMode is not allowed/);
    d.add_(1);
    expect(await t.tolist()).toEqual([2, 2, 2]);
    expect(d.add(1).is_inference()).toBe(false);
  });
});

describe("custom Function, hooks and anomaly mode", () => {
  class MyLinearFunction extends torch.autograd.Function {
    static override forward(ctx: torch.autograd.FunctionCtx, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) {
      ctx.save_for_backward(x, w);
      return x.mm(w.t()).add(b);
    }
    static override backward(ctx: torch.autograd.FunctionCtx, g: torch.Tensor) {
      const [x, w] = ctx.saved_tensors as torch.Tensor[];
      return [ctx.needs_input_grad[0] ? g.mm(w) : null, g.t().mm(x), g.sum(0)];
    }
  }

  it("block 12: MyLinearFunction matches the built-in linear", async () => {
    torch.manual_seed(1);
    const x = torch.randn(4, 3, { requires_grad: true });
    const w = torch.randn(2, 3, { requires_grad: true });
    const b = torch.randn(2, { requires_grad: true });
    const y = MyLinearFunction.apply(x, w, b) as torch.Tensor;
    expect(y.grad_fn!.name()).toBe("MyLinearFunctionBackward");
    expect(y.grad_fn!.next_functions.map(([n]) => String(n).split(" ")[0])).toEqual(["<AccumulateGrad", "<AccumulateGrad", "<AccumulateGrad"]);
    y.sum().backward();
    const custom = await Promise.all([x, w, b].map((t) => t.grad!.tolist()));
    for (const t of [x, w, b]) t.grad = null;
    torch.nn.functional.linear(x, w, b).sum().backward();
    const builtin = await Promise.all([x, w, b].map((t) => t.grad!.tolist()));
    expect(custom).toEqual(builtin);
  });

  it("tensor hooks change gradients; post-accumulate and node hooks see them", async () => {
    const x = torch.tensor([1.0, 2.0], { requires_grad: true });
    const y = x.mul(3);
    const seen: string[] = [];
    y.register_hook((g) => g.mul(10));
    x.register_post_accumulate_grad_hook((t) => seen.push(`acc:${t.shape}`));
    y.grad_fn!.register_prehook((gs) => void seen.push(`pre:${gs.length}`));
    y.grad_fn!.register_hook((gi, go) => void seen.push(`post:${gi.length},${go.length}`));
    y.retain_grad();
    y.sum().backward();
    expect(await x.grad!.tolist()).toEqual([30, 30]);
    expect(await y.grad!.tolist()).toEqual([10, 10]);
    // MulBackward0 of x * 3 has two inputs in PyTorch 1.13 (the scalar gets an empty edge).
    expect(seen).toEqual(["pre:1", "post:2,1", "acc:2"]);
  });

  it("a hook that removes itself does not make the next hook skip a pass (torch 1.13 prints the same order)", () => {
    const ran: string[] = [];
    const x = torch.ones(2, { requires_grad: true });
    const y = x.mul(2);
    const node = y.grad_fn!;
    const a = y.register_hook(() => {
      ran.push("a");
      a.remove();
    });
    y.register_hook(() => void ran.push("b"));
    const pa = node.register_prehook(() => {
      ran.push("pre-a");
      pa.remove();
    });
    node.register_prehook(() => void ran.push("pre-b"));
    const po = node.register_hook(() => {
      ran.push("post-a");
      po.remove();
    });
    node.register_hook(() => void ran.push("post-b"));
    const acc = x.register_post_accumulate_grad_hook(() => {
      ran.push("acc-a");
      acc.remove();
    });
    x.register_post_accumulate_grad_hook(() => void ran.push("acc-b"));
    y.sum().backward({ retain_graph: true });
    y.sum().backward();
    // torch 1.13 (tensor and node hooks): ['a', 'b', 'pre-a', 'pre-b', 'post-a', 'post-b', 'b', 'pre-b', 'post-b'];
    // its post-accumulate hooks (torch 2.1) run from a copy as well.
    expect(ran).toEqual(["a", "b", "pre-a", "pre-b", "post-a", "post-b", "acc-a", "acc-b", "b", "pre-b", "post-b", "acc-b"]);
  });

  it("a post-accumulate hook gets the parameter itself: an optimizer per parameter steps in backward (PyTorch's recipe)", async () => {
    torch.manual_seed(0);
    const lin = new torch.nn.Linear(3, 2);
    const before = await lin.weight.tolist();
    const optimizers = new Map([...lin.parameters()].map((p) => [p, new torch.optim.SGD([p], { lr: 0.5 })]));
    for (const p of lin.parameters()) {
      p.register_post_accumulate_grad_hook((q) => {
        optimizers.get(q)!.step();
        optimizers.get(q)!.zero_grad();
      });
    }
    lin(torch.ones(1, 3)).sum().backward();
    // d(sum)/dW = 1 everywhere for an input of ones: each weight moved by -0.5, and the gradients were cleared
    const after = (await lin.weight.tolist()) as number[][];
    after.forEach((row, i) => row.forEach((v, j) => expect(v).toBeCloseTo((before as number[][])[i][j] - 0.5, 5)));
    expect(lin.weight.grad).toBeNull();
  });

  it("saved_tensors_hooks pack every saved tensor and unpack it in backward", async () => {
    const x = torch.tensor([1.0, 2.0, 3.0], { requires_grad: true });
    let packed = 0;
    let unpacked = 0;
    const y = torch.autograd.graph.saved_tensors_hooks(
      (t) => {
        packed++;
        return t.clone();
      },
      (v) => {
        unpacked++;
        return v as torch.Tensor;
      },
      () => x.exp().mul(x).sum(),
    ) as torch.Tensor;
    expect(packed).toBe(3); // exp's result, mul's self and other
    y.backward();
    expect(unpacked).toBe(3);
    const expected = [1, 2, 3].map((v) => Math.exp(v) * (1 + v));
    ((await x.grad!.tolist()) as number[]).forEach((g, i) => expect(g).toBeCloseTo(expected[i], 3));
  });

  it("_saved_* exposes saved tensors and _raw_saved_* repacks them through hooks", async () => {
    const x = torch.tensor([1.0, 2.0], { requires_grad: true });
    const y = x.exp();
    const node = y.grad_fn! as unknown as Record<string, unknown>;
    expect(Object.getOwnPropertyNames(node).filter((k) => k.startsWith("_saved_"))).toEqual(["_saved_result"]);
    expect(await (node._saved_result as torch.Tensor).tolist()).toEqual(await y.tolist());
    const raw = node._raw_saved_result as torch.autograd.SavedVariable;
    const calls: string[] = [];
    raw.register_hooks(
      (t) => {
        calls.push("pack");
        return t.mul(1);
      },
      (v) => {
        calls.push("unpack");
        return v as torch.Tensor;
      },
    );
    y.sum().backward();
    expect(calls).toEqual(["pack", "unpack"]);
    expect(await x.grad!.tolist()).toEqual(await y.tolist());
  });

  it("mark_dirty: a Function that modifies its input in place", async () => {
    class AddOneInplace extends torch.autograd.Function {
      static override forward(ctx: torch.autograd.FunctionCtx, t: torch.Tensor) {
        ctx.mark_dirty(t);
        return t.add_(1);
      }
      static override backward(_ctx: torch.autograd.FunctionCtx, g: torch.Tensor) {
        return [g];
      }
    }
    const x = torch.tensor([1.0, 2.0], { requires_grad: true });
    const y = x.mul(2);
    const out = AddOneInplace.apply(y) as torch.Tensor;
    expect(out.grad_fn!.name()).toBe("AddOneInplaceBackward");
    expect(await out.tolist()).toEqual([3, 5]);
    out.sum().backward();
    expect(await x.grad!.tolist()).toEqual([2, 2]);
  });

  it("save_on_cpu moves saved activations off the device and brings them back", async () => {
    const W = torch.randn(256, 256, { requires_grad: true });
    const x = torch.randn(64, 256);
    await torch.gc();
    const base = torch.cuda.memory_allocated();
    const loss = torch.autograd.graph.save_on_cpu(() => torch.scope(() => x.matmul(W).relu().sum())) as torch.Tensor;
    await torch.webgpu.synchronize();
    // The ReLU output (64 KiB) went to host memory once its copy landed; only the loss stays.
    expect(torch.cuda.memory_allocated() - base).toBe(512);
    loss.backward();
    expect(W.grad!.shape).toEqual([256, 256]);
  });

  it("anomaly mode names the failing node and where its forward ran (beside the error, as torch's warning), the error keeps torch's text", () => {
    torch.autograd.set_detect_anomaly(true);
    try {
      const x = torch.randn(3, { requires_grad: true });
      const y = x.exp(); // forward of the node that will fail
      y.add_(1);
      let msg = "";
      let forward = "";
      let stack = "";
      try {
        y.sum().backward();
      } catch (e) {
        msg = (e as Error).message;
        forward = String((e as { forward_traceback?: string }).forward_traceback);
        stack = String((e as Error).stack);
      }
      expect(msg).toBe(
        "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [3]], which is output 0 of ExpBackward0, is at version 1; expected version 0 instead. Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable in question was changed in there or anywhere later. Good luck!",
      );
      expect(forward).toMatch(/^Error detected in ExpBackward0\. Traceback of forward call that caused the error:/);
      expect(forward).toMatch(/autograd\.test\.ts/);
      expect(stack).toContain(forward); // what Node prints for an uncaught error
    } finally {
      torch.autograd.set_detect_anomaly(false);
    }
  });
});
