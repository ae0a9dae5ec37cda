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
// Each PyTorch-style figure is measured three ways: as a plain script (bench/lifecycle-steps.ts: the
// collector alone finds what was dropped), as the same script module loaded through gradlab/register's
// hooks (kernel/register.ts, as `gradlab run script.ts` runs one), and as a notebook cell, through the
// kernel's transform (test/helpers/cells.ts), which frees what a variable alone held when it lets go
// (kernel/executor/ownership.ts): what a student pays.
// Usage: npx tsx bench/lifecycle.ts   (STEPS, ROUNDS override)
import { readFileSync } from "node:fs";
import * as torch from "../src/index.ts";
import { DeepBlock } from "./deep-block.ts";
import { reclaimStats } from "../src/memory/lifetime.ts";
import { runCell } from "../test/helpers/cells.ts";
import * as plain from "./lifecycle-steps.ts";

// the same module again, through the hooks (a query makes it a module of its own)
await import("../kernel/register.ts");
const throughHooks = (file: string) => import(new URL(`./${file}?registered`, import.meta.url).href);
const registered: typeof plain = await throughHooks("lifecycle-steps.ts");

const { nn } = torch;
const STEPS = Number(process.env.STEPS ?? 10);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

/** How the PyTorch-style step runs: a plain script, the same module through gradlab/register, a cell. */
type Way = "script" | "registered" | "cell";
interface Setup {
  name: string;
  /** with the classes a plain script, a registered module or a cell defines (the transforms see their code) */
  model: (way: Way) => torch.nn.Module;
  input: () => torch.Tensor;
  sync: () => Promise<void>;
}

// The same program as lifecycle-steps.ts's pytorchStyle; only how tensors are let go differs.
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

async function measure(setup: Setup, way: Way | "explicit") {
  const model = setup.model(way === "explicit" ? "script" : way);
  const opt = new torch.optim.AdamW(model.parameters(), { lr: 1e-3 });
  const g = { torch, model, opt, input: setup.input, STEPS };
  if (way === "cell") await runCell(CELL_STEP, g);
  const step = way === "explicit" ? explicit : way === "registered" ? registered.pytorchStyle : plain.pytorchStyle;
  const run =
    way === "cell"
      ? () => runCell("for (let i = 0; i < STEPS; i++) pytorchStyle(model, opt, input);", g)
      : () => {
          for (let i = 0; i < STEPS; i++) step(model, opt, setup.input);
        };
  if (way === "cell") await runCell("pytorchStyle(model, opt, input)", g);
  else step(model, opt, setup.input); // warm-up: optimizer state, pipelines
  await setup.sync();
  const r0 = { ...reclaimStats };
  const t0 = performance.now();
  await run();
  await setup.sync();
  const ms = (performance.now() - t0) / STEPS;
  const after = torch.cuda.memory_allocated();
  // runCell's globals outlive the round (as a notebook's names do): let the next round's base go without them
  if (way === "cell") await runCell("model = opt = input = undefined;", g);
  return { ms, reclaims: (reclaimStats.runs - r0.runs) / STEPS, gcMs: (reclaimStats.ms - r0.ms) / STEPS, after };
}

await runCell(DEEP_BLOCK, { torch });
const cellDeepBlock = (globalThis as unknown as { DeepBlock: typeof DeepBlock }).DeepBlock;
const { DeepBlock: registeredDeepBlock }: { DeepBlock: typeof DeepBlock } = await throughHooks("deep-block.ts");
const deepBlock = { script: DeepBlock, registered: registeredDeepBlock, cell: cellDeepBlock };

const setups: Setup[] = [
  {
    name: "notebook 06 MLP, WebGPU",
    model: () => new nn.Sequential(new nn.Linear(256, 512), new nn.GELU(), new nn.Linear(512, 256)),
    input: () => torch.randn(128, 256),
    sync: () => torch.webgpu.synchronize(),
  },
  {
    name: "DeepNetwork 20×2048, 8192 tokens, simulated",
    model: (way) => new nn.Sequential(...Array.from({ length: 20 }, () => new deepBlock[way](2048))),
    input: () => torch.randn(8192, 2048),
    sync: async () => {},
  },
];

