// The op table, part one: every op that is both a `torch.*` function and a Tensor method, declared once
// with its forward kernel, whether and how it is differentiable, what its node saves and its PyTorch
// node name. index.ts re-exports this module as the functional forms; api/install.ts installs the
// methods on Tensor from it. Pointwise ops carry their formulas here (as derivatives.yaml does); ops
// whose graph depends on their arguments (matmul, views, reductions) name an implementation in
// autograd/functions/ and declare the nodes it may record, which test/op-table.test.ts checks.
//
// Adding an op: an entry here (or in api/methods.ts for a method-only op), its kernel code in
// ops/kernel-codes.ts with one `case` in the .wgsl file when it needs a new kernel, and a test.

import type { Tensor, TensorOrScalar, DimArg, ReduceOpts } from "../tensor.ts";
import * as ew from "../ops/elementwise.ts";
import * as red from "../ops/reduce.ts";
import * as vw from "../ops/views.ts";
import * as pw from "../autograd/functions/pointwise.ts";
import { binaryOp, savedOther, unaryOp, type BinaryConsts } from "../autograd/functions/pointwise.ts";
import * as rd from "../autograd/functions/reductions.ts";
import * as al from "../autograd/functions/linalg.ts";
import * as sh from "../autograd/functions/shape.ts";
import { sumTo } from "../autograd/record.ts";
import type { FormulaNode, Grads } from "../autograd/node.ts";
import { NOT_DIFFERENTIABLE, op } from "./op-def.ts";
import { scalar_tensor } from "../ops/creation.ts";
import { scalarType } from "../dtype.ts";
import { isNone } from "../kwargs.ts";

// ---- pointwise, one input: kernel, node, what it saves, dL/dx ----

const NEG = unaryOp({ kernel: "neg", node: "NegBackward0", saves: null, grad: (g) => g.neg() });
const ABS = unaryOp({ kernel: "abs", node: "AbsBackward0", saves: "self", grad: (g, x) => g.mul(pw.sgn(x)) });
const EXP = unaryOp({ kernel: "exp", node: "ExpBackward0", saves: "result", grad: (g, r) => g.mul(r) });
const LOG = unaryOp({ kernel: "log", node: "LogBackward0", saves: "self", grad: (g, x) => g.div(x) });
const SQRT = unaryOp({ kernel: "sqrt", node: "SqrtBackward0", saves: "result", grad: (g, r) => g.div(r.mul(2)) });
const RSQRT = unaryOp({ kernel: "rsqrt", node: "RsqrtBackward0", saves: "result", grad: (g, r) => g.mul(r.pow(3)).mul(-0.5) });
const RELU = unaryOp({ kernel: "relu", node: "ReluBackward0", saves: "result", grad: pw.thresholdBackward });
const SIGMOID = unaryOp({
  kernel: "sigmoid",
  node: "SigmoidBackward0",
  saves: "result",
  grad: pw.sigmoidBackward,
});
const TANH = unaryOp({ kernel: "tanh", node: "TanhBackward0", saves: "result", grad: pw.tanhBackward });

