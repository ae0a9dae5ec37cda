// In-place ops under autograd: the checks PyTorch makes before writing, and the graph surgery after.
// A tensor written in place gets a new grad_fn whose edge points at its previous history ("rebase").
// When the tensor is a view, the write changes its base too: the base's grad_fn becomes CopySlices,
// which routes the gradient of the written region through the op's node (torch/csrc/autograd/functions/tensor.cpp).

import { RuntimeError } from "../../errors.ts";
import { Tensor, type TensorOrScalar } from "../../tensor.ts";
import { is_grad_enabled, is_inference_mode_enabled } from "../grad-mode.ts";
import { AutogradMeta, releaseNode, retainNode } from "../meta.ts";
import { Node, type FormulaNode, type Grads } from "../node.ts";
import { attach, edgeOf } from "../record.ts";
import { makeView } from "../../ops/views.ts";

/** Checks an in-place write to `self` is allowed; returns whether autograd must record it. */
export function checkInplace(self: Tensor, ...others: Array<TensorOrScalar | null | undefined>): boolean {
  self.check();
  if (self.is_inference() && !self._meta.inferenceDetached && !is_inference_mode_enabled()) {
    throw new RuntimeError(
      "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.",
    );
  }
  if (!is_grad_enabled()) return false;
  if (self.is_leaf && self._meta.requiresGradLeaf) {
    throw new RuntimeError(
      self._base
        ? "a view of a leaf Variable that requires grad is being used in an in-place operation."
        : "a leaf Variable that requires grad is being used in an in-place operation.",
    );
  }
  const base = self._base;
  if (base?.is_leaf && base.requires_grad) {
    throw new RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.");
  }
  return self.requires_grad || others.some((o) => o instanceof Tensor && o.requires_grad);
}

/** A handle over the same memory carrying `t`'s autograd history as it is now (before the rebase). */
function snapshot(t: Tensor): Tensor {
  const meta = new AutogradMeta();
  meta.grad_fn = t._meta.grad_fn; // its history before this write (the getter would regenerate a view's)
  meta.output_nr = t._output_nr;
  meta.requiresGradLeaf = t._meta.requiresGradLeaf;
  meta.accumulator = t._meta.accumulator;
  return new Tensor(t.storage, t.shape, t._strides, t._offset, t.dtype, t._versionCounter, t._base, meta);
}

/**
 * After an in-place op on `self`: `record(prev, out)` attaches the op's node to `out`, with `prev`
 * standing for self's old history. `extra` (a copy of the old value a formula needed) is released here.
 */
export function rebase(self: Tensor, record: (prev: Tensor, out: Tensor) => void, extra?: Tensor | null): void {
  const base = self._base;
  if (!base) {
    const prev = snapshot(self);
    try {
      record(prev, self);
    } finally {
      prev.dispose();
      extra?.dispose();
    }
    return;
  }
  // A view written in place: record the op on a throwaway output, and wrap it in CopySlices on the base.
  const prev = snapshot(self);
  const holder = self.detach();
  try {
    record(prev, holder);
    const fn = holder.grad_fn!;
    const copySlices = new CopySlices(base, self, fn);
    const baseMeta = base._meta;
    baseMeta.grad_fn = copySlices;
    baseMeta.output_nr = 0;
    // The view now sees its history through the base (PyTorch regenerates it as AsStridedBackward0).
    regenerateViewGradFn(self);
  } finally {
    holder.dispose();
    prev.dispose();
    extra?.dispose();
  }
}

/** Gives a view the grad_fn AsStridedBackward0, from its base's history as it is now. */
export function regenerateViewGradFn(view: Tensor): void {
  const base = view._base!;
  attach("AsStridedBackward0", [base], [view], asStridedFormula).consts = viewGeometry(base, view);
  view._meta.viewVersion = view._versionCounter.value;
}

/** The gradient of a view, put back in place in a zero gradient of its base. */
function asStridedFormula(n: FormulaNode, [g]: Grads): Grads {
  const geometry = n.consts as ReturnType<typeof viewGeometry>;
  const full = Tensor.empty(geometry.baseShape).zero_();
  makeView(full, g!.shape, geometry.strides, geometry.offset).copy_(g!);
  return [full];
}

function viewGeometry(base: Tensor, view: Tensor) {
  if (!base.is_contiguous()) throw new RuntimeError("in-place write to a view of a non-contiguous base is not supported by GradLab's autograd");
  return { baseShape: [...base.shape], strides: [...view._strides], offset: view._offset - base._offset };
}

class CopySlices extends Node {
  private readonly geometry: ReturnType<typeof viewGeometry>;
  private readonly viewShape: number[];
  constructor(
    base: Tensor,
    view: Tensor,
    private readonly fn: Node,
  ) {
    // Edge 0: the base's history before the write; the rest: the op's other inputs.
    super([edgeOf(base), ...fn.next_functions.slice(1)]);
    this.geometry = viewGeometry(base, view);
    this.viewShape = [...view.shape];
    retainNode(fn); // CopySlices owns the op's node: released when CopySlices itself is freed
  }
  name(): string {
    return "torch::autograd::CopySlices";
  }
  /** The base's gradient, with the written region replaced by what the op's node makes of it. */
  apply([g]: Grads): Grads {
    if (is_grad_enabled()) return this.applyDifferentiable(g!);
    const result = g!.clone();
    const region = makeView(result, this.viewShape, this.geometry.strides, this.geometry.offset);
    const res = this.fn.apply([region.clone()]);
    if (res[0]) region.copy_(res[0]);
    else region.zero_();
    return [result, ...res.slice(1)];
  }
  /**
   * The same under create_graph, recorded as PyTorch's CopySlices::apply records it: the gradient copied
   * into a new tensor (CopyBackwards), its region as a view (AsStridedBackward0) cloned for the op's node,
   * and the node's result copied back into the region in place (CopySlices), so that the written
   * region's gradient depends on g only through the op's node.
   */
  private applyDifferentiable(g: Tensor): Grads {
    const { baseShape, strides, offset } = this.geometry;
    const result = Tensor.empty(baseShape).copy_(g);
    const region = makeView(result, this.viewShape, strides, offset);
    if (result.requires_grad) regenerateViewGradFn(region);
    const res = this.fn.apply([region.clone()]);
    if (res[0]) region.copy_(res[0]);
    else region.zero_();
    return [result, ...res.slice(1)];
  }
  override release_saved_variables(): void {
    super.release_saved_variables();
    this.fn.release_saved_variables();
  }
  override freed(): void {
    releaseNode(this.fn);
  }
}
