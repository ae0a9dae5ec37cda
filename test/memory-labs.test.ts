// The article's memory labs in TypeScript, with the figures PyTorch prints for the same programs on a
// CUDA device (they follow from the tensor sizes; derivations beside each), on the simulated device at
// full size and on the WebGPU device at a smaller size with the same accounting.
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";
import { LEAK_FIRST as FIRST, LEAK_STEP as STEP, PYTORCH_TRACE } from "./fixtures/labs.ts";

const MiB = 2 ** 20;
const F = torch.nn.functional;
const mb = (b: number) => `${(b / MiB).toFixed(2)} MB`;

/** Lab trace_memory (block 26), returning [stage, allocated, peak] rows. `n` scales 4096. */
function traceMemory(n: number, m: number) {
  const rows: Array<[string, string, string]> = [];
  const log = (stage: string) => rows.push([stage, mb(torch.cuda.memory_allocated()), mb(torch.cuda.max_memory_allocated())]);
  torch.cuda.empty_cache();
  torch.cuda.reset_peak_memory_stats();
  log("0. 初始空闲状态");
  const w1 = torch.randn(n, n, { requires_grad: true });
  const w2 = torch.randn(n, n, { requires_grad: true });
  log("1. 权重初始化就绪");
  const x = torch.randn(m, n, { requires_grad: true });
  log("2. 输入 X 送入显存");
  const h1 = torch.matmul(x, w1);
  log("3. 前向: Matmul-1 产出");
  const h2 = F.gelu(h1);
  log("4. 前向: GELU 产出");
  const out = torch.matmul(h2, w2);
  log("5. 前向: Matmul-2 产出");
  const loss = out.sum();
  log("6. 计算 Loss (峰值预警)");
  loss.backward();
  log("7. Backward 完成!");
  torch.del(h1, h2, out, loss, x);
  log("8. 销毁中间 Python 变量");
  w1.grad = null;
  w2.grad = null;
  log("9. grad 置为 None");
  torch.del(w1, w2);
  return rows;
}

describe("lab trace_memory", () => {
  it("prints PyTorch's figures, stage by stage, on a simulated 80 GiB device", () => {
    using _sim = torch.cuda.simulate({ total_memory: 80 * 2 ** 30 }) as torch.autograd.Guard;
    expect(traceMemory(4096, 2048)).toEqual(PYTORCH_TRACE);
  });

  it("accounts the same on the WebGPU device as on the simulated one", async () => {
    await torch.gc();
    const base = torch.cuda.memory_allocated();
    expect(base).toBe(0);
    const real = traceMemory(512, 256);
    await torch.webgpu.synchronize();
    let sim: typeof real;
    {
      using _sim = torch.cuda.simulate() as torch.autograd.Guard;
      sim = traceMemory(512, 256);
    }
    expect(real).toEqual(sim);
    expect(real[7]).toEqual(["7. Backward 完成!", mb(6.5 * MiB + 512), mb(7 * MiB + 512)]);
  });

  it("the timeline records op, node, phase, category and the user's code for each allocation", () => {
    using _sim = torch.cuda.simulate() as torch.autograd.Guard;
    torch.cuda.memory._record_memory_history("all");
    try {
      traceMemory(256, 128);
    } finally {
      const events = torch.cuda.memory._snapshot().device_traces[0];
      torch.cuda.memory._record_memory_history(null);
      const allocs = events.filter((e) => e.action === "alloc");
      const h1 = allocs.find((e) => e.op === "matmul" && e.phase === "forward")!;
      expect(h1.node).toBe("MmBackward0");
      expect(h1.category).toBe("activation"); // GELU saved it
      expect(h1.frames.map((f) => `${f.filename}:${f.line}`).join("\n")).toMatch(/memory-labs\.test\.ts:\d+/);
      const grads = allocs.filter((e) => e.category === "gradient");
      expect(grads.map((e) => e.size).sort((a, b) => a - b)).toEqual([128 * 256 * 4, 256 * 256 * 4, 256 * 256 * 4]);
      expect(grads.every((e) => e.phase === "backward")).toBe(true);
      expect(allocs.some((e) => e.phase === "backward" && e.category === "autograd_temporary" && e.node === "GeluBackward0")).toBe(true);
      const frees = events.filter((e) => e.action === "free_completed");
      expect(frees.length).toBe(allocs.length); // everything traced was freed by the end
      expect(events.filter((e) => e.action === "free_requested").length).toBe(frees.length);
    }
  });
});

