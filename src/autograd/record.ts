// Recording a differentiable op: after the forward kernel ran, create its backward node (edges to the
// inputs' grad_fns or AccumulateGrads), save what the formula needs, and set the outputs' grad_fn.

import { Tensor, type TensorOrScalar } from "../tensor.ts";
import { is_grad_enabled } from "./grad-mode.ts";
import { FormulaNode, type Edge, type Grads } from "./node.ts";
import { retag } from "../memory/history.ts";

export function needsGrad(...inputs: Array<TensorOrScalar | null | undefined>): boolean {
  if (!is_grad_enabled()) return false;
  for (const t of inputs) if (t instanceof Tensor && t.requires_grad) return true;
  return false;
}

export function edgeOf(t: Tensor | null | undefined): Edge {
  if (!t?.requires_grad) return [null, 0];
  const fn = t.grad_fn;
  return fn ? [fn, t._output_nr] : [t._accumulator(), 0];
}

export type Formula = (node: FormulaNode, grads: Grads) => Grads;

/** An extra output of the op saved for backward (layer_norm's mean and rstd): `_saved_result<nr>`. */
export class SavedOutput {
  constructor(
    readonly tensor: Tensor,
    readonly nr: number,
  ) {}
}

/**
 * A tensor saved as it was at an earlier version: the operand of an in-place op that is the tensor
 * being written (x.mul_(x)). Its backward then raises PyTorch's "modified by an inplace operation".
 */
export class SavedAt {
  constructor(
    readonly tensor: Tensor,
    readonly version: number,
  ) {}
}

/**
 * What a node saves, as `_saved_<name>`: a Tensor becomes a SavedVariable (saved as the op's output
 * when it is one of `outputs`), a SavedOutput an output saved by number, anything else a plain value.
 * Declared as data, not as a callback, on purpose: see attach.
 */
export type Saves = Record<string, unknown>;

/**
 * Attaches a backward node named `name` to `outputs`. `inputs` are the forward inputs that get an
 * edge (null for non-tensor arguments that PyTorch still gives an edge slot).
 *
 * The node keeps `formula` for as long as the graph lives, and a closure keeps the whole scope it was
 * created in. So a formula reads tensors only through the node (`n.unpack(name)`), and the function
 * that creates it must not hold any tensor handle in a closure (V8 puts every captured variable of a
 * function in one context that all its closures share): a handle reached from a graph would keep its
 * memory alive after PyTorch frees it, and could never be collected (test/lifecycle.test.ts checks
 * every op).
 */
/**
 * For a saved tensor, the inputs whose gradients its formula reads it for (derivatives.yaml's formulas
 * say which): PyTorch saves it only when one of them requires grad, so `x.mul(mask)` with a constant
 * mask keeps only the mask, and `_saved_self` is None. A name not listed is always saved.
 */
export type SavedFor = Readonly<Record<string, readonly number[]>>;

/**
 * Watchers of recorded ops (selective checkpointing keeps every output of the ops its policy names,
 * as PyTorch's caching dispatch mode does): the innermost is told each op's node name and all its
 * outputs, the extra ones saved by number (layer_norm's mean and rstd, dropout's mask) included.
 */
type RecordWatcher = (nodeName: string, outputs: Tensor[]) => void;
const watchers: RecordWatcher[] = [];
export function watchRecords<T>(watcher: RecordWatcher, fn: () => T): T {
  watchers.push(watcher);
  try {
    return fn();
  } finally {
    watchers.splice(watchers.lastIndexOf(watcher), 1);
  }
}

export function attach(
  name: string,
  inputs: Array<Tensor | null | undefined>,
  outputs: Array<Tensor | null>,
  formula: Formula,
  saves: Saves = {},
  savedFor: SavedFor = {},
): FormulaNode {
  const node = new FormulaNode(name, inputs.map(edgeOf), formula);
  node.numOutputs = outputs.length;
  for (const [key, v] of Object.entries(saves)) {
    if (v === undefined) continue;
    const users = savedFor[key];
    if (users && (v instanceof Tensor || v instanceof SavedAt) && !users.some((i) => node.needs(i))) {
      node.save(key, null);
      continue;
    }
    if (v instanceof Tensor) {
      const nr = outputs.indexOf(v);
      node.save(key, v, nr >= 0 ? nr : undefined);
    } else if (v instanceof SavedOutput) node.save(key, v.tensor, v.nr);
    else if (v instanceof SavedAt) node.save(key, v.tensor, undefined, v.version);
    else node.saveValue(key, v);
  }
  outputs.forEach((o, i) => {
    if (!o) return; // an output the op did not compute (native_layer_norm_backward's output_mask)
    o._meta.grad_fn = node;
    o._meta.output_nr = i;
    retag(o.storage, { phase: "forward", node: name });
  });
  const watcher = watchers[watchers.length - 1];
  if (watcher)
    watcher(name, [...outputs.filter((o): o is Tensor => !!o), ...Object.values(saves).flatMap((v) => (v instanceof SavedOutput ? [v.tensor] : []))]);
  return node;
}

/** Sums a broadcast gradient back to `shape` (the reverse of expand). */
export function sumTo(g: Tensor, shape: readonly number[]): Tensor {
  if (g.ndim === shape.length && g.shape.every((s, i) => s === shape[i])) return g;
  const lead = g.ndim - shape.length;
  const dims: number[] = [];
  for (let i = 0; i < g.ndim; i++) if (i < lead || (shape[i - lead] === 1 && g.shape[i] !== 1)) dims.push(i);
  // As ATen's sum_to: one sum keeping dims, then a view without the leading ones (ViewBackward0 under create_graph)
  const summed = dims.length ? g.sum(dims, { keepdim: true }) : g;
  return lead > 0 ? summed.view([...shape]) : summed;
}
