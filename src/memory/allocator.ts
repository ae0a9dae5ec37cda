// A caching allocator with PyTorch's observable behaviour (c10/cuda/CUDACachingAllocator.cpp):
// requests are rounded to 512 B; requests up to 1 MiB come from 2 MiB "small" segments, larger ones
// from 20 MiB segments (under 10 MiB) or segments rounded to 2 MiB; a segment is split into blocks,
// freed blocks merge with free neighbours and stay cached (reserved) until empty_cache().
// Each segment is one GPUBuffer, created lazily by the device layer when commands first touch it, so
// accounting is exact and synchronous even before a device exists.

import { OutOfMemoryError, RuntimeError } from "../errors.ts";
import { formatBytes } from "./format-bytes.ts";
import { reclaimBeforeGrowth, reclaimIfPiledUp } from "./lifetime.ts";

const kMinBlockSize = 512;
const kSmallSize = 1 << 20;
const kSmallBuffer = 2 << 20;
const kLargeBuffer = 20 << 20;
const kMinLargeAlloc = 10 << 20;
const kRoundLarge = 2 << 20;

export type PoolName = "small_pool" | "large_pool";

export interface Segment {
  readonly id: number;
  readonly size: number;
  readonly pool: PoolName;
  /** The GPU buffer backing this segment; created by the device layer on first use. */
  buffer: GPUBuffer | null;
  /** Device generation the buffer belongs to (a lost device invalidates every segment). */
  generation: number;
  head: Block;
}

/** A stable number for a segment, as a device address would be: its id in the high part, so that a
 *  block's address is the segment's plus the block's offset (snapshots, timelines). */
export const segmentAddress = (seg: Segment) => seg.id * 2 ** 32;
export const blockAddress = (b: Block) => segmentAddress(b.segment) + b.offset;

export interface Block {
  readonly segment: Segment;
  offset: number;
  size: number;
  allocated: boolean;
  /** Bytes the caller asked for (before rounding); 0 while free. */
  requested: number;
  prev: Block | null;
  next: Block | null;
}

interface Counter {
  current: number;
  peak: number;
  allocated: number;
  freed: number;
}
const counter = (): Counter => ({ current: 0, peak: 0, allocated: 0, freed: 0 });
type StatGroup = Record<"all" | PoolName, Counter>;
const group = (): StatGroup => ({ all: counter(), small_pool: counter(), large_pool: counter() });

function bump(g: StatGroup, pool: PoolName, delta: number): void {
  for (const c of [g.all, g[pool]]) {
    c.current += delta;
    if (delta > 0) c.allocated += delta;
    else c.freed -= delta;
    if (c.current > c.peak) c.peak = c.current;
  }
}

function roundSize(size: number): number {
  return size < kMinBlockSize ? kMinBlockSize : kMinBlockSize * Math.ceil(size / kMinBlockSize);
}

function segmentSize(size: number): number {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * Math.ceil(size / kRoundLarge);
}

export interface AllocatorHooks {
  /** Called when a segment is released, so the device layer can destroy its buffer. */
  releaseSegment(seg: Segment): void;
  /** Called when an allocation or free happens, for timelines (memory issue). */
  onEvent?(ev: { action: "alloc" | "free" | "segment_alloc" | "segment_free"; bytes: number; block?: Block; segment?: Segment }): void;
}

export class CachingAllocator {
  private readonly free: Record<PoolName, Set<Block>> = { small_pool: new Set(), large_pool: new Set() };
  private readonly segments = new Set<Segment>();
  private nextSegmentId = 1;
  readonly allocated = group();
  readonly reserved = group();
  readonly requested = group();
  readonly allocationCount = group();
  readonly segmentCount = group();
  numAllocRetries = 0;
  numOoms = 0;
  /** Bytes the device may reserve in all; past it an allocation raises OutOfMemoryError. */
  capacity: number;
  deviceLabel = "GPU 0";
  errorPrefix = "WebGPU";
  /**
   * The largest buffer the device can create (the adapter's maxBufferSize, set when the device is
   * acquired; null while unknown). A larger request raises before anything is reserved, and no segment
   * is made larger, so one oversized request cannot leave an unusable segment in the cache.
   */
  maxBufferSize: number | null = null;

