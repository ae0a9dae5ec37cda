// Encoding a batch for Dawn (device/scheduler.ts decides what goes in which submit): the commands ops
// record, each dispatch's pipeline and bind groups found without building key strings (pipelines by
// interned kernel and binding slots, data bind groups in a trie by segment and size, offsets given at
// setBindGroup where the layout takes dynamic offsets), params
// staged in one reused array and written with one writeBuffer per submit, and the segment buffers,
// made on first use with Dawn's verdict on them still to come (device/verdicts.ts).

import type { Segment } from "../memory/allocator.ts";

import type { DeviceState } from "./backend.ts";
import { bindGroupLayout, dynamicOffsets, type Kernel, kernelOf, paramsLayout, pipelineEntry } from "./pipelines.ts";
import { firstLine, newRisk, pendingBuffers, pendingPipelines, pipelineRisk, type Range, type Risk } from "./verdicts.ts";

/** A dispatch's form for devices with subgroups (Dispatch.subgroup). */
export interface SubgroupVariant {
  shader: string;
  constants?: Record<string, number>;
  workgroups: [number, number, number];
}

export interface Dispatch {
  kind: "dispatch";
  shader: string;
  entry: string;
  constants?: Record<string, number>;
  /** Storage bindings 1..n in order; binding 0 is the params array. */
  buffers: Range[];
  params: Uint32Array;
  workgroups: [number, number, number];
  /** A replacement for devices with subgroups: another shader over the same params and bindings, with its
   *  own override constants and grid (chosen when the dispatch is encoded: the device may not be ready
   *  when it is recorded). */
  subgroup?: SubgroupVariant;
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
  /** Each binding's offset, when the bind group's layout takes dynamic offsets. */
  offsets?: number[];
  /** The bindings of a windowed run (encodeChunk writes where each window starts). */
  windowSlots?: Range[];
}
interface Upload {
  kind: "upload";
  block: Range;
  byteOffset: number;
  data: Uint8Array;
}
export interface Readback {
  kind: "read";
  block: Range;
  byteOffset: number;
  byteLength: number;
  resolve(data: ArrayBuffer): void;
  reject(err: unknown): void;
}
export type Command = Dispatch | Upload | Readback;

/** Each dispatch's params take one 256-byte slot (the storage offset alignment) of a per-device buffer. */
const PARAM_ALIGN = 256;
const PARAM_SLOTS = 1024;
/** Params words a kernel may use; words 56..63 of the slot describe a windowed run (prelude.wgsl). */
export const PARAM_WORDS = 56;
/** A segment's buffer: made now if it does not exist on this device (with the verdict still to come). */
export function bufferOf(dev: DeviceState, seg: Segment): GPUBuffer {
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
 * size (numbers: found without building a key string per dispatch). Where the layout takes dynamic
 * offsets the offset level is always 0: a group names buffers and sizes, and serves a block wherever it
 * lies. Keyed by offsets, a loop whose blocks drift through a large cached segment (the allocator's best
 * fit after a high peak) made a group per dispatch, and Dawn frees a group's descriptor set only when it
 * ticks, which a loop that never awaits does not let it do: lavapipe crashed in its descriptor pool
 * allocation after ~30,000 of them (docs/performance.md).
 */
type BindTrie = Map<number, Map<number, Map<number, BindNode>>>;
interface BindNode {
  group?: GPUBindGroup;
  next?: BindTrie;
}
/** Per-device encoding state: the params buffer with a bind group per slot, and cached data bind groups. */
export interface EncodeState {
  params: GPUBuffer;
  paramGroups: GPUBindGroup[];
  /** The params of a chunk, staged for one writeBuffer (reused: writeBuffer copies them at once). */
  staging: Uint32Array;
  /** The root of the trie (its own group: a dispatch without bindings). */
  bindGroups: BindNode;
  bindGroupCount: number;
  /** Data bind groups made on this device, ever (a figure for tests and benches). */
  bindGroupsMade: number;
}

/** Forgets every cached bind group (too many kept, or one of their buffers was rejected). */
function clearBindGroups(st: EncodeState): void {
  st.bindGroups = {};
  st.bindGroupCount = 0;
}
const encodeStates = new WeakMap<GPUDevice, EncodeState>();

export function encodeState(dev: DeviceState): EncodeState {
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
      bindGroupsMade: 0,
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
  const dynamic = dynamicOffsets(dev.device, n);
  let node = st.bindGroups;
  for (let i = 0; i < n; i++) {
    const b = slots[i];
    const level = (node.next ??= new Map());
    let byOffset = level.get(b.segment.id);
    if (!byOffset) level.set(b.segment.id, (byOffset = new Map()));
    const offset = dynamic ? 0 : b.offset;
    let bySize = byOffset.get(offset);
    if (!bySize) byOffset.set(offset, (bySize = new Map()));
    let next = bySize.get(b.size);
    if (!next) bySize.set(b.size, (next = {}));
    node = next;
  }
  if (node.group) return node.group;
  const device = dev.device;
  // Only the dispatch's own blocks: its pipeline's layout has n bindings (pipelines.ts).
  const entries: GPUBindGroupEntry[] = [];
  for (let i = 0; i < n; i++) {
    const b = slots[i];
    entries.push({ binding: i + 1, resource: { buffer: bufferOf(dev, b.segment), offset: dynamic ? 0 : b.offset, size: b.size } });
  }
  st.bindGroupCount++;
  st.bindGroupsMade++;
  return (node.group = device.createBindGroup({ layout: bindGroupLayout(device, n), entries }));
}

export function prepare(dev: DeviceState, st: EncodeState, c: Dispatch): typeof prepared {
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
  let kernel: Kernel;
  if (c.subgroup && dev.facts.subgroups) {
    kernel = kernelOf(c.subgroup.shader, c.entry, c.subgroup.constants);
    c.workgroups = c.subgroup.workgroups;
  } else kernel = c.kernel ??= kernelOf(c.shader, c.entry, c.constants);
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
  if (n > 0 && dynamicOffsets(device, n)) {
    const offsets = (c.offsets = new Array<number>(n));
    for (let i = 0; i < n; i++) offsets[i] = slots[i].offset;
  }
  if (c.window) c.windowSlots = slots.slice(0, n);
  prepared.risk = risk;
  prepared.alone = check !== null;
  return prepared;
}

/** Encodes the commands (in submits of at most PARAM_SLOTS dispatches) and returns the pending readbacks. */
export function encodeAndSubmit(dev: DeviceState, st: EncodeState, cmds: Command[]): Array<{ cmd: Readback; data: Promise<ArrayBuffer> }> {
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
      if (c.offsets) pass.setBindGroup(1, c.bindGroup!, c.offsets);
      else pass.setBindGroup(1, c.bindGroup!);
      c.pipeline = c.bindGroup = c.offsets = c.windowSlots = undefined; // encoded: the command keeps no GPU object
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
