// The op table, part two: ops that are Tensor methods (or properties) with no `torch.*` function of the
// same name in PyTorch (x.view, x.T, x[...] as getitem/setitem, the in-place fills). Declared as in
// api/functions.ts; api/install.ts installs them.

import type { Scalar, Tensor, TensorOrScalar } from "../tensor.ts";
import type { DType } from "../dtype.ts";
import * as idx from "../ops/indexing.ts";
import * as vw from "../ops/views.ts";
import * as ew from "../ops/elementwise.ts";
import * as pw from "../autograd/functions/pointwise.ts";
import * as sh from "../autograd/functions/shape.ts";
import { NOT_DIFFERENTIABLE, getter, op } from "./op-def.ts";
import { isFalse } from "../kwargs.ts";

type Sizes = Array<number | number[]>;

/** x.view(...shape): a view with the same elements (ViewBackward0); refuses where the strides do not allow it. */
export const view = op({
  impl: (x: Tensor, ...shape: Sizes): Tensor => sh.view(x, vw.flatShape(shape)),
  grad: ["ViewBackward0"],
  gradgrad: ["ReshapeAliasBackward0"],
  saves: ["self_sym_sizes"],
});
/** x.view_as(other): x.view(other.shape). */
export const view_as = op({
  impl: (x: Tensor, other: Tensor): Tensor => sh.view(x, other.shape),
  grad: ["ViewBackward0"],
  gradgrad: ["ReshapeAliasBackward0"],
  saves: ["self_sym_sizes"],
});
/** x.expand(...sizes): a broadcast view, stride 0 on new dims (ExpandBackward0 sums the gradient back). */
export const expand = op({
  impl: (x: Tensor, ...sizes: Sizes): Tensor => sh.expand(x, vw.flatShape(sizes)),
  grad: ["ExpandBackward0"],
  gradgrad: ["SumBackward1", "ViewBackward0"],
  saves: ["self_sym_sizes"],
});
export const expand_as = op({
  impl: (x: Tensor, other: Tensor): Tensor => sh.expand(x, other.shape),
  grad: ["ExpandBackward0"],
  gradgrad: ["SumBackward1", "ViewBackward0"],
  saves: ["self_sym_sizes"],
});
/** x.T: all dims reversed (PermuteBackward0). */
export const T = getter({
  impl: (x: Tensor): Tensor =>
    sh.permute(
      x,
      x.shape.map((_, i) => x.ndim - 1 - i),
    ),
  grad: ["PermuteBackward0"],
  gradgrad: ["PermuteBackward0"],
  saves: ["dims"],
});
/** x.mT: the last two dims swapped (TransposeBackward0). */
export const mT = getter({
  impl: (x: Tensor): Tensor => sh.transpose(x, -2, -1),
  grad: ["TransposeBackward0"],
  gradgrad: ["TransposeBackward0"],
  saves: ["dim0", "dim1"],
});
/** x.slice(dim, start, end, step): Python's x[:, a:b:c] along one dim (SliceBackward0). */
export const slice = op({
  impl: (x: Tensor, dim: number, start?: number, end?: number, step = 1): Tensor => sh.slice(x, dim, start, end, step),
  grad: ["SliceBackward0"],
  gradgrad: ["SliceBackwardBackward0"],
  saves: ["dim", "start", "end", "step", "self_sym_sizes"],
});
/** Python's `x[...]`, from a NumPy-style string: `x.getitem(":, 1:3")`, `x.getitem("0, ..., None")`. */
export const getitem = op({
  impl: (x: Tensor, index: string | number): Tensor => idx.getitem(x, index, sh),
  grad: ["SelectBackward0", "SliceBackward0", "UnsqueezeBackward0", "AliasBackward0"],
  gradgrad: ["SliceBackwardBackward0", "SelectBackwardBackward0", "SqueezeBackward1"],
  saves: ["dim", "index", "start", "end", "step", "self_sizes", "self_sym_sizes"],
});
/** Python's `x[...] = value` (in place: bumps the version counter; a view of a graph tensor gets CopySlices). */
export const setitem = op({
  impl: <T extends Tensor>(x: T, index: string | number, value: TensorOrScalar): T => {
    idx.setitem(x, index, value, { ...sh, fillWrapped: pw.fillTensorInplace });
    return x;
  },
  // A view of x is written (CopySlices); x itself for "..." or a slice covering its whole dim
  // (FillBackward3 for a number or a 0-dim value, CopyBackwards for a tensor of x's shape).
  grad: ["torch::autograd::CopySlices", "FillBackward3", "torch::autograd::CopyBackwards"],
  gradgrad: ["torch::autograd::CopySlices", "CloneBackward0", "zeros", "SumBackward0"],
  saves: [],
});
/** x.contiguous(): x itself (another handle) when already contiguous, else a copy (CloneBackward0). */
export const contiguous = op({
  impl: (x: Tensor): Tensor => (x.check().is_contiguous() ? x._alias() : sh.clone(x)),
  grad: ["CloneBackward0"],
  gradgrad: [],
  saves: [],
});
/** x.detach(): a new tensor sharing storage and version counter, outside the graph (requires_grad false). */
export const detach = op({ impl: (x: Tensor): Tensor => vw.makeView(x, x.shape, x._strides, x._offset, false), grad: NOT_DIFFERENTIABLE });
/**
 * x.to(dtype): x itself (another handle) for the same dtype, else a converted copy. Only float32 tensors
 * require grad in GradLab, so a conversion records nothing (PyTorch's ToCopyBackward0 needs float64).
 */
