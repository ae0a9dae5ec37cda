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
// Each PyTorch-style figure is measured twice: as a plain script (the collector alone finds what was
// dropped) and as a notebook cell, through the kernel's transform (test/helpers/cells.ts), which frees
// what a variable alone held when it lets go (kernel/executor/ownership.ts): what a student pays.
// Usage: npx tsx bench/lifecycle.ts   (STEPS, ROUNDS override)
import { readFileSync } from "node:fs";
import * as torch from "../src/index.ts";
import { DeepBlock } from "./deep-block.ts";
import { reclaimStats } from "../src/memory/lifetime.ts";
import { runCell } from "../test/helpers/cells.ts";

const { nn } = torch;
const STEPS = Number(process.env.STEPS ?? 10);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

interface Setup {
  name: string;
  /** `cell`: with the classes a cell defines (the kernel's transform sees their code) */
  model: (cell: boolean) => torch.nn.Module;
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

// The PyTorch-style step as a notebook cell defines it (the model's classes too: deep-block.ts's source).
const DEEP_BLOCK = readFileSync(new URL("./deep-block.ts", import.meta.url), "utf8")
  .replace(/^import .*$/m, "")
  .replace("export class", "class");
const CELL_STEP = `
function pytorchStyle(model, opt, input) {
  opt.zero_grad({ set_to_none: true });
  const x = input();
  const loss = model(x).pow(2).mean();
  loss.backward();
  opt.step();
}`;

async function measure(setup: Setup, step: typeof explicit | "cell") {
  const model = setup.model(step === "cell");
  const opt = new torch.optim.AdamW(model.parameters(), { lr: 1e-3 });
  const g = { torch, model, opt, input: setup.input, STEPS };
  if (step === "cell") await runCell(CELL_STEP, g);
  const run =
    step === "cell"
      ? () => runCell("for (let i = 0; i < STEPS; i++) pytorchStyle(model, opt, input);", g)
      : () => {
          for (let i = 0; i < STEPS; i++) step(model, opt, setup.input);
        };
  if (step === "cell") await runCell("pytorchStyle(model, opt, input)", g);
  else step(model, opt, setup.input); // warm-up: optimizer state, pipelines
  await setup.sync();
  const r0 = { ...reclaimStats };
  const t0 = performance.now();
  await run();
  await setup.sync();
  const ms = (performance.now() - t0) / STEPS;
  const after = torch.cuda.memory_allocated();
  // runCell's globals outlive the round (as a notebook's names do): let the next round's base go without them
  if (step === "cell") await runCell("model = opt = input = undefined;", g);
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
    model: (cell) => new nn.Sequential(...Array.from({ length: 20 }, () => new (cell ? cellDeepBlock : DeepBlock)(2048))),
    input: () => torch.randn(8192, 2048),
    sync: async () => {},
  },
];