/** torch.neg(a): -a. NegBackward0 saves nothing. */
export const neg = op({ impl: NEG.forward, grad: ["NegBackward0"], gradgrad: ["NegBackward0"], saves: [] });
/** torch.abs(a). AbsBackward0 saves the input (its sign is the gradient). */
export const abs = op({ impl: ABS.forward, grad: ["AbsBackward0"], gradgrad: ["MulBackward0"], saves: ["self"] });
/** torch.exp(a). ExpBackward0 saves its result (the gradient is g * result). */
export const exp = op({ impl: EXP.forward, grad: ["ExpBackward0"], gradgrad: ["MulBackward0"], saves: ["result"] });
/** torch.log(a). LogBackward0 saves the input. */
export const log = op({ impl: LOG.forward, grad: ["LogBackward0"], gradgrad: ["DivBackward0"], saves: ["self"] });
/** torch.sqrt(a). SqrtBackward0 saves its result. */
export const sqrt = op({ impl: SQRT.forward, grad: ["SqrtBackward0"], gradgrad: ["DivBackward0"], saves: ["result"] });
/** torch.rsqrt(a): 1 / sqrt(a). RsqrtBackward0 saves its result. */
export const rsqrt = op({ impl: RSQRT.forward, grad: ["RsqrtBackward0"], gradgrad: ["MulBackward0"], saves: ["result"] });
/** torch.relu(a): saves its result (ReluBackward0); backward is one fused kernel, one allocation, as in PyTorch. */
export const relu = op({ impl: RELU.forward, grad: ["ReluBackward0"], gradgrad: ["ThresholdBackwardBackward0"], saves: ["result"] });
/** torch.relu_(a): in place (bumps the version counter); the node is ReluBackward0 on the new version. */
export const relu_ = op({ impl: RELU.inplace, grad: ["ReluBackward0"], gradgrad: ["ThresholdBackwardBackward0"], saves: ["result"] });
/** torch.sigmoid(a). SigmoidBackward0 saves its result. */
export const sigmoid = op({ impl: SIGMOID.forward, grad: ["SigmoidBackward0"], gradgrad: ["SigmoidBackwardBackward0"], saves: ["result"] });
/** torch.tanh(a). TanhBackward0 saves its result. */
export const tanh = op({ impl: TANH.forward, grad: ["TanhBackward0"], gradgrad: ["TanhBackwardBackward0"], saves: ["result"] });
/** torch.clamp(a, min, max): either bound may be null; saves the input (ClampBackward1). */
export const clamp = op({
  kwargs: ["min", "max"],
  kwargsAtDefault: { out: isNone },
  impl: pw.clamp,
  grad: ["ClampBackward1"],
  gradgrad: ["WhereBackward0"],
  saves: ["self", "min", "max"],
});
/** torch.clamp_(a, min, max): in place; the node keeps a copy of the input from before the write. */
export const clamp_ = op({
  kwargs: ["min", "max"],
  impl: pw.clampInplace,
  grad: ["ClampBackward1"],
  gradgrad: ["WhereBackward0"],
  saves: ["self", "min", "max"],
});

// ---- pointwise, two inputs (the second may be a number) ----

/**
 * torch.add/sub/mul/div(number, tensor): PyTorch wraps the number as a 0-d tensor that does not
 * require grad (the node's first edge is None). Here it is a 0-d device tensor (512 B while it lives;
 * PyTorch keeps a wrapped number on the CPU).
 */
function wrapSelf(a: Tensor | number, fn: (self: Tensor) => Tensor): Tensor {
  if (typeof a !== "number" && typeof a !== "boolean") return fn(a);
  const s = scalar_tensor(a, { dtype: scalarType(a) });
  try {
    return fn(s);
  } finally {
    s.dispose();
  }
}

