// torch.viz.memory_viz(snapshot): the views of pytorch.org/memory_viz, inline, as Vega-Lite with hover,
// from the same snapshot `_dump_snapshot` writes:
// - active memory timeline: each allocation its own band over time, stacked; a band freed lets the
//   bands above it drop; hover names its size, category, op, autograd node and the cell line that
//   made it; forward / backward / optimizer phases shaded behind;
// - allocator state: each reserved segment as a row with its blocks (allocated, free inside a segment
//   that holds live blocks: fragmentation, rounding waste) at the event a slider picks (the last one in
//   static exports), so what empty_cache can return (whole-free segments) shows;
// - memory_reserved beside memory_allocated over the same events.
// All three share one x axis: the index of the trace's events (a free counted once, at free_completed).

import { Display, bytes, type MimeBundle } from "./common.ts";
import { unitFor } from "./memory-series.ts";
import { plotBundle, VEGALITE_SCHEMA } from "./vega-render.ts";
import type { MemoryEvent } from "../memory/history.ts";
import type { MemorySnapshot, SnapshotSegment } from "../memory/torch-snapshot.ts";

const CAT_DOMAIN = ["parameter", "gradient", "activation", "autograd_temporary", "optimizer_state", "other", "before recording"];
const CAT_RANGE = ["#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#b0b0b0", "#d8d8d8"];
const PHASE_COLORS = ["#9ecae9", "#ffbf79", "#88d27a"];
const r3 = (v: number) => Math.round(v * 1000) / 1000;

export interface MemoryVizOptions {
  /** One view, or all three stacked (default). */
  view?: "all" | "active" | "segments" | "reserved";
  /** Draw at most this many allocations, the largest (default 300); the rest are counted in the title. */
  max_entries?: number;
  width?: number;
  title?: string;
}

/** Where an event happened, in a line: the innermost frame ("Cell [3]:5 in <module>"). */
const where = (e: Pick<MemoryEvent, "frames"> | undefined) => {
  const f = e?.frames?.[0];
  return f ? `${f.filename}:${f.line} in ${f.name}` : "(not recorded)";
};

interface Alloc {
  id: number;
  addr: number;
  size: number;
  requested: number;
  category: string;
  phase: string;
  op: string;
  node: string;
  where: string;
  t_alloc: number;
  t_free: number | null;
  /** (time, offset) whenever the band's position changes */
  moves: Array<[number, number]>;
}

interface Replay {
  events: MemoryEvent[];
  allocs: Alloc[];
  hidden: { count: number; bytes: number };
  /** allocated and reserved bytes after each event (index 0: before the first) */
  allocated: number[];
  reserved: number[];
  bands: Array<{ phase: string; start: number; end: number }>;
  segments: Array<{ addr: number; size: number; type: string; t0: number; t1: number | null }>;
}

