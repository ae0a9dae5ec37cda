// "Why is this still here?": live storages with who holds each one, and the leak finder, which names
// memory held only through autograd graphs that a long-lived object keeps alive (a loss pushed into a
// list, a module attribute holding an activation): the holder, the node chain and the bytes.

import type { Node } from "./node.ts";
import type { AutogradMeta } from "./meta.ts";
import { AccumulateGrad } from "./node.ts";
import { formatBytes } from "../memory/format-bytes.ts";
import { liveStorages, type HandleInfo, type Storage } from "../memory/storage.ts";
import { reclaim, takeReleases } from "../memory/lifetime.ts";

/** @public (part of the runtime's typed API) */
export interface Holder {
  kind: "tensor" | "view" | "saved" | "grad" | "accumulate_grad" | string;
  description: string;
}
export interface LiveStorage {
  storage_id: number;
  device: string;
  bytes: number;
  category: string;
  holders: Holder[];
}

type Handle = HandleInfo & { readonly meta: AutogradMeta };
const liveHandles = (s: Storage) => [...s.handles] as Handle[];

const shapeOf = (shape: readonly number[]) => `[${shape.join(", ")}]`;

function describe(h: Handle): Holder {
  if (h.role) return { kind: h.role.kind, description: h.role.description };
  const fn = h.meta.grad_fn ? `, grad_fn=<${h.meta.grad_fn.name()}>` : h.meta.requiresGradLeaf ? ", requires_grad=True" : "";
  if (h.baseShape) return { kind: "view", description: `view ${shapeOf(h.shape)} of a ${shapeOf(h.baseShape)} tensor${fn}` };
  return { kind: "tensor", description: `tensor ${shapeOf(h.shape)} ${h.dtype}${fn}` };
}

/** Every live storage on every device, largest first, with the handles that keep it. */
export function memory_snapshot(): LiveStorage[] {
  reclaim();
  return [...liveStorages]
    .map((s) => ({
      storage_id: s.id,
      device: s.device.name,
      bytes: s.block?.size ?? 0,
      category: s.category,
      holders: liveHandles(s).map(describe),
    }))
    .sort((a, b) => b.bytes - a.bytes);
}

/** @public (part of the runtime's typed API) */
export interface Leak {
  /** Where the graph's root tensor is kept, e.g. "bad_history[3]", or its description when not found. */
  holder: string;
  root: string;
  /** Node names from the root's grad_fn down to the nodes holding the memory. */
  chains: string[][];
  bytes: number;
}
export interface LeakReport {
  total_bytes: number;
  leaks: Leak[];
  toString(): string;
}

