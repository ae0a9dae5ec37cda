// What reclaiming unreachable tensors costs (src/memory/lifetime.ts). The same training step, written
// two ways, interleaved in one run:
//   - PyTorch-style: plain const, nothing disposed; the runtime reclaims dropped tensors (a full
//     collection + cleanupSome) before figures, new peaks and segment growth;
//   - explicit: `using` / torch.scope free every tensor deterministically (no collection needed).
// Each prints time per step, reclamations per step and their time, and memory_allocated after the
// step (it must be the same both ways: that is the point of reclaiming). Models: notebook 06's MLP
// (Linear 256→512, GELU, Linear 512→256, AdamW, batch 128) on WebGPU, and the article's 20-block
// DeepNetwork at full size (dim 2048, 8192 tokens) on a simulated device, where there is no compute
// and the collection's share is the largest.
// Usage: npx tsx bench/lifecycle.ts   (STEPS, ROUNDS override)
import * as torch from "../src/index.ts";
import { DeepBlock } from "./deep-block.ts";
import { reclaimStats } from "../src/memory/lifetime.ts";

const { nn } = torch;
const STEPS = Number(process.env.STEPS ?? 10);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

interface Setup {
  name: string;
  model: () => torch.nn.Module;
  input: () => torch.Tensor;
  sync: () => Promise<void>;
}

// Both step functions are the same program; only how tensors are let go differs.
function pytorchStyle(model: torch.nn.Module, opt: torch.optim.AdamW, input: () => torch.Tensor): void {
  opt.zero_grad({ set_to_none: true });
  const x = input();
  const loss = (model(x) as torch.Tensor).pow(2).mean();
  loss.backward();
  opt.step();
}
function explicit(model: torch.nn.Module, opt: torch.optim.AdamW, input: () => torch.Tensor): void {
  opt.zero_grad({ set_to_none: true });
  using x = input();
  using loss = torch.scope(() => (model(x) as torch.Tensor).pow(2).mean());
  loss.backward();
  opt.step();
}

async function measure(setup: Setup, step: typeof explicit) {
  const model = setup.model();
  const opt = new torch.optim.AdamW(model.parameters(), { lr: 1e-3 });
  step(model, opt, setup.input); // warm-up: optimizer state, pipelines
  await setup.sync();
  const r0 = { ...reclaimStats };
  const t0 = performance.now();
  for (let i = 0; i < STEPS; i++) step(model, opt, setup.input);
  await setup.sync();
  const ms = (performance.now() - t0) / STEPS;
  const after = torch.cuda.memory_allocated();
  return { ms, reclaims: (reclaimStats.runs - r0.runs) / STEPS, gcMs: (reclaimStats.ms - r0.ms) / STEPS, after };
}

const setups: Setup[] = [
  {
    name: "notebook 06 MLP, WebGPU",
    model: () => new nn.Sequential(new nn.Linear(256, 512), new nn.GELU(), new nn.Linear(512, 256)),
    input: () => torch.randn(128, 256),
    sync: () => torch.webgpu.synchronize(),
  },
  {
    name: "DeepNetwork 20×2048, 8192 tokens, simulated",
    model: () => new nn.Sequential(...Array.from({ length: 20 }, () => new DeepBlock(2048))),
    input: () => torch.randn(8192, 2048),
    sync: async () => {},
  },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `steps per round ${STEPS}, rounds ${ROUNDS} (medians); reclaiming ${torch.cuda.memory.reclaims_synchronously() ? "synchronously" : "NOT available"}`,
);
console.log("| model | explicit ms/step | PyTorch-style ms/step | ratio | reclaims/step | GC ms/step | memory_allocated after (both) |");
console.log("|---|---:|---:|---:|---:|---:|---|");
for (const s of setups) {
  const runs: Record<"explicit" | "pytorch", Array<Awaited<ReturnType<typeof measure>>>> = { explicit: [], pytorch: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const inSim = s.name.endsWith("simulated");
    for (const [k, fn] of [
      ["explicit", explicit],
      ["pytorch", pytorchStyle],
    ] as const) {
      const base = torch.cuda.memory_allocated();
      const m = inSim ? await (torch.cuda.simulate({ total_memory: 80 * 2 ** 30 }, () => measure(s, fn)) as ReturnType<typeof measure>) : await measure(s, fn);
      runs[k].push({ ...m, after: m.after - (inSim ? 0 : base) });
      await torch.gc();
    }
  }
  const e = median(runs.explicit.map((m) => m.ms));
  const p = median(runs.pytorch.map((m) => m.ms));
  const same = runs.explicit.every((m, i) => m.after === runs.pytorch[i].after) ? `${runs.explicit[0].after} B` : "DIFFERENT";
  console.log(
    `| ${s.name} | ${e.toFixed(1)} | ${p.toFixed(1)} | ${(p / e).toFixed(2)}× | ${median(runs.pytorch.map((m) => m.reclaims)).toFixed(1)} | ${median(runs.pytorch.map((m) => m.gcMs)).toFixed(1)} | ${same} |`,
  );
}

// The op chain of issue 20: `y = y.add(1)` 1,000 times on WebGPU, with and without dispose. Without it,
// each add that would set a new peak (or grow the reserved memory) first looks for garbage with a full
// collection: the previous y is garbage by then only if a collection says so.
const CHAIN = Number(process.env.CHAIN ?? 1000);
async function chain(disposeEach: boolean, elems: number) {
  const x = torch.ones(elems);
  let y = x.add(0);
  await torch.webgpu.synchronize();
  const r0 = { ...reclaimStats };
  const t0 = performance.now();
  for (let i = 0; i < CHAIN; i++) {
    const z = y.add(1);
    if (disposeEach) y.dispose();
    y = z;
  }
  await torch.webgpu.synchronize();
  const ms = performance.now() - t0;
  const peak = torch.cuda.max_memory_allocated();
  const out = { usPerOp: (ms * 1000) / CHAIN, reclaims: reclaimStats.runs - r0.runs, gcMs: reclaimStats.ms - r0.ms, peak };
  y.dispose();
  x.dispose();
  await torch.gc();
  return out;
}
console.log(`\nop chain y = y.add(1), ${CHAIN} ops, medians of ${ROUNDS} rounds`);
console.log("| elements | disposed µs/op | not disposed µs/op | ratio | full collections per 1,000 ops | GC ms per op | max_memory_allocated (both) |");
console.log("|---:|---:|---:|---:|---:|---:|---|");
for (const elems of [256, 256 * 1024]) {
  const runs: Record<"d" | "p", Array<Awaited<ReturnType<typeof chain>>>> = { d: [], p: [] };
  for (let r = 0; r < ROUNDS; r++) {
    torch.cuda.reset_peak_memory_stats();
    runs.d.push(await chain(true, elems));
    torch.cuda.reset_peak_memory_stats();
    runs.p.push(await chain(false, elems));
  }
  const d = median(runs.d.map((m) => m.usPerOp));
  const p = median(runs.p.map((m) => m.usPerOp));
  const same = runs.d.every((m, i) => m.peak === runs.p[i].peak) ? `${runs.d[0].peak} B` : "DIFFERENT";
  console.log(
    `| ${elems} | ${d.toFixed(0)} | ${p.toFixed(0)} | ${(p / d).toFixed(1)}× | ${((median(runs.p.map((m) => m.reclaims)) * 1000) / CHAIN).toFixed(0)} | ${(median(runs.p.map((m) => m.gcMs)) / CHAIN).toFixed(2)} | ${same} |`,
  );
}
process.exit(0);
