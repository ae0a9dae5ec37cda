// The memory timeline (torch.cuda.memory._record_memory_history / _snapshot / _dump_snapshot): every
// allocation and free of a storage, with its bytes, the op that made it, the autograd node running,
// the phase (forward / backward / optimizer / other), what the memory is for (category) and, when
// stacks are recorded, where in the user's code it happened. Plots (issue: displays) read this data.

import type { Category } from "./category.ts";
import { context } from "./context.ts";
import { platform } from "../platform/current.ts";

export type Phase = "forward" | "backward" | "optimizer" | "other";

export interface MemoryEvent {
  action: "alloc" | "free";
  /** Microseconds since recording started. */
  time_us: number;
  device: string;
  storage_id: number;
  /** Bytes the allocator handed out (rounded), and what was asked for. */
  size: number;
  requested: number;
  addr: number;
  op: string | null;
  node: string | null;
  phase: Phase;
  category: Category;
  frames: string[];
}

interface Recording {
  events: MemoryEvent[];
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

const live = new WeakMap<RecordedStorage, MemoryEvent>();

// ---- context the runtime sets ----
const phase = context<Phase>("other");
export const currentPhase = phase.get;
export const withPhase = <T>(p: Phase, fn: () => T): T => phase.with(p, fn);
const node = context<string | null>(null);
export const withNode = <T>(name: string, fn: () => T): T => node.with(name, fn);
let opNameOf: () => string | null = () => null;
/** The op context registers how to read the current op's name (kept separate to avoid an import cycle). */
import { reclaim } from "./lifetime.ts";
export function setOpNameSource(f: () => string | null): void {
  opNameOf = f;
}

const runtimeDir = new URL("..", import.meta.url).pathname;
function userFrames(): string[] {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 64;
  const stack = new Error().stack ?? "";
  Error.stackTraceLimit = limit;
  return stack
    .split("\n")
    .slice(1)
    .filter((l) => !l.includes(runtimeDir) && !l.includes("node:"))
    .map((l) => l.trim().replace(/^at /, ""))
    .slice(0, 8);
}

function push(e: MemoryEvent): void {
  if (!rec) return;
  rec.events.push(e);
  if (rec.events.length > rec.max_entries) rec.events.splice(0, rec.events.length - rec.max_entries);
}

/** Called by Storage when its block is allocated. */
export function recordAlloc(s: RecordedStorage, size: number, addr: number): void {
  if (!rec) return;
  const e: MemoryEvent = {
    action: "alloc",
    time_us: Math.round((performance.now() - rec.t0) * 1000),
    device: s.device.name,
    storage_id: s.id,
    size,
    requested: s.nbytes,
    addr,
    op: opNameOf(),
    node: node.get(),
    phase: currentPhase(),
    category: s.category,
    frames: rec.stacks ? userFrames() : [],
  };
  live.set(s, e);
  push(e);
}

/** Called by Storage when its block goes back to the allocator. */
export function recordFree(s: RecordedStorage, size: number, addr: number): void {
  if (!rec) return;
  const a = live.get(s);
  live.delete(s);
  push({
    action: "free",
    time_us: Math.round((performance.now() - rec.t0) * 1000),
    device: s.device.name,
    storage_id: s.id,
    size,
    requested: s.nbytes,
    addr,
    op: opNameOf() ?? a?.op ?? null,
    node: node.get(),
    phase: currentPhase(),
    category: s.category,
    frames: rec.stacks ? userFrames() : [],
  });
}

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

/** The events so far (a copy), for plots and tests. */
export function _snapshot_events(): MemoryEvent[] {
  reclaim(); // the timeline ends with what PyTorch would show now, not with garbage still waiting
  return rec ? rec.events.map((e) => ({ ...e, frames: [...e.frames] })) : [];
}

export function _dump_snapshot(path: string, snapshot: unknown): void {
  platform.writeTextFile(path, JSON.stringify(snapshot));
}
