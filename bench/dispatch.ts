// Cost of one small elementwise op (a dependent chain of y = y + 1 on 256 floats), in the same run as
// references: raw Dawn loops dispatching a trivial kernel (the floor any WebGPU library pays per
// dispatch on this adapter), and GradLab with a synchronize() after every op (one submit per op).
// Two raw loops: in place on one buffer with one bind group (the floor this bench has always printed),
// and out of place, y = x + 1 between two buffers whose two bind groups alternate, as GradLab's chain
// writes a new tensor each op into the block the previous one freed (the like-for-like floor: Dawn and
// lavapipe skip nothing when the bind group changes every dispatch). Both submit 512 dispatches and wait.
// Rounds of all are interleaved and medians reported: this machine's timings are noisy.
// Usage: npx tsx bench/dispatch.ts   (N=ops per round, default 4000; ROUNDS, default 7)
import { readFileSync } from "node:fs";
import { constants, PerformanceObserver } from "node:perf_hooks";
import * as torch from "../src/index.ts";
import { readyDevice } from "../src/device/backend.ts";

const N = Number(process.env.N ?? 4000);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (us: number) => `${us.toFixed(1).padStart(7)} µs/op`;
/**
 * CPU time of the main thread in ms (Linux; null elsewhere): summed over thousands of ops it says what
 * the host spends per op, whatever else runs on the machine (wall times here follow the load), while
 * lavapipe's threads do the GPU's part. From schedstat (nanoseconds) where the kernel has it, else from
 * stat at the kernel's 10-ms tick (a 2.5 µs step over 4,000 ops).
 */
function mainThreadCpuMs(): number | null {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[0]) / 1e6;
  } catch {
    try {
      const f = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8").split(") ")[1].split(" ");
      return (Number(f[11]) + Number(f[12])) * 10;
    } catch {
      return null;
    }
  }
}
/** CPU time of the whole process in ms, every thread (the host's and lavapipe's, which runs the kernels). */
function processCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}
interface Run {
  /** wall µs per op, end to end */
  us: number;
  /** main-thread CPU µs per op (null where unknown) */
  cpu: number | null;
  /** every thread's CPU µs per op */
  all: number;
}
const perOp = (a: number | null, b: number | null) => (a === null || b === null ? null : ((b - a) * 1000) / N);

/** V8's collections as Node reports them (delivered after the fact, each with its start time and kind). */
const collections: Array<{ start: number; ms: number; minor: boolean }> = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = (e as { detail?: { kind?: number } }).detail?.kind;
    collections.push({ start: e.startTime, ms: e.duration, minor: kind === constants.NODE_PERFORMANCE_GC_MINOR });
  }
}).observe({ entryTypes: ["gc"] });
/** µs per op of minor and of other collections that started in [t0, t1] (ms, performance.now()). */
async function gcPerOp(t0: number, t1: number): Promise<{ minor: number; full: number }> {
  await new Promise((r) => setTimeout(r, 10)); // the observer hears of a collection a task later
  const inRound = collections.filter((c) => c.start >= t0 && c.start < t1);
  const sum = (minor: boolean) => (inRound.filter((c) => c.minor === minor).reduce((n, c) => n + c.ms, 0) * 1000) / N;
  return { minor: sum(true), full: sum(false) };
}

async function gradlab(syncEach: boolean): Promise<Run & { host: number; gc: { minor: number; full: number } }> {
  let y = torch.ones(256);
  for (let i = 0; i < 200; i++) {
    const z = y.add(1);
    y.dispose();
    y = z;
  } // warm-up: pipelines, bind groups
  await torch.webgpu.synchronize();
  const c0 = mainThreadCpuMs();
  const a0 = processCpuMs();
  const t0 = performance.now();
  let host = 0;
  for (let i = 0; i < N; i++) {
    const h0 = performance.now();
    const z = y.add(1);
    y.dispose();
    y = z;
    host += performance.now() - h0;
    if (syncEach) await torch.webgpu.synchronize();
  }
  await torch.webgpu.synchronize();
  const t1 = performance.now();
  const total = t1 - t0;
  const c1 = mainThreadCpuMs();
  const a1 = processCpuMs();
  const last = await y.getitem("0").item();
  if (last !== 201 + N) throw new Error(`wrong result ${last}`);
  y.dispose();
  return { host: (host * 1000) / N, us: (total * 1000) / N, cpu: perOp(c0, c1), all: perOp(a0, a1)!, gc: await gcPerOp(t0, t1) };
}

/**
 * The same chain written directly against Dawn: one pipeline, N dispatches of a one-line kernel. In
 * place: one buffer, one bind group. Out of place: y = x + 1 between two buffers, two bind groups.
 */
