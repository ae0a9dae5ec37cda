// Ops record commands here; nothing touches the GPU until a flush. A flush happens on readback,
// on synchronize(), or when enough commands are pending (if a device is ready). Recording first has
// three benefits: ops return at once and need no device (so `torch` can be used before the async
// adapter request has finished), many dispatches share one command encoder (one dispatch costs ~20 µs
// batched but 30–90 µs with its own submit on lavapipe), and uploads are ordered with the dispatches
// around them (queue.writeBuffer would jump ahead of unsubmitted work that reads a reused block).

import type { Block, Segment } from "../memory/allocator.ts";
import { getDevice, readyDevice, type DeviceState } from "./backend.ts";
import { RuntimeError } from "../errors.ts";
import { bindGroupLayout, dummyFor, MAX_BINDINGS, pipelineFor } from "./pipelines.ts";

export interface Dispatch {
  kind: "dispatch";
  shader: string;
  entry: string;
  constants?: Record<string, number>;
  /** Storage bindings 1..n in order; binding 0 is the params array. */
  buffers: Block[];
  params: Uint32Array;
  workgroups: [number, number, number];
}
interface Upload {
  kind: "upload";
  block: Block;
  byteOffset: number;
  data: Uint8Array;
}
interface Readback {
  kind: "read";
  block: Block;
  byteOffset: number;
  byteLength: number;
  resolve(data: ArrayBuffer): void;
  reject(err: unknown): void;
}
type Command = Dispatch | Upload | Readback;

const FLUSH_AT = 512;
const PARAM_ALIGN = 256;
let queue: Command[] = [];
let flushing: Promise<void> | null = null;
let paramsBuffer: GPUBuffer | null = null;
let paramsDevice: GPUDevice | null = null;
let dispatchCount = 0;

export function enqueue(cmd: Dispatch): void {
  queue.push(cmd);
  dispatchCount++;
  if (queue.length >= FLUSH_AT) {
    const dev = readyDevice();
    if (dev && !flushing) encodeAndSubmit(dev, takeQueue());
  }
}

export function upload(block: Block, data: ArrayBufferView, byteOffset = 0): void {
  const bytes = new Uint8Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength));
  queue.push({ kind: "upload", block, byteOffset, data: bytes });
}

export function readBlock(block: Block, byteOffset: number, byteLength: number): Promise<ArrayBuffer> {
  return new Promise((resolve, reject) => {
    queue.push({ kind: "read", block, byteOffset, byteLength, resolve, reject });
    void flush();
  });
}

/** Drops everything pending (device lost: the commands refer to buffers that no longer exist). */
export function dropPending(reason: Error): void {
  for (const c of takeQueue()) if (c.kind === "read") c.reject(reason);
}

export function dispatchesRecorded(): number {
  return dispatchCount;
}

function takeQueue(): Command[] {
  const q = queue;
  queue = [];
  return q;
}

/** Submits everything recorded so far and waits until the GPU has finished it. */
export async function flush(): Promise<void> {
  while (flushing) await flushing;
  if (queue.length === 0) return;
  const run = (async () => {
    const dev = await getDevice();
    const cmds = takeQueue();
    // A validation error here is a GradLab bug, never the user's: surface it on the readback that
    // needed the result instead of returning garbage.
    dev.device.pushErrorScope("validation");
    const reads = encodeAndSubmit(dev, cmds);
    const error = await dev.device.popErrorScope();
    if (error) {
      const err = new RuntimeError(`internal WebGPU error (please report): ${error.message}`);
      for (const c of cmds) if (c.kind === "read") c.reject(err);
      throw err;
    }
    await Promise.all(reads);
    if (reads.length === 0) await dev.device.queue.onSubmittedWorkDone();
  })();
  flushing = run.finally(() => { flushing = null; });
  await flushing;
}

function bufferOf(dev: DeviceState, seg: Segment): GPUBuffer {
  if (seg.buffer && seg.generation === dev.epoch) return seg.buffer;
  seg.buffer = dev.device.createBuffer({
    size: seg.size,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
  });
  seg.generation = dev.epoch;
  return seg.buffer;
}