function replay(snap: MemorySnapshot, maxEntries: number): Replay {
  const events = (snap.device_traces[0] ?? []).filter((e) => e.action !== "free_requested");
  const n = events.length;
  // what existed before recording started: blocks freed without a recorded alloc, blocks alive at the end never allocated in the trace
  const allocatedInTrace = new Set<number>();
  const before = new Map<number, { size: number; requested: number; category: string; where: string }>();
  for (const e of events) {
    if (e.action === "alloc") allocatedInTrace.add(e.addr);
    else if (e.action === "free_completed" && !allocatedInTrace.has(e.addr) && !before.has(e.addr))
      before.set(e.addr, { size: e.size, requested: e.requested, category: "before recording", where: where(e) });
  }
  const live = snap.segments.flatMap((s) => s.blocks).filter((b) => b.state === "active_allocated");
  for (const b of live)
    if (!allocatedInTrace.has(b.address) && !before.has(b.address))
      before.set(b.address, { size: b.size, requested: b.requested_size, category: "before recording", where: where(b) });
  const segBefore = new Map<number, SnapshotSegment | { address: number; total_size: number; segment_type: string }>();
  const segInTrace = new Set<number>();
  for (const e of events) {
    if (e.action === "segment_alloc") segInTrace.add(e.addr);
    else if (e.action === "segment_free" && !segInTrace.has(e.addr))
      segBefore.set(e.addr, { address: e.addr, total_size: e.size, segment_type: e.size <= 2 ** 21 ? "small" : "large" });
  }
  for (const s of snap.segments) if (!segInTrace.has(s.address) && !segBefore.has(s.address)) segBefore.set(s.address, s);

  // the largest allocations are drawn; the others are left out (counted), as memory_viz summarizes them
  const sizes = [...before.values()].map((b) => b.size).concat(events.filter((e) => e.action === "alloc").map((e) => e.size));
  const cut = sizes.length > maxEntries ? [...sizes].sort((a, b) => b - a)[maxEntries - 1] : 0;
  let budget = maxEntries;
  const drawn = (size: number) => size >= cut && budget-- > 0;

  const allocs: Alloc[] = [];
  const stack: Alloc[] = [];
  const byAddr = new Map<number, Alloc>();
  const hidden = { count: 0, bytes: 0 };
  let top = 0;
  const push = (a: Alloc) => {
    a.moves.push([a.t_alloc, top]);
    top += a.size;
    stack.push(a);
    allocs.push(a);
    byAddr.set(a.addr, a);
  };
  for (const [addr, b] of before) {
    if (!drawn(b.size)) {
      hidden.count++;
      hidden.bytes += b.size;
      continue;
    }
    push({
      id: allocs.length,
      addr,
      size: b.size,
      requested: b.requested,
      category: b.category,
      phase: "other",
      op: "",
      node: "",
      where: b.where,
      t_alloc: 0,
      t_free: null,
      moves: [],
    });
  }
  let allocated = [...before.values()].reduce((s, b) => s + b.size, 0);
  let reserved = [...segBefore.values()].reduce((s, g) => s + g.total_size, 0);
  const segments: Replay["segments"] = [...segBefore.values()].map((g) => ({ addr: g.address, size: g.total_size, type: g.segment_type, t0: 0, t1: null }));
  const openSeg = new Map(segments.map((g) => [g.addr, g]));
  const allocatedSeries = [allocated];
  const reservedSeries = [reserved];
  const bands: Replay["bands"] = [];
  events.forEach((e, k) => {
    const t = k + 1;
    if (e.action === "alloc") {
      allocated += e.size;
      if (drawn(e.size))
        push({
          id: allocs.length,
          addr: e.addr,
          size: e.size,
          requested: e.requested,
          category: e.category,
          phase: e.phase,
          op: e.op ?? "",
          node: e.node ?? "",
          where: where(e),
          t_alloc: k,
          t_free: null,
          moves: [],
        });
      else {
        hidden.count++;
        hidden.bytes += e.size;
      }
    } else if (e.action === "free_completed") {
      allocated -= e.size;
      const a = byAddr.get(e.addr);
      if (a && a.t_free === null) {
        byAddr.delete(e.addr);
        a.t_free = t;
        const j = stack.indexOf(a);
        stack.splice(j, 1);
        for (const above of stack.slice(j)) above.moves.push([t, above.moves[above.moves.length - 1][1] - a.size]);
        top -= a.size;
      }
    } else if (e.action === "segment_alloc") {
      reserved += e.size;
      const g = { addr: e.addr, size: e.size, type: e.size <= 2 ** 21 ? "small" : "large", t0: k, t1: null };
      segments.push(g);
      openSeg.set(e.addr, g);
    } else if (e.action === "segment_free") {
      reserved -= e.size;
      const g = openSeg.get(e.addr);
      if (g) g.t1 = t;
      openSeg.delete(e.addr);
    }
    allocatedSeries.push(allocated);
    reservedSeries.push(reserved);
    const last = bands[bands.length - 1];
    if (last && last.phase === e.phase) last.end = t;
    else bands.push({ phase: e.phase, start: k, end: t });
  });
  void n;
  return { events, allocs, hidden, allocated: allocatedSeries, reserved: reservedSeries, bands, segments };
}