  constructor(
    capacity: number,
    private readonly hooks: AllocatorHooks,
  ) {
    this.capacity = capacity;
  }

  malloc(requested: number): Block {
    const size = roundSize(requested);
    if (this.maxBufferSize !== null && size > this.maxBufferSize) {
      throw new RuntimeError(
        `${this.errorPrefix}: cannot allocate ${formatBytes(size)}: larger than this adapter's maxBufferSize ` +
          `(${formatBytes(this.maxBufferSize)}), the largest buffer it can create; split the tensor into smaller ones`,
      );
    }
    const pool: PoolName = size <= kSmallSize ? "small_pool" : "large_pool";
    let block = this.bestFit(pool, size);
    // Before this allocation sets a new peak, grows the reserved memory or runs out of memory, free what
    // user code can no longer reach (memory/lifetime.ts): PyTorch would have freed it already, so its
    // peak, its segments and its OOMs are computed without that garbage.
    if (!block || this.allocated.all.current + size > this.allocated.all.peak) {
      if (reclaimBeforeGrowth() > 0) block = this.bestFit(pool, size);
    } else reclaimIfPiledUp(); // (growth reclaims anyway: one collection, not two)
    if (!block) {
      const segSize = this.maxBufferSize !== null && segmentSize(size) > this.maxBufferSize ? size : segmentSize(size);
      if (this.reserved.all.current + segSize > this.capacity) {
        // As PyTorch does: free every cached, unused segment and try once more before failing.
        this.numAllocRetries++;
        this.releaseCached();
        block = this.bestFit(pool, size);
      }
      if (!block) {
        if (this.reserved.all.current + segSize > this.capacity) {
          this.numOoms++;
          throw new OutOfMemoryError(this.oomMessage(size));
        }
        block = this.newSegment(segSize, pool);
      }
    }
    this.free[pool].delete(block);
    const remaining = block.size - size;
    const split = pool === "small_pool" ? remaining >= kMinBlockSize : remaining > kSmallSize;
    if (split) {
      const rest: Block = {
        segment: block.segment,
        offset: block.offset + size,
        size: remaining,
        allocated: false,
        requested: 0,
        prev: block,
        next: block.next,
      };
      if (block.next) block.next.prev = rest;
      block.next = rest;
      block.size = size;
      this.free[pool].add(rest);
    }
    block.allocated = true;
    block.requested = requested;
    bump(this.allocated, pool, block.size);
    if (this.allocated.all.current > this.highWater) this.highWater = this.allocated.all.current;
    bump(this.requested, pool, requested);
    bump(this.allocationCount, pool, 1);
    this.hooks.onEvent?.({ action: "alloc", bytes: block.size, block });
    return block;
  }

  freeBlock(block: Block): void {
    if (!block.allocated) throw new Error("internal: double free of a memory block");
    const pool = block.segment.pool;
    block.allocated = false;
    bump(this.allocated, pool, -block.size);
    bump(this.requested, pool, -block.requested);
    bump(this.allocationCount, pool, -1);
    this.hooks.onEvent?.({ action: "free", bytes: block.size, block });
    block.requested = 0;
    let b = block;
    const prev = b.prev;
    if (prev && !prev.allocated) {
      this.free[pool].delete(prev);
      prev.size += b.size;
      prev.next = b.next;
      if (b.next) b.next.prev = prev;
      b = prev;
    }
    const next = b.next;
    if (next && !next.allocated) {
      this.free[pool].delete(next);
      b.size += next.size;
      b.next = next.next;
      if (next.next) next.next.prev = b;
    }
    this.free[pool].add(b);
  }

  /** torch.cuda.empty_cache(): release every segment none of whose blocks is allocated. */
  releaseCached(): void {
    for (const seg of [...this.segments]) {
      const head = seg.head;
      if (!head.allocated && head.next === null) this.releaseSegment(seg);
    }
  }