function paramsFor(dev: DeviceState, bytes: number): GPUBuffer {
  if (!paramsBuffer || paramsDevice !== dev.device || paramsBuffer.size < bytes) {
    paramsBuffer?.destroy();
    let size = 1 << 16;
    while (size < bytes) size *= 2;
    paramsBuffer = dev.device.createBuffer({ size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    paramsDevice = dev.device;
  }
  return paramsBuffer;
}

/** Encodes the commands into one command buffer, submits it, and returns the pending readbacks. */
function encodeAndSubmit(dev: DeviceState, cmds: Command[]): Promise<void>[] {
  const device = dev.device;
  // Every dispatch's params go into one buffer, each at a 256-byte aligned offset.
  let paramBytes = 0;
  const offsets: number[] = [];
  for (const c of cmds) {
    if (c.kind !== "dispatch") continue;
    offsets.push(paramBytes);
    paramBytes += Math.ceil(Math.max(c.params.byteLength, 4) / PARAM_ALIGN) * PARAM_ALIGN;
  }
  const params = paramBytes ? paramsFor(dev, paramBytes) : null;
  if (params) {
    const staging = new Uint8Array(paramBytes);
    let i = 0;
    for (const c of cmds) {
      if (c.kind !== "dispatch") continue;
      staging.set(new Uint8Array(c.params.buffer, c.params.byteOffset, c.params.byteLength), offsets[i++]);
    }
    // Safe: writeBuffer is ordered after every earlier submit, and this buffer is only read by this submit.
    device.queue.writeBuffer(params, 0, staging);
  }

  const encoder = device.createCommandEncoder();
  let pass: GPUComputePassEncoder | null = null;
  const endPass = () => { pass?.end(); pass = null; };
  const temporaries: GPUBuffer[] = [];
  const reads: Array<{ cmd: Readback; staging: GPUBuffer; aligned: number; start: number }> = [];
  let di = 0;
  for (const c of cmds) {
    if (c.kind === "dispatch") {
      // Bind each distinct block once; S<k> tells the kernel which binding holds operand k.
      const slots: Block[] = [];
      const constants: Record<string, number> = { ...c.constants };
      c.buffers.forEach((b, k) => {
        let s = slots.indexOf(b);
        if (s < 0) s = slots.push(b) - 1;
        constants[`S${k}`] = s + 1;
      });
      const pipeline = pipelineFor(device, c.shader, c.entry, constants);
      const entries: GPUBindGroupEntry[] = [
        { binding: 0, resource: { buffer: params!, offset: offsets[di++], size: Math.max(c.params.byteLength, 4) } },
      ];
      for (let i = 0; i < MAX_BINDINGS; i++) {
        const b = slots[i];
        entries.push({
          binding: i + 1,
          resource: b
            ? { buffer: bufferOf(dev, b.segment), offset: b.offset, size: b.size }
            : { buffer: dummyFor(device), offset: i * 256, size: 256 },
        });
      }
      const bindGroup = device.createBindGroup({ layout: bindGroupLayout(device), entries });
      pass ??= encoder.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bindGroup);
      pass.dispatchWorkgroups(...c.workgroups);
    } else if (c.kind === "upload") {
      endPass();
      const size = Math.ceil(c.data.byteLength / 4) * 4;
      const staging = device.createBuffer({ size, usage: GPUBufferUsage.COPY_SRC, mappedAtCreation: true });
      new Uint8Array(staging.getMappedRange()).set(c.data);
      staging.unmap();
      temporaries.push(staging);
      encoder.copyBufferToBuffer(staging, 0, bufferOf(dev, c.block.segment), c.block.offset + c.byteOffset, size);
    } else {
      endPass();
      const start = c.block.offset + c.byteOffset;
      const alignedStart = start - (start % 4);
      const aligned = Math.ceil((start + c.byteLength - alignedStart) / 4) * 4;
      const staging = device.createBuffer({ size: Math.max(aligned, 4), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      if (aligned > 0) encoder.copyBufferToBuffer(bufferOf(dev, c.block.segment), alignedStart, staging, 0, aligned);
      reads.push({ cmd: c, staging, aligned, start: start - alignedStart });
    }
  }
  endPass();
  device.queue.submit([encoder.finish()]);
  for (const t of temporaries) t.destroy();
  return reads.map(({ cmd, staging, start }) =>
    staging.mapAsync(GPUMapMode.READ).then(
      () => {
        const out = staging.getMappedRange().slice(start, start + cmd.byteLength);
        staging.unmap();
        staging.destroy();
        cmd.resolve(out);
      },
      (err) => { staging.destroy(); cmd.reject(err); },
    ),
  );
}

/** Destroys a segment's GPU buffer once the work already recorded against it has been submitted. */
export function destroyBuffer(buffer: GPUBuffer): void {
  if (queue.length === 0) { buffer.destroy(); return; }
  const dev = readyDevice();
  if (dev) { encodeAndSubmit(dev, takeQueue()); buffer.destroy(); }
  // Without a device the buffer cannot exist; nothing to do.
}
