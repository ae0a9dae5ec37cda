// Ops record commands here and the GPU gets them in batches: on readback, on synchronize(), and as soon
// as FLUSH_AT commands are pending. A batch is encoded and submitted synchronously, in the op that
// filled it, so a loop that never awaits keeps the device busy and the host holds at most FLUSH_AT
// commands (queue.submit is synchronous in WebGPU; only reads need the event loop). Recording first
// still pays: many dispatches share one command encoder (one dispatch costs ~20 µs batched but
// 30–90 µs with its own submit on lavapipe), and uploads are ordered with the dispatches around them
// (queue.writeBuffer would jump ahead of unsubmitted work that reads a reused block). Before the device
// exists (a script that has not awaited yet) commands wait in the queue; index.ts starts acquiring the
// device at import, so it is ready as soon as the event loop first turns.
//
// Isolation (DESIGN.md: one invalid object in a command buffer makes Dawn drop the whole submit, so
// every op of a batch would read back zeros). Limits the host can check (binding sizes, buffer sizes,
// grid sizes) are checked when the op is recorded (ops/launch.ts), so they raise on the op itself; bind
// groups are then valid by construction. What only Dawn can judge — a new pipeline (shader compilation)
// and a new segment buffer (out of memory) — is made inside its own error scope and used at once,
// without waiting for the verdict, which arrives only when the event loop turns:
// - a dispatch with a new pipeline is submitted alone, so a rejected pipeline drops only itself; later
//   dispatches with it, made before its verdict is in (a loop that never yields), share batches, which
//   are then suspect of that verdict like everything they write;
// - every block written while a verdict is pending, by that dispatch, by a batch that touches a new
//   buffer, or from a block that was, is "suspect" of that verdict; a "no" makes exactly those blocks
//   invalid, so reading them (or anything later computed from them) raises a RuntimeError naming the
//   op or the buffer Dawn rejected and Dawn's message. A rewrite by a clean op makes a block valid.
// - readbacks resolve only after the verdicts their block depends on, so no value read is one that
//   Dawn silently dropped. The bookkeeping lives only while verdicts are pending, and its size is bounded
//   by the blocks in use, not by the length of the loop.
// Each submit also has an error scope of its own; an error there that no verdict explains is a GradLab
// bug: every block written since that submit is marked invalid ("internal WebGPU error").

import type { Block, Segment } from "../memory/allocator.ts";

import { beginWait, currentEpoch, getDevice, lastLossReason, onDeviceLost, onDeviceReady, readyDevice, type DeviceState } from "./backend.ts";
import { setBacking } from "../memory/backing.ts";
import { webgpu } from "../memory/devices.ts";

// The allocator refuses a request larger than the device's largest buffer before reserving anything.
onDeviceReady((s) => {
  webgpu.allocator.maxBufferSize = (s.facts.limits as Record<string, number>).maxBufferSize ?? null;
});
import { RuntimeError } from "../errors.ts";
import { bindGroupLayout, dummyFor, type Kernel, kernelOf, MAX_BINDINGS, paramsLayout, pipelineEntry } from "./pipelines.ts";
import {
  firstLine,
  idOf,
  invalid,
  newRisk,
  NOT_COMPUTED,
  pendingBuffers,
  pendingPipelines,
  pipelineRisk,
  pruneFreed,
  type Range,
  rangeOf,
  type Risk,
  risksOf,
  suspect,
  union,
  where,
} from "./verdicts.ts";

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
  /** shader, entry and constants interned (pipelines.ts); ops that dispatch one kernel often pass it. */
  kernel?: Kernel;
  /** Set while the batch is encoded (prepare), cleared once encoded: what the dispatch binds. */
  pipeline?: GPUComputePipeline;
  bindGroup?: GPUBindGroup;
  /** The bindings of a windowed run (encodeChunk writes where each window starts). */
  windowSlots?: Range[];
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
  push(cmd);
}

export function upload(block: Block, data: ArrayBufferView, byteOffset = 0): void {
  const bytes = new Uint8Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength));
  push({ kind: "upload", block: rangeOf(block), byteOffset, data: bytes });
}

