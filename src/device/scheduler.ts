// Ops record commands here; nothing touches the GPU until a flush. A flush happens on readback,
// on synchronize(), or when enough commands are pending (if a device is ready). Recording first has
// three benefits: ops return at once and need no device (so `torch` can be used before the async
// adapter request has finished), many dispatches share one command encoder (one dispatch costs ~20 µs
// batched but 30–90 µs with its own submit on lavapipe), and uploads are ordered with the dispatches
// around them (queue.writeBuffer would jump ahead of unsubmitted work that reads a reused block).

import type { Block, Segment } from "../memory/allocator.ts";

/**
 * Where a block was when the command was recorded. Blocks are mutable (a freed block merges with its
 * neighbours, a reused one is split), so commands keep a snapshot; two snapshots of live blocks never
 * overlap, and the same storage used twice gives equal snapshots.
 */
export interface Range {
  readonly segment: Segment;
  readonly offset: number;
  readonly size: number;
}
const rangeOf = (b: Block): Range => ({ segment: b.segment, offset: b.offset, size: b.size });
import { beginWait, getDevice, readyDevice, type DeviceState } from "./backend.ts";
import { RuntimeError } from "../errors.ts";
import { bindGroupLayout, dummyFor, MAX_BINDINGS, paramsLayout, pipelineFor } from "./pipelines.ts";

export interface Dispatch {
  kind: "dispatch";
  shader: string;
  entry: string;
  constants?: Record<string, number>;
  /** Storage bindings 1..n in order; binding 0 is the params array. */
  buffers: Range[];
  params: Uint32Array;
  workgroups: [number, number, number];
  /** A drop-in replacement shader (same params and grid) for devices with subgroups. */
  subgroupShader?: string;
}
interface Upload {
  kind: "upload";
  block: Range;
  byteOffset: number;
  data: Uint8Array;
}
interface Readback {
  kind: "read";
  block: Range;
  byteOffset: number;
  byteLength: number;
  resolve(data: ArrayBuffer): void;
  reject(err: unknown): void;
}
type Command = Dispatch | Upload | Readback;

const FLUSH_AT = 512;
/** Each dispatch's params take one 256-byte slot (the storage offset alignment) of a per-device buffer. */
const PARAM_ALIGN = 256;
const PARAM_SLOTS = 1024;
let queue: Command[] = [];
let flushing: Promise<void> | null = null;

export function enqueue(shader: string, entry: string, blocks: Block[], params: Uint32Array, workgroups: [number, number, number], constants?: Record<string, number>, subgroupShader?: string): void {
  const cmd: Dispatch = { kind: "dispatch", shader, entry, constants, buffers: blocks.map(rangeOf), params, workgroups, subgroupShader };
  queue.push(cmd);
  if (queue.length >= FLUSH_AT) {
    const dev = readyDevice();
    if (dev && !flushing) encodeAndSubmit(dev, takeQueue());
  }
}

export function upload(block: Block, data: ArrayBufferView, byteOffset = 0): void {
  const bytes = new Uint8Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength));
  queue.push({ kind: "upload", block: rangeOf(block), byteOffset, data: bytes });
}

export function readBlock(block: Block, byteOffset: number, byteLength: number): Promise<ArrayBuffer> {
  return new Promise((resolve, reject) => {
    queue.push({ kind: "read", block: rangeOf(block), byteOffset, byteLength, resolve, reject });
    flush().catch(() => {}); // a failed flush rejects this read's promise itself
  });
}

