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
  if (!t || !t.requires_grad) return [null, 0];
  const fn = t.grad_fn;
  return fn ? [fn, t._output_nr] : [t._accumulator(), 0];
}

export type Formula = (node: FormulaNode, grads: Grads) => Grads;

/**
 * Attaches a backward node named `name` to `outputs`. `inputs` are the forward inputs that get an
 * edge (null for non-tensor arguments that PyTorch still gives an edge slot). `save` records the
 * tensors and values the formula will read.
 */
export function attach(name: string, inputs: Array<Tensor | null | undefined>, outputs: Tensor[], formula: Formula, save?: (node: FormulaNode) => void): FormulaNode {
  const node = new FormulaNode(name, inputs.map(edgeOf), formula);
  node.numOutputs = outputs.length;
  save?.(node);
  outputs.forEach((o, i) => {
    o._meta.grad_fn = node;
    o._meta.output_nr = i;
    retag(o.storage, { phase: "forward", node: name });
  });
  return node;
}

/** Sums a broadcast gradient back to `shape` (the reverse of expand). */
export function sumTo(g: Tensor, shape: readonly number[]): Tensor {
  if (g.ndim === shape.length && g.shape.every((s, i) => s === shape[i])) return g;
  const lead = g.ndim - shape.length;
  const dims: number[] = [];
  for (let i = 0; i < g.ndim; i++) if (i < lead || (shape[i - lead] === 1 && g.shape[i] !== 1)) dims.push(i);
  const summed = dims.length ? g.sum(dims, { keepdim: true }) : g;
  return summed.reshape([...shape]);
}