/** The shaded phases, once per spec (a top-level dataset both timelines read). A long trace keeps the
 *  phases at least one plotted step wide: a thousand 20-event iterations shade as nothing readable. */
function phaseRows(r: Replay): object[] {
  const step = Math.max(1, Math.ceil(r.events.length / 600));
  return r.bands.filter((b) => b.phase !== "other" && b.end - b.start >= step).map((b) => ({ ...b }));
}
const phaseLayer = () => ({
  data: { name: "phases" },
  mark: { type: "rect", opacity: 0.4 },
  encoding: {
    x: { field: "start", type: "quantitative", title: "event #" },
    x2: { field: "end" },
    color: {
      field: "phase",
      type: "nominal",
      scale: { domain: ["forward", "backward", "optimizer"], range: PHASE_COLORS },
      legend: { title: "phase (shaded)" },
    },
  },
});

function activeView(r: Replay, o: MemoryVizOptions, div: number, unit: string) {
  const end = r.events.length;
  const rows: object[] = [];
  for (const a of r.allocs) {
    const stop = a.t_free ?? end;
    a.moves.forEach(([t, off], i) => {
      const t1 = i + 1 < a.moves.length ? a.moves[i + 1][0] : stop;
      if (t1 <= t && !(t === 0 && t1 === 0)) return;
      rows.push({
        id: a.id,
        t0: t,
        t1: Math.max(t1, t + 0.5),
        y0: r3(off / div),
        y1: r3((off + a.size) / div),
        size: bytes(a.size),
        bytes: a.size,
        requested: a.requested,
        category: a.category,
        phase: a.phase,
        op: a.op,
        node: a.node,
        where: a.where,
        alloc_event: a.t_alloc,
        free_event: a.t_free === null ? "alive at the end" : a.t_free,
      });
    });
  }
  const hidden = r.hidden.count ? ` (${r.hidden.count} smaller allocations, ${bytes(r.hidden.bytes)}, not drawn)` : "";
  return {
    title: { text: `Active memory timeline: each allocation a band${hidden}`, anchor: "start", fontSize: 13 },
    width: o.width ?? 520,
    height: 240,
    layer: [
      phaseLayer(),
      {
        data: { values: rows },
        mark: { type: "rect", stroke: "white", strokeWidth: 0.5 },
        encoding: {
          x: { field: "t0", type: "quantitative", title: "event #", scale: { domain: [0, Math.max(1, end)], nice: false } },
          x2: { field: "t1" },
          y: { field: "y0", type: "quantitative", title: `allocated (${unit})` },
          y2: { field: "y1" },
          fill: { field: "category", type: "nominal", scale: { domain: CAT_DOMAIN, range: CAT_RANGE }, legend: { title: "allocation for" } },
          tooltip: [
            { field: "where", title: "allocated at" },
            { field: "size", title: "size" },
            { field: "bytes", type: "quantitative", title: "bytes (exact)", format: "," },
            { field: "requested", type: "quantitative", title: "requested bytes", format: "," },
            { field: "category" },
            { field: "op" },
            { field: "node", title: "autograd node" },
            { field: "phase" },
            { field: "alloc_event", title: "allocated at event" },
            { field: "free_event", title: "freed at event" },
          ],
        },
      },
    ],
    resolve: { scale: { color: "independent" } },
  };
}