const ADD = binaryOp({
  kernel: "add",
  node: "AddBackward0",
  saves: ["alpha"],
  grad: (n, g, { aShape, bShape, alpha }) => [n.needs(0) ? sumTo(g, aShape) : null, n.needs(1) ? sumTo(pw.mulScalar(g, alpha), bShape) : null],
});
const SUB = binaryOp({
  kernel: "sub",
  node: "SubBackward0",
  saves: ["alpha"],
  grad: (n, g, { aShape, bShape, alpha }) => [n.needs(0) ? sumTo(g, aShape) : null, n.needs(1) ? sumTo(pw.mulScalar(g.neg(), alpha), bShape) : null],
});
const MUL = binaryOp({
  kernel: "mul",
  node: "MulBackward0",
  saves: ["self", "other"],
  savedFor: { self: [1], other: [0] },
  grad: (n, g, { aShape, bShape }) => [n.needs(0) ? sumTo(g.mul(savedOther(n)), aShape) : null, n.needs(1) ? sumTo(g.mul(n.unpack("self")), bShape) : null],
});
const DIV = binaryOp({
  kernel: "div",
  node: "DivBackward0",
  saves: ["self", "other"],
  savedFor: { self: [1], other: [0, 1] },
  grad: (n, g, { aShape, bShape }) => {
    const o = savedOther(n);
    return [
      n.needs(0) ? sumTo(g.div(o), aShape) : null,
      n.needs(1)
        ? // PyTorch's div_tensor_other_backward: -grad * ((self / other) / other)
          sumTo(g.neg().mul(n.unpack("self").div(o).div(o)), bShape)
        : null,
    ];
  },
});
const POW = binaryOp({
  kernel: "pow",
  node: "PowBackward1",
  saves: ["self", "exponent", "result"],
  scalar: { node: "PowBackward0", saves: ["self", "exponent"] },
  // torch 1.13 saves `result` whichever input requires grad, and its backward unpacks every saved
  // variable first: a saved result modified in place raises even when only self needs a gradient.
  savedFor: { self: [0, 1], exponent: [0, 1] },
  grad: (n, g, { aShape, bShape }) => {
    const self = n.unpack("self");
    const e = n.savedTensor("exponent");
    if (!e) {
      const k = n.value<number>("exponent");
      // PyTorch's pow_backward: zeros for a 0 exponent, else grad * (exponent * self.pow(exponent - 1))
      return [k === 0 ? pw.zerosLike(g) : g.mul(pw.mulScalar(self.pow(k - 1), k, true))];
    }
    const result = n.unpack("result");
    return [
      // PyTorch's pow_backward_self and pow_backward_exponent, op for op (so the graph of a gradient matches)
      n.needs(0) ? sumTo(pw.where(e.eq(0), 0, g.mul(e.mul(self.pow(e.sub(1))))), aShape) : null,
      // d/de a^e = a^e log a, taken as 0 where a == 0 and e >= 0 (PyTorch's masking)
      n.needs(1) ? sumTo(g.mul(pw.where(self.eq(0).mul(e.ge(0)).bool(), 0, result.mul(self.log()))), bShape) : null,
    ];
  },
});
/**
 * maximum/minimum: the gradient goes to the larger (smaller) operand, split evenly on ties; as PyTorch's
 * formula, where(self == other, grad / 2, grad).masked_fill(loser, 0), so the graph under create_graph matches.
 */
function extremumGrad(first: "gt" | "lt") {
  return (n: FormulaNode, g: Tensor, { aShape, bShape }: BinaryConsts): Grads => {
    const self = n.unpack("self");
    const o = n.unpack("other");
    const split = pw.where(self.eq(o), g.div(2), g);
    const second = first === "gt" ? "lt" : "gt";
    return [
      n.needs(0) ? sumTo(pw.maskedFill(split, self[second](o), 0), aShape) : null,
      n.needs(1) ? sumTo(pw.maskedFill(split, self[first](o), 0), bShape) : null,
    ];
  };
}
const MAXIMUM = binaryOp({ kernel: "maximum", node: "MaximumBackward0", saves: ["self", "other"], grad: extremumGrad("gt") });
const ATAN2 = binaryOp({
  kernel: "atan2",
  node: "Atan2Backward0",
  saves: ["self", "other"],
  // d/da atan2(a, b) = b / (a² + b²), d/db = -a / (a² + b²)
  grad: (n, g, { aShape, bShape }) => {
    const a = n.unpack("self");
    const b = n.unpack("other");
    const recip = pw.reciprocal(a.mul(a).add(b.mul(b)));
    return [n.needs(0) ? sumTo(g.mul(b).mul(recip), aShape) : null, n.needs(1) ? sumTo(g.mul(a.neg()).mul(recip), bShape) : null];
  },
});
const MINIMUM = binaryOp({ kernel: "minimum", node: "MinimumBackward0", saves: ["self", "other"], grad: extremumGrad("lt") });

