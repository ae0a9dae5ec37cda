// The backward engine, as torch/csrc/autograd/engine.cpp does it on one device thread:
//   1. entry check of the roots and their gradients;
//   2. dependency counts over the reachable graph (compute_dependencies);
//   3. a ready queue ordered by sequence_nr (AccumulateGrad first, then the most recent node);
//   4. each node's apply on the sum of the gradients that reached it (its input buffer);
//   5. release of its saved variables right after apply, unless retain_graph;
//   6. gradients passed along next_functions, dependencies decremented, nodes at zero made ready.
// Every gradient tensor in flight is owned by the engine and disposed once consumed, so
// memory_allocated during backward is exact. A tracer (autograd.trace) may watch each step.

import { RuntimeError } from "../errors.ts";
import { totalAllocated } from "../memory/devices.ts";
import { withNode, withPhase } from "../memory/history.ts";
import { withCategory } from "../memory/category.ts";
import { scope } from "../memory/lifetime.ts";
import { mark, settleHandedOut } from "../memory/ownership.ts";
import { Tensor } from "../tensor.ts";
import { enable_grad, no_grad } from "./grad-mode.ts";
import { AccumulateGrad, isAnomalyEnabled, isRuntimeHook, type Node, type Grads } from "./node.ts";
import { adopt, handOut } from "./hand-out.ts";
import { edgeOf } from "./record.ts";
import { releaseNode, retainNode } from "./meta.ts";

/**
 * One step of the engine, as autograd.trace returns it: a union on `step`, so that a notebook's
 * `events.filter((s) => s.step === "release")` gives events whose `detail.bytes_freed` is a number
 * (TypeScript infers the filter's type predicate).
 */
// Every kind names `node` and `sequence_nr` (undefined where it has none), so that code reading the
// events a filter picked (`steps.filter((s) => s.step === "apply" && …).map((s) => s.sequence_nr)`, which
// TypeScript does not narrow) type-checks, as the same Python reads the same field.
export type TraceEvent =
  | { step: "entry"; node?: undefined; sequence_nr?: undefined; detail: { roots: string[]; retain_graph?: boolean; create_graph?: boolean } }
  | { step: "dependencies"; node?: undefined; sequence_nr?: undefined; detail: { counts: Array<{ node: string; sequence_nr: number; dependencies: number }> } }
  | { step: "ready"; node: string; sequence_nr: number; detail: { queue: string[] } }
  | { step: "apply"; node: string; sequence_nr: number; detail: { grads_in: Array<string | null> } }
  | { step: "pass"; node: string; sequence_nr?: undefined; detail: { to: string; input_nr: number; shape: string } }
  | { step: "release"; node: string; sequence_nr?: undefined; detail: { saved: string[]; bytes_freed: number } };
/** Watches the engine. Besides the event (names only, what autograd.trace returns), it gets the node
 *  the event is about and, for a pass, the node the gradient goes to: a drawing of the graph needs to
 *  know which of two nodes of the same name ran (torch.viz.stepper). */
export type Tracer = (e: TraceEvent, nodes: { node?: Node; to?: Node }) => void;
let tracer: Tracer | null = null;
/** Installs a tracer (null: none) and returns the one it replaces. */
export function setTracer(t: Tracer | null): Tracer | null {
  const prev = tracer;
  tracer = t;
  return prev;
}

export interface BackwardOptions {
  retain_graph: boolean;
  create_graph: boolean;
  inputs?: Tensor[];
  /** true: leaves accumulate into .grad (backward); false: gradients of `inputs` are returned (grad). */
  accumulate: boolean;
  allow_unused?: boolean;
}

const sizeStr = (s: readonly number[]) => `[${s.join(", ")}]`;

