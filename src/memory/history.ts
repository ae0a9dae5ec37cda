// The memory timeline (torch.cuda.memory._record_memory_history / _snapshot / _dump_snapshot): every
// allocation and free of a storage, with its bytes, the op that made it, the autograd node running,
// the phase (forward / backward / optimizer / other), what the memory is for (category) and, when
// stacks are recorded, where in the user's code it happened. Plots (issue: displays) read this data.

import type { Category } from "./category.ts";
import { context } from "./context.ts";
import { reclaim } from "./lifetime.ts";

export type Phase = "forward" | "backward" | "optimizer" | "other";

/** PyTorch's trace actions (a free is `free_requested` then, with no stream to wait for, `free_completed`). */
type TraceAction = "alloc" | "free_requested" | "free_completed" | "segment_alloc" | "segment_free";

/** One frame of where an event happened, as PyTorch's snapshots give it: in a notebook, the cell
 *  ("Cell [3]"), the line in that cell, and the function (`<module>` at a cell's top level). */
export interface Frame {
  filename: string;
  line: number;
  name: string;
}

/**
 * An entry of `_snapshot().device_traces[i]`: PyTorch's fields (action, addr, size, stream, time_us,
 * frames), then GradLab's own (which tensor's storage, the op, the autograd node, the phase and what
 * the memory is for).
 */
export interface MemoryEvent {
  action: TraceAction;
  addr: number;
  /** Bytes the allocator handed out (rounded; a segment's whole size for segment events). */
  size: number;
  stream: number;
  /** Microseconds since recording started. */
  time_us: number;
  frames: Frame[];
  device: string;
  /** The storage the block holds; -1 for segment events. */
  storage_id: number;
  /** What was asked for, before rounding. */
  requested: number;
  op: string | null;
  node: string | null;
  phase: Phase;
  category: Category;
}

/** As recorded: the stack stays a string until a snapshot asks for frames (formatting costs more than capturing). */
type Recorded = Omit<MemoryEvent, "frames"> & { stack: string | null };

interface Recording {
  events: Recorded[];
  max_entries: number;
  stacks: boolean;
  t0: number;
}

let rec: Recording | null = null;
/** What the history reads of a storage (memory/storage.ts's Storage, which records itself here). */
export interface RecordedStorage {
  readonly id: number;
  readonly nbytes: number;
  readonly category: Category;
  readonly device: { readonly name: string };
}

const live = new WeakMap<RecordedStorage, Recorded>();

// ---- context the runtime sets ----
const phase = context<Phase>("other");
export const currentPhase = phase.get;
export const withPhase = <T>(p: Phase, fn: () => T): T => phase.with(p, fn);
const node = context<string | null>(null);
export const withNode = <T>(name: string, fn: () => T): T => node.with(name, fn);
let opNameOf: () => string | null = () => null;
/** The op context registers how to read the current op's name (kept separate to avoid an import cycle). */
export function setOpNameSource(f: () => string | null): void {
  opNameOf = f;
}

const runtimeDir = new URL("..", import.meta.url).pathname;
function captureStack(): string | null {
  if (!rec?.stacks) return null;
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 64; // the runtime's own frames come first and are dropped
  const stack = new Error().stack ?? "";
  Error.stackTraceLimit = limit;
  return stack
    .split("\n")
    .slice(1)
    .filter((l) => !l.includes(runtimeDir))
    .join("\n");
}

/**
 * A front end (the GradLab kernel) registers how a stack is shown to its user under this symbol
 * (autograd/node.ts reads it too): frames in cells become "at fn (Cell [3]:2:5)". Without one, Node's
 * own frames are dropped and file paths stay as they are.
 */