/** Queues a command; a full queue is submitted now, when the device exists. */
function push(cmd: Command): void {
  queue.push(cmd);
  if (queue.length >= FLUSH_AT) {
    const dev = readyDevice();
    if (dev) submitBatch(dev, takeQueue());
    else void getDevice().catch(() => {}); // after a device loss: a new one, for the next await
  }
}

/** Commands recorded and not yet submitted (for tests: a loop that never awaits keeps this bounded). */
export const pendingCommands = () => queue.length;

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

/** Settles when everything submitted so far has run and every verdict on it is known. */
const inFlight = new Set<Promise<void>>();

/** Submits everything recorded so far and waits until the GPU has finished it. */
export async function flush(): Promise<void> {
  if (queue.length > 0) {
    let dev = readyDevice();
    if (!dev) {
      try {
        dev = await getDevice();
      } catch (e) {
        // No device (nothing installed): every waiting read learns why.
        dropPending(e as Error);
        throw e;
      }
    }
    // Commands recorded while the device was being acquired are part of this batch too.
    if (queue.length > 0) submitBatch(dev, takeQueue());
  }
  await Promise.all(inFlight);
}

// ---- verdicts still to come ----

/** The last submit that wrote each block, kept while some submit's own error scope is pending. */
const lastWrite = new Map<string, number>();
let submits = 0;
let unsettledSubmits = 0;

/** A segment's buffer: made now if it does not exist on this device (with the verdict still to come). */
function bufferOf(dev: DeviceState, seg: Segment): GPUBuffer {
  if (seg.buffer && seg.generation === dev.epoch) return seg.buffer;
  const device = dev.device;
  device.pushErrorScope("out-of-memory");
  device.pushErrorScope("validation");
  const buffer = device.createBuffer({ size: seg.size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  seg.buffer = buffer;
  seg.generation = dev.epoch;
  const v = device.popErrorScope();
  const o = device.popErrorScope();
  const check = Promise.all([v, o]).then(([a, b]) => {
    const e = a ?? b;
    return e ? `creating a GPU buffer of ${seg.size} bytes for a memory segment failed: ${firstLine(e.message)}` : null;
  });
  const risk = newRisk(check, () => {
    // The next batch that needs the segment makes its buffer again, with bind groups of its own.
    if (seg.buffer === buffer) seg.buffer = null;
    buffer.destroy();
    clearBindGroups(encodeState(dev));
  });
  pendingBuffers.set(seg, risk);
  void risk.verdict.then(() => pendingBuffers.get(seg) === risk && pendingBuffers.delete(seg));
  return buffer;
}

/**
 * Cached data bind groups, by their bindings: a trie whose levels are a binding's segment id, offset and
 * size (numbers: found without building a key string per dispatch).
 */
type BindTrie = Map<number, Map<number, Map<number, BindNode>>>;
interface BindNode {
  group?: GPUBindGroup;
  next?: BindTrie;
}
/** Per-device encoding state: the params buffer with a bind group per slot, and cached data bind groups. */
interface EncodeState {
  params: GPUBuffer;
  paramGroups: GPUBindGroup[];
  /** The params of a chunk, staged for one writeBuffer (reused: writeBuffer copies them at once). */
  staging: Uint32Array;
  /** The root of the trie (its own group: a dispatch without bindings). */
  bindGroups: BindNode;
  bindGroupCount: number;
}

/** Forgets every cached bind group (too many kept, or one of their buffers was rejected). */
function clearBindGroups(st: EncodeState): void {
  st.bindGroups = {};
  st.bindGroupCount = 0;
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
      staging: new Uint32Array((PARAM_SLOTS * PARAM_ALIGN) / 4),
      bindGroups: {},
      bindGroupCount: 0,
    };
    encodeStates.set(dev.device, st);
  }
  return st;
}