function rootGradients(roots: Tensor[], grads: Array<Tensor | null>, opts: BackwardOptions): Tensor[] {
  return roots.map((r, i) => {
    r.check();
    if (!r.requires_grad) throw new RuntimeError(`element ${i} of tensors does not require grad and does not have a grad_fn`);
    const g = grads[i];
    if (g) {
      g.check();
      if (g.ndim !== r.ndim || g.shape.some((s, k) => s !== r.shape[k])) {
        throw new RuntimeError(
          `Mismatch in shape: grad_output[${i}] has a shape of torch.Size(${sizeStr(g.shape)}) and output[${i}] has a shape of torch.Size(${sizeStr(r.shape)}).`,
        );
      }
      return opts.create_graph ? g._alias() : g.detach();
    }
    if (r.numel() !== 1) throw new RuntimeError("grad can be implicitly created only for scalar outputs");
    return no_grad(() => Tensor.empty(r.shape, r.dtype).fill_(1));
  });
}

/** Nodes reachable from the roots, with how many edges from reachable nodes point at each. */
function dependencies(roots: Node[]): Map<Node, number> {
  const deps = new Map<Node, number>();
  const seen = new Set<Node>(roots);
  const stack = [...roots];
  while (stack.length) {
    const n = stack.pop()!;
    for (const [next] of n.next_functions) {
      if (!next) continue;
      deps.set(next, (deps.get(next) ?? 0) + 1);
      if (!seen.has(next)) {
        seen.add(next);
        stack.push(next);
      }
    }
  }
  for (const r of roots) if (!deps.has(r)) deps.set(r, 0);
  return deps;
}

/** Nodes from which one of `targets` can be reached (only these need to run when inputs= is given). */
function neededFor(deps: Map<Node, number>, targets: Set<Node>): Set<Node> {
  const memo = new Map<Node, boolean>(); // the graph is a DAG: each node is decided once
  const reaches = (n: Node): boolean => {
    const known = memo.get(n);
    if (known !== undefined) return known;
    let hit = targets.has(n);
    for (const [next] of n.next_functions) if (next && reaches(next)) hit = true;
    memo.set(n, hit);
    return hit;
  };
  const needed = new Set<Node>();
  for (const n of deps.keys()) if (reaches(n)) needed.add(n);
  return needed;
}

function addInto(buffer: Grads, i: number, g: Tensor): void {
  const old = buffer[i];
  if (!old) {
    buffer[i] = g;
    return;
  }
  buffer[i] = old.add(g);
  old.dispose();
  g.dispose();
}

export function run_backward(roots: Tensor[], grads: Array<Tensor | null>, opts: BackwardOptions): Grads {
  return withPhase("backward", () => withCategory("autograd_temporary", () => backwardPass(roots, grads, opts)));
}

/**
 * Holds the roots' and inputs' nodes for the duration of the pass: a leaf's AccumulateGrad made just for
 * it (x.backward() on a leaf, autograd.grad(..., inputs=[leaf])) is owned by no graph, and is freed
 * with its hold on the leaf when the pass ends (it used to keep the leaf and its .grad forever).
 */
function backwardPass(roots: Tensor[], grads: Array<Tensor | null>, opts: BackwardOptions): Grads {
  const held: Node[] = [];
  for (const t of [...roots, ...(opts.inputs ?? [])]) {
    const [n] = t.requires_grad ? edgeOf(t) : [null];
    if (n) {
      retainNode(n);
      held.push(n);
    }
  }
  try {
    return pass(roots, grads, opts);
  } finally {
    for (const n of held) releaseNode(n);
  }
}