type Alpha = { alpha?: number };
/** torch.add(a, b, {alpha}): a + alpha * b, broadcasting; b may be a number. Autograd: AddBackward0. */
export const add = op({
  kwargs: ["alpha"],
  kwargsAtDefault: { out: isNone },
  impl: (a: Tensor | number, b: TensorOrScalar, opts?: Alpha): Tensor => wrapSelf(a, (s) => ADD.forward(s, b, opts?.alpha)),
  scalarSelf: true,
  grad: ["AddBackward0"],
  gradgrad: ["MulBackward1"],
  saves: ["alpha"],
});
/** torch.sub(a, b, {alpha}): a - alpha * b, broadcasting. Autograd: SubBackward0. */
export const sub = op({
  kwargs: ["alpha"],
  kwargsAtDefault: { out: isNone },
  impl: (a: Tensor | number, b: TensorOrScalar, opts?: Alpha): Tensor => wrapSelf(a, (s) => SUB.forward(s, b, opts?.alpha)),
  scalarSelf: true,
  grad: ["SubBackward0"],
  gradgrad: ["NegBackward0", "MulBackward1"],
  saves: ["alpha"],
});
/** torch.mul(a, b): elementwise product, broadcasting; saves both operands for backward (MulBackward0). */
export const mul = op({
  positional: ["other"],
  kwargsAtDefault: { out: isNone },
  impl: (a: Tensor | number, b: TensorOrScalar): Tensor => wrapSelf(a, (s) => MUL.forward(s, b)),
  scalarSelf: true,
  grad: ["MulBackward0"],
  gradgrad: ["MulBackward0"],
  saves: ["self", "other"],
});
/** torch.div(a, b): true division (float32), broadcasting. Autograd: DivBackward0 (saves both operands). */
export const div = op({
  positional: ["other"],
  kwargsAtDefault: { rounding_mode: isNone, out: isNone },
  impl: (a: Tensor | number, b: TensorOrScalar): Tensor => wrapSelf(a, (s) => DIV.forward(s, b)),
  scalarSelf: true,
  grad: ["DivBackward0"],
  gradgrad: ["DivBackward0", "MulBackward0"],
  saves: ["self", "other"],
});
/** torch.pow(a, exponent): a number exponent gives PowBackward0 (saves a), a tensor one PowBackward1 (saves a, exponent, result). */
export const pow = op({
  positional: ["exponent"],
  kwargsAtDefault: { out: isNone },
  impl: (a: Tensor, e: TensorOrScalar): Tensor => POW.forward(a, e),
  grad: ["PowBackward0", "PowBackward1"],
  gradgrad: ["MulBackward0", "WhereBackward0"],
  saves: ["self", "exponent", "result"],
});
/** torch.maximum(a, b): elementwise larger; on ties each operand gets half the gradient (MaximumBackward0). */
export const maximum = op({
  impl: (a: Tensor, b: Tensor): Tensor => MAXIMUM.forward(a, b),
  grad: ["MaximumBackward0"],
  gradgrad: ["MaskedFillBackward0"],
  saves: ["self", "other"],
});
/** torch.minimum(a, b): elementwise smaller (MinimumBackward0). */
export const minimum = op({
  impl: (a: Tensor, b: Tensor): Tensor => MINIMUM.forward(a, b),
  grad: ["MinimumBackward0"],
  gradgrad: ["MaskedFillBackward0"],
  saves: ["self", "other"],
});
/** torch.atan2(a, b): the angle of (b, a), elementwise, float32 (Atan2Backward0 saves both operands). */
export const atan2 = op({
  impl: (a: Tensor, b: Tensor): Tensor => ATAN2.forward(a, b),
  grad: ["Atan2Backward0"],
  gradgrad: ["MulBackward0"],
  saves: ["self", "other"],
});
/** torch.rsub(a, b, {alpha}): b - alpha * a (Python's `2 - x`). RsubBackward1 saves alpha. */
export const rsub = op({
  kwargs: ["alpha"],
  impl: (a: Tensor, b: number, opts?: Alpha): Tensor => pw.rsub(a, b, opts?.alpha),
  grad: ["RsubBackward1"],
  gradgrad: ["NegBackward0", "MulBackward1"],
  saves: ["alpha"],
});

