// Dawn's verdicts on what the scheduler made without waiting (device/scheduler.ts, "Isolation"): a new
// pipeline or segment buffer is used at once, and its verdict arrives only when the event loop turns.
// Until then every block written with it is "suspect" of that verdict; a "no" makes those blocks
// invalid, so reading them raises instead of returning what Dawn silently dropped. The bookkeeping lives
// only while verdicts are pending, and its size is bounded by the blocks in use.

import type { Block, Segment } from "../memory/allocator.ts";
import { forgetPipeline } from "./pipelines.ts";

/**
 * Where a block was when the command was recorded. Blocks are mutable (a freed block merges with its
 * neighbours, a reused one is split), so commands keep a snapshot; two snapshots of live blocks never
 * overlap, and the same storage used twice gives equal snapshots. A windowed dispatch binds a window
 * of a large block: `offset`/`size` are the window's bytes, `block` the block's offset (its identity,
 * and where the operand's element 0 lies).
 */
export interface Range {
  readonly segment: Segment;
  readonly offset: number;
  readonly size: number;
  readonly block: number;
}
export const rangeOf = (b: Block): Range => ({ segment: b.segment, offset: b.offset, size: b.size, block: b.offset });

/** A GPU object made without waiting for Dawn's verdict on it (a pipeline, a segment buffer). */
export interface Risk {
  /** Settles when the verdict is known (never rejects). */
  readonly verdict: Promise<void>;
  /** Why Dawn rejected it (set when the verdict is a "no"). */
  failed: string | null;
  settled: boolean;
}
/** Blocks written while a verdict was pending, with the verdicts they depend on. */
export const suspect = new Map<string, Risk[]>();
let unsettledRisks = 0;

export function newRisk(check: Promise<string | null>, onFail: (why: string) => void): Risk {
  unsettledRisks++;
  const risk: Risk = {
    failed: null,
    settled: false,
    verdict: check.then(
      (why) => settle(risk, why, onFail),
      (e) => settle(risk, String(e), onFail),
    ),
  };
  return risk;
}

function settle(risk: Risk, why: string | null, onFail: (why: string) => void): void {
  risk.settled = true;
  unsettledRisks--;
  if (why !== null) {
    risk.failed = why;
    onFail(why);
    for (const [id, risks] of suspect)
      if (risks.includes(risk)) {
        invalid.set(id, why);
        suspect.delete(id);
      }
  }
  if (unsettledRisks === 0) {
    suspect.clear();
    for (const id of where.keys()) if (!invalid.has(id)) where.delete(id);
  }
}

/** The verdicts a block's contents wait on (the ones still pending or failed). */
export function risksOf(id: string): Risk[] {
  const r = suspect.get(id);
  return r ? r.filter((k) => !k.settled || k.failed !== null) : [];
}

export function union(a: Risk[], b: Risk[]): Risk[] {
  if (a.length === 0) return b;
  const extra = b.filter((r) => !a.includes(r));
  return extra.length === 0 ? a : [...a, ...extra]; // a is shared (group.risks, suspect entries): never mutated
}

/** Segments whose buffer was made and whose verdict is still to come; pipelines the same, by key. */
export const pendingBuffers = new Map<Segment, Risk>();
export const pendingPipelines = new Map<string, Risk>();

/** The verdict on a new pipeline (a function of its own, so that its closures keep no dispatch alive). */
export function pipelineRisk(device: GPUDevice, key: string, check: Promise<GPUError | null>, what: string): Risk {
  const r = newRisk(
    check.then((e) => (e ? `${what}: ${firstLine(e.message)}` : null)),
    () => forgetPipeline(device, key), // made (and judged) again the next time
  );
  pendingPipelines.set(key, r);
  void r.verdict.then(() => pendingPipelines.get(key) === r && pendingPipelines.delete(key));
  return r;
}

export const firstLine = (m: string) => m.split("\n")[0].trim().replace(/\.+$/, "");
/** Why a block's contents are invalid (Dawn rejected the op that writes it, or one it was computed from). */
export const invalid = new Map<string, string>();
export const idOf = (r: Pick<Range, "segment" | "block">) => `${r.segment.id}:${r.block}`;
/** Where a suspect or invalid block is (to let it go once it is freed: pruneFreed). */
export const where = new Map<string, Range>();
/** Blocks whose contents are invalid now (for tests and diagnostics). */
export const invalidBlocks = () => invalid.size;

/**
 * Segments outside the caching allocator: the matmul's tile scratch (device/tiles.ts), whose buffer is also
 * read as uniform tiles. Its regions are written and read by commands like blocks, but no tensor owns them:
 * they hold what the last pack wrote for as long as the scratch exists, so they are never pruned as freed.
 */
export const scratchSegments = new WeakSet<Segment>();

/**
 * Forgets invalid blocks that have been freed. Called with the queue empty, so no recorded command can
 * still read what such a block held; a tensor allocated there later is valid once something writes it.
 */
export function pruneFreed(): void {
  for (const id of invalid.keys()) {
    const r = where.get(id);
    if (!r || scratchSegments.has(r.segment)) continue;
    let b: Block | null = r.segment.head;
    while (b && b.offset !== r.block) b = b.next;
    if (!b?.allocated) {
      invalid.delete(id);
      if (!suspect.has(id)) where.delete(id);
    }
  }
}
export const NOT_COMPUTED = ". This tensor was not computed (or was computed from a result that was not); the other ops were not affected.";
