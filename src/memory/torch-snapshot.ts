// PyTorch's memory snapshot (torch.cuda.memory._snapshot() in PyTorch 2.x) built from the caching
// allocator and the memory history: `segments` (each reserved segment with its blocks in address
// order, their state, sizes and where each live block was allocated) and `device_traces` (the recorded
// alloc / free_requested / free_completed / segment_alloc / segment_free actions). `_dump_snapshot`
// pickles it, so pytorch.org/memory_viz and torch.cuda._memory_viz read the file as they read PyTorch's.

import { segmentAddress, blockAddress, type Block, type Segment } from "./allocator.ts";
import type { MemoryDevice } from "./devices.ts";
import { _snapshot_events, allocationFrames, type Frame, type MemoryEvent } from "./history.ts";
import { liveStorages, type Storage } from "./storage.ts";
import { pickleDumps, pyTuple } from "./pickle.ts";
import { platform } from "../platform/current.ts";

interface SnapshotBlock {
  address: number;
  size: number;
  requested_size: number;
  /** GradLab frees at once (no stream to wait for), so a block is never "active_pending_free". */
  state: "active_allocated" | "inactive";
  frames: Frame[];
}

export interface SnapshotSegment {
  /** The device's index: 0, the only device a snapshot covers (PyTorch numbers its CUDA devices). */
  device: number;
  address: number;
  total_size: number;
  allocated_size: number;
  active_size: number;
  requested_size: number;
  stream: number;
  segment_type: "small" | "large";
  /** A tuple in PyTorch (an array here; the pickle writes a tuple). */
  segment_pool_id: [number, number];
  is_expandable: boolean;
  frames: Frame[];
  blocks: SnapshotBlock[];
}

export interface MemorySnapshot {
  segments: SnapshotSegment[];
  device_traces: MemoryEvent[][];
}

/** The segments of a device's allocator, in address order, each with its blocks. */
export function segmentsOf(dev: MemoryDevice): SnapshotSegment[] {
  const owner = new Map<Block, Storage>();
  for (const s of liveStorages) if (s.block && s.device === dev) owner.set(s.block, s);
  const segs = [...dev.allocator.liveSegments].sort((a, b) => a.id - b.id);
  return segs.map((seg: Segment) => {
    const blocks: SnapshotBlock[] = [];
    for (let b: Block | null = seg.head; b; b = b.next) {
      const s = owner.get(b);
      blocks.push({
        address: blockAddress(b),
        size: b.size,
        requested_size: b.allocated ? b.requested : b.size,
        state: b.allocated ? "active_allocated" : "inactive",
        frames: s ? allocationFrames(s) : [],
      });
    }
    const active = blocks.filter((b) => b.state === "active_allocated");
    const allocated = active.reduce((n, b) => n + b.size, 0);
    return {
      device: 0,
      address: segmentAddress(seg),
      total_size: seg.size,
      allocated_size: allocated,
      active_size: allocated,
      requested_size: active.reduce((n, b) => n + b.requested_size, 0),
      stream: 0,
      segment_type: seg.pool === "small_pool" ? "small" : "large",
      segment_pool_id: [0, 0],
      is_expandable: false,
      // where the segment was reserved: the first block's allocation, as for a cudaMalloc made for it
      frames: blocks[0]?.frames ?? [],
      blocks,
    };
  });
}

/** torch.cuda.memory._snapshot(): the current device's segments and its recorded trace. */
export function snapshotOf(dev: MemoryDevice): MemorySnapshot {
  const trace = _snapshot_events().filter((e) => e.device === dev.name);
  return { segments: segmentsOf(dev), device_traces: [trace] };
}

/**
 * The file memory_viz opens. GradLab's extra trace fields go under names of their own: memory_viz
 * colours by a trace entry's `category` when it has one, with categories of PyTorch's own making.
 */
function snapshotPickle(snap: MemorySnapshot): Uint8Array {
  const device_traces = snap.device_traces.map((t) =>
    t.map(({ category, phase, op, node, storage_id, requested, device, ...e }) => ({
      ...e,
      gradlab: { category, phase, op, node, storage_id, requested, device },
    })),
  );
  const segments = snap.segments.map((s) => ({ ...s, segment_pool_id: pyTuple(...s.segment_pool_id) }));
  return pickleDumps({ segments, device_traces });
}

export function dumpSnapshot(path: string, snap: MemorySnapshot): void {
  // built only where there is somewhere to write it (a browser page without GradLab Lite's drive has not)
  platform.writeFile(path, () => snapshotPickle(snap));
}
