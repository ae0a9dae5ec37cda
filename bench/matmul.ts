// float32 matmul GFLOP/s at 256..2048 for GradLab, TensorFlow.js's WebGPU backend on the same Dawn
// adapter, and a plain JavaScript triple loop (i-k-j order, Float32Array), all in this one run.
// Also GFLOP per CPU-second of this process (lavapipe's threads run in it): on a shared machine the
// wall-clock figure follows the load, the CPU-second one mostly the kernel.
// Usage: npx tsx bench/matmul.ts [sizes...]   (GRADLAB_BENCH_JS_MAX caps the plain-JS sizes; default 1024)
import * as torch from "../src/index.ts";
import { loadavg } from "node:os";
import { tfjsSetup } from "./tfjs.ts";

const sizes = process.argv.slice(2).map(Number).filter(Boolean);
const SIZES = sizes.length ? sizes : [256, 512, 1024, 2048];
const JS_MAX = Number(process.env.GRADLAB_BENCH_JS_MAX ?? 1024);
const gflops = (n: number, ms: number) => (2 * n ** 3) / (ms * 1e6);

/** Best wall-clock ms of `reps` runs, and the least CPU ms (all threads of this process) of one. */
async function timeIt(reps: number, run: () => Promise<void>): Promise<{ wall: number; cpu: number }> {
  await run(); // warm-up: compile, allocate
  let wall = Infinity;
  let cpu = Infinity;
  for (let i = 0; i < reps; i++) {
    const u0 = process.cpuUsage();
    const t0 = performance.now();
    await run();
    wall = Math.min(wall, performance.now() - t0);
    const u = process.cpuUsage(u0);
    cpu = Math.min(cpu, (u.user + u.system) / 1000);
  }
  return { wall, cpu };
}

type Rate = { wall: number; cpu: number };
const rate = (n: number, t: { wall: number; cpu: number }): Rate => ({ wall: gflops(n, t.wall), cpu: gflops(n, t.cpu) });

async function gradlab(n: number): Promise<Rate> {
  const a = torch.randn(n, n);
  const b = torch.randn(n, n);
  const ms = await timeIt(n >= 2048 ? 2 : 3, async () => {
    const c = a.matmul(b);
    await torch.webgpu.synchronize();
    c.dispose();
  });
  a.dispose();
  b.dispose();
  return rate(n, ms);
}

async function tfjs(tf: typeof import("@tensorflow/tfjs-core"), n: number): Promise<Rate> {
  const a = tf.randomNormal([n, n]);
  const b = tf.randomNormal([n, n]);
  const ms = await timeIt(n >= 2048 ? 2 : 3, async () => {
    const c = tf.matMul(a, b);
    await c.data();
    c.dispose();
  });
  a.dispose();
  b.dispose();
  return rate(n, ms);
}

function plainJs(n: number): number {
  const a = Float32Array.from({ length: n * n }, () => Math.random());
  const b = Float32Array.from({ length: n * n }, () => Math.random());
  const c = new Float32Array(n * n);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < n; k++) {
      const aik = a[i * n + k];
      const row = k * n;
      const out = i * n;
      for (let j = 0; j < n; j++) c[out + j] += aik * b[row + j];
    }
  }
  return gflops(n, performance.now() - t0);
}

console.log(`device: ${await torch.webgpu.get_device_name()}`);
let tf: Awaited<ReturnType<typeof tfjsSetup>> | null = null;
try {
  tf = await tfjsSetup();
} catch (e) {
  console.log(`tfjs-webgpu unavailable: ${(e as Error).message}`);
}
const load = () => loadavg()[0].toFixed(1);
console.log("   n   GradLab  tfjs-webgpu  plain JS   GradLab/tfjs  GradLab/JS   (GFLOP/s)   per CPU-s: GradLab  tfjs  ratio   load");
for (const n of SIZES) {
  const g = await gradlab(n);
  const t = tf ? await tfjs(tf, n) : { wall: NaN, cpu: NaN };
  const j = n <= JS_MAX ? plainJs(n) : NaN;
  const f = (v: number) => (Number.isNaN(v) ? "-" : v.toFixed(1)).padStart(9);
  const r = (v: number) => (Number.isNaN(v) ? "-" : `${v.toFixed(1)}x`).padStart(12);
  console.log(
    `${String(n).padStart(4)} ${f(g.wall)} ${f(t.wall).padStart(12)} ${f(j)} ${r(g.wall / t.wall)} ${r(g.wall / j)}   ${f(g.cpu).padStart(21)} ${f(t.cpu).padStart(5)} ${r(g.cpu / t.cpu).padStart(6)}   ${load()}`,
  );
}
process.exit(0);