/**
 * Lab simulate_loss_leak (block 30); the good loop frees each step's tensors with `using`. The article's
 * sizes are n = 2048 features and a batch of m = 512.
 */
function lossLeak(steps: number, n = 2048, m = 512) {
  const W = torch.randn(n, n, { requires_grad: true });
  const b = torch.zeros(n, { requires_grad: true });
  const linear = (x: torch.Tensor) => F.linear(x, W, b);
  const bad: number[] = [];
  const bad_history: torch.Tensor[] = [];
  for (let step = 0; step < steps; step++) {
    using x = torch.randn(m, n, { requires_grad: true });
    const loss = torch.scope(() => linear(x).sum());
    loss.backward();
    bad_history.push(loss); // keeps the whole graph, and through it x and x.grad
    bad.push(torch.cuda.memory_allocated());
  }
  const leaks = torch.cuda.memory.find_leaks({ bad_history });
  torch.del(...bad_history);
  torch.cuda.empty_cache();
  const good: number[] = [];
  for (let step = 0; step < steps; step++) {
    using x = torch.randn(m, n, { requires_grad: true });
    using loss = torch.scope(() => linear(x).sum());
    loss.backward();
    good.push(torch.cuda.memory_allocated()); // x, x.grad and loss are alive here, as in PyTorch
  }
  torch.del(W, b);
  return { bad, good, leaks };
}

describe("lab simulate_loss_leak", () => {
  it("on a simulated device: the bad loop grows 8 MiB a step, the good loop stays flat", () => {
    using _sim = torch.cuda.simulate() as torch.autograd.Guard;
    const { bad, good, leaks } = lossLeak(5);
    expect(bad).toEqual([0, 1, 2, 3, 4].map((i) => FIRST + i * STEP));
    expect(bad.map(mb)).toEqual(["40.02 MB", "48.02 MB", "56.02 MB", "64.02 MB", "72.02 MB"]);
    expect(good).toEqual([FIRST, FIRST, FIRST, FIRST, FIRST]);
    expect(leaks.total_bytes).toBe(5 * 8 * MiB);
    expect(leaks.leaks.map((l) => l.holder)).toEqual(["bad_history[0]", "bad_history[1]", "bad_history[2]", "bad_history[3]", "bad_history[4]"]);
    expect(leaks.leaks[0].chains[0]).toEqual(["SumBackward0", "AddmmBackward0", "torch::autograd::AccumulateGrad"]);
    expect(String(leaks)).toMatch(/40\.00 MiB held only through autograd graphs kept alive by 5 tensor/);
  });

  it("on the WebGPU device: the same accounting as the simulated device, at a quarter of the size", async () => {
    // At the article's size one step is 6 GFLOP of matmuls: minutes on a loaded 2-core machine with
    // lavapipe. A quarter of the size keeps every rule the lab shows (W and b with their grads, then
    // x, x.grad and the loss per step; 512-byte rounding), derived as in fixtures/labs.ts.
    await torch.gc();
    const n = 512;
    const m = 128;
    const { bad, good } = lossLeak(3, n, m);
    await torch.webgpu.synchronize();
    let sim: ReturnType<typeof lossLeak>;
    {
      using _sim = torch.cuda.simulate() as torch.autograd.Guard;
      sim = lossLeak(3, n, m);
    }
    const first = 2 * (n * n * 4 + n * 4) + 2 * m * n * 4 + 512; // 2 MiB + 4 KiB + 512 KiB + 512 B
    const step = 2 * m * n * 4 + 512;
    expect(bad).toEqual([first, first + step, first + 2 * step]);
    expect(good).toEqual([first, first, first]);
    expect([bad, good]).toEqual([sim.bad, sim.good]);
  });

  it("find_leaks names a module attribute that holds an activation (and its graph)", () => {
    using _sim = torch.cuda.simulate() as torch.autograd.Guard;
    const model = { cache: null as torch.Tensor | null };
    const W = torch.randn(1024, 1024, { requires_grad: true });
    {
      using x = torch.randn(256, 1024);
      // the cached activation keeps its graph: the ReLU output (saved by ReluBackward0; MulBackward0
      // saves nothing, since the number 2 needs no gradient, as in torch) and mm's saved input x (1 MiB)
      model.cache = torch.scope(() => x.matmul(W).relu().mul(2));
    }
    const report = torch.cuda.memory.find_leaks({ model });
    expect(report.leaks.map((l) => [l.holder, l.bytes])).toEqual([["model.cache", 2 * MiB]]);
    expect(report.leaks[0].chains.map((c) => c.join(" -> "))).toEqual(["MulBackward0 -> ReluBackward0", "MulBackward0 -> ReluBackward0 -> MmBackward0"]);
    torch.del(model.cache!, W);
    expect(torch.cuda.memory.find_leaks({ model }).total_bytes).toBe(0);
  });

  it("live_storages says who holds each storage", () => {
    using _sim = torch.cuda.simulate() as torch.autograd.Guard;
    const x = torch.randn(64, 64, { requires_grad: true });
    const h = x.exp();
    const v = h.getitem("0");
    const snap = torch.cuda.memory.live_storages().filter((s) => s.device.startsWith("sim"));
    const holdersOfH = snap.find((s) => s.holders.some((hh) => hh.description.includes("grad_fn=<ExpBackward0>")))!;
    expect(holdersOfH.category).toBe("activation");
    expect(holdersOfH.holders.map((hh) => hh.kind).sort()).toEqual(["saved", "tensor", "view"]);
    expect(holdersOfH.holders.find((hh) => hh.kind === "saved")!.description).toBe("saved for backward by ExpBackward0");
    torch.del(x, h, v);
  });
});

