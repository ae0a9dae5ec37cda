// torch.webgpu (aliased as torch.cuda): device queries and memory statistics.
// Device queries are async because WebGPU hands out adapters asynchronously; memory statistics are
// synchronous and never wait on the GPU, since the allocator's accounting is host-side and exact.

import { currentDevice, newSimulatedDevice, setCurrentDevice, type MemoryDevice } from "../memory/devices.ts";
import { within, type Guard } from "../autograd/guard.ts";
import * as history from "../memory/history.ts";
import * as snap from "../autograd/snapshot.ts";
import { reclaim, reclaimsSynchronously } from "../memory/lifetime.ts";
import { dumpSnapshot, segmentsOf, snapshotOf, type MemorySnapshot, type SnapshotSegment } from "../memory/torch-snapshot.ts";
import { formatBytes } from "../memory/format-bytes.ts";
import { getDevice, readyDevice, simulateDeviceLoss } from "../device/backend.ts";
import { flush } from "../device/scheduler.ts";
import { releaseTileScratch } from "../device/tiles.ts";
import { OutOfMemoryError, ValueError } from "../errors.ts";

export { OutOfMemoryError };

export async function is_available(): Promise<boolean> {
  try {
    await getDevice();
    return true;
  } catch {
    return false;
  }
}

/** Acquires the device now (importing the runtime already tries; this raises the reason if it failed). */
export async function init(): Promise<void> {
  await getDevice();
}

export async function device_count(): Promise<number> {
  return (await is_available()) ? 1 : 0;
}

export const current_device = () => 0;

export async function get_device_name(): Promise<string> {
  const { facts } = await getDevice();
  return facts.description || facts.device || `${facts.vendor} ${facts.architecture}`.trim() || "WebGPU adapter";
}
export const device_name = get_device_name;

export async function get_device_properties() {
  const dev = currentDevice();
  if (dev.simulated) {
    return {
      name: dev.label,
      backend: "simulated",
      vendor: "GradLab",
      architecture: "",
      device: dev.name,
      description: dev.label,
      is_fallback_adapter: false,
      feature_level: "core",
      total_memory: dev.allocator.capacity,
      limits: {} as Record<string, number>,
      features: [] as string[],
    };
  }
  const { facts } = await getDevice();
  return {
    name: await get_device_name(),
    backend: facts.backend,
    vendor: facts.vendor,
    architecture: facts.architecture,
    device: facts.device,
    description: facts.description,
    is_fallback_adapter: facts.is_fallback_adapter,
    feature_level: facts.feature_level,
    total_memory: dev.allocator.capacity,
    limits: facts.limits,
    features: facts.features,
  };
}

/** Waits until every op recorded so far has run on the GPU. */
export async function synchronize(): Promise<void> {
  await flush();
  await readyDevice()?.device.queue.onSubmittedWorkDone();
}

// The statistics are those of the current device (the WebGPU device, or a simulated one: simulate()).
/** The current device's allocator, after reclaiming what user code can no longer reach (every figure
 *  read through torch.cuda is what PyTorch's reference counting would give at this point). */
const alloc = () => {
  reclaim();
  return currentDevice().allocator;
};
export const memory_allocated = () => alloc().allocated.all.current;
export const max_memory_allocated = () => alloc().allocated.all.peak;
export const memory_reserved = () => alloc().reserved.all.current;
export const max_memory_reserved = () => alloc().reserved.all.peak;
export const reset_peak_memory_stats = () => alloc().resetPeak();
export const reset_max_memory_allocated = () => alloc().resetPeak();
/** Releases every cached segment that holds no live tensor (memory_reserved drops; allocated does not), and
 *  the matmul's tile scratch, which no figure counts (device/tiles.ts). */
export const empty_cache = () => {
  alloc().releaseCached();
  releaseTileScratch();
};
/** PyTorch's counters, plus "reclaim.synchronous" (GradLab's): 1 where tensors dropped without dispose
 *  are reclaimed before every figure (Node with its V8 flags), 0 where the platform cannot (a browser:
 *  they stay counted until its collector runs). */
export const memory_stats = (): Record<string, number> => ({ ...alloc().stats(), "reclaim.synchronous": reclaimsSynchronously() ? 1 : 0 });

/**
 * Makes a simulated device (default 80 GiB) the current one: new tensors get shapes, dtypes and exact
 * memory accounting there, but no data and no computation, so models of any size run instantly.
 * `using _ = torch.cuda.simulate({total_memory})`, or with a callback; exiting restores the device.
 */
