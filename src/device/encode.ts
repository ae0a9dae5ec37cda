// Encoding a batch for Dawn (device/scheduler.ts decides what goes in which submit): the commands ops
// record, each dispatch's pipeline and bind groups found without building key strings (pipelines by
// interned kernel and binding slots, data bind groups in a trie by segment and range: whole segments,
// so one group serves blocks wherever the allocator placed them, each operand's start going to the
// params), params staged in one reused array and written with one writeBuffer per submit, and the
// segment buffers, made on first use with Dawn's verdict on them still to come (device/verdicts.ts).

import type { Segment } from "../memory/allocator.ts";

import { bindingLimit, type DeviceState } from "./backend.ts";
import { bindGroupLayout, type Kernel, kernelOf, paramsLayout, pipelineEntry, TILE_BINDINGS, TILE_BYTES, tilesLayout } from "./pipelines.ts";
import { firstLine, newRisk, pendingBuffers, pendingPipelines, pipelineRisk, type Range, type Risk, scratchSegments } from "./verdicts.ts";

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
  /** The operands' memory, operand k at index k (prepare binds each segment once; binding 0 is the params). */
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
  /** Where each operand's element 0 lies in its binding, in elements (u32; params words 58 + k). */
  starts?: number[];
  /** Group 2 of a kernel that reads uniform tiles (matmul_tiles.wgsl): each binding's byte offset in the
   *  tile scratch (a segment outside the allocator, device/tiles.ts), and the ranges of it the tiles were
   *  written to, which the dispatch reads (their validity passes on as its operands' does). */
  tiles?: { ranges: Range[]; offsets: number[] };
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
/** Params words a kernel may use; words 56..57 of the slot describe a windowed run, 58..63 where each
 *  operand starts in its binding (prelude.wgsl). */