function pass(roots: Tensor[], grads: Array<Tensor | null>, opts: BackwardOptions): Grads {
  const rootGrads = rootGradients(roots, grads, opts);
  tracer?.({ step: "entry", detail: { roots: roots.map((r) => sizeStr(r.shape)), retain_graph: opts.retain_graph, create_graph: opts.create_graph } }, {});

  // Where gradients are captured instead of (or as well as) flowing on: the requested inputs.
  const captures = new Map<string, number>(); // `${node address}:${input_nr}` -> index in inputs
  const captureKey = (n: Node, nr: number) => `${n.address}:${nr}`;
  const inputs = opts.inputs ?? [];
  inputs.forEach((t, i) => {
    if (!t.requires_grad) throw new RuntimeError(`One of the differentiated Tensors does not require grad`);
    const [n, nr] = edgeOf(t);
    captures.set(captureKey(n!, nr), i);
  });
  const captured: Grads = inputs.map(() => null);

  const buffers = new Map<Node, Grads>();
  const rootNodes: Node[] = [];
  roots.forEach((r, i) => {
    const [n, nr] = edgeOf(r);
    if (!buffers.has(n!)) {
      buffers.set(n!, new Array(n!.numOutputs).fill(null));
      rootNodes.push(n!);
    }
    // The engine works on another handle: the root gradient itself lives until backward returns, as
    // torch's grad_tensors list (the implicit ones_like of a scalar loss) does, in its peaks too.
    addInto(buffers.get(n!)!, nr, rootGrads[i]._alias());
  });
  const deps = dependencies(rootNodes);
  const targets = new Set<Node>([...captures.keys()].map((k) => [...deps.keys()].find((n) => k.startsWith(`${n.address}:`))!).filter(Boolean));
  const needed = opts.inputs ? neededFor(deps, targets) : null;
  tracer?.({ step: "dependencies", detail: { counts: [...deps].map(([n, c]) => ({ node: n.name(), sequence_nr: n.sequence_nr(), dependencies: c })) } }, {});

  const ready: Node[] = [];
  const push = (n: Node) => {
    // Highest sequence_nr first: later-created nodes run before earlier ones (PyTorch's ReadyQueue).
    let i = ready.length;
    while (i > 0 && ready[i - 1].sequence_nr() > n.sequence_nr()) i--;
    ready.splice(i, 0, n);
  };
  for (const n of rootNodes) if (deps.get(n) === 0) push(n);

  try {
    while (ready.length) {
      const node = ready.pop()!;
      tracer?.({ step: "ready", node: node.name(), sequence_nr: node.sequence_nr(), detail: { queue: [...ready].reverse().map((n) => n.name()) } }, { node });
      const buffer = buffers.get(node) ?? new Array(node.numOutputs).fill(null);
      buffers.delete(node);
      const outs = runNode(node, buffer, opts, captures, captured, captureKey, needed);
      node.next_functions.forEach(([next, nr], i) => {
        const g = outs[i] ?? null;
        if (!next) {
          g?.dispose();
          return;
        }
        if (g) {
          if (!buffers.has(next)) buffers.set(next, new Array(next.numOutputs).fill(null));
          addInto(buffers.get(next)!, nr, g);
          tracer?.({ step: "pass", node: node.name(), detail: { to: next.name(), input_nr: nr, shape: sizeStr(g.shape) } }, { node, to: next });
        }
        const left = deps.get(next)! - 1;
        deps.set(next, left);
        if (left === 0) push(next);
      });
    }
  } finally {
    for (const b of buffers.values()) for (const g of b) g?.dispose();
    for (const g of rootGrads) g.dispose();
  }
  if (!opts.accumulate) {
    captured.forEach((g, i) => {
      if (!g && !opts.allow_unused) {
        throw new RuntimeError(
          "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.",
        );
      }
      void i;
    });
  }
  return captured;
}

/**
 * The hooks registered when a step starts, as PyTorch iterates a copy of its hook dict: a hook that
 * removes itself (`handle.remove()` inside it) must not make the loop skip the next one.
 */
const snapshot = <T>(hooks: T[]): T[] => (hooks.length === 0 ? hooks : hooks.slice());

/**
 * A hook on a node (grad_fn.register_prehook / register_hook): `call` runs it on `gs` and its result, if
 * any, replaces them. As for tensor hooks, a user's hook is given handles of its own (it may keep them),
 * and what it returns becomes the engine's through aliases; the engine's own handles of `gs` then go.
 * A hook the runtime registered (a module's full backward hooks) gets and returns the engine's handles.
 */
function callNodeHook(h: object, gs: Grads, call: (given: Grads) => Grads | void, since = mark()): Grads {
  if (isRuntimeHook(h)) return call(gs) || gs;
  const given = handOut(gs);
  const r = call(given);
  const mine = r ? adopt(r) : gs;
  if (r) for (const g of gs) g?.dispose();
  settleHandedOut([h], r ? [...given, ...r] : given, since);
  return mine;
}