/** Paths (like `history[2]` or `model.cache`) to tensors inside the given named objects. */
function findPaths(containers: Record<string, unknown>): Map<object, string> {
  const paths = new Map<object, string>();
  const seen = new Set<unknown>();
  const walk = (v: unknown, path: string, depth: number) => {
    if (v === null || (typeof v !== "object" && typeof v !== "function") || seen.has(v) || depth > 5) return;
    seen.add(v);
    const t = v as { _meta?: unknown; storage?: unknown };
    if (t._meta && t.storage) {
      const meta = t._meta;
      if (!paths.has(meta)) paths.set(meta, path);
      return;
    }
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`, depth + 1));
    else if (v instanceof Map) for (const [k, x] of v) walk(x, `${path}.get(${JSON.stringify(k)})`, depth + 1);
    else for (const k of Object.keys(v)) walk((v as Record<string, unknown>)[k], `${path}.${k}`, depth + 1);
  };
  for (const [name, v] of Object.entries(containers)) walk(v, name, 0);
  return paths;
}

/**
 * Memory held only through autograd graphs, grouped by the live tensor whose grad_fn keeps each graph.
 * Pass the long-lived objects to search (`{ bad_history, model }`) to have holders named by path.
 * Handles nothing can reach any more are reclaimed first, so only what is really kept is reported.
 */
export function find_leaks(containers: Record<string, unknown> = {}): LeakReport {
  reclaim();
  // Storages no user handle holds: only saved variables, AccumulateGrad's leaves, and the .grads of
  // leaves that only an AccumulateGrad still holds.
  const all = [...liveStorages].map((s) => [s, liveHandles(s)] as const);
  const userMetas = new Set<unknown>();
  const roots: Handle[] = [];
  for (const [, hs] of all) {
    for (const h of hs) {
      if (h.role) continue;
      userMetas.add(h.meta);
      if (h.meta.grad_fn) roots.push(h);
    }
  }
  const graphHeld = (h: Handle) => {
    const kind = h.role?.kind;
    if (kind === "saved") return true;
    if (kind === "accumulate_grad") return !userMetas.has(h.meta);
    if (kind === "grad") return !userMetas.has(h.role!.of);
    return false;
  };
  const graphOnly = new Set<Storage>();
  for (const [s, hs] of all) if (hs.length > 0 && hs.every(graphHeld)) graphOnly.add(s);
  const paths = findPaths(containers);
  const claimed = new Set<Storage>();
  const leaks: Leak[] = [];
  const seenRoots = new Set<Node>();
  for (const root of roots) {
    const fn = root.meta.grad_fn!;
    if (seenRoots.has(fn)) continue;
    seenRoots.add(fn);
    const chains: string[][] = [];
    let bytes = 0;
    const visited = new Set<Node>();
    const claim = (s: Storage | null | undefined, chain: string[]) => {
      if (!s || !graphOnly.has(s) || claimed.has(s)) return;
      claimed.add(s);
      bytes += s.block?.size ?? 0;
      chains.push(chain);
    };
    const dfs = (n: Node, chain: string[]) => {
      if (visited.has(n)) return;
      visited.add(n);
      const here = [...chain, n.name()];
      for (const sv of n.savedVariables().values()) claim(sv.storage, here);
      if (n instanceof AccumulateGrad) {
        claim(n.variable.storage, here);
        claim(n.variable._meta.grad?.storage, [...here, ".grad"]);
      }
      for (const [next] of n.next_functions) if (next) dfs(next, here);
    };
    dfs(fn, []);
    if (bytes > 0) {
      const desc = `tensor ${shapeOf(root.shape)} with grad_fn=<${fn.name()}>`;
      leaks.push({ holder: paths.get(root.meta) ?? desc, root: desc, chains, bytes });
    }
  }
  leaks.sort((a, b) => b.bytes - a.bytes);
  const total = leaks.reduce((n, l) => n + l.bytes, 0);
  return {
    total_bytes: total,
    leaks,
    toString() {
      if (leaks.length === 0) return "No memory is held only through autograd graphs.";
      const lines = [`${formatBytes(total)} held only through autograd graphs kept alive by ${leaks.length} tensor(s):`];
      for (const l of leaks) {
        lines.push(`  ${l.holder}: ${formatBytes(l.bytes)} (${l.root})`);
        for (const c of l.chains.slice(0, 4)) lines.push(`    via ${c.join(" -> ")}`);
        if (l.chains.length > 4) lines.push(`    ... and ${l.chains.length - 4} more`);
      }
      return lines.join("\n");
    },
  };
}

export interface LifecycleReport {
  /** Memory let go since the last report, by why: dispose()/torch.del/`using`, the end of a
   *  torch.scope (or a module's forward), or collection of handles nothing referenced any more. */
  freed: Record<"dispose" | "scope" | "collected", { handles: number; bytes: number }>;
  /** What is still allocated, and who holds it. */
  held: LiveStorage[];
  toString(): string;
}

/**
 * GradLab only (not in PyTorch): what the runtime freed since the last call, and why, and what is
 * still held and by whom. Python frees a tensor at its last reference; JavaScript collects later, so
 * GradLab reclaims unreachable tensors before every figure: "collected" is memory your code dropped
 * the Python way, which PyTorch would have freed at the same point.
 */
export function lifecycle_report(): LifecycleReport {
  reclaim();
  const freed = takeReleases();
  const held = memory_snapshot();
  return {
    freed,
    held,
    toString() {
      const line = (what: string, r: { handles: number; bytes: number }) => `  ${what}: ${r.handles} tensor handle(s), ${formatBytes(r.bytes)} freed`;
      const heldBytes = held.reduce((n, s) => n + s.bytes, 0);
      return [
        "Since the last report:",
        line("dispose / torch.del / using", freed.dispose),
        line("end of torch.scope or forward", freed.scope),
        line("collected (no longer referenced)", freed.collected),
        `Still held: ${formatBytes(heldBytes)} in ${held.length} storage(s)`,
        ...held.slice(0, 8).map((s) => `  ${formatBytes(s.bytes)} (${s.category}): ${s.holders.map((h) => h.description).join("; ") || "no handle"}`),
        ...(held.length > 8 ? [`  ... and ${held.length - 8} more`] : []),
      ].join("\n");
    },
  };
}