const USER_STACK = Symbol.for("gradlab.userStack");
const FRAME = /^\s*at (?:(.+?) \()?(.+?):(\d+):\d+\)?$/;
const framesCache = new Map<string, Frame[]>();
function framesOf(stack: string | null): Frame[] {
  if (!stack) return [];
  const hit = framesCache.get(stack);
  if (hit) return hit;
  const format = (globalThis as Record<symbol, unknown>)[USER_STACK];
  const lines = typeof format === "function" ? String(format(stack)).split("\n") : stack.split("\n").filter((l) => !/\(node:|at node:/.test(l));
  const frames: Frame[] = [];
  for (const l of lines) {
    const m = FRAME.exec(l);
    if (!m) continue;
    const anonymous = !m[1] || m[1] === "async" || m[1] === "async <anonymous>" || m[1] === "<anonymous>";
    // a script's own files relative to where it runs (as the kernel shows them), not the machine's paths
    frames.push({
      filename: m[2].replace(/^file:\/\//, "").replace(`${process.cwd()}/`, ""),
      line: Number(m[3]),
      name: anonymous ? "" : m[1].replace(/^async /, ""),
    });
    if (frames.length === 8) break;
  }
  // An unnamed function is a cell's (or a script's) top level when it is the outermost frame of its
  // file, as Python names it <module>; one called from the same file is an arrow, Python's <lambda>
  frames.forEach((f, i) => {
    if (!f.name) f.name = frames.slice(i + 1).some((o) => o.filename === f.filename) ? "<lambda>" : "<module>";
  });
  if (framesCache.size > 10_000) framesCache.clear();
  framesCache.set(stack, frames);
  return frames;
}

function push(e: Recorded): void {
  if (!rec) return;
  rec.events.push(e);
  if (rec.events.length > rec.max_entries) rec.events.splice(0, rec.events.length - rec.max_entries);
}
const now = () => (rec ? Math.round((performance.now() - rec.t0) * 1000) : 0);

/** Called by Storage when its block is allocated. */
export function recordAlloc(s: RecordedStorage, size: number, addr: number): void {
  if (!rec) return;
  const e: Recorded = {
    action: "alloc",
    addr,
    size,
    stream: 0,
    time_us: now(),
    stack: captureStack(),
    device: s.device.name,
    storage_id: s.id,
    requested: s.nbytes,
    op: opNameOf(),
    node: node.get(),
    phase: currentPhase(),
    category: s.category,
  };
  live.set(s, e);
  push(e);
}

/** Called by Storage when its block goes back to the allocator: PyTorch records the request and, the
 *  block having no stream to wait for, its completion at once. */
export function recordFree(s: RecordedStorage, size: number, addr: number): void {
  if (!rec) return;
  const a = live.get(s);
  live.delete(s);
  const e: Recorded = {
    action: "free_requested",
    addr,
    size,
    stream: 0,
    time_us: now(),
    stack: captureStack(),
    device: s.device.name,
    storage_id: s.id,
    requested: s.nbytes,
    op: opNameOf() ?? a?.op ?? null,
    node: node.get(),
    phase: currentPhase(),
    category: a?.category ?? s.category,
  };
  push(e);
  push({ ...e, action: "free_completed" });
}

/** Called by the allocator when a segment is reserved from the device or released to it. */
export function recordSegment(device: string, action: "segment_alloc" | "segment_free", addr: number, size: number): void {
  if (!rec) return;
  push({
    action,
    addr,
    size,
    stream: 0,
    time_us: now(),
    stack: captureStack(),
    device,
    storage_id: -1,
    requested: size,
    op: opNameOf(),
    node: node.get(),
    phase: currentPhase(),
    category: "other",
  });
}

/** Where a live storage was allocated, while recording (a snapshot's block frames). */
export const allocationFrames = (s: RecordedStorage): Frame[] => framesOf(live.get(s)?.stack ?? null);

/** A storage's role became known after it was allocated: its allocation event learns it too. */
export function retag(s: RecordedStorage, patch: Partial<Pick<MemoryEvent, "category" | "phase" | "node" | "op">>): void {
  const e = live.get(s);
  if (!e) return;
  if (patch.category) e.category = patch.category;
  if (patch.phase && e.phase === "other") e.phase = patch.phase;
  if (patch.node && !e.node) e.node = patch.node;
  if (patch.op && !e.op) e.op = patch.op;
}

/**
 * torch.cuda.memory._record_memory_history(enabled = "all", {max_entries, stacks}): start (or, with
 * null, stop) recording. Recording starts empty.
 */
export function _record_memory_history(enabled: "all" | "state" | null = "all", opts?: { max_entries?: number; stacks?: "python" | "all" | "none" }): void {
  if (enabled === null) {
    rec = null;
    return;
  }
  rec = { events: [], max_entries: opts?.max_entries ?? 1_000_000, stacks: (opts?.stacks ?? "python") !== "none", t0: performance.now() };
}
/** The friendlier name for the same switch. */
export const record_history = (on = true, opts?: { max_entries?: number; stacks?: boolean }) =>
  _record_memory_history(on ? "all" : null, { max_entries: opts?.max_entries, stacks: opts?.stacks === false ? "none" : "python" });

/** The events so far (copies, frames resolved), for snapshots, plots and tests. */
export function _snapshot_events(): MemoryEvent[] {
  reclaim(); // the timeline ends with what PyTorch would show now, not with garbage still waiting
  return rec ? rec.events.map(({ stack, ...e }) => ({ ...e, frames: framesOf(stack).map((f) => ({ ...f })) })) : [];
}
