// Ops record commands here; nothing touches the GPU until a flush. A flush happens on readback,
// on synchronize(), or when enough commands are pending (if a device is ready). Recording first has
// three benefits: ops return at once and need no device (so `torch` can be used before the async
// adapter request has finished), many dispatches share one command encoder (one dispatch costs ~20 µs
// batched but 30–90 µs with its own submit on lavapipe), and uploads are ordered with the dispatches
// around them (queue.writeBuffer would jump ahead of unsubmitted work that reads a reused block).
//
// Isolation (DESIGN.md: one invalid object in a command buffer makes Dawn drop the whole submit, so
// every op of a batch read back zeros): before a batch is encoded, the GPU objects it needs that do not
// exist yet (segment buffers, pipelines, bind groups) are created inside error scopes and awaited. A
// dispatch whose objects Dawn rejected is left out of the command buffer; what it would have written is
// marked invalid, and so is whatever is later computed from it; reading such a tensor raises a
// RuntimeError naming the op that Dawn rejected and Dawn's message. Everything else in the batch runs.
// Limits that the host can check (binding sizes, buffer sizes, grid sizes) are checked when the op is
// recorded (ops/launch.ts), so they raise on the op itself.

import type { Block, Segment } from "../memory/allocator.ts";

/**
 * Where a block was when the command was recorded. Blocks are mutable (a freed block merges with its
 * neighbours, a reused one is split), so commands keep a snapshot; two snapshots of live blocks never
 * overlap, and the same storage used twice gives equal snapshots. A windowed dispatch binds a window
 * of a large block: `offset`/`size` are the window's bytes, `block` the block's offset (its identity)
 * and `base` the element where the window starts inside the block.
 */
export interface Range {
  readonly segment: Segment;
  readonly offset: number;
  readonly size: number;
  readonly block: number;
  readonly base: number;
}
export const rangeOf = (b: Block): Range => ({ segment: b.segment, offset: b.offset, size: b.size, block: b.offset, base: 0 });
import { beginWait, currentEpoch, getDevice, lastLossReason, onDeviceLost, onDeviceReady, readyDevice, type DeviceState } from "./backend.ts";
import { setBacking } from "../memory/backing.ts";
import { webgpu } from "../memory/devices.ts";

// The allocator refuses a request larger than the device's largest buffer before reserving anything.
onDeviceReady((s) => {
  webgpu.allocator.maxBufferSize = (s.facts.limits as Record<string, number>).maxBufferSize ?? null;
});
import { RuntimeError } from "../errors.ts";
import { bindGroupLayout, dummyFor, forgetPipeline, MAX_BINDINGS, paramsLayout, pipelineEntry } from "./pipelines.ts";

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
  /** The op that recorded it (for error messages). */
  label?: string;
  /** Operands the kernel writes (default: operand 0). */
  writes?: number[];
  /** A windowed run: invocations [first, first + count) of the op (prelude.wgsl, WINDOWED). */
  window?: { first: number; count: number };
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
/** Params words a kernel may use; words 56..63 of the slot describe a windowed run (prelude.wgsl). */
export const PARAM_WORDS = 56;
let queue: Command[] = [];

export function enqueue(
  shader: string,
  entry: string,
  blocks: Block[],
  params: Uint32Array,
  workgroups: [number, number, number],
  constants?: Record<string, number>,
  subgroupShader?: string,
  label?: string,
): void {
  record({ kind: "dispatch", shader, entry, constants, buffers: blocks.map(rangeOf), params, workgroups, subgroupShader, label });
}