export function simulate(opts?: { total_memory?: number; name?: string }): Guard & { device: MemoryDevice };
export function simulate<T>(opts: { total_memory?: number; name?: string } | undefined, fn: () => T): T;
export function simulate<T>(opts?: { total_memory?: number; name?: string }, fn?: () => T): T | (Guard & { device: MemoryDevice }) {
  const device = newSimulatedDevice(opts?.total_memory, opts?.name);
  const restore = setCurrentDevice(device);
  const r = within(restore, fn);
  return fn ? (r as T) : Object.assign(r as Guard, { device });
}
export const current_device_name = () => currentDevice().name;

/** torch.cuda.set_per_process_memory_fraction: caps what GradLab may reserve, as a share of the device. */
const fullCapacity = new WeakMap<MemoryDevice, number>();
const full = (d: MemoryDevice): number => {
  if (!fullCapacity.has(d)) fullCapacity.set(d, d.allocator.capacity);
  return fullCapacity.get(d)!;
};
export function set_per_process_memory_fraction(fraction: number): void {
  if (!(fraction >= 0 && fraction <= 1)) throw new ValueError(`Invalid fraction value: ${fraction}. Allowed range: 0~1`);
  alloc().capacity = Math.floor(full(currentDevice()) * fraction);
}
/** Sets the device capacity in bytes (for demonstrations of running out of memory). */
export function set_memory_capacity(bytes: number): void {
  if (!(bytes > 0)) throw new ValueError(`capacity must be a positive number of bytes, got ${bytes}`);
  full(currentDevice());
  alloc().capacity = bytes;
}
export const get_memory_capacity = () => alloc().capacity;

/** A table in the layout of torch.cuda.memory_summary(). */
export function memory_summary(): string {
  const allocator = alloc();
  const s = allocator.stats();
  const line = `|${"=".repeat(79)}|`;
  const thin = `|${"-".repeat(79)}|`;
  const row = (label: string, vals: string[]) => `| ${label.padEnd(24)}| ${vals.map((v) => v.padStart(10)).join(" | ")} |`;
  const block = (title: string, key: string, fmt: (n: number) => string) => [
    row(title, ["Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed"]),
    thin,
    ...(["all", "large_pool", "small_pool"] as const).map((pool) =>
      row(
        pool === "all" ? "  from all pools" : pool === "large_pool" ? "    from large pool" : "    from small pool",
        ["current", "peak", "allocated", "freed"].map((k) => fmt(s[`${key}.${pool}.${k}`])),
      ),
    ),
    thin,
  ];
  const bytes = (n: number) => formatBytes(n).replace(" bytes", " B").replace("KiB", "KB").replace("MiB", "MB").replace("GiB", "GB");
  const count = (n: number) => String(n);
  return [
    line,
    `|${"                  GradLab WebGPU memory summary, device ID 0".padEnd(79)}|`,
    thin,
    `|${`  OOMs: ${s.num_ooms}  |  alloc retries: ${s.num_alloc_retries}  |  capacity: ${formatBytes(allocator.capacity)}`.padEnd(79)}|`,
    line,
    ...block("Allocated memory", "allocated_bytes", bytes),
    ...block("Requested memory", "requested_bytes", bytes),
    ...block("GPU reserved memory", "reserved_bytes", bytes),
    ...block("Allocations", "allocation", count),
    ...block("GPU reserved segments", "segment", count),
    row("Non-releasable memory", [bytes(s["inactive_split_bytes.all.current"]), "", "", ""]),
    line,
  ].join("\n");
}

/** torch.cuda.memory: the timeline, snapshots and the leak finder. */
export const memory = {
  _record_memory_history: history._record_memory_history,
  record_history: history.record_history,
  /** PyTorch 2.x's snapshot (segments with their blocks, device_traces) of the current device; trace
   *  entries also carry GradLab's op, node, phase and category. */
  _snapshot(): MemorySnapshot {
    reclaim();
    return snapshotOf(currentDevice());
  },
  /** Writes `_snapshot()` as PyTorch's pickle: drop the file on pytorch.org/memory_viz. */
  _dump_snapshot(filename = "dump_snapshot.pickle"): void {
    reclaim();
    dumpSnapshot(filename, snapshotOf(currentDevice()));
  },
  memory_snapshot,
  live_storages: snap.memory_snapshot,
  find_leaks: snap.find_leaks,
  lifecycle_report: snap.lifecycle_report,
  /** Whether tensors dropped without dispose are reclaimed before figures (GradLab, not in PyTorch). */
  reclaims_synchronously: reclaimsSynchronously,
};
/** torch.cuda.memory_snapshot(): the current device's segments, as PyTorch returns them (its
 *  `_snapshot()["segments"]`). Who holds each live storage: torch.cuda.memory.live_storages(). */
export function memory_snapshot(): SnapshotSegment[] {
  reclaim();
  return segmentsOf(currentDevice());
}

/** Destroys the device as a driver reset would; tensors created before report the loss when used. */
export const _simulate_device_loss = simulateDeviceLoss;