function segmentView(r: Replay, o: MemoryVizOptions) {
  const end = r.events.length;
  const segIndex = new Map(r.segments.map((g, i) => [g.addr, i]));
  const label = (g: Replay["segments"][number], i: number) => `segment ${i + 1} (${g.type}, ${bytes(g.size).replace(".00 ", " ")})`;
  const segRows = r.segments.map((g, i) => ({
    seg: label(g, i),
    x0: 0,
    x1: r3(g.size / 2 ** 20),
    t0: g.t0,
    t1: g.t1 ?? end + 1,
    size: bytes(g.size),
    state: "free in segment",
  }));
  const blockRows: object[] = [];
  for (const a of r.allocs) {
    const segAddr = Math.floor(a.addr / 2 ** 32) * 2 ** 32;
    const i = segIndex.get(segAddr);
    if (i === undefined) continue;
    const g = r.segments[i];
    const off = a.addr - segAddr;
    const base = { seg: label(g, i), t0: a.t_alloc, t1: a.t_free ?? end + 1, where: a.where, size: bytes(a.size), category: a.category, op: a.op };
    blockRows.push({ ...base, x0: r3(off / 2 ** 20), x1: r3((off + a.requested) / 2 ** 20), state: "allocated" });
    if (a.size > a.requested) blockRows.push({ ...base, x0: r3((off + a.requested) / 2 ** 20), x1: r3((off + a.size) / 2 ** 20), state: "rounding waste" });
  }
  const STATES = ["allocated", "rounding waste", "free in segment"];
  const atT = { filter: "datum.t0 <= at_event && at_event < datum.t1" };
  const enc = (extra: object) => ({
    y: { field: "seg", type: "nominal", title: null, sort: r.segments.map((g, i) => label(g, i)), axis: { labelLimit: 220 } },
    x: { field: "x0", type: "quantitative", title: "offset in segment (MiB)" },
    x2: { field: "x1" },
    color: { field: "state", type: "nominal", scale: { domain: STATES, range: ["#4c78a8", "#e45756", "#e8e8e8"] }, legend: { title: "block" } },
    ...extra,
  });
  return {
    title: { text: "Allocator state: reserved segments and their blocks at the chosen event", anchor: "start", fontSize: 13 },
    width: o.width ?? 520,
    height: { step: 22 },
    layer: [
      {
        data: { values: segRows },
        transform: [atT],
        mark: { type: "bar", stroke: "#666", strokeWidth: 0.5 },
        encoding: enc({ tooltip: [{ field: "seg", title: "segment" }, { field: "size" }] }),
      },
      {
        data: { values: blockRows },
        transform: [atT],
        mark: { type: "bar", stroke: "white", strokeWidth: 0.3 },
        encoding: enc({
          tooltip: [{ field: "where", title: "allocated at" }, { field: "size" }, { field: "state" }, { field: "category" }, { field: "op" }],
        }),
      },
    ],
  };
}

function reservedView(r: Replay, o: MemoryVizOptions, div: number, unit: string) {
  // one point per event up to 600 events; past that, the highest of each run of events, so peaks stay
  // exact while a 40,000-event trace plots as 600 steps (a point per event made a 4 MB spec)
  const step = Math.max(1, Math.ceil(r.allocated.length / 600));
  const values: object[] = [];
  for (let i = 0; i < r.allocated.length; i += step) {
    const a = Math.max(...r.allocated.slice(i, i + step));
    const v = Math.max(...r.reserved.slice(i, i + step));
    values.push({ event: i, series: "memory_reserved", value: r3(v / div), bytes: v }, { event: i, series: "memory_allocated", value: r3(a / div), bytes: a });
  }
  const last = r.allocated.length - 1;
  if (last % step !== 0) {
    values.push(
      { event: last, series: "memory_reserved", value: r3(r.reserved[last] / div), bytes: r.reserved[last] },
      { event: last, series: "memory_allocated", value: r3(r.allocated[last] / div), bytes: r.allocated[last] },
    );
  }
  return {
    title: { text: "memory_reserved (segments the cache holds) beside memory_allocated", anchor: "start", fontSize: 13 },
    width: o.width ?? 520,
    height: 160,
    layer: [
      phaseLayer(),
      {
        data: { values },
        mark: { type: "line", interpolate: "step-after", strokeWidth: 2 },
        encoding: {
          x: { field: "event", type: "quantitative", title: "event #", scale: { domain: [0, Math.max(1, r.events.length)], nice: false } },
          y: { field: "value", type: "quantitative", title: unit },
          stroke: {
            field: "series",
            type: "nominal",
            scale: { domain: ["memory_reserved", "memory_allocated"], range: ["#7b4173", "#4c78a8"] },
            legend: { title: null },
          },
          tooltip: [
            { field: "event" },
            { field: "series" },
            { field: "value", title: unit },
            { field: "bytes", type: "quantitative", title: "bytes (exact)", format: "," },
          ],
        },
      },
    ],
    resolve: { scale: { color: "independent" } },
  };
}

