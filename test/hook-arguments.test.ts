// What a backward hook is given is the hook's to keep, as in PyTorch (`grads.append(g)` in a hook is
// how a student records gradients): the runtime disposed the very handles it gave hooks once backward
// used them, so a kept gradient threw "was disposed" at its next use. Each hook (a tensor's, a node's,
// a module's) now gets handles of its own; one that keeps nothing costs no collection in a cell.
import { beforeEach, describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";
import { reclaimStats } from "../src/memory/lifetime.ts";
import { runCell } from "./helpers/cells.ts";

const values = async (t: torch.Tensor) => Array.from((await t.tolist()) as number[]);
const c = [1, 2, 3, 4];

/** y = x·2 and loss = sum(y·c): the gradient reaching y is c, a tensor of its own (16 bytes, one 512-byte block). */
function graph() {
  const x = torch.ones(4, { requires_grad: true });
  const y = x.mul(2);
  return { x, y, loss: () => y.mul(torch.tensor(c)).sum() };
}

describe("a hook keeps what it is given (script)", () => {
  beforeEach(() => torch.cuda.reset_peak_memory_stats());

  it("a tensor hook that stores the gradient: readable after backward, and its memory stays until dropped", async () => {
    const base = torch.cuda.memory_allocated();
    const kept: torch.Tensor[] = [];
    // in a function of its own: a suspended test function's registers would keep x and y reachable
    (() => {
      const { y, loss } = graph();
      y.register_hook((g) => void kept.push(g));
      loss().backward();
    })();
    // x, y and their graph are gone; the stored gradient (one block) is what is left, as in PyTorch
    expect(torch.cuda.memory_allocated() - base).toBe(512);
    expect(await values(kept[0])).toEqual(c);
    kept.length = 0;
    expect(torch.cuda.memory_allocated()).toBe(base);
  });

  it("a tensor hook that returns a gradient it also stores: the new gradient flows on and stays readable", async () => {
    const kept: torch.Tensor[] = [];
    const { x, y, loss } = graph();
    y.register_hook((g) => {
      const doubled = g.mul(2);
      kept.push(g, doubled);
      return doubled;
    });
    loss().backward();
    expect(await values(x.grad!)).toEqual(c.map((v) => v * 4));
    expect(await values(kept[0])).toEqual(c);
    expect(await values(kept[1])).toEqual(c.map((v) => v * 2));
  });

  it("grad_fn.register_hook and register_prehook: the gradients they store stay readable", async () => {
    const { x, y, loss } = graph();
    const pre: Array<torch.Tensor | null> = [];
    const post: Array<torch.Tensor | null> = [];
    y.grad_fn!.register_prehook((gradOutputs) => void pre.push(...gradOutputs));
    y.grad_fn!.register_hook((gradInputs, gradOutputs) => void post.push(...gradInputs, ...gradOutputs));
    loss().backward();
    expect(await values(pre[0]!)).toEqual(c);
    // grad_inputs (x's, and none for the constant 2), then grad_outputs
    expect(await values(post[0]!)).toEqual(c.map((v) => v * 2));
    expect(post[1]).toBeNull();
    expect(await values(post[2]!)).toEqual(c);
    expect(await values(x.grad!)).toEqual(c.map((v) => v * 2));
  });

  it("a module's full backward hooks: grad_input and grad_output they store stay readable", async () => {
    const lin = new torch.nn.Linear(4, 2);
    torch.nn.init.ones_(lin.weight);
    const seen: Array<torch.Tensor | null> = [];
    lin.register_full_backward_pre_hook((_m, go) => void seen.push(...go));
    lin.register_full_backward_hook((_m, gi, go) => void seen.push(...gi, ...go));
    const x = torch.ones(1, 4, { requires_grad: true });
    lin(x).sum().backward();
    expect(seen.map((g) => g?.shape)).toEqual([
      [1, 2],
      [1, 4],
      [1, 2],
    ]);
    expect(await values(seen[1]!.flatten())).toEqual([2, 2, 2, 2]);
    expect(await values(seen[2]!.flatten())).toEqual([1, 1]);
  });
});

describe("a hook a cell defines", () => {
  const cell = (src: string) => runCell(src, { torch });
  beforeEach(async () => {
    await cell("kept = []; memory = undefined;");
  });

  it("one that keeps nothing: its gradient is freed when it returns, without a collection (a browser has none)", async () => {
    // the hooks are an earlier cell's functions: a closure inside the block would leave the block's
    // tensors to the collector (the transform cannot tell what a closure keeps)
    await cell(`
      function shapeHook(g) { kept.push(g.shape.length); }
      function preHook(go) { kept.push(go.length); }
      function countHook(gi, go) { kept.push(gi.length + go.length); }
    `);
    torch.cuda.memory_allocated(); // collects what earlier tests left, before counting
    const { handles } = reclaimStats;
    await cell(`{
      const x = torch.ones(4, { requires_grad: true });
      const y = x.mul(2);
      y.register_hook(shapeHook);
      y.grad_fn.register_prehook(preHook);
      y.grad_fn.register_hook(countHook);
      memory = torch.cuda.memory_allocated();
      y.mul(torch.tensor([1, 2, 3, 4])).sum().backward();
      kept.push(torch.cuda.memory_allocated() - memory);
    }`);
    // x's gradient (one block) is all backward added; the hooks' handles went as they returned
    expect(await cell("kept")).toEqual([1, 1, 3, 512]);
    expect(reclaimStats.handles - handles).toBe(0);
  });

  it("one that pushes its gradient into a list: the gradient stays readable", async () => {
    await cell(`{
      const x = torch.ones(4, { requires_grad: true });
      const y = x.mul(2);
      y.register_hook((g) => { kept.push(g); });
      y.mul(torch.tensor([1, 2, 3, 4])).sum().backward();
    }`);
    expect(await cell("Array.from(await kept[0].tolist())")).toEqual(c);
  });
  it("one that returns a tensor made before it ran: the tensor stays readable", async () => {
    await cell(`
      const xq5 = torch.ones(3, { requires_grad: true });
      const pre5 = torch.autograd.grad(xq5.mul(7).sum(), [xq5]);
      { const y = xq5.mul(2); y.register_hook(() => pre5[0]); y.sum().backward(); }
    `);
    expect(await cell("[Array.from(await pre5[0].tolist()), Array.from(await xq5.grad.tolist())]")).toEqual([
      [7, 7, 7],
      [14, 14, 14],
    ]);
  });
});
