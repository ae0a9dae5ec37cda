// Cost of one small elementwise op (a dependent chain of y = y + 1 on 256 floats), in the same run as
// two references: a raw Dawn loop dispatching a trivial kernel (the floor any WebGPU library pays per
// dispatch on this adapter), and GradLab with a synchronize() after every op (one submit per op).
// Rounds of the three are interleaved and medians reported: this machine's timings are noisy.
// Usage: npx tsx bench/dispatch.ts   (N=ops per round, default 4000; ROUNDS, default 7)
import { readFileSync } from "node:fs";
import * as torch from "../src/index.ts";
import { readyDevice } from "../src/device/backend.ts";

const N = Number(process.env.N ?? 4000);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (us: number) => `${us.toFixed(1).padStart(7)} µs/op`;
/**
 * CPU time of the main thread in ms (Linux; null elsewhere), at the kernel's 10-ms tick: summed over
 * thousands of ops it says what the host spends per op, whatever else runs on the machine (wall times
 * here follow the load), while lavapipe's threads do the GPU's part.
 */
function mainThreadCpuMs(): number | null {
  try {
    const f = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return null;
  }
}

async function gradlab(syncEach: boolean): Promise<{ host: number; total: number; cpu: number | null }> {
  let y = torch.ones(256);
  for (let i = 0; i < 200; i++) {
    const z = y.add(1);
    y.dispose();
    y = z;
  } // warm-up: pipelines, bind groups
  await torch.webgpu.synchronize();
  const c0 = mainThreadCpuMs();
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
  const total = performance.now() - t0;
  const c1 = mainThreadCpuMs();
  const last = await y.getitem("0").item();
  if (last !== 201 + N) throw new Error(`wrong result ${last}`);
  y.dispose();
  return { host: (host * 1000) / N, total: (total * 1000) / N, cpu: c0 === null || c1 === null ? null : ((c1 - c0) * 1000) / N };
}

/** The same chain written directly against Dawn: one pipeline, one bind group, N dispatches. */
async function rawDawn(): Promise<{ us: number; cpu: number | null }> {
  const device = readyDevice()!.device;
  const buf = device.createBuffer({ size: 1024, usage: GPUBufferUsage.STORAGE });
  const module = device.createShaderModule({
    code: `@group(0) @binding(0) var<storage, read_write> x: array<f32>;
      @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) { x[g.x] = x[g.x] + 1.0; }`,
  });
  const pipeline = device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" } });
  const bg = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: buf } }] });
  const run = async (n: number) => {
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    for (let i = 0; i < n; i++) {
      pass.setBindGroup(0, bg);
      pass.dispatchWorkgroups(4);
    }
    pass.end();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
  };
  await run(200);
  const c0 = mainThreadCpuMs();
  const t0 = performance.now();
  for (let done = 0; done < N; done += 512) await run(Math.min(512, N - done));
  const us = ((performance.now() - t0) * 1000) / N;
  const c1 = mainThreadCpuMs();
  buf.destroy();
  return { us, cpu: c0 === null || c1 === null ? null : ((c1 - c0) * 1000) / N };
}

await torch.webgpu.init();
console.log(`device: ${await torch.webgpu.get_device_name()}; ${N} dependent adds on a 256-element tensor, median of ${ROUNDS} rounds`);
const host: number[] = [];
const total: number[] = [];
const raw: number[] = [];
const each: number[] = [];
const cpuGradlab: number[] = [];
const cpuRaw: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const b = await gradlab(false);
  host.push(b.host);
  total.push(b.total);
  const w = await rawDawn();
  raw.push(w.us);
  if (b.cpu !== null && w.cpu !== null) {
    cpuGradlab.push(b.cpu);
    cpuRaw.push(w.cpu);
  }
  if (r < 3) each.push((await gradlab(true)).total);
}
const [h, t, f, e] = [median(host), median(total), median(raw), median(each)];
console.log(`GradLab, batched: host time per op      ${fmt(h)}   (recording and encoding; the GPU works meanwhile)`);
console.log(`GradLab, batched: end to end per op     ${fmt(t)}`);
console.log(`raw Dawn dispatch loop (floor)          ${fmt(f)}`);
console.log(`GradLab, synchronize() after every op   ${fmt(e)}`);
if (cpuGradlab.length > 0) {
  const [cg, cr] = [median(cpuGradlab), median(cpuRaw)];
  console.log(`main-thread CPU per op: GradLab batched ${cg.toFixed(1)} µs, raw Dawn loop ${cr.toFixed(1)} µs (${(cg / cr).toFixed(2)}x)`);
}
console.log(`ratios: end-to-end / raw floor = ${(t / f).toFixed(2)}x; submit-per-op / batched = ${(e / t).toFixed(1)}x`);
process.exit(0);