export const to = op({
  positional: ["dtype"],
  kwargsAtDefault: { non_blocking: isFalse, copy: isFalse },
  impl: (x: Tensor, dtype: DType): Tensor => (dtype === x.dtype ? x._alias() : ew.cast(x, dtype)),
  grad: [],
  gradgrad: [],
});
export const float = op({ impl: (x: Tensor): Tensor => to(x, "float32"), grad: [], gradgrad: [] });
export const int = op({ impl: (x: Tensor): Tensor => to(x, "int32"), grad: NOT_DIFFERENTIABLE });
export const bool = op({ impl: (x: Tensor): Tensor => to(x, "bool"), grad: NOT_DIFFERENTIABLE });
/** x.gelu({approximate}): GeluBackward0 saves the input (torch.nn.functional.gelu as a method). */
export const gelu = op({
  kwargs: ["approximate"],
  impl: (x: Tensor, opts?: { approximate?: "none" | "tanh" }): Tensor => pw.gelu(x, opts?.approximate),
  grad: ["GeluBackward0"],
  gradgrad: ["GeluBackwardBackward0"],
  saves: ["self", "approximate"],
});
/** x.zero_(): fills with 0 in place (ZeroBackward0: the gradient to the old values is 0). */
export const zero_ = op({
  impl: <T extends Tensor>(x: T): T => pw.fillInplace(x, 0, "ZeroBackward0"),
  grad: ["ZeroBackward0"],
  gradgrad: ["zeros"],
  saves: [],
});
/** x.fill_(v): fills with v in place (FillBackward2). */
export const fill_ = op({
  impl: <T extends Tensor>(x: T, value: Scalar | Tensor): T =>
    typeof value === "object" ? pw.fillTensorInplace(x, value) : pw.fillInplace(x, value, "FillBackward2"),
  grad: ["FillBackward2", "FillBackward3"],
  gradgrad: ["zeros", "SumBackward0"],
  saves: [],
});
/** x.copy_(src): copies src (broadcast, cast) into x in place (CopyBackwards). */
export const copy_ = op({
  impl: <T extends Tensor>(x: T, src: Tensor): T => pw.copyInplace(x, src),
  grad: ["torch::autograd::CopyBackwards"],
  gradgrad: ["zeros"],
  saves: [],
});