/**
 * What prepare() found beyond what it stores on the dispatch: the verdict the dispatch waits on (when its
 * pipeline is new or still being judged), and whether the pipeline was made for it (a submit of its own).
 * One object, reused: read at once by submitBatch.
 */
const prepared: { risk: Risk | null; alone: boolean } = { risk: null, alone: false };

/** prepare()'s working arrays, reused (it copies what it keeps). */
const slotScratch: Range[] = [];

/** The cached bind group of these bindings (a trie walk: no key string, no allocation on a hit). */
function bindGroupFor(dev: DeviceState, st: EncodeState, slots: readonly Range[], n: number): GPUBindGroup {
  // Keys name segments by id, and ids are never reused, so stale entries are only dropped for space
  // (and when a segment's buffer is rejected: bufferOf).
  if (st.bindGroupCount > 8192) clearBindGroups(st);
  let node = st.bindGroups;
  for (let i = 0; i < n; i++) {
    const b = slots[i];
    const level = (node.next ??= new Map());
    let byOffset = level.get(b.segment.id);
    if (!byOffset) level.set(b.segment.id, (byOffset = new Map()));
    let bySize = byOffset.get(b.offset);
    if (!bySize) byOffset.set(b.offset, (bySize = new Map()));
    let next = bySize.get(b.size);
    if (!next) bySize.set(b.size, (next = {}));
    node = next;
  }
  if (node.group) return node.group;
  const device = dev.device;
  const entries: GPUBindGroupEntry[] = [];
  for (let i = 0; i < MAX_BINDINGS; i++) {
    const b = i < n ? slots[i] : undefined;
    entries.push({
      binding: i + 1,
      resource: b ? { buffer: bufferOf(dev, b.segment), offset: b.offset, size: b.size } : { buffer: dummyFor(device), offset: i * 256, size: 256 },
    });
  }
  st.bindGroupCount++;
  return (node.group = device.createBindGroup({ layout: bindGroupLayout(device), entries }));
}

function prepare(dev: DeviceState, st: EncodeState, c: Dispatch): typeof prepared {
  const device = dev.device;
  // Bind each distinct block once; S<k> tells the kernel which binding holds operand k.
  // (slotScratch is reused, never shrunk: setting an array's length to 0 frees its storage.)
  const slots = slotScratch;
  let n = 0;
  let slotsCode = 0;
  for (const b of c.buffers) {
    let s = 0;
    while (s < n && !(slots[s].segment === b.segment && slots[s].offset === b.offset)) s++;
    if (s === n) slots[n++] = b;
    slotsCode = slotsCode * 8 + s + 1;
  }
  const kernel =
    c.subgroupShader && dev.facts.subgroups ? kernelOf(c.subgroupShader, c.entry, c.constants) : (c.kernel ??= kernelOf(c.shader, c.entry, c.constants));
  const { pipeline, key, check } = pipelineEntry(device, kernel, slotsCode);
  // A new pipeline's first dispatch is submitted alone. Later ones while its verdict is still pending (a
  // loop that has not yielded since) join batches, which take on that verdict: one submit per such
  // dispatch held every submit's bookkeeping and Dawn's per-submit state until the loop ended (+128 KiB
  // of live heap per training step of a 64-128-10 MLP whose first loop never awaited).
  const risk = check
    ? pipelineRisk(device, key, check, `WebGPU rejected the kernel of op '${c.label ?? c.entry}' (${c.shader}.${c.entry})`)
    : pendingPipelines.size > 0
      ? (pendingPipelines.get(key) ?? null)
      : null;
  c.pipeline = pipeline;
  c.bindGroup = bindGroupFor(dev, st, slots, n);
  if (c.window) c.windowSlots = slots.slice(0, n);
  prepared.risk = risk;
  prepared.alone = check !== null;
  return prepared;
}

/** One submit's worth of commands, in order, with what they need. */
interface Group {
  /** This submit's number (lastWrite). */
  n: number;
  cmds: Command[];
  /** Verdicts every write of the group depends on (a new buffer it touches, or its new pipeline). */
  risks: Risk[];
  /** What the group writes so far, to be made suspect of a risk the group takes on later. */
  writes: string[];
  reads: Array<{ cmd: Readback; risks: Risk[] }>;
}