/** Tensor.add_(b, {alpha}): in place; a non-leaf's history is rebased (AddBackward0 on the new version). */
export const add_ = op({
  kwargs: ["alpha"],
  impl: <T extends Tensor>(a: T, b: TensorOrScalar, opts?: Alpha): T => ADD.inplace(a, b, opts?.alpha),
  grad: ["AddBackward0"],
  gradgrad: ["MulBackward1"],
  saves: ["alpha"],
});
export const sub_ = op({
  kwargs: ["alpha"],
  impl: <T extends Tensor>(a: T, b: TensorOrScalar, opts?: Alpha): T => SUB.inplace(a, b, opts?.alpha),
  grad: ["SubBackward0"],
  gradgrad: ["NegBackward0", "MulBackward1"],
  saves: ["alpha"],
});
/** Tensor.mul_(b): in place; when b requires grad the node keeps a copy of a from before the write. */
export const mul_ = op({
  impl: <T extends Tensor>(a: T, b: TensorOrScalar): T => MUL.inplace(a, b),
  grad: ["MulBackward0"],
  gradgrad: ["MulBackward0"],
  saves: ["self", "other"],
});
export const div_ = op({
  positional: ["other"],
  kwargsAtDefault: { rounding_mode: isNone },
  impl: <T extends Tensor>(a: T, b: TensorOrScalar): T => DIV.inplace(a, b),
  grad: ["DivBackward0"],
  gradgrad: ["DivBackward0", "MulBackward0"],
  saves: ["self", "other"],
});

// ---- comparisons: bool results, never differentiable ----
const compare =
  (kernel: "eq" | "ne" | "lt" | "le" | "gt" | "ge") =>
  (a: Tensor, b: TensorOrScalar): Tensor =>
    ew.binary(kernel, a, b);
/** torch.eq(a, b): a bool tensor; not differentiable. */
export const eq = op({ impl: compare("eq"), grad: NOT_DIFFERENTIABLE });
export const ne = op({ impl: compare("ne"), grad: NOT_DIFFERENTIABLE });
export const lt = op({ impl: compare("lt"), grad: NOT_DIFFERENTIABLE });
export const le = op({ impl: compare("le"), grad: NOT_DIFFERENTIABLE });
export const gt = op({ impl: compare("gt"), grad: NOT_DIFFERENTIABLE });
export const ge = op({ impl: compare("ge"), grad: NOT_DIFFERENTIABLE });

/** torch.where(cond, a, b): a where cond is true, else b (numbers allowed); saves cond (WhereBackward0). As a method: a.where(cond, b). */
export const where = op({
  impl: pw.where,
  grad: ["WhereBackward0"],
  gradgrad: ["WhereBackward0"],
  saves: ["condition"],
  method: (self: Tensor, condition: Tensor, other: TensorOrScalar) => pw.where(condition, self, other),
});

