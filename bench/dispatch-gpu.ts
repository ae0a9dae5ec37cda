// Where bench/dispatch.ts's end-to-end time goes once the host is cheap: the time from synchronize()
// until 512 recorded dependent adds (y = y + 1, 256 floats) have run, per op, against the same 512
// dispatches written directly against Dawn: in place on one buffer (bench/dispatch.ts's raw loop) and
// out of place between two buffers (y = x + 1, as GradLab's chain writes a new tensor each op). Both
// sides include encoding and submitting; the host's recording (GradLab's ops) is not in this figure.
// Rounds interleaved, medians reported. Usage: npx tsx bench/dispatch-gpu.ts   (ROUNDS, default 5)
import * as torch from "../src/index.ts";
import { readyDevice } from "../src/device/backend.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const B = 512;
const BATCHES = 16;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

await torch.webgpu.init();
const device = readyDevice()!.device;
let y = torch.ones(256);

async function gradlab(): Promise<number> {
  let wait = 0;
  for (let r = 0; r < BATCHES; r++) {
    for (let i = 0; i < B - 1; i++) {
      const z = y.add(1);
      y.dispose();
      y = z;
    }
    const t0 = performance.now();
    await torch.webgpu.synchronize();
    wait += performance.now() - t0;
  }
  return (wait * 1000) / ((B - 1) * BATCHES);
}

const buffer = () => device.createBuffer({ size: 1024, usage: GPUBufferUsage.STORAGE });
const [x, a, b] = [buffer(), buffer(), buffer()];
const pipelineOf = (code: string) =>
  device.createComputePipeline({ layout: "auto", compute: { module: device.createShaderModule({ code }), entryPoint: "main" } });
const inPlace = pipelineOf(`@group(0) @binding(0) var<storage, read_write> x: array<f32>;
  @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) { x[g.x] = x[g.x] + 1.0; }`);
const outOfPlace = pipelineOf(`@group(0) @binding(0) var<storage, read_write> o: array<f32>; @group(0) @binding(1) var<storage, read> x: array<f32>;
  @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) { o[g.x] = x[g.x] + 1.0; }`);
const group = (p: GPUComputePipeline, bufs: GPUBuffer[]) =>
  device.createBindGroup({ layout: p.getBindGroupLayout(0), entries: bufs.map((buffer, binding) => ({ binding, resource: { buffer } })) });
const inPlaceGroups = [group(inPlace, [x])];
const outOfPlaceGroups = [group(outOfPlace, [a, b]), group(outOfPlace, [b, a])];

async function raw(pipeline: GPUComputePipeline, groups: GPUBindGroup[]): Promise<number> {
  let wait = 0;
  for (let r = 0; r < BATCHES; r++) {
    const t0 = performance.now();
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    for (let i = 0; i < B - 1; i++) {
      pass.setBindGroup(0, groups[i % groups.length]);
      pass.dispatchWorkgroups(4);
    }
    pass.end();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    wait += performance.now() - t0;
  }
  return (wait * 1000) / ((B - 1) * BATCHES);
}

await gradlab(); // warm-up: pipelines, bind groups
await raw(inPlace, inPlaceGroups);
await raw(outOfPlace, outOfPlaceGroups);
const rows: Record<string, number[]> = {
  "GradLab y = y.add(1)": [],
  "raw Dawn, in place (bench:dispatch's floor)": [],
  "raw Dawn, out of place (two buffers)": [],
};
const [g, i, o] = Object.values(rows);
for (let r = 0; r < ROUNDS; r++) {
  g.push(await gradlab());
  i.push(await raw(inPlace, inPlaceGroups));
  o.push(await raw(outOfPlace, outOfPlaceGroups));
}
console.log(`device: ${await torch.webgpu.get_device_name()}; ${B - 1} dispatches per submit, ${BATCHES} submits per round, median of ${ROUNDS} rounds`);
for (const [name, xs] of Object.entries(rows)) console.log(`${name.padEnd(44)} ${median(xs).toFixed(1).padStart(7)} µs/op from submit to done`);
console.log(`ratios: GradLab / in place = ${(median(g) / median(i)).toFixed(2)}x; out of place / in place = ${(median(o) / median(i)).toFixed(2)}x`);
y.dispose();
process.exit(0);