describe("the article's 80-layer model on a simulated 80 GiB device", () => {
  // DeepBlock(dim): linear2(gelu(linear1(x))) + x, 80 blocks, 24576 tokens of dim 4096. Parameters:
  // 80 x 2 x (4096^2 + 4096) x 4 B = 10 GiB; activations saved per block (x, linear1's output, GELU's
  // output) = 3 x 384 MiB, so 80 blocks need 90 GiB: out of memory. Checkpointing keeps only each
  // block's input (384 MiB), 30 GiB in all.
  const D = 4096;
  const T = 24576;
  const L = 80;

  // Made in one scope, as a module's constructor makes its parameters: 320 separate user-level
  // allocations would each set a new peak, and each would first run a full collection to look for
  // garbage (memory/lifetime.ts), seconds of a loaded machine's time that this lab is not about.
  function model() {
    return torch.scope(() =>
      Array.from({ length: L }, () => [
        torch.empty(D, D, { requires_grad: true }),
        torch.empty(D, { requires_grad: true }),
        torch.empty(D, D, { requires_grad: true }),
        torch.empty(D, { requires_grad: true }),
      ]),
    );
  }
  const block = (p: torch.Tensor[]) => (x: torch.Tensor) => torch.scope(() => F.linear(F.gelu(F.linear(x, p[0], p[1])), p[2], p[3]).add(x));

  it("runs out of memory without checkpointing, in PyTorch's words, and stays usable", () => {
    using _sim = torch.cuda.simulate({ total_memory: 80 * 2 ** 30 }) as torch.autograd.Guard;
    const params = model();
    const before = torch.cuda.memory_allocated();
    const x = torch.randn(T, D, { requires_grad: true });
    let err: Error | null = null;
    try {
      torch.scope(() => {
        let h = x;
        for (const p of params) h = block(p)(h);
        return h.sum();
      });
    } catch (e) {
      err = e as Error;
    }
    expect(err).toBeInstanceOf(torch.OutOfMemoryError);
    expect(err!.message).toMatch(/^WebGPU \(simulated\) out of memory\. Tried to allocate 384\.00 MiB\. GPU 0 has a total capacity of 80\.00 GiB of which/);
    x.dispose();
    expect(torch.cuda.memory_allocated()).toBe(before); // the scope released every layer's activations
    torch.del(...params.flat());
  });

  it("fits with full checkpointing (forward and backward)", () => {
    using _sim = torch.cuda.simulate({ total_memory: 80 * 2 ** 30 }) as torch.autograd.Guard;
    const params = model();
    const x = torch.randn(T, D, { requires_grad: true });
    torch.cuda.reset_peak_memory_stats();
    const loss = torch.scope(() => {
      let h = x;
      for (const p of params) h = torch.utils.checkpoint.checkpoint(block(p), h, { use_reentrant: false });
      return h.sum();
    });
    const afterForward = torch.cuda.memory_allocated();
    // parameters 10 GiB + 80 block inputs (x and 79 block outputs, 384 MiB each) + the loss; the last
    // block's output is not saved (SumBackward0 keeps only sizes), so it died with the scope
    expect(afterForward).toBe(80 * 2 * (D * D + D) * 4 + 80 * T * D * 4 + 512);
    loss.backward();
    expect(torch.cuda.max_memory_allocated()).toBeLessThan(80 * 2 ** 30);
    expect(params[0][0].grad!.shape).toEqual([D, D]);
    torch.del(loss, x, ...params.flat());
  });
});