/** Drops everything pending (device lost: the commands refer to buffers that no longer exist). */
export function dropPending(reason: Error): void {
  for (const c of takeQueue()) if (c.kind === "read") c.reject(reason);
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
    let cmds: Command[] | null = null;
    try {
      const dev = await getDevice();
      cmds = takeQueue();
      // A validation error here is a GradLab bug, never the user's: surface it on the readback that
      // needed the result instead of returning garbage.
      dev.device.pushErrorScope("validation");
      const reads = encodeAndSubmit(dev, cmds);
      beginWait();
      const error = await dev.device.popErrorScope();
      if (error) throw new RuntimeError(`internal WebGPU error (please report): ${error.message}`);
      await Promise.all(reads);
      if (reads.length === 0) await dev.device.queue.onSubmittedWorkDone();
    } catch (e) {
      // No device (nothing installed), or a failed submit: every waiting read learns why.
      for (const c of cmds ?? takeQueue()) if (c.kind === "read") c.reject(e);
      throw e;
    }
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

/** Per-device encoding state: the params buffer with a bind group per slot, and cached data bind groups. */
interface EncodeState {
  params: GPUBuffer;
  paramGroups: GPUBindGroup[];
  bindGroups: Map<string, GPUBindGroup>;
}
const encodeStates = new WeakMap<GPUDevice, EncodeState>();

function encodeState(dev: DeviceState): EncodeState {
  let st = encodeStates.get(dev.device);
  if (!st) {
    const params = dev.device.createBuffer({ size: PARAM_SLOTS * PARAM_ALIGN, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    const layout = paramsLayout(dev.device);
    st = {
      params,
      paramGroups: Array.from({ length: PARAM_SLOTS }, (_, i) =>
        dev.device.createBindGroup({ layout, entries: [{ binding: 0, resource: { buffer: params, offset: i * PARAM_ALIGN, size: PARAM_ALIGN } }] })),
      bindGroups: new Map(),
    };
    encodeStates.set(dev.device, st);
  }
  return st;
}

/** Encodes the commands (in submits of at most PARAM_SLOTS dispatches) and returns the pending readbacks. */
function encodeAndSubmit(dev: DeviceState, cmds: Command[]): Promise<void>[] {
  const reads: Promise<void>[] = [];
  let start = 0;
  while (start < cmds.length) {
    let end = start;
    let dispatches = 0;
    while (end < cmds.length && (cmds[end].kind !== "dispatch" || dispatches < PARAM_SLOTS)) {
      if (cmds[end].kind === "dispatch") dispatches++;
      end++;
    }
    reads.push(...encodeChunk(dev, cmds.slice(start, end), dispatches));
    start = end;
  }
  return reads;
}

function bindGroupFor(dev: DeviceState, st: EncodeState, slots: Range[]): GPUBindGroup {
  let key = "";
  for (const b of slots) key += `${b.segment.id}.${b.offset}.${b.size},`;
  let bg = st.bindGroups.get(key);
  if (bg && slots.every((b) => b.segment.buffer && b.segment.generation === dev.epoch)) return bg;
  const device = dev.device;
  const entries: GPUBindGroupEntry[] = [];
  for (let i = 0; i < MAX_BINDINGS; i++) {
    const b = slots[i];
    entries.push({
      binding: i + 1,
      resource: b
        ? { buffer: bufferOf(dev, b.segment), offset: b.offset, size: b.size }
        : { buffer: dummyFor(device), offset: i * 256, size: 256 },
    });
  }
  bg = device.createBindGroup({ layout: bindGroupLayout(device), entries });
  // Keys name segments by id, and ids are never reused, so stale entries are only dropped for space.
  if (st.bindGroups.size > 8192) st.bindGroups.clear();
  st.bindGroups.set(key, bg);
  return bg;
}

function encodeChunk(dev: DeviceState, cmds: Command[], dispatches: number): Promise<void>[] {
  const device = dev.device;
  const st = encodeState(dev);
  if (dispatches > 0) {
    const staging = new Uint8Array(dispatches * PARAM_ALIGN);
    let i = 0;
    for (const c of cmds) {
      if (c.kind !== "dispatch") continue;
      staging.set(new Uint8Array(c.params.buffer, c.params.byteOffset, c.params.byteLength), PARAM_ALIGN * i++);
    }
    // Safe: writeBuffer is ordered after every earlier submit (which read the previous contents).
    device.queue.writeBuffer(st.params, 0, staging);
  }

  const encoder = device.createCommandEncoder();
  let pass: GPUComputePassEncoder | null = null;
  let lastPipeline: GPUComputePipeline | null = null;
  const endPass = () => { pass?.end(); pass = null; lastPipeline = null; };
  const temporaries: GPUBuffer[] = [];
  const reads: Array<{ cmd: Readback; staging: GPUBuffer; start: number }> = [];
  let di = 0;
  for (const c of cmds) {
    if (c.kind === "dispatch") {
      // Bind each distinct block once; S<k> tells the kernel which binding holds operand k.
      const slots: Range[] = [];
      const slotOf: number[] = [];
      for (const b of c.buffers) {
        let s = slots.findIndex((r) => r.segment === b.segment && r.offset === b.offset);
        if (s < 0) s = slots.push(b) - 1;
        slotOf.push(s + 1);
      }
      const shader = c.subgroupShader && dev.facts.subgroups ? c.subgroupShader : c.shader;
      const pipeline = pipelineFor(device, shader, c.entry, c.constants, slotOf);
      pass ??= encoder.beginComputePass();
      if (pipeline !== lastPipeline) pass.setPipeline((lastPipeline = pipeline));
      pass.setBindGroup(0, st.paramGroups[di++]);
      pass.setBindGroup(1, bindGroupFor(dev, st, slots));
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
      reads.push({ cmd: c, staging, start: start - alignedStart });
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