export class MemoryVizView extends Display {
  private readonly r: Replay;
  constructor(
    readonly snapshot: MemorySnapshot,
    readonly opts: MemoryVizOptions = {},
  ) {
    super();
    this.r = replay(snapshot, opts.max_entries ?? 300);
  }
  toSpec(): object {
    return this.spec;
  }
  get spec(): object {
    const r = this.r;
    const u = unitFor(Math.max(1, ...r.reserved, ...r.allocated));
    const views = {
      active: () => activeView(r, this.opts, u.div, u.name),
      segments: () => segmentView(r, this.opts),
      reserved: () => reservedView(r, this.opts, u.div, u.name),
    };
    const which = this.opts.view ?? "all";
    const end = r.events.length;
    // the segment view's slider; Vega-Lite takes a variable parameter at the top level only
    const params =
      which === "all" || which === "segments"
        ? [{ name: "at_event", value: end, bind: { input: "range", min: 0, max: Math.max(1, end), step: 1, name: "allocator state at event # " } }]
        : [];
    const base = {
      $schema: VEGALITE_SCHEMA,
      config: { view: { stroke: null }, legend: { labelLimit: 220 } },
      datasets: { phases: phaseRows(r) },
      ...(params.length ? { params } : {}),
    };
    if (which !== "all") return { ...base, ...views[which]() };
    return {
      ...base,
      title: this.opts.title ?? "Memory snapshot (the views of pytorch.org/memory_viz)",
      vconcat: [views.active(), views.segments(), views.reserved()],
      spacing: 28,
      resolve: {
        scale: { color: "independent", fill: "independent", stroke: "independent", x: "independent" },
        legend: { color: "independent", fill: "independent", stroke: "independent" },
      },
    };
  }
  /** The figures a reader checks the drawing against: at the last event. */
  get summary() {
    const segs = this.snapshot.segments;
    const reserved = segs.reduce((n, s) => n + s.total_size, 0);
    const allocated = segs.reduce((n, s) => n + s.allocated_size, 0);
    const releasable = segs.filter((s) => s.allocated_size === 0).reduce((n, s) => n + s.total_size, 0);
    return {
      events: this.r.events.length,
      allocations: this.r.allocs.length + this.r.hidden.count,
      segments: segs.length,
      reserved,
      allocated,
      empty_cache_returns: releasable,
      fragmented: reserved - allocated - releasable,
    };
  }
  get text(): string {
    const s = this.summary;
    const peak = Math.max(...this.r.allocated);
    return [
      `Memory snapshot: ${s.events} events, ${s.allocations} allocations; peak allocated ${bytes(peak)}, peak reserved ${bytes(Math.max(...this.r.reserved))}`,
      `  now: ${s.segments} segments reserve ${bytes(s.reserved)}, ${bytes(s.allocated)} allocated`,
      `  empty_cache() would return ${bytes(s.empty_cache_returns)} (segments with no live block); ${bytes(s.fragmented)} is free inside segments that hold live blocks (fragmentation: it stays reserved)`,
    ].join("\n");
  }
  protected build(): MimeBundle {
    return plotBundle(this.spec, this.text);
  }
  toString(): string {
    return this.text;
  }
}

/** torch.viz.memory_viz(torch.cuda.memory._snapshot()): memory_viz's three views, inline. */
export function memory_viz(snapshot: MemorySnapshot, opts?: MemoryVizOptions): MemoryVizView {
  if (!snapshot || !Array.isArray((snapshot as { segments?: unknown }).segments) || !Array.isArray((snapshot as { device_traces?: unknown }).device_traces)) {
    throw new TypeError("memory_viz() takes a snapshot: torch.cuda.memory._snapshot() (after torch.cuda.memory._record_memory_history())");
  }
  return new MemoryVizView(snapshot, opts);
}