// ---- reductions ----
/** torch.sum(a, dim?, {keepdim}): over all elements (SumBackward0) or the given dims (SumBackward1). Its gradient is an expanded view: no memory. GradLab: int32 sums return float32 (no int64). */
export const sum = op({
  kwargs: ["dim", "keepdim", "dtype"],
  kwargsAtDefault: { out: isNone },
  impl: (a: Tensor, dim?: DimArg | ReduceOpts, opts?: ReduceOpts): Tensor => rd.sumOrMean("sum", a, dim, opts),
  grad: ["SumBackward0", "SumBackward1"],
  gradgrad: ["ExpandBackward0"],
  saves: ["dim", "keepdim", "self_sym_sizes"],
});
/** torch.mean(a, dim?, {keepdim}): float32 only. MeanBackward1 keeps the whole input alive, as PyTorch 1.13 does. */
export const mean = op({
  kwargs: ["dim", "keepdim", "dtype"],
  kwargsAtDefault: { out: isNone },
  impl: (a: Tensor, dim?: DimArg | ReduceOpts, opts?: ReduceOpts): Tensor => rd.sumOrMean("mean", a, dim, opts),
  grad: ["MeanBackward0", "MeanBackward1"],
  gradgrad: ["DivBackward1"],
  saves: ["dim", "keepdim", "self_numel", "self_sizes", "self_sym_sizes", "self"],
});
/** torch.prod(a, dim?, {keepdim}): ProdBackward0 / ProdBackward1 save the input and the result (zero-safe gradient). */
export const prod = op({
  kwargs: ["dim", "keepdim", "dtype"],
  kwargsAtDefault: { out: isNone },
  impl: rd.prod,
  grad: ["ProdBackward0", "ProdBackward1"],
  gradgrad: ["MulBackward0"],
  saves: ["self", "result", "dim", "keepdim"],
});
type MinMax = { (): Tensor; (dim: number, opts?: ReduceOpts): { values: Tensor; indices: Tensor } };
/** torch.max(a): the largest element (MaxBackward1); torch.max(a, dim) → {values, indices} (MaxBackward0 saves the indices). */
export const max = op<(a: Tensor, dim?: number, opts?: ReduceOpts) => Tensor | { values: Tensor; indices: Tensor }, MinMax>({
  kwargs: ["keepdim"],
  positional: ["dim"],
  impl: (a, dim, opts) => rd.minmax("max", a, dim, opts),
  grad: ["MaxBackward0", "MaxBackward1"],
  gradgrad: ["ScatterBackward0", "MaskedFillBackward1"],
  saves: ["self", "result", "dim", "keepdim", "indices", "self_sizes"],
});
/** torch.min(a) / torch.min(a, dim), as max. */
export const min = op<(a: Tensor, dim?: number, opts?: ReduceOpts) => Tensor | { values: Tensor; indices: Tensor }, MinMax>({
  kwargs: ["keepdim"],
  positional: ["dim"],
  impl: (a, dim, opts) => rd.minmax("min", a, dim, opts),
  grad: ["MinBackward0", "MinBackward1"],
  gradgrad: ["ScatterBackward0", "MaskedFillBackward1"],
  saves: ["self", "result", "dim", "keepdim", "indices", "self_sizes"],
});
/** torch.argmax(a, dim?, {keepdim}): int32 indices; not differentiable. */
export const argmax = op({
  kwargs: ["keepdim"],
  positional: ["dim"],
  impl: (a: Tensor, dim?: number, opts?: ReduceOpts): Tensor => red.arg("argmax", a, dim, opts),
  grad: NOT_DIFFERENTIABLE,
});
export const argmin = op({
  kwargs: ["keepdim"],
  positional: ["dim"],
  impl: (a: Tensor, dim?: number, opts?: ReduceOpts): Tensor => red.arg("argmin", a, dim, opts),
  grad: NOT_DIFFERENTIABLE,
});
type VarOpts = ReduceOpts & { correction?: number; unbiased?: boolean };
/** torch.var(a, dim?, {correction | unbiased, keepdim}). VarBackward0 saves the input. */
const variance = op({
  kwargs: ["dim", "keepdim", "correction", "unbiased"],
  kwargsAtDefault: { out: isNone },
  impl: (a: Tensor, dim?: DimArg | VarOpts, opts?: VarOpts): Tensor => rd.variance(a, dim, opts),
  grad: ["VarBackward0"],
  gradgrad: ["MulBackward0"],
  saves: ["correction", "dim", "keepdim", "self"],
});
export { variance as var };
/** torch.std(a, ...): StdBackward0 saves the input and the result; a constant row's gradient is 0, as PyTorch masks it. */
export const std = op({
  kwargs: ["dim", "keepdim", "correction", "unbiased"],
  kwargsAtDefault: { out: isNone },
  impl: (a: Tensor, dim?: DimArg | VarOpts, opts?: VarOpts): Tensor => rd.variance(a, dim, opts, true),
  grad: ["StdBackward0"],
  gradgrad: ["MulBackward0"],
  saves: ["correction", "dim", "keepdim", "self", "result"],
});
/** torch.softmax(a, dim): saves its result (SoftmaxBackward0), which the backward formula needs. */
export const softmax = op({
  positional: ["dim"],
  kwargsAtDefault: { dtype: isNone },
  impl: (a: Tensor, dim: number): Tensor => rd.softmax(a, dim, false),
  grad: ["SoftmaxBackward0"],
  gradgrad: ["SoftmaxBackwardDataBackward0"],
  saves: ["dim", "result"],
});
/** torch.log_softmax(a, dim): saves its result (LogSoftmaxBackward0). */
export const log_softmax = op({
  positional: ["dim"],
  kwargsAtDefault: { dtype: isNone },
  impl: (a: Tensor, dim: number): Tensor => rd.softmax(a, dim, true),
  grad: ["LogSoftmaxBackward0"],
  gradgrad: ["LogSoftmaxBackwardDataBackward0"],
  saves: ["dim", "result"],
});