/**
 * Encodes and submits a batch now, following validity and suspicion through it in order. Commands whose
 * inputs are known to be invalid are left out (their writes become invalid too); a dispatch with a new
 * pipeline gets a submit of its own.
 */
function submitBatch(dev: DeviceState, cmds: Command[]): void {
  const device = dev.device;
  const st = encodeState(dev);
  // Errors while objects are made are each judged in their own scope (pipelines, buffers) or follow
  // from those (a bind group of a rejected buffer); this scope keeps them out of the uncaptured errors.
  device.pushErrorScope("validation");
  const open = (): Group => ({ n: ++submits, cmds: [], risks: [], writes: [], reads: [] });
  let group = open();
  const close = () => {
    if (group.cmds.length > 0) submitGroup(dev, st, group);
    group = open();
  };
  const take = (r: Risk) => {
    if (group.risks.includes(r)) return;
    group.risks.push(r);
    for (const id of group.writes) suspect.set(id, union(suspect.get(id) ?? [], [r]));
  };
  const touch = (ranges: Range[]) => {
    if (pendingBuffers.size > 0)
      for (const { segment } of ranges) {
        const r = pendingBuffers.get(segment);
        if (r) take(r); // if Dawn rejects the buffer, it drops this whole submit
      }
  };

  const write = (r: Range, risks: Risk[]) => {
    const id = idOf(r);
    invalid.delete(id);
    if (risks.length > 0) {
      suspect.set(id, risks);
      where.set(id, r);
    } else suspect.delete(id);
    lastWrite.set(id, group.n);
    group.writes.push(id);
  };
  for (const c of cmds) {
    if (c.kind === "dispatch") {
      const w = c.writes ?? WRITES_FIRST;
      // (The maps are empty but after a rejected kernel or while a verdict is pending: no lookups then.)
      const reads = invalid.size > 0 || suspect.size > 0 ? c.buffers.filter((_, k) => !w.includes(k)) : NO_RANGES;
      const bad = invalid.size > 0 ? reads.map((r) => invalid.get(idOf(r))).find((e) => e !== undefined) : undefined;
      if (bad !== undefined) {
        for (const k of w)
          if (c.buffers[k]) {
            invalid.set(idOf(c.buffers[k]), bad);
            where.set(idOf(c.buffers[k]), c.buffers[k]);
            suspect.delete(idOf(c.buffers[k]));
          }
        continue;
      }
      const { risk, alone } = prepare(dev, st, c);
      if (alone) close();
      if (risk) take(risk);
      touch(c.buffers);
      let risks = group.risks;
      if (suspect.size > 0) for (const r of reads) risks = union(risks, risksOf(idOf(r)));
      for (const k of w) if (c.buffers[k]) write(c.buffers[k], risks);
      group.cmds.push(c);
      if (alone) close();
    } else {
      bufferOf(dev, c.block.segment);
      touch([c.block]);
      if (c.kind === "upload") write(c.block, group.risks);
      else {
        const bad = invalid.get(idOf(c.block));
        if (bad !== undefined) {
          c.reject(new RuntimeError(bad + NOT_COMPUTED));
          continue;
        }
        group.reads.push({ cmd: c, risks: risksOf(idOf(c.block)) });
      }
      group.cmds.push(c);
    }
  }
  close();
  device.popErrorScope().catch(() => null);
  if (invalid.size > 0) pruneFreed();
}

