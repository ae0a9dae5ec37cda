// Tensors a cell's variable alone holds are freed when the variable lets go of them, without a garbage
// collection (kernel/executor/ownership.ts, src/memory/ownership.ts): a chain of ops written the
// PyTorch way costs no collection per op, and the figures stay PyTorch's. And every way a student keeps
// a second reference (a list, an object, another variable, a closure, a function of an earlier cell, a
// generator, a pack hook) keeps the tensor usable: none of these may throw "was disposed".
import { beforeEach, describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";
import { reclaimStats } from "../src/memory/lifetime.ts";
import { runCell } from "./helpers/cells.ts";

/** Each tensor's sum, read in the cell (none of them may have been released). */
const sums = (...ts: torch.Tensor[]) => Promise.all(ts.map((t) => t.sum().item()));
const cell = (src: string) => runCell(src, { torch, F: torch.nn.functional, sums });
/** Full collections the runtime ran while `fn` ran. */
async function collections(fn: () => Promise<unknown>): Promise<number> {
  const before = reclaimStats.runs;
  await fn();
  return reclaimStats.runs - before;
}

describe("a variable's own tensor is freed when the variable lets go of it", () => {
  beforeEach(async () => {
    await cell("x = undefined; y = undefined; kept = undefined; memory = undefined;");
    torch.cuda.reset_peak_memory_stats();
  });

  it("a chain `y = y.add(1)` without dispose: PyTorch's figures, no collection per op", async () => {
    await cell("const x = torch.ones(256); let y = x;");
    const base = torch.cuda.memory_allocated();
    torch.cuda.reset_peak_memory_stats();
    const runs = await collections(() => cell("for (let i = 0; i < 300; i++) y = y.add(1);"));
    // x, y and the output of one add at the peak, as in PyTorch; y's old tensors are gone
    expect(torch.cuda.memory_allocated()).toBe(base + 1024);
    expect(torch.cuda.max_memory_allocated()).toBe(base + 2048);
    expect(await cell("await y.sum().item()")).toBe(256 * 301);
    // a collection per op before: 300; what remains are the figures' own (one per read above)
    expect(runs).toBeLessThan(10);
  });

  it("a method's receiver is evaluated once: a getter that computes a tensor runs once", async () => {
    // o.m(x) lends x and asks afterwards whether m keeps it; reading `o` again for that ran o's getters
    // twice, and a getter that computes (a matmul, here a mul) computed twice: an extra allocation
    await cell(`{
      class Scaled { constructor(t) { this.t = t; this.reads = 0 } get doubled() { this.reads++; return this.t.mul(2) } }
      const s = new Scaled(torch.ones(256));
      const w = torch.ones(256);
      memory = torch.cuda.memory_allocated();
      torch.cuda.reset_peak_memory_stats();
      const z = s.doubled.add(w);
      kept = [s.reads, torch.cuda.max_memory_allocated() - memory, await z.sum().item()];
    }`);
    // the getter's tensor and z at the peak, as in PyTorch
    expect(await cell("kept")).toEqual([1, 2048, 768]);
  });

  it("a call's argument that is a temporary is freed when the call returns, unless the callee kept it", async () => {
    await cell("const x = torch.ones(256);");
    const base = torch.cuda.memory_allocated();
    torch.cuda.reset_peak_memory_stats();
    const runs = await collections(() => cell("for (let i = 0; i < 50; i++) { const b = torch.relu(x.mul(2)); const c = F.mse_loss(b.add(1), x.sub(1)); }"));
    expect(torch.cuda.memory_allocated()).toBe(base);
    // b, b.add(1), x.sub(1), mse_loss's elementwise loss and its mean, as in PyTorch; nothing of an
    // earlier turn (x.mul(2) is gone before the second statement)
    expect(torch.cuda.max_memory_allocated()).toBe(base + 4 * 1024 + 512);
    // (what remains: the first turn's allocations each set a new peak, and a new peak reclaims first)
    expect(runs).toBeLessThan(10);
    // a function of the cell that keeps its argument, and one that returns it
    await cell(`
      kept = [];
      function remember(t) { kept.push(t); return 1; }
      function same(t) { return t; }
      remember(x.mul(3));
      const back = same(x.mul(4));
      memory = await sums(kept[0], back);`);
    expect(await cell("memory")).toEqual([768, 1024]);
  });

  it("a loop body's consts are freed at the end of each turn", async () => {
    await cell("const x = torch.ones(1024);");
    const base = torch.cuda.memory_allocated();
    const runs = await collections(() => cell("for (let i = 0; i < 50; i++) { const a = x.mul(2); const b = a.add(1); }"));
    expect(torch.cuda.memory_allocated()).toBe(base);
    expect(runs).toBeLessThan(5);
  });

  it("a tensor pushed into a list, put in an object or named twice stays usable", async () => {
    await cell(`
      const x = torch.ones(4);
      kept = [];
      let y = x.add(1);
      kept.push(y);
      y = y.mul(2);
      const o = { t: y };
      y = y.mul(2);
      let a = x.add(5);
      let b = a;
      a = a.mul(2);
      const m = torch.ones(2, 4).mul(x);
      const { values, indices } = m.max(0);
      let s = values;
      s = s.add(1);
    `);
    expect(await cell("sums(kept[0], o.t, y, b, values, indices, s)")).toEqual([8, 16, 32, 24, 4, 0, 8]);
  });

  it("a function of an earlier cell that keeps the global, a closure and a generator keep theirs", async () => {
    await cell(`
      kept = [];
      function snap() { kept.push(y); }
      function make() { const h = torch.ones(3).mul(3); return () => h; }
      function* steps() { let t = torch.ones(2); yield t; t = t.mul(2); yield t; }
    `);
    await cell(`
      y = torch.ones(2).add(1);
      snap();
      y = y.mul(10);
      const later = make();
      const both = [...steps()];
    `);
    expect(await cell("sums(kept[0], y, later(), both[0], both[1])")).toEqual([4, 40, 9, 2, 4]);
  });

  it("a function's local it returns is the caller's; the others are freed when it ends", async () => {
    await cell("const x = torch.ones(256);");
    const base = torch.cuda.memory_allocated();
    const runs = await collections(() =>
      cell(`
        function step(t) { const h = t.mul(2); const k = h.add(1); return k; }
        let z = step(x);
        for (let i = 0; i < 40; i++) z = step(z).mul(0.5);
        z = step(z);
      `),
    );
    expect(await cell("await z.sum().item()")).toBe(256 * 47);
    expect(torch.cuda.memory_allocated()).toBe(base + 1024);
    // step's h and the receiver step(z) go when they are done with, as in Python
    expect(runs).toBeLessThan(5);
  });

  it("a helper function that keeps its argument (a list, a closure, an async or generator function) keeps it", async () => {
    await cell(`
      memory = [];
      function remember(t) { memory.push(t); }
      function later(t) { return () => t; }
      async function slowly(t) { await null; return t; }
      function* again(t) { yield t; }
      function swap(t) { y = y.mul(2); return t.add(0); }
      y = torch.ones(2).add(1);
      remember(y);
      y = y.mul(2);
      const f = later(y);
      y = y.mul(2);
      const pending = slowly(y);
      y = y.mul(2);
      const it = again(y);
      y = y.mul(2);
      const same = swap(y);
    `);
    expect(await cell("sums(memory[0], f(), await pending, it.next().value, same, y)")).toEqual([4, 8, 16, 32, 64, 128]);
  });

  it("a model whose forward keeps its input keeps it", async () => {
    await cell(`
      class Recorder extends torch.nn.Module {
        seen = [];
        forward(x) { this.last = x; this.seen.push(x); return x.mul(2); }
      }
      const rec = new Recorder();
      let x = torch.ones(3).add(1);
      let out = rec(x);
      x = x.mul(3);
      out = rec(x);
      x = x.mul(3);
    `);
    expect(await cell("sums(rec.seen[0], rec.seen[1], rec.last, out, x)")).toEqual([6, 18, 18, 36, 54]);
  });

  it("a model's training step, written the PyTorch way, runs without a collection per step", async () => {
    await cell(`
      const model = new torch.nn.Sequential(new torch.nn.Linear(16, 32), new torch.nn.GELU(), new torch.nn.Linear(32, 16));
      const opt = new torch.optim.AdamW(model.parameters(), { lr: 1e-3 });
      function step() {
        opt.zero_grad({ set_to_none: true });
        const x = torch.randn(8, 16);
        const loss = model(x).pow(2).mean();
        loss.backward();
        opt.step();
      }
      step();
    `);
    const base = torch.cuda.memory_allocated();
    const runs = await collections(() => cell("for (let i = 0; i < 20; i++) step();"));
    expect(torch.cuda.memory_allocated()).toBe(base);
    expect(runs).toBeLessThan(5);
  });

  it("a saved-tensor pack hook that keeps the very tensor it is given: backward still works", async () => {
    await cell(`
      const w = torch.ones(3, { requires_grad: true });
      let h = w.mul(2);
      torch.autograd.graph.saved_tensors_hooks((t) => t, (t) => t, () => { loss = h.mul(h).sum(); });
      h = h.add(1);
      loss.backward();
    `);
    expect(await cell("Array.from(await w.grad.tolist())")).toEqual([8, 8, 8]);
  });

  it("a cell that assigns inside an expression or a loop's head leaves the tensors to the collector", async () => {
    await cell(`
      const x = torch.ones(2);
      let y = x.add(1);
      const first = (y = y.mul(2));
      for (let t = x.add(1), i = 0; i < 2; t = t.mul(2), i++) y = t;
    `);
    expect(await cell("sums(first, y)")).toEqual([8, 8]);
  });
});
