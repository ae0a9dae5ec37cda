// The tile scratch of matmul_tiles.wgsl: one buffer per device that ops/matmul-tiles.ts packs operands into
// and the kernel reads as uniform tiles. It lives outside the caching allocator, as cuBLAS's workspace
// lives outside what PyTorch's figures count, so memory_allocated, its peaks and the OOM a memory limit
// raises stay PyTorch's; empty_cache() gives it back with the cached segments.

import type { Segment } from "../memory/allocator.ts";
import { backing } from "../memory/backing.ts";
import { submitPending } from "./scheduler.ts";
import { type Range, scratchSegments } from "./verdicts.ts";

/** Grown in steps of this, so that a few sizes of product do not remake it each time. */
const STEP = 4 << 20;
let scratch: Segment | null = null;
/** Scratch segments take negative ids: the allocator's are 0, 1, ..., and ids are never reused (bind groups
 *  are cached by segment id). */
let nextId = -1;

/** The tile scratch, of at least `bytes` (its buffer is made when the first batch using it is encoded), as
 *  a range per region that starts at each of `starts` (bytes): the scheduler follows each region's
 *  validity as a block's. Work already recorded against a smaller scratch is submitted before that one is
 *  destroyed. */
export function tileScratch(bytes: number, starts: number[]): Range[] {
  if (!scratch || scratch.size < bytes) {
    releaseTileScratch();
    const size = Math.ceil(bytes / STEP) * STEP;
    const seg = { id: nextId--, size, pool: "large", buffer: null, generation: -1, head: null } as unknown as Segment;
    scratchSegments.add(seg);
    scratch = seg;
  }
  const segment = scratch;
  return starts.map((block) => ({ segment, offset: 0, size: segment.size, block }));
}

/** Gives the scratch back (empty_cache(), or a larger one is needed): its buffer is destroyed once the work
 *  queued on it has run. That work is submitted first: its buffer may not exist until it is encoded, and
 *  one made after this would be no one's to destroy. */
export function releaseTileScratch(): void {
  if (!scratch) return;
  submitPending();
  if (scratch.buffer) backing.destroyBuffer(scratch.buffer);
  scratch = null;
}

/** The bytes the tile scratch holds now (0 when it was never needed or was given back). */
export const tileScratchBytes = (): number => scratch?.size ?? 0;