/** Encodes and submits a group; reads resolve once the verdicts their data depends on are known. */
function submitGroup(dev: DeviceState, st: EncodeState, group: Group): void {
  const device = dev.device;
  const { n, risks: groupRisks } = group;
  const waits = group.reads.map(({ cmd, risks }) => ({ cmd, risks: union(risks, groupRisks) }));
  unsettledSubmits++;
  device.pushErrorScope("validation");
  const reads = encodeAndSubmit(dev, st, group.cmds);
  beginWait();
  const scope = device.popErrorScope();
  // The submit's own verdict: an error that no pending verdict explains is a GradLab bug. (The closures
  // below keep only what they need: a loop that never awaits must not keep its commands alive here.)
  const internal = Promise.all([scope.catch((e: unknown) => e as GPUError), ...groupRisks.map((r) => r.verdict)]).then(([e]) => {
    unsettledSubmits--;
    let why: string | null = null;
    if (e && !groupRisks.some((r) => r.failed !== null)) {
      why = `internal WebGPU error (please report): ${firstLine((e as GPUError).message)}`;
      for (const [id, m] of lastWrite) if (m >= n) invalid.set(id, why);
    }
    if (unsettledSubmits === 0) lastWrite.clear();
    return why;
  });
  const done = (async () => {
    const results = await Promise.allSettled(reads.map((r) => r.data));
    const why = await internal;
    for (const [i, { cmd, risks }] of waits.entries()) {
      const res = results[i];
      await Promise.all(risks.map((r) => r.verdict));
      const failed = risks.find((r) => r.failed !== null)?.failed ?? why;
      if (failed !== null) cmd.reject(new RuntimeError(failed + NOT_COMPUTED));
      else if (res.status === "rejected") cmd.reject(res.reason);
      else cmd.resolve(res.value);
    }
    if (reads.length === 0) await device.queue.onSubmittedWorkDone();
  })();
  inFlight.add(done);
  void done.finally(() => inFlight.delete(done));
}

/** Encodes the commands (in submits of at most PARAM_SLOTS dispatches) and returns the pending readbacks. */
function encodeAndSubmit(dev: DeviceState, st: EncodeState, cmds: Command[]): Array<{ cmd: Readback; data: Promise<ArrayBuffer> }> {
  const reads: Array<{ cmd: Readback; data: Promise<ArrayBuffer> }> = [];
  let start = 0;
  while (start < cmds.length) {
    let end = start;
    let dispatches = 0;
    while (end < cmds.length && (cmds[end].kind !== "dispatch" || dispatches < PARAM_SLOTS)) {
      if (cmds[end].kind === "dispatch") dispatches++;
      end++;
    }
    const chunkReads = encodeChunk(dev, st, cmds, start, end);
    for (const r of chunkReads) reads.push(r);
    start = end;
  }
  return reads;
}

