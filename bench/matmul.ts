// float32 matmul GFLOP/s at 256..2048 for GradLab, TensorFlow.js's WebGPU backend on the same Dawn
// adapter, and a plain JavaScript triple loop (i-k-j order, Float32Array), all in this one run.
// Also GFLOP per CPU-second of this process (lavapipe's threads run in it): on a shared machine the
// wall-clock figure follows the load, the CPU-second one mostly the kernel.
// Then GradLab's storage kernel alone (its uniform-tile path turned off; on llvmpipe large products take tiles:
// ops/matmul-tiles.ts) at the same sizes, for the path's own gain in the same run (GRADLAB_BENCH_STORAGE=0
// skips it), and a Linear layer's forward + backward at 4096x1024 @ 1024x1024 (GRADLAB_BENCH_LINEAR=0 skips it).
// Usage: npx tsx bench/matmul.ts [sizes...]   (GRADLAB_BENCH_JS_MAX caps the plain-JS sizes; default 1024)
import * as torch from "../src/index.ts";
import { loadavg } from "node:os";
import { _set_tiled_matmul } from "../src/ops/matmul-tiles.ts";
import { tfjsSetup } from "./tfjs.ts";
import { timeIt } from "./timing.ts";

const sizes = process.argv.slice(2).map(Number).filter(Boolean);
const SIZES = sizes.length ? sizes : [256, 512, 1024, 2048];
const JS_MAX = Number(process.env.GRADLAB_BENCH_JS_MAX ?? 1024);
const gflops = (n: number, ms: number) => (2 * n ** 3) / (ms * 1e6);

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

if (process.env.GRADLAB_BENCH_STORAGE !== "0") {
  console.log("   n   GradLab  storage kernel only   GradLab/storage   (GFLOP/s)   load");
  for (const n of SIZES) {
    const g = await gradlab(n);
    _set_tiled_matmul(false);
    const s = await gradlab(n);
    _set_tiled_matmul(true);
    console.log(
      `${String(n).padStart(4)} ${g.wall.toFixed(1).padStart(9)} ${s.wall.toFixed(1).padStart(20)} ${`${(g.wall / s.wall).toFixed(2)}x`.padStart(17)}   ${load()}`,
    );
  }
}

// A Linear layer's forward and backward at the issue's size (x 4096x1024, weight 1024x1024, no bias):
// y = x @ w.t(), then grad_x = g @ w and grad_w = g.t() @ x: three matmuls of 2*4096*1024*1024 flops.
// GradLab runs it through autograd (F.linear, y.backward(g)); tfjs as the same three tf.matMul calls.
const [LR, LI, LO] = [4096, 1024, 1024];
const linearFlops = 3 * 2 * LR * LI * LO;

async function gradlabLinear(): Promise<Rate> {
  const x = torch.randn(LR, LI).requires_grad_();
  const w = torch.randn(LO, LI).requires_grad_();
  const g = torch.randn(LR, LO);
  const ms = await timeIt(2, async () => {
    const y = torch.nn.functional.linear(x, w);
    y.backward(g);
    await torch.webgpu.synchronize();
    y.dispose();
    x.grad = null;
    w.grad = null;
  });
  for (const t of [x, w, g]) t.dispose();
  return { wall: linearFlops / (ms.wall * 1e6), cpu: linearFlops / (ms.cpu * 1e6) };
}

async function tfjsLinear(tf: typeof import("@tensorflow/tfjs-core")): Promise<Rate> {
  const x = tf.randomNormal([LR, LI]);
  const w = tf.randomNormal([LO, LI]);
  const g = tf.randomNormal([LR, LO]);
  const ms = await timeIt(2, async () => {
    const out = [tf.matMul(x, w, false, true), tf.matMul(g, w), tf.matMul(g, x, true, false)];
    await Promise.all(out.map((t) => t.data()));
    for (const t of out) t.dispose();
  });
  for (const t of [x, w, g]) t.dispose();
  return { wall: linearFlops / (ms.wall * 1e6), cpu: linearFlops / (ms.cpu * 1e6) };
}

if (process.env.GRADLAB_BENCH_LINEAR !== "0") {
  const g = await gradlabLinear();
  const t = tf ? await tfjsLinear(tf) : { wall: NaN, cpu: NaN };
  console.log(
    `Linear ${LR}x${LI} @ ${LO}x${LI}^T forward+backward: GradLab ${g.wall.toFixed(1)} GFLOP/s, tfjs ${t.wall.toFixed(1)}, ratio ${(g.wall / t.wall).toFixed(1)}x;` +
      ` per CPU-s ${g.cpu.toFixed(1)} / ${t.cpu.toFixed(1)} (${(g.cpu / t.cpu).toFixed(1)}x)   load ${load()}`,
  );
}
process.exit(0);
