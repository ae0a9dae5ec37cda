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
import {
  bufferOf,
  type Command,
  type Dispatch,
  encodeAndSubmit,
  type EncodeState,
  encodeState,
  PARAM_WORDS,
  prepare,
  type Readback,
  type SubgroupVariant,
} from "./encode.ts";
import {
  firstLine,
  idOf,
  invalid,
  NOT_COMPUTED,
  pendingBuffers,
  pruneFreed,
  type Range,
  rangeOf,
  type Risk,
  risksOf,
  suspect,
  union,
  where,
} from "./verdicts.ts";

export const FLUSH_AT = 512;

let queue: Command[] = [];

export function enqueue(
  shader: string,
  entry: string,
  blocks: Block[],
  params: Uint32Array,
  workgroups: [number, number, number],
  constants?: Record<string, number>,
  subgroup?: SubgroupVariant,
  label?: string,
): void {
  record({ kind: "dispatch", shader, entry, constants, buffers: blocks.map(rangeOf), params, workgroups, subgroup, label });
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

/** Submits what is recorded now, where the device is ready (the work recorded against a buffer about to be
 *  destroyed, before it is: device/tiles.ts). */
export function submitPending(): void {
  const dev = readyDevice();
  if (queue.length > 0 && dev) submitBatch(dev, takeQueue());
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
  judgeSubmits();
  await Promise.all(inFlight);
}

// ---- verdicts still to come ----

/**
 * The last submit that wrote each block (by segment, then block offset: numbers, so that a write costs no
 * key string), kept while some submit's own error scope is pending. Bounded by the blocks in use.
 */
const lastWrite = new Map<Segment, Map<number, number>>();
let submits = 0;
let unsettledSubmits = 0;

/** One submit's worth of commands, in order, with what they need. */
interface Group {
  /** This submit's number (lastWrite). */
  n: number;
  cmds: Command[];
  /** Verdicts every write of the group depends on (a new buffer it touches, or its new pipeline). */
  risks: Risk[];
  /** What the group writes so far, to be made suspect of a risk the group takes on later. */
  writes: Range[];
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
    for (const w of group.writes) {
      const id = idOf(w);
      suspect.set(id, union(suspect.get(id) ?? [], [r]));
    }
  };
  const touch = (ranges: Range[]) => {
    if (pendingBuffers.size > 0)
      for (const { segment } of ranges) {
        const r = pendingBuffers.get(segment);
        if (r) take(r); // if Dawn rejects the buffer, it drops this whole submit
      }
  };

  const write = (r: Range, risks: Risk[]) => {
    // (The maps are empty but after a rejected kernel or while a verdict is pending: no key string then.)
    if (risks.length > 0 || invalid.size > 0 || suspect.size > 0) {
      const id = idOf(r);
      invalid.delete(id);
      if (risks.length > 0) {
        suspect.set(id, risks);
        where.set(id, r);
      } else suspect.delete(id);
    }
    let bySegment = lastWrite.get(r.segment);
    if (!bySegment) lastWrite.set(r.segment, (bySegment = new Map()));
    bySegment.set(r.block, group.n);
    group.writes.push(r);
  };
  for (const c of cmds) {
    if (c.kind === "dispatch") {
      const w = c.writes ?? WRITES_FIRST;
      // (The maps are empty but after a rejected kernel or while a verdict is pending: no lookups then.)
      let reads = invalid.size > 0 || suspect.size > 0 ? c.buffers.filter((_, k) => !w.includes(k)) : NO_RANGES;
      if (c.tiles && reads !== NO_RANGES) reads = [...reads, ...c.tiles.ranges];
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
      if (c.tiles) touch(c.tiles.ranges);
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
  device.popErrorScope().catch(ignore);
  if (invalid.size > 0) pruneFreed();
}

/**
 * The outer scope's rejection handler, made once: an arrow made inside submitBatch would hold that call's
 * context (its closures, its last group) until the scope settles, which a loop that never awaits puts off
 * to its end: 1.4 KiB per submit, 0.16 KiB per step of a 64-128-10 MLP (a heap-snapshot diff).
 */
const ignore = () => null;

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
  if (reads.length === 0) {
    // Nothing waits on this submit but its own verdict: judged with the other such submits of this job,
    // once the job ends (or flush() asks), by one chain of promises instead of one per submit.
    if (unjudged.length === 0) queueMicrotask(judgeSubmits);
    unjudged.push({ n, scope, risks: groupRisks, device });
    return;
  }
  const internal = verdictOf(n, scope, groupRisks);
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

/**
 * A submit's own verdict: an error that no pending verdict explains is a GradLab bug, and every block
 * written since that submit is then invalid. Resolves to the reason, or null. (The closure keeps only what
 * it needs: a loop that never awaits must not keep its commands alive here.)
 */
function verdictOf(n: number, scope: Promise<GPUError | null>, risks: Risk[]): Promise<string | null> {
  return Promise.all([scope.catch((e: unknown) => e as GPUError), ...risks.map((r) => r.verdict)]).then(([e]) => {
    unsettledSubmits--;
    let why: string | null = null;
    if (e && !risks.some((r) => r.failed !== null)) {
      why = `internal WebGPU error (please report): ${firstLine((e as GPUError).message)}`;
      for (const [segment, blocks] of lastWrite) for (const [block, m] of blocks) if (m >= n) invalid.set(idOf({ segment, block }), why);
    }
    if (unsettledSubmits === 0) lastWrite.clear();
    return why;
  });
}

/**
 * Submits without reads whose verdicts no chain follows yet. A loop that never awaits makes one every 512
 * commands, and gives no promise a chance to settle until it ends: a chain per submit (its promises,
 * closures and their optimised code) held 1.1 KiB of live heap per step of a 64-128-10 MLP. Here each
 * costs an entry until the job ends.
 */
let unjudged: Array<{ n: number; scope: Promise<GPUError | null>; risks: Risk[]; device: GPUDevice }> = [];
function judgeSubmits(): void {
  if (unjudged.length === 0) return;
  const batch = unjudged;
  unjudged = [];
  const { device } = batch[batch.length - 1];
  const done = Promise.all(batch.map(({ n, scope, risks }) => verdictOf(n, scope, risks))).then(() => device.queue.onSubmittedWorkDone());
  inFlight.add(done);
  void done.finally(() => inFlight.delete(done));
}

const WRITES_FIRST = [0];
const NO_RANGES: Range[] = [];

/** Destroys a segment's GPU buffer once the work already recorded against it has been submitted. */
function destroyBuffer(buffer: GPUBuffer): void {
  // Without a device the buffer cannot exist, so the device is ready here. Dawn keeps a destroyed
  // buffer's memory until the work already submitted against it has run, and gives it back (to the
  // driver: on lavapipe, the process's heap) only when it next ticks after a later submit has completed;
  // without one, 1 GiB released by empty_cache() stayed in the process until unrelated work ran. So
  // the release is followed by an empty submit, whose completion synchronize() waits for.
  const dev = readyDevice();
  submitPending();
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
