// Elementwise throughput (GB/s of operands read and written) at 1, 16 and 256 MiB, GradLab against
// tfjs-webgpu on the same Dawn adapter in the same run: contiguous a + b, a bias broadcast over rows
// (a[rows, 1024] + b[1024]), a strided (transposed) operand, and exp. Rounds are interleaved and the
// median kept: this machine's timings are noisy. Usage: npx tsx bench/elementwise.ts  (SIZES=1,16,256)
import * as torch from "../src/index.ts";
import { tfjsSetup } from "./tfjs.ts";

const MiB = 2 ** 20;
const SIZES = (process.env.SIZES ?? "1,16,256").split(",").map(Number);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Milliseconds per call of `step` (`reps` calls, then one wait for the device). */
async function timeIt(reps: number, step: () => void, wait: () => Promise<void>): Promise<number> {
  step();
  await wait();
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) step();
  await wait();
  return (performance.now() - t0) / reps;
}

type Case = "contiguous" | "bias" | "strided" | "exp";
const CASES: Case[] = ["contiguous", "bias", "strided", "exp"];
/** Bytes each case moves (inputs read + output written) for an operand of `bytes`. */
const moved = (c: Case, bytes: number) => (c === "exp" || c === "bias" ? 2 : 3) * bytes;

async function gradlab(c: Case, mib: number): Promise<number> {
  const cols = 1024;
  const rows = (mib * MiB) / 4 / cols;
  const a = torch.randn(rows, cols);
  const b = c === "bias" ? torch.randn(cols) : c === "strided" ? torch.randn(cols, rows).t() : torch.randn(rows, cols);
  const reps = Math.max(2, Math.floor(64 / mib));
  const ms = await timeIt(
    reps,
    () => (c === "exp" ? a.exp() : a.add(b)).dispose(),
    () => torch.cuda.synchronize(),
  );
  a.dispose();
  b.dispose();
  torch.cuda.empty_cache();
  return moved(c, mib * MiB) / (ms / 1000) / 1e9;
}

async function tfjs(tf: Awaited<ReturnType<typeof tfjsSetup>>, c: Case, mib: number): Promise<number> {
  const cols = 1024;
  const rows = (mib * MiB) / 4 / cols;
  const a = tf.randomNormal([rows, cols]);
  const b = c === "bias" ? tf.randomNormal([cols]) : c === "strided" ? tf.transpose(tf.randomNormal([cols, rows])) : tf.randomNormal([rows, cols]);
  const reps = Math.max(2, Math.floor(64 / mib));
  type T = ReturnType<typeof tf.exp>;
  let last: T | null = null;
  // Waits by reading four elements of the result (the queue runs in order), not the whole output: a
  // full read-back would be timed on tfjs's side only.
  const first4 = async (t: T) => {
    const s = tf.slice(tf.reshape(t, [-1]), [0], [4]);
    const v = Array.from((await s.data()) as Float32Array);
    s.dispose();
    return v;
  };
  const ms = await timeIt(
    reps,
    () => {
      last?.dispose();
      last = c === "exp" ? tf.exp(a) : tf.add(a, b);
    },
    async () => {
      if (last) await first4(last);
    },
  );
  // Whether tfjs computed the result at all: at 256 MiB its bindings exceed the binding limit, Dawn
  // rejects its dispatches (validation errors on stderr) and the time is that of doing nothing.
  const got = await first4(last as unknown as T);
  const av = await first4(a);
  const bv = c === "exp" ? [] : await first4(b); // tfjs's transpose is materialised: b's first row
  const want = av.map((x, i) => (c === "exp" ? Math.exp(x) : x + bv[i]));
  (last as T | null)?.dispose();
  a.dispose();
  b.dispose();
  // (its random inputs too: four zeros mean they were never written)
  if (av.every((x) => x === 0) || got.some((g, i) => !(Math.abs(g - want[i]) <= 1e-5 * Math.abs(want[i]) + 1e-6))) return NaN;
  return moved(c, mib * MiB) / (ms / 1000) / 1e9;
}

let tf: Awaited<ReturnType<typeof tfjsSetup>> | null = null;
try {
  tf = await tfjsSetup();
} catch (e) {
  console.log(`tfjs-webgpu unavailable: ${(e as Error).message}`);
}
console.log(
  `adapter: ${await torch.cuda.get_device_name()}; load average ${(await import("node:os"))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
console.log("  MiB  case         GradLab GB/s  tfjs GB/s  GradLab/tfjs");
for (const mib of SIZES)
  for (const c of CASES) {
    const g: number[] = [];
    const t: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      g.push(await gradlab(c, mib));
      if (tf) t.push(await tfjs(tf, c, mib));
    }
    const G = median(g);
    // NaN: tfjs's result was wrong in some round (its dispatch rejected): no figure to compare with
    const T = tf && !t.some(Number.isNaN) ? median(t) : NaN;
    console.log(`${String(mib).padStart(5)}  ${c.padEnd(11)}  ${G.toFixed(2).padStart(12)}  ${T.toFixed(2).padStart(9)}  ${(G / T).toFixed(2).padStart(12)}`);
  }
