// Host memory (RSS) on lavapipe, where device memory is host memory, in one process:
//   1. 1 GiB of torch.ones in 64 MiB tensors, then dispose + empty_cache(): RSS before, at the peak and
//      after (issue 20's bar: back within 15% of before);
//   2. a training loop that never awaits (the 64-128-10 MLP with Adam of bench/sync-loop.ts): RSS at
//      steps 200, 500, 1000 and 2000, so the cost's scaling with the loop's length shows.
// Usage: npx tsx bench/host-memory.ts   (GIB, default 1; STEPS, default 1000)
import * as torch from "../src/index.ts";

const MiB = 2 ** 20;
const GIB = Number(process.env.GIB ?? 1);
const STEPS = Number(process.env.STEPS ?? 1000);
const rss = () => process.memoryUsage().rss / MiB;
const fmt = (v: number) => `${v.toFixed(0)} MiB`;

await torch.webgpu.init();
const idle = rss();
torch.ones(16).dispose(); // the fill kernel compiled once, so "before" differs from "after" by the tensors only
await torch.webgpu.synchronize();
await torch.gc();
const before = rss();
const ts: torch.Tensor[] = [];
for (let i = 0; i < (GIB * 1024) / 64; i++) ts.push(torch.ones(16 * MiB)); // 16 Mi floats = 64 MiB
await torch.webgpu.synchronize();
const peak = rss();
torch.del(...ts);
ts.length = 0;
torch.cuda.empty_cache();
await torch.webgpu.synchronize();
await torch.gc();
const after = rss();
console.log(
  `${GIB} GiB of torch.ones: RSS with the device idle ${fmt(idle)}, before ${fmt(before)}, with the tensors ${fmt(peak)}, after dispose + empty_cache ${fmt(after)} (${((after / before - 1) * 100).toFixed(1)}% over before; allocated ${torch.cuda.memory_allocated()}, reserved ${torch.cuda.memory_reserved()})`,
);

const { nn } = torch;
const model = new nn.Sequential(new nn.Linear(64, 128), new nn.ReLU(), new nn.Linear(128, 10));
const opt = new torch.optim.Adam(model.parameters(), { lr: 1e-3 });
const x = torch.randn(32, 64);
const y = torch.randn(32, 10);
const marks = new Set([100, 200, 500, 1000, 2000, STEPS]);
const row: string[] = [];
const t0 = performance.now();
for (let step = 1; step <= STEPS; step++) {
  opt.zero_grad();
  const loss = torch.nn.functional.mse_loss(model(x) as torch.Tensor, y);
  loss.backward();
  opt.step();
  if (marks.has(step)) {
    const m = process.memoryUsage();
    row.push(`step ${step}: RSS ${fmt(rss())} (V8 heap ${fmt(m.heapTotal / MiB)}, external ${fmt(m.external / MiB)})`);
  }
}
const ms = (performance.now() - t0) / STEPS;
await torch.webgpu.synchronize();
console.log(`training loop without await, ${ms.toFixed(1)} ms/step: ${row.join(", ")}`);
process.exit(0);
