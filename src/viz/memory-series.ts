// Memory timeline data for plots: allocated bytes per category after each event of a recording
// (torch.cuda.memory._snapshot().device_traces[0], or _snapshot_events()), phase bands, the peak,
// and a peak-preserving downsampling so 10,000 events plot as a few hundred points.

import type { MemoryEvent } from "../memory/history.ts";
import { liveStorages } from "../memory/storage.ts";

export const CATEGORIES = ["parameter", "gradient", "activation", "autograd_temporary", "optimizer_state", "other"] as const;
export const PHASES = ["forward", "backward", "optimizer", "other"] as const;
type Cat = (typeof CATEGORIES)[number];

export type EventsLike = MemoryEvent[] | { device_traces: MemoryEvent[][] };
/** An event as plots read it: a trace entry, or a hand-made one whose free is just "free". */
export type PartialEvent = Pick<MemoryEvent, "size" | "category" | "phase"> & { action: MemoryEvent["action"] | "free" } & Partial<Omit<MemoryEvent, "action">>;

/** The allocations and frees of a trace (a free counted once, at free_completed; segments are not allocations). */
function eventsOf(src: EventsLike | PartialEvent[]): PartialEvent[] {
  const ev: PartialEvent[] = Array.isArray(src) ? src : ((src.device_traces ?? [])[0] ?? []);
  return ev.filter((e) => e.action === "alloc" || e.action === "free" || e.action === "free_completed");
}

/** @public (part of the runtime's typed API) */
export interface Sample {
  /** Event index (0 = before the first event). */
  i: number;
  time_us: number;
  phase: string;
  byCat: Record<Cat, number>;
  total: number;
}
export interface Series {
  samples: Sample[];
  /** Contiguous runs of one phase, in event indices. */
  bands: Array<{ phase: string; start: number; end: number }>;
  peak: { i: number; bytes: number; phase: string; byCat: Record<Cat, number> };
  final: number;
  events: number;
}

const catOf = (c: string): Cat => ((CATEGORIES as readonly string[]).includes(c) ? (c as Cat) : "other");
const zero = (): Record<Cat, number> => Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Cat, number>;

/** Replays the events; memory freed but never allocated in the recording is counted from the start. */
export function series(src: EventsLike | PartialEvent[], maxPoints = 600, baseline: Array<{ category: string; size: number }> = []): Series {
  const ev = eventsOf(src);
  const cur = zero();
  for (const b of baseline) cur[catOf(b.category)] += b.size;
  const allocated = new Set<number>();
  ev.forEach((e, k) => {
    const id = e.storage_id ?? -1 - k;
    if (e.action === "alloc") allocated.add(id);
    else if (!allocated.has(id)) cur[catOf(e.category)] += e.size; // alive before recording started
  });
  const all: Sample[] = [{ i: 0, time_us: 0, phase: ev[0]?.phase ?? "other", byCat: { ...cur }, total: sum(cur) }];
  let total = all[0].total;
  let peak = { i: 0, bytes: total, phase: all[0].phase, byCat: { ...cur } };
  const bands: Series["bands"] = [];
  // Each sample is materialized only when kept, to keep 10,000-event recordings cheap.
  const step = Math.max(1, Math.ceil(ev.length / maxPoints));
  let bucketBest: Sample | null = null;
  ev.forEach((e, k) => {
    const c = catOf(e.category);
    const d = e.action === "alloc" ? e.size : -e.size;
    cur[c] += d;
    total += d;
    const i = k + 1;
    const last = bands[bands.length - 1];
    if (last && last.phase === e.phase) last.end = i;
    else bands.push({ phase: e.phase, start: i - 1, end: i });
    if (total > peak.bytes) peak = { i, bytes: total, phase: e.phase, byCat: { ...cur } };
    if (!bucketBest || total >= bucketBest.total) bucketBest = { i, time_us: e.time_us ?? 0, phase: e.phase, byCat: { ...cur }, total };
    if (i % step === 0 || i === ev.length) {
      all.push(bucketBest);
      bucketBest = null;
    }
  });
  return { samples: all, bands, peak, final: total, events: ev.length };
}

const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);

/** A unit for an axis: the largest of bytes/KiB/MiB/GiB that keeps the peak at 1 or more. */
export function unitFor(peak: number): { name: string; div: number } {
  if (peak >= 2 ** 30) return { name: "GiB", div: 2 ** 30 };
  if (peak >= 2 ** 20) return { name: "MiB", div: 2 ** 20 };
  if (peak >= 2 ** 10) return { name: "KiB", div: 2 ** 10 };
  return { name: "bytes", div: 1 };
}

/**
 * Memory allocated before the recording started and still alive now (parameters created earlier,
 * the input batch): live storages on the trace's device older than its first allocation.
 */
export function liveBefore(src: EventsLike | PartialEvent[]): Array<{ category: string; size: number }> {
  const ev = eventsOf(src);
  const first = ev.find((e) => e.action === "alloc" && e.storage_id !== undefined);
  if (!first) return [];
  const seen = new Set(ev.map((e) => e.storage_id));
  const out: Array<{ category: string; size: number }> = [];
  for (const s of liveStorages) {
    if (s.id < first.storage_id! && !seen.has(s.id) && s.device.name === first.device && s.block) out.push({ category: s.category, size: s.block.size });
  }
  return out;
}