/** Records a dispatch built by the caller (windowed runs: ops/launch.ts). */
export function record(cmd: Dispatch): void {
  if (cmd.params.length > PARAM_WORDS) throw new RuntimeError(`internal: ${cmd.params.length} params words (at most ${PARAM_WORDS})`);
  queue.push(cmd);
  if (queue.length >= FLUSH_AT) {
    const dev = readyDevice();
    if (dev) schedule(dev, takeQueue()).catch(() => {}); // a failed batch rejects its own reads
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
function dropPending(reason: Error): void {
  for (const c of takeQueue()) if (c.kind === "read") c.reject(reason);
}

function takeQueue(): Command[] {
  const q = queue;
  queue = [];
  return q;
}

/** Batches are encoded and submitted one after another, in recording order. */
let chain: Promise<void> = Promise.resolve();
let jobs = 0;

function schedule(dev: DeviceState | null, cmds: Command[]): Promise<void> {
  const fail = (e: unknown) => {
    // No device (nothing installed), or a failed submit: every waiting read learns why.
    for (const c of cmds) if (c.kind === "read") c.reject(e);
    throw e;
  };
  // Objects are made now, while every segment the commands name still exists (a segment released
  // before the batch is encoded, by empty_cache, keeps its buffer until the batch has run).
  let prep: Prep | null = null;
  try {
    prep = dev ? prepareBatch(dev, cmds) : null;
    // Nothing new to validate and nothing ahead in line: encode and submit at once (a long synchronous
    // loop keeps the GPU busy, as before isolation existed).
    if (dev && prep && !prep.pending && jobs === 0) return encodeBatch(dev, cmds, prep).catch(fail);
  } catch (e) {
    return Promise.reject(e).catch(fail);
  }
  jobs++;
  const job = chain
    .then(async () => {
      const d = dev ?? (await getDevice());
      const p = prep ?? prepareBatch(d, cmds);
      if (p.pending) await p.pending;
      await encodeBatch(d, cmds, p);
    })
    .catch(fail)
    .finally(() => {
      jobs--;
    });
  chain = job.catch(() => {});
  return job;
}

/** Submits everything recorded so far and waits until the GPU has finished it. */
export async function flush(): Promise<void> {
  if (queue.length === 0) {
    await chain;
    return;
  }
  await schedule(readyDevice(), takeQueue());
}

/** A segment's buffer, with the validation of its creation still to await (null: it existed already). */
interface BufferInfo {
  buffer: GPUBuffer;
  check: Promise<string | null> | null;
}

function resolveBuffers(dev: DeviceState, cmds: Command[]): Map<Segment, BufferInfo> {
  const out = new Map<Segment, BufferInfo>();
  const need = (seg: Segment) => {
    if (out.has(seg)) return;
    if (seg.buffer && seg.generation === dev.epoch) {
      out.set(seg, { buffer: seg.buffer, check: null });
      return;
    }
    const device = dev.device;
    device.pushErrorScope("out-of-memory");
    device.pushErrorScope("validation");
    seg.buffer = device.createBuffer({
      size: seg.size,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
    seg.generation = dev.epoch;
    const v = device.popErrorScope();
    const o = device.popErrorScope();
    const check = Promise.all([v, o]).then(([a, b]) => {
      const e = a ?? b;
      return e ? `creating a GPU buffer of ${seg.size} bytes for a memory segment failed: ${e.message}` : null;
    });
    out.set(seg, { buffer: seg.buffer, check });
  };
  for (const c of cmds) {
    if (c.kind === "dispatch") for (const r of c.buffers) need(r.segment);
    else need(c.block.segment);
  }
  return out;
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
        dev.device.createBindGroup({ layout, entries: [{ binding: 0, resource: { buffer: params, offset: i * PARAM_ALIGN, size: PARAM_ALIGN } }] }),
      ),
      bindGroups: new Map(),
    };
    encodeStates.set(dev.device, st);
  }
  return st;
}

/** A dispatch ready to encode: its pipeline, its data bind group, its slot per distinct range. */
interface Prepared {
  pipeline: GPUComputePipeline;
  pipelineKey: string;
  bindGroup: GPUBindGroup;
  bindKey: string;
  slots: Range[];
  fresh: boolean;
}

function slotsOf(c: Dispatch): { slots: Range[]; slotOf: number[] } {
  // Bind each distinct block once; S<k> tells the kernel which binding holds operand k.
  const slots: Range[] = [];
  const slotOf: number[] = [];
  for (const b of c.buffers) {
    let s = slots.findIndex((r) => r.segment === b.segment && r.offset === b.offset);
    if (s < 0) s = slots.push(b) - 1;
    slotOf.push(s + 1);
  }
  return { slots, slotOf };
}

function prepare(dev: DeviceState, st: EncodeState, c: Dispatch, buffers: Map<Segment, BufferInfo>): Prepared {
  const { slots, slotOf } = slotsOf(c);
  const shader = c.subgroupShader && dev.facts.subgroups ? c.subgroupShader : c.shader;
  const { pipeline, key: pipelineKey, created } = pipelineEntry(dev.device, shader, c.entry, c.constants, slotOf);
  let bindKey = "";
  for (const b of slots) bindKey += `${b.segment.id}.${b.offset}.${b.size},`;
  let bindGroup = st.bindGroups.get(bindKey);
  let fresh = created;
  if (!bindGroup) {
    const entries: GPUBindGroupEntry[] = [];
    for (let i = 0; i < MAX_BINDINGS; i++) {
      const b = slots[i];
      entries.push({
        binding: i + 1,
        resource: b ? { buffer: buffers.get(b.segment)!.buffer, offset: b.offset, size: b.size } : { buffer: dummyFor(dev.device), offset: i * 256, size: 256 },
      });
    }
    bindGroup = dev.device.createBindGroup({ layout: bindGroupLayout(dev.device), entries });
    // Keys name segments by id, and ids are never reused, so stale entries are only dropped for space.
    if (st.bindGroups.size > 8192) st.bindGroups.clear();
    st.bindGroups.set(bindKey, bindGroup);
    fresh = true;
  }
  return { pipeline, pipelineKey, bindGroup, bindKey, slots, fresh };
}

const firstLine = (m: string) => m.split("\n")[0].trim().replace(/\.+$/, "");
/** Why a block's contents are invalid (Dawn rejected the op that writes it, or one it was computed from). */
const invalid = new Map<string, string>();
const idOf = (r: Range) => `${r.segment.id}:${r.block}`;
/** Blocks whose contents are invalid now (for tests and diagnostics). */
export const invalidBlocks = () => invalid.size;

/** A batch's GPU objects, made; `pending` settles once Dawn's verdict on the new ones is known. */
interface Prep {
  buffers: Map<Segment, BufferInfo>;
  prepared: Map<Dispatch, Prepared>;
  failed: Map<Dispatch, string>;
  badSegments: Map<Segment, string>;
  pending: Promise<void> | null;
}

function prepareBatch(dev: DeviceState, cmds: Command[]): Prep {
  const device = dev.device;
  const st = encodeState(dev);
  const buffers = resolveBuffers(dev, cmds);
  const prepared = new Map<Dispatch, Prepared>();
  const failed = new Map<Dispatch, string>();
  const badSegments = new Map<Segment, string>();
  const dispatches = cmds.filter((c): c is Dispatch => c.kind === "dispatch");
  // Pipelines and bind groups are created optimistically under one error scope; only if Dawn objects
  // is each new one made again under its own scope, to find the op it belongs to.
  device.pushErrorScope("validation");
  const fresh: Dispatch[] = [];
  for (const c of dispatches) {
    const p = prepare(dev, st, c, buffers);
    prepared.set(c, p);
    if (p.fresh) fresh.push(c);
  }
  const scope = device.popErrorScope();
  const newBuffers = [...buffers].filter(([, info]) => info.check);
  if (fresh.length === 0 && newBuffers.length === 0) {
    scope.catch(() => null);
    return { buffers, prepared, failed, badSegments, pending: null };
  }
  const pending = (async () => {
    // 1. Segment buffers made for this batch.
    await Promise.all(
      newBuffers.map(async ([seg, info]) => {
        const e = await info.check;
        if (e) {
          badSegments.set(seg, e);
          if (seg.buffer === info.buffer) seg.buffer = null;
          info.buffer.destroy();
        }
      }),
    );
    for (const c of dispatches) {
      const bad = c.buffers.map((r) => badSegments.get(r.segment)).find((e) => e !== undefined);
      if (bad !== undefined) failed.set(c, bad);
    }
    // 2. Pipelines and bind groups.
    const batchError = await scope;
    if (!batchError) return;
    const suspects = fresh.filter((c) => !failed.has(c));
    for (const c of fresh) {
      const p = prepared.get(c)!;
      st.bindGroups.delete(p.bindKey);
      forgetPipeline(device, p.pipelineKey);
    }
    const checks = suspects.map((c) => {
      device.pushErrorScope("validation");
      prepared.set(c, prepare(dev, st, c, buffers));
      return device.popErrorScope();
    });
    const errors = await Promise.all(checks);
    suspects.forEach((c, i) => {
      const e = errors[i];
      if (!e) return;
      const p = prepared.get(c)!;
      st.bindGroups.delete(p.bindKey);
      forgetPipeline(device, p.pipelineKey);
      failed.set(c, e.message);
    });
  })();
  return { buffers, prepared, failed, badSegments, pending };
}

/** Encodes what is valid, follows invalid results through the batch, submits; settles when done. */
function encodeBatch(dev: DeviceState, cmds: Command[], prep: Prep): Promise<void> {
  const device = dev.device;
  const st = encodeState(dev);
  const { failed, badSegments } = prep;
  // The common case: nothing invalid anywhere, every command runs as recorded.
  const clean = invalid.size === 0 && failed.size === 0 && badSegments.size === 0;
  const run: Command[] = clean ? cmds : [];
  if (!clean)
    for (const c of cmds) {
      if (c.kind === "dispatch") {
        const w = c.writes ?? [0];
        const writes = w.map((k) => c.buffers[k]).filter(Boolean);
        // What the kernel reads: the other operands (an in-place op passes its output again as an input).
        const readsOf = c.buffers.filter((_, k) => !w.includes(k));
        const own = failed.get(c);
        let why: string | undefined;
        if (own !== undefined) {
          why = `WebGPU rejected the kernel of op '${c.label ?? c.entry}' (${c.shader}.${c.entry}): ${firstLine(own)}`;
        } else {
          for (const r of readsOf) {
            const bad = invalid.get(idOf(r));
            if (bad !== undefined) {
              why = bad;
              break;
            }
          }
        }
        if (why !== undefined) {
          for (const r of writes) invalid.set(idOf(r), why);
          continue;
        }
        for (const r of writes) invalid.delete(idOf(r));
        run.push(c);
      } else if (c.kind === "upload") {
        const bad = badSegments.get(c.block.segment);
        if (bad) invalid.set(idOf(c.block), bad);
        else {
          invalid.delete(idOf(c.block));
          run.push(c);
        }
      } else {
        const bad = badSegments.get(c.block.segment) ?? invalid.get(idOf(c.block));
        if (bad !== undefined)
          c.reject(new RuntimeError(`${bad}. This tensor was not computed (or was computed from a result that was not); the other ops were not affected.`));
        else run.push(c);
      }
    }
  device.pushErrorScope("validation");
  const reads = encodeAndSubmit(dev, st, run, prep.prepared, prep.buffers);
  beginWait();
  const scope = device.popErrorScope();
  return (async () => {
    const error = await scope;
    if (error) throw new RuntimeError(`internal WebGPU error (please report): ${error.message}`);
    await Promise.all(reads);
    if (reads.length === 0) await device.queue.onSubmittedWorkDone();
  })();
}

/** Encodes the commands (in submits of at most PARAM_SLOTS dispatches) and returns the pending readbacks. */
function encodeAndSubmit(
  dev: DeviceState,
  st: EncodeState,
  cmds: Command[],
  prepared: Map<Dispatch, Prepared>,
  buffers: Map<Segment, BufferInfo>,
): Promise<void>[] {
  const reads: Promise<void>[] = [];
  let start = 0;
  while (start < cmds.length) {
    let end = start;
    let dispatches = 0;
    while (end < cmds.length && (cmds[end].kind !== "dispatch" || dispatches < PARAM_SLOTS)) {
      if (cmds[end].kind === "dispatch") dispatches++;
      end++;
    }
    reads.push(...encodeChunk(dev, st, cmds.slice(start, end), dispatches, prepared, buffers));
    start = end;
  }
  return reads;
}

function encodeChunk(
  dev: DeviceState,
  st: EncodeState,
  cmds: Command[],
  dispatches: number,
  prepared: Map<Dispatch, Prepared>,
  buffers: Map<Segment, BufferInfo>,
): Promise<void>[] {
  const device = dev.device;
  if (dispatches > 0) {
    const staging = new Uint8Array(dispatches * PARAM_ALIGN);
    const words = new Uint32Array(staging.buffer);
    let i = 0;
    for (const c of cmds) {
      if (c.kind !== "dispatch") continue;
      staging.set(new Uint8Array(c.params.buffer, c.params.byteOffset, c.params.byteLength), PARAM_ALIGN * i);
      if (c.window) {
        const w = (PARAM_ALIGN / 4) * i;
        words[w + 56] = c.window.count;
        words[w + 57] = c.window.first;
        prepared.get(c)!.slots.forEach((r, s) => (words[w + 58 + s] = r.base));
      }
      i++;
    }
    // Safe: writeBuffer is ordered after every earlier submit (which read the previous contents).
    device.queue.writeBuffer(st.params, 0, staging);
  }

  const encoder = device.createCommandEncoder();
  let pass: GPUComputePassEncoder | null = null;
  let lastPipeline: GPUComputePipeline | null = null;
  const endPass = () => {
    pass?.end();
    pass = null;
    lastPipeline = null;
  };
  const temporaries: GPUBuffer[] = [];
  const reads: Array<{ cmd: Readback; staging: GPUBuffer; start: number }> = [];
  let di = 0;
  for (const c of cmds) {
    if (c.kind === "dispatch") {
      const p = prepared.get(c)!;
      pass ??= encoder.beginComputePass();
      if (p.pipeline !== lastPipeline) pass.setPipeline((lastPipeline = p.pipeline));
      pass.setBindGroup(0, st.paramGroups[di++]);
      pass.setBindGroup(1, p.bindGroup);
      pass.dispatchWorkgroups(...c.workgroups);
    } else if (c.kind === "upload") {
      endPass();
      const size = Math.ceil(c.data.byteLength / 4) * 4;
      const staging = device.createBuffer({ size, usage: GPUBufferUsage.COPY_SRC, mappedAtCreation: true });
      new Uint8Array(staging.getMappedRange()).set(c.data);
      staging.unmap();
      temporaries.push(staging);
      encoder.copyBufferToBuffer(staging, 0, buffers.get(c.block.segment)!.buffer, c.block.offset + c.byteOffset, size);
    } else {
      endPass();
      const start = c.block.offset + c.byteOffset;
      const alignedStart = start - (start % 4);
      const aligned = Math.ceil((start + c.byteLength - alignedStart) / 4) * 4;
      const staging = device.createBuffer({ size: Math.max(aligned, 4), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      if (aligned > 0) encoder.copyBufferToBuffer(buffers.get(c.block.segment)!.buffer, alignedStart, staging, 0, aligned);
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
      (err) => {
        staging.destroy();
        cmd.reject(err);
      },
    ),
  );
}

/** Destroys a segment's GPU buffer once the work already recorded against it has been submitted. */
function destroyBuffer(buffer: GPUBuffer): void {
  if (queue.length === 0 && jobs === 0) {
    buffer.destroy();
    return;
  }
  const dev = readyDevice();
  if (queue.length > 0 && dev) schedule(dev, takeQueue()).catch(() => {});
  chain.then(() => buffer.destroy());
  // Without a device the buffer cannot exist; nothing to do.
}

// The device backs memory (memory/backing.ts): buffers are destroyed after the work queued on them,
// and a device loss empties the allocator's segments and fails what was waiting to be read.
setBacking({ destroyBuffer, epoch: currentEpoch, lastLossReason });
onDeviceLost((reason) => {
  webgpu.allocator.forgetBuffers();
  dropPending(new RuntimeError(`WebGPU device lost: ${reason}`));
});