  /** Drops every segment (device lost): blocks still referenced keep their accounting. */
  forgetBuffers(): void {
    for (const seg of this.segments) seg.buffer = null;
  }

  get liveSegments(): ReadonlySet<Segment> {
    return this.segments;
  }

  /** The highest allocated figure since markHighWater(): one backward step's own peak, for
   *  torch.viz.stepper. Kept apart from the peak statistics, which a user's reset owns. */
  private highWater = 0;
  markHighWater(): void {
    this.highWater = this.allocated.all.current;
  }
  get allocatedHighWater(): number {
    return this.highWater;
  }

  resetPeak(): void {
    for (const g of [this.allocated, this.reserved, this.requested, this.allocationCount, this.segmentCount]) {
      for (const c of Object.values(g)) c.peak = c.current;
    }
  }

  stats(): Record<string, number> {
    const out: Record<string, number> = {};
    const put = (name: string, g: StatGroup) => {
      for (const pool of ["all", "small_pool", "large_pool"] as const) {
        for (const k of ["current", "peak", "allocated", "freed"] as const) out[`${name}.${pool}.${k}`] = g[pool][k];
      }
    };
    put("allocated_bytes", this.allocated);
    put("reserved_bytes", this.reserved);
    put("requested_bytes", this.requested);
    put("allocation", this.allocationCount);
    put("segment", this.segmentCount);
    let inactive = 0;
    let inactiveCount = 0;
    for (const pool of Object.values(this.free)) {
      for (const b of pool) {
        if (b.prev || b.next) {
          inactive += b.size;
          inactiveCount++;
        }
      }
    }
    out["inactive_split_bytes.all.current"] = inactive;
    out["inactive_split.all.current"] = inactiveCount;
    out.num_alloc_retries = this.numAllocRetries;
    out.num_ooms = this.numOoms;
    return out;
  }

  /** The smallest free block that fits, and of equal sizes the lowest address, as PyTorch's
   *  BlockComparator orders its free set (size, then pointer): the segment first, then the offset. */
  private bestFit(pool: PoolName, size: number): Block | undefined {
    let best: Block | undefined;
    for (const b of this.free[pool]) {
      if (b.size >= size && (!best || b.size < best.size || (b.size === best.size && blockAddress(b) < blockAddress(best)))) best = b;
    }
    return best;
  }

  private newSegment(size: number, pool: PoolName): Block {
    const seg = { id: this.nextSegmentId++, size, pool, buffer: null, generation: -1 } as unknown as Segment;
    const head: Block = { segment: seg, offset: 0, size, allocated: false, requested: 0, prev: null, next: null };
    seg.head = head;
    this.segments.add(seg);
    bump(this.reserved, pool, size);
    bump(this.segmentCount, pool, 1);
    this.hooks.onEvent?.({ action: "segment_alloc", bytes: size, segment: seg });
    return head;
  }

  private releaseSegment(seg: Segment): void {
    this.free[seg.pool].delete(seg.head);
    this.segments.delete(seg);
    bump(this.reserved, seg.pool, -seg.size);
    bump(this.segmentCount, seg.pool, -1);
    this.hooks.onEvent?.({ action: "segment_free", bytes: seg.size, segment: seg });
    this.hooks.releaseSegment(seg);
  }

  private oomMessage(size: number): string {
    const free = Math.max(0, this.capacity - this.reserved.all.current);
    const unallocated = this.reserved.all.current - this.allocated.all.current;
    return (
      `${this.errorPrefix} out of memory. Tried to allocate ${formatBytes(size)}. ` +
      `${this.deviceLabel} has a total capacity of ${formatBytes(this.capacity)} of which ${formatBytes(free)} is free. ` +
      `Of the allocated memory ${formatBytes(this.allocated.all.current)} is allocated by GradLab, ` +
      `and ${formatBytes(unallocated)} is reserved by GradLab but unallocated.`
    );
  }
}
