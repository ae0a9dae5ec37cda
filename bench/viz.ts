// torch.viz render times (issue 7: a 200-node graph or a 10,000-event timeline in under a second).
// Prints figures only; nothing here is pass/fail. Run: npx tsx bench/viz.ts
import * as torch from "../src/index.ts";
import * as viz from "../src/viz/index.ts";

const ms = (t0: number) => `${(performance.now() - t0).toFixed(1)} ms`;
async function time<T>(label: string, fn: () => T | Promise<T>): Promise<T> {
  const t0 = performance.now();
  const r = await fn();
  console.log(`${label.padEnd(48)} ${ms(t0)}`);
  return r;
}

// A graph of about 200 nodes on the simulated device (no values needed): a residual MLP-like chain.
using _sim = torch.cuda.simulate({ total_memory: 2 ** 34 }) as torch.autograd.Guard;
const x = torch.randn(16, 32, { requires_grad: true });
let h = x;
const params: Record<string, torch.Tensor> = { x };
for (let i = 0; i < 32; i++) {
  const w = torch.randn(32, 32, { requires_grad: true });
  const b = torch.randn(32, { requires_grad: true });
  params[`w${i}`] = w;
  params[`b${i}`] = b;
  h = h.matmul(w).add(b).relu().add(h).mul(0.5);
}
const loss = h.sum();
const g = viz.graph(loss, { show_saved: true, params });
console.log(`graph: ${g.nodes.length} nodes`);
await time("graph: text tree", () => g.text.length);
await time("graph: DOT", () => g.dot.length);
await time("graph: SVG, first (loads Graphviz wasm)", () => g.svg());
for (let i = 0; i < 3; i++) await time(`graph: whole bundle (fresh view) #${i + 1}`, () => viz.graph(loss, { show_saved: true, params }).bundle());
await time("grad_fn display bundle", () => (loss.grad_fn as any)[Symbol.for("Jupyter.display")]());

// A 10,000-event timeline (synthetic forward/backward/optimizer recording).
const ev: any[] = [];
const live: number[] = [];
const cats = ["activation", "autograd_temporary", "gradient", "optimizer_state"];
for (let i = 0; i < 10_000; i++) {
  const phase = i < 4000 ? "forward" : i < 8000 ? "backward" : "optimizer";
  const alloc = phase === "forward" || live.length === 0 || i % 3 !== 0;
  const id = alloc ? i : live.shift()!;
  if (alloc) live.push(i);
  ev.push({
    action: alloc ? "alloc" : "free",
    time_us: i,
    device: "sim",
    storage_id: 1e7 + id,
    size: 1024 * (1 + (id % 7)),
    requested: 0,
    addr: 0,
    op: null,
    node: null,
    phase,
    category: cats[id % 4],
    frames: [],
  });
}
await time("timeline 10k: series + spec + text", () => {
  const t = viz.memory_timeline(ev, { baseline: false });
  return [t.spec, t.text];
});
await time("timeline 10k: bundle, first (loads vega)", () => viz.memory_timeline(ev, { baseline: false }).bundle());
for (let i = 0; i < 3; i++) await time(`timeline 10k: bundle #${i + 1}`, () => viz.memory_timeline(ev, { baseline: false }).bundle());
await time("compare_runs (2 x 10k): bundle", () => viz.compare_runs({ a: ev, b: ev.slice(0, 6000) }, { baseline: false }).bundle());