// ---- linear algebra ----
/**
 * torch.matmul(a, b): the product of 1-D to N-D tensors with PyTorch's rules: dot (1-D·1-D), mv, mm, and
 * batched products with broadcast batch dims (folded into one mm when b is 2-D, as ATen folds them).
 * The graph has ATen's nodes and saves the operands. GradLab: float32 only; on lavapipe a 1024² product
 * runs at ~15–17 GFLOP/s.
 */
export const matmul = op({
  impl: al.matmul,
  grad: [
    "DotBackward0",
    "MvBackward0",
    "MmBackward0",
    "BmmBackward0",
    "UnsafeViewBackward0",
    "SqueezeBackward3",
    "CloneBackward0",
    "ReshapeAliasBackward0",
    "ViewBackward0",
    "ExpandBackward0",
    "TransposeBackward0",
    "TBackward0",
    "UnsqueezeBackward0",
  ],
  gradgrad: [
    "MulBackward0",
    "MmBackward0",
    "MvBackward0",
    "BmmBackward0",
    "TBackward0",
    "TransposeBackward0",
    "SqueezeBackward1",
    "ViewBackward0",
    "ReshapeAliasBackward0",
    "SumBackward1",
  ],
  saves: ["self", "tensor", "vec", "mat2", "self_sym_sizes", "mat2_sym_sizes", "dim", "self_sizes", "dim0", "dim1"],
});
/** torch.mm(a, b): 2-D matrix product; saves both (MmBackward0); gradients come in each operand's layout, as ATen's. */
export const mm = op({
  impl: al.mm,
  grad: ["MmBackward0"],
  gradgrad: ["MmBackward0", "TBackward0"],
  saves: ["self", "mat2", "self_sym_sizes", "mat2_sym_sizes"],
});
/** torch.bmm(a, b): batched 3-D product [B, n, m] @ [B, m, p]; saves both (BmmBackward0). */
export const bmm = op({ impl: al.bmm, grad: ["BmmBackward0"], gradgrad: ["BmmBackward0"], saves: ["self", "mat2"] });
/** torch.addmm(input, m1, m2, {beta, alpha}): beta * input + alpha * m1 @ m2 (AddmmBackward0). */
export const addmm = op({
  kwargs: ["beta", "alpha"],
  kwargsAtDefault: { out: isNone },
  impl: al.addmm,
  grad: ["AddmmBackward0"],
  gradgrad: ["MulBackward1", "SumBackward1", "ViewBackward0", "MmBackward0", "TBackward0"],
  saves: ["alpha", "beta", "mat1", "mat1_sym_sizes", "mat2", "mat2_sym_sizes"],
});