const WAYS = ["explicit", "script", "registered", "cell"] as const;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `steps per round ${STEPS}, rounds ${ROUNDS} (medians); reclaiming ${torch.cuda.memory.reclaims_synchronously() ? "synchronously" : "NOT available"}`,
);
console.log(
  "| model | explicit ms/step | PyTorch-style ms/step: script | ratio | script + gradlab/register | ratio | cell | ratio | reclaims/step: script / registered / cell | GC ms/step: script / registered / cell | memory_allocated after (all) |",
);
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
for (const s of setups) {
  const runs: Record<(typeof WAYS)[number], Array<Awaited<ReturnType<typeof measure>>>> = { explicit: [], script: [], registered: [], cell: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const inSim = s.name.endsWith("simulated");
    for (const way of WAYS) {
      const base = torch.cuda.memory_allocated();
      const m = inSim
        ? await (torch.cuda.simulate({ total_memory: 80 * 2 ** 30 }, () => measure(s, way)) as ReturnType<typeof measure>)
        : await measure(s, way);
      runs[way].push({ ...m, after: m.after - (inSim ? 0 : base) });
      await torch.gc();
    }
  }
  const ms = (way: (typeof WAYS)[number]) => median(runs[way].map((m) => m.ms));
  const e = ms("explicit");
  const same = WAYS.every((w) => runs[w].every((m, i) => m.after === runs.explicit[i].after)) ? `${runs.explicit[0].after} B` : "DIFFERENT";
  const all = (k: "reclaims" | "gcMs") => (["script", "registered", "cell"] as const).map((w) => median(runs[w].map((m) => m[k])).toFixed(1)).join(" / ");
  const cols = (["script", "registered", "cell"] as const).map((w) => `${ms(w).toFixed(1)} | ${(ms(w) / e).toFixed(2)}×`).join(" | ");
  console.log(`| ${s.name} | ${e.toFixed(1)} | ${cols} | ${all("reclaims")} | ${all("gcMs")} | ${same} |`);
}

// The op chain of issue 20: `y = y.add(1)` 1,000 times on WebGPU, with and without dispose. Without it,
// each add that would set a new peak (or grow the reserved memory) first looks for garbage with a full
// collection: the previous y is garbage by then only if a collection says so.
const CHAIN = Number(process.env.CHAIN ?? 1000);
async function chain(way: "disposed" | "script" | "registered", elems: number) {
  const x = torch.ones(elems);
  await torch.webgpu.synchronize();
  const r0 = { ...reclaimStats };
  const t0 = performance.now();
  let y = x;
  if (way === "disposed")
    for (let i = 0; i < CHAIN; i++) {
      const z = y.add(1);
      if (y !== x) y.dispose();
      y = z;
    }
  else y = (way === "script" ? plain : registered).addChain(x, CHAIN);
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
  "| elements | disposed µs/op | not disposed µs/op: script | ratio | script + gradlab/register | ratio | cell | ratio | full collections per 1,000 ops: script / registered / cell | GC ms per op, script | max_memory_allocated (all) |",
);
console.log("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
for (const elems of [256, 256 * 1024]) {
  const runs: Record<"disposed" | "script" | "registered" | "cell", Array<Awaited<ReturnType<typeof chain>>>> = {
    disposed: [],
    script: [],
    registered: [],
    cell: [],
  };
  for (let r = 0; r < ROUNDS; r++) {
    for (const way of ["disposed", "script", "registered"] as const) {
      torch.cuda.reset_peak_memory_stats();
      runs[way].push(await chain(way, elems));
    }
    torch.cuda.reset_peak_memory_stats();
    runs.cell.push(await chainInCell(elems));
  }
  const us = (k: keyof typeof runs) => median(runs[k].map((m) => m.usPerOp));
  const d = us("disposed");
  const same = Object.values(runs).every((ms) => ms.every((m, i) => m.peak === runs.disposed[i].peak)) ? `${runs.disposed[0].peak} B` : "DIFFERENT";
  const per1000 = (k: keyof typeof runs) => ((median(runs[k].map((m) => m.reclaims)) * 1000) / CHAIN).toFixed(0);
  const cols = (["script", "registered", "cell"] as const).map((k) => `${us(k).toFixed(0)} | ${(us(k) / d).toFixed(2)}×`).join(" | ");
  console.log(
    `| ${elems} | ${d.toFixed(0)} | ${cols} | ${per1000("script")} / ${per1000("registered")} / ${per1000("cell")} | ${(median(runs.script.map((m) => m.gcMs)) / CHAIN).toFixed(2)} | ${same} |`,
  );
}
process.exit(0);
