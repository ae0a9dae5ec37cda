// The inner loop of kernels-wgsl/matmul_subgroups.wgsl (24 rows per workgroup, 4 columns and 4 k per lane)
// reading its tiles of A (256 rows x 64 k) and B (64 k x 256 columns) from uniform buffers, against the same
// loop reading the same tiles from storage buffers, in the same run: the measurement that led to the runtime's
// uniform-tile path on llvmpipe (ops/matmul-tiles.ts, kernels-wgsl/matmul_tiles.wgsl; docs/performance.md,
// Matmul round 4), kept to show the loop's own speed apart from packing and passes over C. llvmpipe (Mesa 25)
// gathers a storage load lane by lane with a bounds branch per float; a uniform load at per-lane addresses is
// branchless, but a uniform binding holds 64 KiB and is the same for every workgroup of a dispatch.
// Each shape: CHUNKS bindings of A and of B per dispatch (k chunks of 64), a loop of 64 x PASSES k steps per
// chunk over the same tile (so the loop runs long, as the real kernel's does), 11 x WG_Y workgroups per
// dispatch, as many dispatches as one 1024^3 matmul's flops. Prints GFLOP/s and per CPU-second, storage and
// uniform alternated twice. Usage: npx tsx bench/matmul-tiles.ts   (SHAPES="chunks:passes:wgY,...")
import { loadavg } from "node:os";
import { getDevice } from "../src/device/backend.ts";
import { timeIt } from "./timing.ts";

// GradLab's device: its platform layer also keeps Dawn's event polling from spinning the main thread, which
// on 2 cores takes a core from lavapipe (measured: the same storage kernel at 15 GFLOP/s on a bare Dawn
// device, 24 on this one). A WebGPU error reaches stderr as its warning (GradLabWebGPUWarning).
const { device, facts } = await getDevice();
if (!facts.subgroups) throw new Error("the adapter has no subgroups: nothing to compare");

type Space = "storage, read" | "uniform";
const ROW_BLOCKS = 11; // 24-row blocks over a 256-row tile
const FLOPS = 2 * 1024 ** 3; // one 1024^3 matmul

function kernel(space: Space, chunks: number, passes: number): string {
  const lines = ["enable subgroups;", "@group(0) @binding(0) var<storage, read_write> C: array<vec4<f32>>;"];
  for (let c = 0; c < chunks; c++) {
    lines.push(`@group(0) @binding(${1 + c}) var<${space}> A${c}: array<vec4<f32>, 4096>;`);
    lines.push(`@group(0) @binding(${1 + chunks + c}) var<${space}> B${c}: array<vec4<f32>, 4096>;`);
  }
  const acc = Array.from({ length: 24 }, (_, i) => i);
  lines.push(
    "@compute @workgroup_size(64)",
    "fn mm(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wg: vec3<u32>, @builtin(subgroup_invocation_id) lane: u32) {",
    "  let row0 = wg.x * 24u;",
    "  let c4 = lid.x;",
    "  let cBase = wg.y * 16384u;",
    ...[0, 1, 2].map((j) => `  let r${j} = min(row0 + ${8 * j}u + lane, 255u);`),
    ...acc.map((i) => `  var acc${i} = C[cBase + min(row0 + ${i}u, 255u) * 64u + c4];`),
  );
  // A's tile: row r's k..k+3 are vec4 r * 16 + k / 4; B's: (k, column 4 c4..) is vec4 k * 64 + c4.
  for (let c = 0; c < chunks; c++) {
    lines.push(
      `  for (var kk = 0u; kk < ${64 * passes}u; kk += 4u) {`,
      "    let k = kk & 63u;",
      ...[0, 1, 2].map((j) => `    let a${j} = A${c}[r${j} * 16u + (k >> 2u)];`),
      `    let b = array<vec4<f32>, 4>(${[0, 1, 2, 3].map((u) => `B${c}[(k + ${u}u) * 64u + c4]`).join(", ")});`,
      ...acc.map(
        (i) =>
          `    { let x = subgroupBroadcast(a${Math.floor(i / 8)}, ${i % 8}u); acc${i} = (((acc${i} + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }`,
      ),
      "  }",
    );
  }
  lines.push(...acc.map((i) => `  if (row0 + ${i}u < 256u) { C[cBase + (row0 + ${i}u) * 64u + c4] = acc${i}; }`), "}");
  return lines.join("\n");
}

async function measure(space: Space, chunks: number, passes: number, wgY: number) {
  const pipeline = device.createComputePipeline({
    layout: "auto",
    compute: { module: device.createShaderModule({ code: kernel(space, chunks, passes) }), entryPoint: "mm" },
  });
  const usage = (space === "uniform" ? GPUBufferUsage.UNIFORM : GPUBufferUsage.STORAGE) | GPUBufferUsage.COPY_DST;
  const c = device.createBuffer({ size: 256 * 256 * 4 * wgY, usage: GPUBufferUsage.STORAGE });
  const tiles = Array.from({ length: 2 * chunks }, () => {
    const t = device.createBuffer({ size: 65536, usage });
    device.queue.writeBuffer(
      t,
      0,
      Float32Array.from({ length: 16384 }, () => Math.random() - 0.5),
    );
    return t;
  });
  const bindGroup = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [{ binding: 0, resource: { buffer: c } }, ...tiles.map((t, i) => ({ binding: 1 + i, resource: { buffer: t } }))],
  });
  const perDispatch = 2 * 256 * 256 * 64 * chunks * passes * wgY;
  const dispatches = Math.max(1, Math.round(FLOPS / perDispatch));
  const once = async () => {
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    for (let i = 0; i < dispatches; i++) pass.dispatchWorkgroups(ROW_BLOCKS, wgY);
    pass.end();
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
  };
  const { wall, cpu } = await timeIt(3, once);
  for (const b of [c, ...tiles]) b.destroy();
  const flops = dispatches * perDispatch;
  return { gflops: flops / wall / 1e6, perCpu: flops / cpu / 1e6 };
}

const SHAPES = (process.env.SHAPES ?? "1:16:8,4:4:8").split(",").map((s) => s.split(":").map(Number));
console.log(`adapter: ${facts.description || facts.vendor}; load average ${loadavg()[0].toFixed(1)}`);
console.log("chunks  k steps  workgroups   storage GFLOP/s (per CPU-s)   uniform GFLOP/s (per CPU-s)   uniform / storage");
for (const [chunks, passes, wgY] of SHAPES) {
  for (let round = 0; round < 2; round++) {
    const s = await measure("storage, read", chunks, passes, wgY);
    const u = await measure("uniform", chunks, passes, wgY);
    console.log(
      `${String(chunks).padStart(6)} ${String(64 * passes).padStart(8)} ${`${ROW_BLOCKS}x${wgY}`.padStart(11)}   ${s.gflops.toFixed(1).padStart(15)} (${s.perCpu.toFixed(1)})   ${u.gflops.toFixed(1).padStart(15)} (${u.perCpu.toFixed(1)})   ${(u.gflops / s.gflops).toFixed(2).padStart(17)}x`,
    );
  }
}
process.exit(0);
