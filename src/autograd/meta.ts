// A tensor's autograd identity (PyTorch's AutogradMeta on the TensorImpl), shared by every handle
// that is "the same tensor" (aliases made by contiguous() of a contiguous tensor, saved variables,
// `.to(same dtype)`), not by views, which are tensors of their own.
//
// Graph lifetime is refcounted, as PyTorch's shared_ptr<Node> is: a node lives while a tensor's
// grad_fn or another node's edge points at it; at zero it releases its saved tensors and its edges.
// So dropping the last handle of `loss` frees the activations its graph saved, deterministically.

import type { Tensor } from "../tensor.ts";
import { noteCascade } from "../memory/lifetime.ts";
import { heldByUser, keep } from "../memory/ownership.ts";

/** What refcounting needs of a graph node (autograd/node.ts's Node). */
interface GraphNode {
  readonly mayHoldUserTensors: boolean;
  release_saved_variables(): void;
  freed(): void;
  readonly next_functions: ReadonlyArray<readonly [GraphNode | null, number]>;
}

/**
 * The node classes, declared into this module by autograd/node.ts (module augmentation), so that the
 * tensor's identity names its grad_fn's type without importing the graph: the only import cycle left
 * is the type-only tensor <-> meta pair.
 * @public (the augmentation's target)
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by autograd/node.ts.
export interface GraphTypes {}
type Node = GraphTypes extends { node: infer N } ? N : GraphNode;
type AccumulateGrad = GraphTypes extends { accumulateGrad: infer A } ? A : GraphNode;

const nodeRefs = new WeakMap<GraphNode, number>();

export function retainNode(n: GraphNode | null): void {
  if (n) nodeRefs.set(n, (nodeRefs.get(n) ?? 0) + 1);
}

export function releaseNode(n: GraphNode | null): void {
  if (!n) return;
  const r = (nodeRefs.get(n) ?? 0) - 1;
  nodeRefs.set(n, r);
  if (r > 0) return;
  // A custom Function's ctx or a packed saved tensor can hold the user's tensors: once this node is
  // gone they may be unreachable, which the next collection round finds (memory/lifetime.ts).
  if (n.mayHoldUserTensors) noteCascade();
  n.release_saved_variables();
  n.freed();
  for (const [next] of n.next_functions) releaseNode(next);
}

export class AutogradMeta {
  /** Leaf flag set by requires_grad=True / requires_grad_(). */
  requiresGradLeaf = false;
  private fn: Node | null = null;
  output_nr = 0;
  /** The gradient (set with replaceGrad). */
  grad: Tensor | null = null;
  retains_grad = false;
  /** The leaf's AccumulateGrad while some graph uses it (PyTorch's weak grad_accumulator_). */
  accumulator: AccumulateGrad | null = null;
  /** A leaf's tensor hooks live here, not on its AccumulateGrad, which comes and goes with graphs.
   *  Made on first use: most tensors never have hooks, and two arrays per tensor were two allocations
   *  per op. Once made, each array stays the same (an AccumulateGrad holds leafPreHooks itself). */
  private preHooks: Array<(g: Tensor) => Tensor | void> | null = null;
  private postHooks: Array<(t: Tensor) => void> | null = null;
  get leafPreHooks(): Array<(g: Tensor) => Tensor | void> {
    return (this.preHooks ??= []);
  }
  get postAccumulateHooks(): Array<(t: Tensor) => void> {
    return (this.postHooks ??= []);
  }
  /** Created under inference_mode, or a view of such a tensor: refused by autograd and by in-place ops outside it. */
  inference = false;
  /** detach() of an inference tensor made outside inference_mode: torch 1.13 lets it be written in place. */
  inferenceDetached = false;
  /** Handles sharing this identity; when the last goes, its grad and graph reference go too. */
  handles = 0;
  /** For a view: the version of its base when its grad_fn was last made (PyTorch's attr_version). */
  viewVersion: number | null = null;

  get grad_fn(): Node | null {
    return this.fn;
  }
  set grad_fn(n: Node | null) {
    if (n === this.fn) return;
    retainNode(n);
    const old = this.fn;
    this.fn = n;
    releaseNode(old);
  }

  /** The last handle was dropped: nothing can reach the gradient or the graph through this tensor. */
  drop(): void {
    this.grad_fn = null;
    this.replaceGrad(null);
  }

  /**
   * Replaces the gradient (zero_grad, `.grad = g`, an out-of-place accumulation, the tensor's last handle
   * going). The old one is disposed, unless a cell's code took it (`grads.push(w.grad)`, `const g =
   * w.grad`): then, as in PyTorch, it lives while they hold it, and goes with their last reference (the
   * collector; noteCascade: inside a reclamation this may be what let go of it). Plain scripts have no
   * transform to say so: there `const g = w.grad; w = w.detach()` leaves g disposed, a known difference.
   */
  replaceGrad(g: Tensor | null): void {
    const old = this.grad;
    // the tensor keeps its gradient: a cell's function that returns it (`return w.grad`) hands over no
    // ownership (memory/ownership.ts), or rebinding the caller's variable disposed w.grad
    this.grad = g && keep(g);
    if (!old || old === g) return;
    if (heldByUser(old)) noteCascade();
    else old.dispose();
  }
}