export const PARAM_WORDS = 56;
/** A segment's buffer: made now if it does not exist on this device (with the verdict still to come). */
export function bufferOf(dev: DeviceState, seg: Segment): GPUBuffer {
  if (seg.buffer && seg.generation === dev.epoch) return seg.buffer;
  const device = dev.device;
  device.pushErrorScope("out-of-memory");
  device.pushErrorScope("validation");
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST | (scratchSegments.has(seg) ? GPUBufferUsage.UNIFORM : 0);
  const buffer = device.createBuffer({ size: seg.size, usage });
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

/** Group 2 over a tile scratch buffer: every binding at offset 0 plus its dynamic offset (one per buffer). */
const tileGroups = new WeakMap<GPUBuffer, GPUBindGroup>();
function tileGroupOf(dev: DeviceState, seg: Segment): GPUBindGroup {
  const buffer = bufferOf(dev, seg);
  let g = tileGroups.get(buffer);
  if (!g) {
    const entries = Array.from({ length: TILE_BINDINGS }, (_, i) => ({ binding: i, resource: { buffer, offset: 0, size: TILE_BYTES } }));
    tileGroups.set(buffer, (g = dev.device.createBindGroup({ layout: tilesLayout(dev.device), entries })));
  }
  return g;
}

/**
 * Cached data bind groups, by their bindings: a trie whose levels are a binding's segment id, offset and
 * size (numbers: found without building a key string per dispatch). A segment is bound whole wherever
 * one binding may cover it, so a group names segments and serves blocks wherever they lie. Keyed by
 * block offsets, a loop whose blocks drift through a large cached segment (the allocator's best fit
 * after a high peak) made a group per dispatch, and Dawn frees a group's descriptor set only when it
 * ticks, which a loop that never awaits does not let it do: lavapipe crashed in its descriptor pool
 * allocation after ~30,000 of them (docs/performance.md). Dynamic offsets avoided that, at the price of
 * lavapipe copying the descriptor set (mapping and unmapping a page) on every setBindGroup.
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

/** prepare()'s working arrays, reused (it copies what it keeps): each binding's segment, offset, size. */
const slotScratch: Range[] = [];
const slotOffset: number[] = [];
const slotSize: number[] = [];

/** The cached bind group of prepare()'s n bindings (a trie walk: no key string, no allocation on a hit). */
function bindGroupFor(dev: DeviceState, st: EncodeState, n: number): GPUBindGroup {
  // Keys name segments by id, and ids are never reused, so stale entries are only dropped for space
  // (and when a segment's buffer is rejected: bufferOf).
  if (st.bindGroupCount > 8192) clearBindGroups(st);
  let node = st.bindGroups;
  for (let i = 0; i < n; i++) {
    const level = (node.next ??= new Map());
    const id = slotScratch[i].segment.id;
    let byOffset = level.get(id);
    if (!byOffset) level.set(id, (byOffset = new Map()));
    let bySize = byOffset.get(slotOffset[i]);
    if (!bySize) byOffset.set(slotOffset[i], (bySize = new Map()));
    let next = bySize.get(slotSize[i]);
    if (!next) bySize.set(slotSize[i], (next = {}));
    node = next;
  }
  if (node.group) return node.group;
  const device = dev.device;
  // Only the dispatch's own memory: its pipeline's layout has n bindings (pipelines.ts).
  const entries: GPUBindGroupEntry[] = [];
  for (let i = 0; i < n; i++) {
    entries.push({ binding: i + 1, resource: { buffer: bufferOf(dev, slotScratch[i].segment), offset: slotOffset[i], size: slotSize[i] } });
  }
  st.bindGroupCount++;
  st.bindGroupsMade++;
  return (node.group = device.createBindGroup({ layout: bindGroupLayout(device, n), entries }));
}

/** What bindingOf found (reused). */
const bound = { offset: 0, size: 0 };
/**
 * The bytes of its segment that operand b's binding covers: the whole segment where one binding may
 * cover it. A larger segment (a tensor over the limit was there, or is, in windows: ops/launch.ts) is
 * cut into tiles as large as one binding may be, and an operand binds the tile it lies in, so that blocks
 * drifting through the segment reuse a few bind groups (operands in one tile share it; distinct tiles
 * never overlap). Where one of the dispatch's operands in the segment straddles two tiles, the segment is
 * cut again half a tile further on (a range of up to half a tile lies inside a tile of one of the two);
 * where one straddles there too, each operand binds its own range (distinct blocks never overlap, and a
 * block's users share its range).
 */
function bindingOf(ranges: readonly Range[], b: Range, limit: number): void {
  const seg = b.segment;
  if (seg.size <= limit) {
    bound.offset = 0;
    bound.size = seg.size;
    return;
  }
  const tile = Math.max(512, Math.floor(limit / 512) * 512);
  for (const shift of SHIFTS) {
    const at = (byte: number) => Math.floor((byte + shift * tile) / tile);
    let straddles = false;
    for (const r of ranges) if (r.segment === seg && at(r.offset) !== at(r.offset + r.size - 1)) straddles = true;
    if (straddles) continue;
    bound.offset = Math.max(0, at(b.offset) * tile - shift * tile);
    bound.size = Math.min(at(b.offset) * tile - shift * tile + tile, seg.size) - bound.offset;
    return;
  }
  bound.offset = b.offset;
  bound.size = b.size;
}
const SHIFTS = [0, 0.5];

export function prepare(dev: DeviceState, st: EncodeState, c: Dispatch): typeof prepared {
  const device = dev.device;
  // Bind each segment once (bindingOf); S<k> tells the kernel which binding holds operand k, starts[k]
  // where its element 0 is. (The scratch arrays are reused, never shrunk: setting an array's length to 0
  // frees its storage.)
  const limit = bindingLimit();
  const starts = (c.starts = new Array<number>(c.buffers.length));
  let n = 0;
  let slotsCode = 0;
  for (let k = 0; k < c.buffers.length; k++) {
    const b = c.buffers[k];
    bindingOf(c.buffers, b, limit);
    const { offset, size } = bound;
    let s = 0;
    while (s < n && !(slotScratch[s].segment === b.segment && slotOffset[s] === offset && slotSize[s] === size)) s++;
    if (s === n) {
      slotScratch[n] = b;
      slotOffset[n] = offset;
      slotSize[n++] = size;
    }
    starts[k] = ((b.block - offset) / 4) >>> 0;
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
  c.bindGroup = bindGroupFor(dev, st, n);
  if (c.tiles) bufferOf(dev, c.tiles.ranges[0].segment); // made now, so that the batch takes on its verdict
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
  const p = a.starts!;
  const q = b.starts!;
  if (p.length !== q.length) return false;
  for (let i = 0; i < p.length; i++) if (p[i] !== q[i]) return false;
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
  let lastGroup: GPUBindGroup | null = null;
  const endPass = () => {
    pass?.end();
    pass = null;
    lastPipeline = null;
    lastParams = -1;
    lastGroup = null;
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
      if (c.bindGroup !== lastGroup) pass.setBindGroup(1, (lastGroup = c.bindGroup!));
      if (c.tiles) pass.setBindGroup(2, tileGroupOf(dev, c.tiles.ranges[0].segment), c.tiles.offsets);
      c.pipeline = c.bindGroup = c.starts = undefined; // encoded: the command keeps no GPU object
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
    }
    const starts = c.starts!;
    for (let k = 0; k < starts.length; k++) words[w + 58 + k] = starts[k];
    out.slots[di++] = used++;
    prev = c;
  }
  out.used = used;
  return out;
}