async function rawDawn(outOfPlace: boolean): Promise<Run> {
  const device = readyDevice()!.device;
  const a = device.createBuffer({ size: 1024, usage: GPUBufferUsage.STORAGE });
  const b = device.createBuffer({ size: 1024, usage: GPUBufferUsage.STORAGE });
  const module = device.createShaderModule({
    code: outOfPlace
      ? `@group(0) @binding(0) var<storage, read_write> y: array<f32>; @group(0) @binding(1) var<storage, read> x: array<f32>;
      @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) { y[g.x] = x[g.x] + 1.0; }`
      : `@group(0) @binding(0) var<storage, read_write> x: array<f32>;
      @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) { x[g.x] = x[g.x] + 1.0; }`,
  });
  const pipeline = device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" } });
  const group = (bufs: GPUBuffer[]) =>
    device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: bufs.map((buffer, binding) => ({ binding, resource: { buffer } })) });
  const groups = outOfPlace ? [group([b, a]), group([a, b])] : [group([a])];
  let k = 0;
  const run = async (n: number) => {
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    for (let i = 0; i < n; i++) {
      pass.setBindGroup(0, groups[k++ % groups.length]);
      pass.dispatchWorkgroups(4);
    }
    pass.end();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
  };
  await run(200);
  const c0 = mainThreadCpuMs();
  const a0 = processCpuMs();
  const t0 = performance.now();
  for (let done = 0; done < N; done += 512) await run(Math.min(512, N - done));
  const us = ((performance.now() - t0) * 1000) / N;
  const c1 = mainThreadCpuMs();
  const a1 = processCpuMs();
  a.destroy();
  b.destroy();
  return { us, cpu: perOp(c0, c1), all: perOp(a0, a1)! };
}

await torch.webgpu.init();
console.log(`device: ${await torch.webgpu.get_device_name()}; ${N} dependent adds on a 256-element tensor, median of ${ROUNDS} rounds`);
const host: number[] = [];
const gcs: Array<{ minor: number; full: number }> = [];
const each: number[] = [];
const runs: Record<"gradlab" | "inPlace" | "outOfPlace", Run[]> = { gradlab: [], inPlace: [], outOfPlace: [] };
for (let r = 0; r < ROUNDS; r++) {
  const b = await gradlab(false);
  host.push(b.host);
  gcs.push(b.gc);
  runs.gradlab.push(b);
  runs.inPlace.push(await rawDawn(false));
  runs.outOfPlace.push(await rawDawn(true));
  if (r < 3) each.push((await gradlab(true)).us);
}
const med = (rs: Run[], k: keyof Run) => (rs.some((x) => x[k] === null) ? null : median(rs.map((x) => x[k] as number)));
const [g, i, o] = [runs.gradlab, runs.inPlace, runs.outOfPlace];
const [t, f, fo, e] = [med(g, "us")!, med(i, "us")!, med(o, "us")!, median(each)];
console.log(`GradLab, batched: host time per op      ${fmt(median(host))}   (recording and encoding; the GPU works meanwhile)`);
console.log(`GradLab, batched: end to end per op     ${fmt(t)}`);
console.log(`raw Dawn dispatch loop (floor)          ${fmt(f)}   (in place, one bind group)`);
console.log(`raw Dawn loop, out of place             ${fmt(fo)}   (y = x + 1, two bind groups alternating: like for like)`);
console.log(`GradLab, synchronize() after every op   ${fmt(e)}`);
const [cg, ci, co] = [med(g, "cpu"), med(i, "cpu"), med(o, "cpu")];
if (cg !== null && ci !== null && co !== null) {
  console.log(
    `main-thread CPU per op: GradLab batched ${cg.toFixed(1)} µs, raw Dawn loop ${ci.toFixed(1)} µs (${(cg / ci).toFixed(2)}x), out of place ${co.toFixed(1)} µs (${(cg / co).toFixed(2)}x)`,
  );
}
// Collections are rare events (a minor one every ~3,500 ops of this chain): the mean over the rounds, not the median.
const meanGc = (k: "minor" | "full") => gcs.reduce((n, c) => n + c[k], 0) / gcs.length;
console.log(
  `collections during GradLab's batched chain (main thread, part of its CPU), mean per op: minor ${meanGc("minor").toFixed(2)} µs, full ${meanGc("full").toFixed(2)} µs`,
);
const [ag, ai, ao] = [med(g, "all")!, med(i, "all")!, med(o, "all")!];
console.log(
  `CPU per op, all threads (host + lavapipe): GradLab ${ag.toFixed(1)} µs, raw in place ${ai.toFixed(1)} µs (${(ag / ai).toFixed(2)}x), out of place ${ao.toFixed(1)} µs (${(ag / ao).toFixed(2)}x)`,
);
console.log(
  `ratios: end-to-end / raw floor = ${(t / f).toFixed(2)}x; end-to-end / raw out of place = ${(t / fo).toFixed(2)}x; submit-per-op / batched = ${(e / t).toFixed(1)}x`,
);
process.exit(0);
