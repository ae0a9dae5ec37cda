// torch.viz.stepper: what it records of a backward pass agrees with the engine's own trace and with
// the allocator, the drawing of each step marks the right node, and wrong input is refused in
// PyTorch's words. (The widget itself: test/kernel/widgets.test.ts and the browser tier.)
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";

const MiB = 2 ** 20;

function mlp() {
  const x = torch.randn(64, 256);
  const W1 = torch.randn(256, 256, { requires_grad: true });
  const W2 = torch.randn(256, 256, { requires_grad: true });
  return { x, W1, W2, loss: () => x.matmul(W1).relu().matmul(W2).relu().sum() };
}

describe("torch.viz.stepper", () => {
  it("records the steps engine_trace shows: same order, releases and bytes freed", () => {
    const a = mlp();
    const trace = torch.viz.engine_trace(torch.autograd.trace(() => a.loss().backward()));
    a.W1.grad = null;
    a.W2.grad = null;
    const st = torch.viz.stepper(a.loss(), { params: { W1: a.W1, W2: a.W2 } });
    const rec = st.recording;
    expect(st.steps).toBe(trace.steps.length);
    expect(rec.steps.map((s) => s.name.split(" ")[0])).toEqual(trace.steps.map((s) => s.node));
    expect(rec.steps.map((s) => s.released)).toEqual(trace.steps.map((s) => s.released));
    expect(rec.steps.map((s) => s.bytes_freed)).toEqual(trace.steps.map((s) => s.bytes_freed));
    // the leaves carry their names, and the gradients went where the engine sent them
    expect(rec.steps.filter((s) => s.name.startsWith("AccumulateGrad")).map((s) => s.name)).toEqual(["AccumulateGrad (W2)", "AccumulateGrad (W1)"]);
    expect((a.W1.grad as torch.Tensor | null)?.shape).toEqual([256, 256]);
  });

  it("memory: the figure before backward, after each step and each step's peak, from the allocator", () => {
    const { run } = torch.cuda.simulate({ total_memory: 8 * 2 ** 30 }, () => {
      const w1 = torch.randn(1024, 1024, { requires_grad: true });
      const w2 = torch.randn(1024, 1024, { requires_grad: true });
      const x = torch.randn(512, 1024, { requires_grad: true });
      const h1 = torch.matmul(x, w1);
      const h2 = torch.nn.functional.gelu(h1);
      const out = torch.matmul(h2, w2);
      const loss = out.sum();
      const before = torch.cuda.memory_allocated();
      const st = torch.viz.stepper(loss, { params: { w1, w2, x } });
      const after = torch.cuda.memory_allocated();
      const peak = torch.cuda.max_memory_allocated();
      void h1;
      void h2;
      return { run: { st, before, after, peak } };
    });
    const { st, before, after, peak } = run;
    expect(st.memory_allocated(0)).toBe(before);
    expect(st.memory_allocated(st.steps)).toBe(after);
    // the same arithmetic as notebook 06 at a quarter of the size: 4 MiB weights, 2 MiB activations
    expect(after - before).toBe(4 * MiB + 4 * MiB + 2 * MiB);
    const peaks = st.recording.steps.map((s) => s.mem_peak);
    expect(Math.max(...peaks)).toBe(peak);
    expect(st.recording.steps.find((s) => s.mem_peak === peak)?.name).toBe("MmBackward0");
  });

  it("each frame's drawing highlights the node that runs, strikes out what it released, keeps one layout", () => {
    const a = mlp();
    const st = torch.viz.stepper(a.loss(), { params: { W1: a.W1, W2: a.W2 } });
    const fill = (dot: string) => dot.split("\n").filter((l) => l.includes('fillcolor="#ffd54f"'));
    expect(fill(st.dot(0))).toEqual([]);
    for (let f = 1; f <= st.steps; f++) {
      const running = fill(st.dot(f));
      expect(running).toHaveLength(1);
      expect(running[0]).toContain(st.recording.steps[f - 1].node);
    }
    // released at step 2 (ReluBackward0's result): plain before, struck out from then on
    const relu = st.recording.steps[1];
    expect(relu.released).toEqual(["_saved_result"]);
    const box = (f: number) =>
      st
        .dot(f)
        .split("\n")
        .find((l) => l.startsWith(`\t${relu.node}_s0 [`))!;
    expect(box(1)).not.toContain("<S>");
    expect(box(2)).toContain("<S>");
    expect(box(st.steps)).toContain("<S>");
    // labels are the same text in every frame (only colours change): Graphviz lays each out alike
    const text = (f: number) =>
      st.dot(f).replace(/(fill|font)?color="[^"]*"|COLOR="[^"]*"|<\/?S>|penwidth=[\d.]+|style="[^"]*"|fillcolor=\w+|fontcolor=\w+|color=\w+/g, "");
    expect(new Set(Array.from({ length: st.steps + 1 }, (_, f) => text(f).replace(/\s+/g, ""))).size).toBe(1);
    expect(st.caption(3)).toMatch(/^Step 3 of 7: MmBackward0 \(\d+\) runs .*\(frees nothing: still held elsewhere\)/);
  });

  it("tells apart two nodes of one name, and an outer autograd.trace still sees the pass", () => {
    const x = torch.randn(4, { requires_grad: true });
    let st: ReturnType<typeof torch.viz.stepper> | null = null;
    const events = torch.autograd.trace(() => {
      st = torch.viz.stepper(x.mul(2).mul(3).sum());
    });
    const muls = st!.recording.steps.filter((s) => s.name === "MulBackward0");
    expect(muls).toHaveLength(2);
    expect(new Set(muls.map((s) => s.node)).size).toBe(2);
    expect(events.filter((e) => e.step === "apply").length).toBe(st!.steps);
  });

  it("retain_graph keeps every saved tensor; backward can run again", () => {
    const a = mlp();
    const loss = a.loss();
    const st = torch.viz.stepper(loss, { retain_graph: true });
    expect(st.recording.steps.every((s) => s.released.length === 0)).toBe(true);
    expect(() => loss.backward()).not.toThrow();
  });

  it("wrong input is refused in PyTorch's words", () => {
    expect(() => torch.viz.stepper(torch.ones(2).sum())).toThrow("element 0 of tensors does not require grad and does not have a grad_fn");
    expect(() => torch.viz.stepper(3 as never)).toThrow("stepper(loss): loss must be a Tensor, not number");
    const a = mlp();
    expect(() => torch.viz.stepper(a.loss(), { retain_grahp: true } as never)).toThrow("stepper() got an unexpected keyword argument 'retain_grahp'");
    // a second stepper on a freed graph fails as a second backward does
    const loss = a.loss();
    torch.viz.stepper(loss);
    expect(() => torch.viz.stepper(loss)).toThrow(/Trying to backward through the graph a second time/);
    expect(() => torch.viz.stepper(a.loss()).dot(99)).toThrow("step 99 out of range: this backward has steps 0 to 7");
  });

  it("outside a kernel: no widget, and the display is the static table and drawing", async () => {
    const a = mlp();
    const st = torch.viz.stepper(a.loss());
    const b = (await (st as any)[Symbol.for("Jupyter.display")]()) as Record<string, string>;
    expect(Object.keys(b).sort()).toEqual(["text/html", "text/plain"]);
    expect(b["text/plain"]).toContain("7 steps of backward");
    expect(b["text/html"]).toContain("<picture");
    expect(b["text/html"].match(/gradlab-membar"/g)).toHaveLength(8);
    expect(st.slider).toBeNull();
  });
});