/** Whether two dispatches' params slots would hold the same words (then they share one slot). */
function sameParams(a: Dispatch, b: Dispatch): boolean {
  if (a.window || b.window) return false;
  const x = a.params;
  const y = b.params;
  if (x === y) return true;
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

/** Encodes and submits cmds[start, end) (at most PARAM_SLOTS dispatches). */
function encodeChunk(dev: DeviceState, st: EncodeState, cmds: Command[], start: number, end: number): Array<{ cmd: Readback; data: Promise<ArrayBuffer> }> {
  const device = dev.device;
  // Each dispatch's params go to a slot of the params buffer; a dispatch whose params equal the previous
  // dispatch's (a chain of the same op on same-shaped tensors) shares its slot, so the pass keeps its
  // params bind group and Dawn binds only the data.
  const words = st.staging;
  const slotOf = paramSlots(cmds, start, end, words);
  if (slotOf.used > 0) {
    // Safe: writeBuffer is ordered after every earlier submit (which read the previous contents).
    device.queue.writeBuffer(st.params, 0, words.buffer, 0, slotOf.used * PARAM_ALIGN);
  }

  const encoder = device.createCommandEncoder();
  let pass: GPUComputePassEncoder | null = null;
  let lastPipeline: GPUComputePipeline | null = null;
  let lastParams = -1;
  const endPass = () => {
    pass?.end();
    pass = null;
    lastPipeline = null;
    lastParams = -1;
  };
  const temporaries: GPUBuffer[] = [];
  const reads: Array<{ cmd: Readback; staging: GPUBuffer; start: number }> = [];
  let di = 0;
  for (let i = start; i < end; i++) {
    const c = cmds[i];
    if (c.kind === "dispatch") {
      const pipeline = c.pipeline!;
      pass ??= encoder.beginComputePass();
      if (pipeline !== lastPipeline) pass.setPipeline((lastPipeline = pipeline));
      const slot = slotOf.slots[di++];
      if (slot !== lastParams) pass.setBindGroup(0, st.paramGroups[(lastParams = slot)]);
      pass.setBindGroup(1, c.bindGroup!);
      c.pipeline = c.bindGroup = c.windowSlots = undefined; // encoded: the command keeps no GPU object
      const g = c.workgroups;
      pass.dispatchWorkgroups(g[0], g[1], g[2]);
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
  if (reads.length === 0) return NO_READS;
  return reads.map(({ cmd, staging, start }) => ({
    cmd,
    data: staging.mapAsync(GPUMapMode.READ).then(
      () => {
        const out = staging.getMappedRange().slice(start, start + cmd.byteLength);
        staging.unmap();
        staging.destroy();
        return out;
      },
      (err: unknown) => {
        staging.destroy();
        throw err;
      },
    ),
  }));
}
const NO_READS: Array<{ cmd: Readback; data: Promise<ArrayBuffer> }> = [];
const WRITES_FIRST = [0];
const NO_RANGES: Range[] = [];

/** The params slot of each dispatch of cmds[start, end), its words staged in `words`; `used` slots in all. */
const slotScratchParams = { slots: new Int32Array(PARAM_SLOTS), used: 0 };
function paramSlots(cmds: Command[], start: number, end: number, words: Uint32Array): { slots: Int32Array; used: number } {
  const out = slotScratchParams;
  let used = 0;
  let di = 0;
  let prev: Dispatch | null = null;
  for (let i = start; i < end; i++) {
    const c = cmds[i];
    if (c.kind !== "dispatch") continue;
    if (prev && sameParams(prev, c)) {
      out.slots[di++] = used - 1;
      continue;
    }
    const w = (PARAM_ALIGN / 4) * used;
    words.fill(0, w, w + PARAM_ALIGN / 4);
    words.set(c.params, w);
    if (c.window) {
      words[w + 56] = c.window.count;
      words[w + 57] = c.window.first;
      c.windowSlots!.forEach((r, s) => (words[w + 58 + s] = r.base));
    }
    out.slots[di++] = used++;
    prev = c;
  }
  out.used = used;
  return out;
}

/** Destroys a segment's GPU buffer once the work already recorded against it has been submitted. */
function destroyBuffer(buffer: GPUBuffer): void {
  // Without a device the buffer cannot exist, so the device is ready here. Dawn keeps a destroyed
  // buffer's memory until the work already submitted against it has run, and gives it back (to the
  // driver: on lavapipe, the process's heap) only when it next ticks after a later submit has completed;
  // without one, 1 GiB released by empty_cache() stayed in the process until unrelated work ran. So
  // the release is followed by an empty submit, whose completion synchronize() waits for.
  const dev = readyDevice();
  if (queue.length > 0 && dev) submitBatch(dev, takeQueue());
  buffer.destroy();
  if (dev && !releaseTick) {
    const device = dev.device;
    releaseTick = Promise.resolve().then(() => {
      releaseTick = null;
      device.queue.submit([device.createCommandEncoder().finish()]);
      return device.queue.onSubmittedWorkDone();
    });
    const done = releaseTick.catch(() => {});
    inFlight.add(done);
    void done.finally(() => inFlight.delete(done));
  }
}
/** The empty submit that makes Dawn give released buffers back (one per job, however many were released). */
let releaseTick: Promise<void> | null = null;

// The device backs memory (memory/backing.ts): buffers are destroyed after the work queued on them,
// and a device loss empties the allocator's segments and fails what was waiting to be read.
setBacking({ destroyBuffer, epoch: currentEpoch, lastLossReason });
onDeviceLost((reason) => {
  webgpu.allocator.forgetBuffers();
  dropPending(new RuntimeError(`WebGPU device lost: ${reason}`));
});