// ---- views and copies ----
/** torch.transpose(a, d0, d1): a view (shares storage and version counter); TransposeBackward0 saves nothing but the dims. */
export const transpose = op({
  positional: ["dim0", "dim1"],
  impl: sh.transpose,
  grad: ["TransposeBackward0"],
  gradgrad: ["TransposeBackward0"],
  saves: ["dim0", "dim1"],
});
/** torch.t(a): the transpose of a 2-D tensor (TBackward0). */
export const t = op({ impl: sh.t, grad: ["TBackward0"], gradgrad: ["TBackward0"], saves: [] });
/** torch.permute(a, dims): a view (PermuteBackward0). As a method also x.permute(1, 0, 2). */
export const permute = op({
  impl: (a: Tensor, ...dims: Array<number | number[]>): Tensor => sh.permute(a, vw.flatShape(dims)),
  grad: ["PermuteBackward0"],
  gradgrad: ["PermuteBackward0"],
  saves: ["dims"],
});
/** torch.reshape(a, shape): a view when the strides allow (no memory), otherwise a copy (CloneBackward0 + UnsafeViewBackward0). */
export const reshape = op({
  impl: (a: Tensor, ...shape: Array<number | number[]>): Tensor => sh.reshape(a, vw.flatShape(shape)),
  grad: ["ReshapeAliasBackward0", "CloneBackward0", "UnsafeViewBackward0"],
  gradgrad: ["ReshapeAliasBackward0"],
  saves: ["self_sym_sizes"],
});
/** torch.unsqueeze(a, dim): a view with a new size-1 dim (UnsqueezeBackward0). */
export const unsqueeze = op({ positional: ["dim"], impl: sh.unsqueeze, grad: ["UnsqueezeBackward0"], gradgrad: ["SqueezeBackward1"], saves: ["dim"] });
/** torch.squeeze(a, dim?): a view without size-1 dims (SqueezeBackward0 / SqueezeBackward1). */
export const squeeze = op({
  positional: ["dim"],
  impl: (a: Tensor, dim?: number): Tensor => sh.squeeze(a, dim),
  grad: ["SqueezeBackward0", "SqueezeBackward1"],
  gradgrad: ["UnsqueezeBackward0", "ReshapeAliasBackward0"],
  saves: ["dim", "self_sizes"],
});
/** torch.narrow(a, dim, start, length): a view (SliceBackward0). */
export const narrow = op({
  positional: ["dim", "start", "length"],
  impl: sh.narrow,
  grad: ["SliceBackward0"],
  gradgrad: ["SliceBackwardBackward0"],
  saves: ["dim", "start", "end", "step", "self_sym_sizes"],
});
/** torch.select(a, dim, index): a view with one dim fewer (SelectBackward0). */
export const select = op({
  positional: ["dim", "index"],
  impl: sh.select,
  grad: ["SelectBackward0"],
  gradgrad: ["SelectBackwardBackward0"],
  saves: ["dim", "index", "self_sizes"],
});
/** torch.flatten(a, start, end): a reshape; returns the input itself when there is nothing to merge. */
export const flatten = op({
  positional: ["start_dim", "end_dim"],
  impl: (a: Tensor, start = 0, end = -1): Tensor => sh.flatten(a, start, end),
  grad: ["ReshapeAliasBackward0", "CloneBackward0", "UnsafeViewBackward0", "ViewBackward0"],
  gradgrad: ["ReshapeAliasBackward0"],
  saves: ["self_sym_sizes"],
});
/** torch.clone(a): a copy in new memory (CloneBackward0). */
export const clone = op({ impl: sh.clone, grad: ["CloneBackward0"], gradgrad: [], saves: [] });
