// A training loop that never awaits, against the same loop with an await every 10 steps, in the same
// run: time per step, live-heap growth per step (after a full collection), and the most commands the
// host held while the loop ran (device/scheduler.ts submits every 512). Model: the 64-128-10
// MLP, Adam, batch 32. Usage: npx tsx bench/sync-loop.ts   (STEPS, default 1000)
import * as torch from "../src/index.ts";
import { getHeapSpaceStatistics } from "node:v8";
import { pendingCommands } from "../src/device/scheduler.ts";

const STEPS = Number(process.env.STEPS ?? 1000);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc (npx tsx does not pass it: node --expose-gc --import tsx bench/sync-loop.ts)");

/** Bytes of V8's heap that hold compiled code (its code spaces): part of heapUsed, made once per function
 *  and tier, not per step. */
const codeBytes = () =>
  getHeapSpaceStatistics()
    .filter((s) => s.space_name.startsWith("code"))
    .reduce((n, s) => n + s.space_used_size, 0);

async function run(awaitEvery: number) {
  const { nn } = torch;
  const model = new nn.Sequential(new nn.Linear(64, 128), new nn.ReLU(), new nn.Linear(128, 10));
  const opt = new torch.optim.Adam(model.parameters(), { lr: 1e-3 });
  const x = torch.randn(32, 64);
  const y = torch.randn(32, 10);
  const step = () => {
    opt.zero_grad();
    const loss = torch.nn.functional.mse_loss(model(x) as torch.Tensor, y);
    loss.backward();
    opt.step();
  };
  step(); // warm-up: optimizer state, pipelines
  await torch.cuda.synchronize();
  gc!();
  const heap0 = process.memoryUsage().heapUsed;
  const code0 = codeBytes();
  let most = 0;
  const t0 = performance.now();
  for (let i = 1; i <= STEPS; i++) {
    step();
    most = Math.max(most, pendingCommands());
    if (awaitEvery && i % awaitEvery === 0) await torch.cuda.synchronize();
  }
  gc!(); // before any await: what the loop itself left on the heap
  const heap1 = process.memoryUsage().heapUsed;
  const code1 = codeBytes();
  await torch.cuda.synchronize();
  const ms = (performance.now() - t0) / STEPS;
  return { ms, kibPerStep: (heap1 - heap0) / STEPS / 1024, codeKibPerStep: (code1 - code0) / STEPS / 1024, most };
}

const os = await import("node:os");
console.log(
  `${STEPS} steps; load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
// The first loop in the process also pays for V8 compiling and tiering up the step's code (about
// 0.9 KiB per step over 1,000 steps, whichever variant runs first: measured with the order swapped), so
// the no-await loop runs twice: first, cold, as a student's first loop would; and again after the
// awaiting loop, so that the two compared below ran the same warm code.
const cold = await run(0);
const awaited = await run(10);
const plain = await run(0);
const row = (name: string, r: Awaited<ReturnType<typeof run>>) =>
  console.log(
    `${name.padEnd(34)} ${r.ms.toFixed(2).padStart(7)} ms/step  ${r.kibPerStep.toFixed(2).padStart(6)} KiB heap/step (${r.codeKibPerStep.toFixed(2)} of it compiled code)  ${String(r.most).padStart(4)} commands held at most`,
  );
row("no await, first in the process", cold);
row("await every 10 steps", awaited);
row("no await, after the awaiting loop", plain);
console.log(`no await / await every 10 (both warm): ${(plain.ms / awaited.ms).toFixed(2)}x time per step`);