await runCell(DEEP_BLOCK, { torch });
const cellDeepBlock = (globalThis as unknown as { DeepBlock: typeof DeepBlock }).DeepBlock;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `steps per round ${STEPS}, rounds ${ROUNDS} (medians); reclaiming ${torch.cuda.memory.reclaims_synchronously() ? "synchronously" : "NOT available"}`,
);
console.log(
  "| model | explicit ms/step | PyTorch-style ms/step, script | ratio | PyTorch-style ms/step, cell | ratio | reclaims/step, script / cell | GC ms/step, script / cell | memory_allocated after (all) |",
);
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---|");
for (const s of setups) {
  const runs: Record<"explicit" | "pytorch" | "cell", Array<Awaited<ReturnType<typeof measure>>>> = { explicit: [], pytorch: [], cell: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const inSim = s.name.endsWith("simulated");
    for (const [k, fn] of [
      ["explicit", explicit],
      ["pytorch", pytorchStyle],
      ["cell", "cell"],
    ] as const) {
      const base = torch.cuda.memory_allocated();
      const m = inSim ? await (torch.cuda.simulate({ total_memory: 80 * 2 ** 30 }, () => measure(s, fn)) as ReturnType<typeof measure>) : await measure(s, fn);
      runs[k].push({ ...m, after: m.after - (inSim ? 0 : base) });
      await torch.gc();
    }
  }
  const e = median(runs.explicit.map((m) => m.ms));
  const p = median(runs.pytorch.map((m) => m.ms));
  const c = median(runs.cell.map((m) => m.ms));
  const same = runs.explicit.every((m, i) => m.after === runs.pytorch[i].after && m.after === runs.cell[i].after) ? `${runs.explicit[0].after} B` : "DIFFERENT";
  const both = (k: "reclaims" | "gcMs") => `${median(runs.pytorch.map((m) => m[k])).toFixed(1)} / ${median(runs.cell.map((m) => m[k])).toFixed(1)}`;
  console.log(
    `| ${s.name} | ${e.toFixed(1)} | ${p.toFixed(1)} | ${(p / e).toFixed(2)}× | ${c.toFixed(1)} | ${(c / e).toFixed(2)}× | ${both("reclaims")} | ${both("gcMs")} | ${same} |`,
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
/** The same chain not disposed, as a cell: `let y = x.add(0)`, then `for (...) y = y.add(1)`. */
async function chainInCell(elems: number) {
  const g = { torch, ELEMS: elems, CHAIN, timing: {} as { ms: number; r0: number; gc0: number } };
  await runCell("const x = torch.ones(ELEMS); let y = x.add(0); await torch.webgpu.synchronize();", g);
  await runCell(
    `timing.r0 = reclaims(); const t0 = performance.now();
     for (let i = 0; i < CHAIN; i++) y = y.add(1);
     await torch.webgpu.synchronize(); timing.ms = performance.now() - t0;`,
    {
      ...g,
      reclaims: () => {
        g.timing.gc0 = reclaimStats.ms;
        return reclaimStats.runs;
      },
    },
  );
  const out = {
    usPerOp: (g.timing.ms * 1000) / CHAIN,
    reclaims: reclaimStats.runs - g.timing.r0,
    gcMs: reclaimStats.ms - g.timing.gc0,
    peak: torch.cuda.max_memory_allocated(),
  };
  await runCell("x = undefined; y = undefined;", g);
  await torch.gc();
  return out;
}
console.log(`\nop chain y = y.add(1), ${CHAIN} ops, medians of ${ROUNDS} rounds`);
console.log(
  "| elements | disposed µs/op | not disposed µs/op, script | ratio | not disposed µs/op, cell | ratio | full collections per 1,000 ops, script / cell | GC ms per op, script | max_memory_allocated (all) |",
);
console.log("|---:|---:|---:|---:|---:|---:|---:|---:|---|");
for (const elems of [256, 256 * 1024]) {
  const runs: Record<"d" | "p" | "c", Array<Awaited<ReturnType<typeof chain>>>> = { d: [], p: [], c: [] };
  for (let r = 0; r < ROUNDS; r++) {
    torch.cuda.reset_peak_memory_stats();
    runs.d.push(await chain(true, elems));
    torch.cuda.reset_peak_memory_stats();
    runs.p.push(await chain(false, elems));
    torch.cuda.reset_peak_memory_stats();
    runs.c.push(await chainInCell(elems));
  }
  const d = median(runs.d.map((m) => m.usPerOp));
  const p = median(runs.p.map((m) => m.usPerOp));
  const c = median(runs.c.map((m) => m.usPerOp));
  const same = runs.d.every((m, i) => m.peak === runs.p[i].peak && m.peak === runs.c[i].peak) ? `${runs.d[0].peak} B` : "DIFFERENT";
  const per1000 = (k: "p" | "c") => ((median(runs[k].map((m) => m.reclaims)) * 1000) / CHAIN).toFixed(0);
  console.log(
    `| ${elems} | ${d.toFixed(0)} | ${p.toFixed(0)} | ${(p / d).toFixed(1)}× | ${c.toFixed(0)} | ${(c / d).toFixed(2)}× | ${per1000("p")} / ${per1000("c")} | ${(median(runs.p.map((m) => m.gcMs)) / CHAIN).toFixed(2)} | ${same} |`,
  );
}
process.exit(0);