function runNode(
  node: Node,
  buffer: Grads,
  opts: BackwardOptions,
  captures: Map<string, number>,
  captured: Grads,
  captureKey: (n: Node, nr: number) => string,
  needed: Set<Node> | null,
): Grads {
  // Tensor hooks (register_hook, retain_grad) see and may replace each incoming gradient. A user's hook
  // gets a handle of its own, which it may keep (PyTorch's `grads.append(g)`); the engine's goes when
  // used. What it returns instead becomes the engine's through an alias: the hook may hold it too.
  for (const [nr, hooks] of node.tensorPreHooks) {
    for (const h of snapshot(hooks)) {
      const g = buffer[nr];
      if (!g) continue;
      const since = mark();
      const given = isRuntimeHook(h) ? g : handOut([g])[0]!;
      const r = h(given);
      const replaced = r instanceof Tensor && r !== given && r !== g;
      if (replaced) {
        g.dispose();
        buffer[nr] = given === g ? r : adopt([r])[0]!;
      }
      if (given !== g) settleHandedOut([h], replaced ? [given, r] : [given], since);
    }
  }
  buffer.forEach((g, nr) => {
    const idx = captures.get(captureKey(node, nr));
    if (idx !== undefined && g) captured[idx] = captured[idx] ? captured[idx]!.add(g) : g._alias();
  });
  const skip = (needed && !needed.has(node)) || (node instanceof AccumulateGrad && (!opts.accumulate || (opts.inputs && !captures.has(captureKey(node, 0)))));
  if (skip || buffer.every((g) => g === null)) {
    for (const g of buffer) g?.dispose();
    return [];
  }
  for (const h of snapshot(node.preHooks)) buffer = callNodeHook(h, buffer, (given) => h(given));
  tracer?.(
    { step: "apply", node: node.name(), sequence_nr: node.sequence_nr(), detail: { grads_in: buffer.map((g) => (g ? sizeStr(g.shape) : null)) } },
    { node },
  );
  let outs: Grads;
  try {
    // Formula temporaries die with the scope; AccumulateGrad's stored .grad must outlive it.
    const compute = () => withNode(node.name(), () => (node instanceof AccumulateGrad ? node.apply(buffer) : scope(() => node.apply(buffer))));
    outs = opts.create_graph ? enable_grad(compute) : no_grad(compute);
  } catch (e) {
    for (const g of buffer) g?.dispose();
    if (isAnomalyEnabled() && e instanceof Error && !(e as { __anomaly?: boolean }).__anomaly) {
      // As torch 1.13's anomaly mode: the error keeps its own text, and the forward traceback comes
      // with it (torch prints it as a warning above the error): on the error's stack, which Node prints
      // for an uncaught error, and as `forward_traceback`, which the kernel shows with the cell's lines.
      (e as { __anomaly?: boolean }).__anomaly = true;
      const forward = `Error detected in ${node.name()}. Traceback of forward call that caused the error:\n${node.metadata.traceback_ ?? ""}`;
      Object.defineProperty(e, "forward_traceback", { value: forward, enumerable: false, configurable: true });
      e.stack = `${e.stack ?? ""}\n\n${forward}`;
    }
    throw e;
  }
  // The engine owns every gradient: one handle per edge, inputs it no longer needs disposed.
  const seen = new Set<Tensor>();
  outs = outs.map((g) => {
    if (!g) return null;
    if (seen.has(g) || buffer.includes(g)) return g._alias();
    seen.add(g);
    return g;
  });
  for (const h of snapshot(node.postHooks)) {
    const since = mark();
    const gradOutputs = isRuntimeHook(h) ? buffer : handOut(buffer);
    outs = callNodeHook(h, outs, (given) => h(given, gradOutputs), since);
    if (gradOutputs !== buffer) settleHandedOut([h], gradOutputs, since);
  }
  for (const g of buffer) g?.dispose();
  if (!opts.retain_graph) {
    const before = totalAllocated();
    const names = [...node.savedVariables()].filter(([, sv]) => !sv.isReleased).map(([k]) => `_saved_${k}`);
    node.release_saved_variables();
    tracer?.({ step: "release", node: node.name(), detail: { saved: names, bytes_freed: before - totalAllocated() } }, { node });
  }
  return outs;
}
