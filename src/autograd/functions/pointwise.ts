// Differentiable pointwise ops: forward kernel, PyTorch's node name, what is saved, and the backward
// formula, side by side (as tools/autograd/derivatives.yaml does). Formulas are written with tensor ops,
// so under create_graph they are themselves recorded (double backward).

import { RuntimeError } from "../../errors.ts";
import * as ew from "../../ops/elementwise.ts";
import type { BinaryKernel, UnaryKernel } from "../../ops/kernel-codes.ts";
import { Tensor, type Scalar, type TensorOrScalar } from "../../tensor.ts";
import { SavedAt, attach, needsGrad, sumTo, type Formula, type Saves } from "../record.ts";
import type { FormulaNode, Grads } from "../node.ts";
import { asOp } from "../../ops/op-context.ts";
import { checkInplace, rebase } from "./inplace.ts";

/** zeros_like(t), outside any graph: what PyTorch's double-backward formulas give for an input that has no effect. */
export const zerosLike = (t: Tensor): Tensor => Tensor.empty(t.shape).zero_();

/** sgn(x), as abs's backward formula uses it: on the graph (SgnBackward0), with a zero derivative. */
export function sgn(x: Tensor): Tensor {
  const out = ew.unary("sign", x);
  if (needsGrad(x)) attach("SgnBackward0", [x], [out], sgnFormula);
  return out;
}
const sgnFormula: Formula = (_n, [g]) => [zerosLike(g!)];

/**
 * t * s for a number s, as PyTorch's C++ formulas multiply by a Scalar: MulBackward1 (a Python `t * 2`
 * records MulBackward0), and nothing at all for s = 1 (maybe_multiply).
 */
export function mulScalar(t: Tensor, s: number, always = false): Tensor {
  if (s === 1 && !always) return t;
  const out = ew.binary("mul", t, s);
  if (needsGrad(t)) attach("MulBackward1", [t], [out], mulScalarFormula, { other: s });
  return out;
}
const mulScalarFormula: Formula = (n, [g]) => [mulScalar(g!, n.value<number>("other"), true)];

/** 1 / t (ReciprocalBackward0 saves its result: the gradient is -g * result²), as atan2's formula uses it. */
export function reciprocal(t: Tensor): Tensor {
  const out = ew.binary("pow", t, -1);
  if (needsGrad(t)) attach("ReciprocalBackward0", [t], [out], reciprocalFormula, { result: out });
  return out;
}
const reciprocalFormula: Formula = (n, [g]) => {
  const r = n.unpack("result");
  return [g!.neg().mul(r.mul(r))];
};

/** t / s for a number s, as PyTorch's C++ formulas divide by a Scalar (mean's numel): DivBackward1. */
export function divScalar(t: Tensor, s: number): Tensor {
  const out = ew.binary("div", t, s);
  if (needsGrad(t)) attach("DivBackward1", [t], [out], divScalarFormula, { other: s });
  return out;
}
const divScalarFormula: Formula = (n, [g]) => [divScalar(g!, n.value<number>("other"))];

/** t.masked_fill(mask, value): MaskedFillBackward0 (saves the mask), as PyTorch's max/min formulas use it. */
export function maskedFill(t: Tensor, mask: Tensor, value: number): Tensor {
  const out = ew.where(mask, value, t);
  if (needsGrad(t)) attach("MaskedFillBackward0", [t], [out], maskedFillFormula, { mask });
  return out;
}
const maskedFillFormula: Formula = (n, [g]) => [maskedFill(g!, n.unpack("mask"), 0)];

// ---- backward ops with their own double backward (derivatives.yaml's threshold_backward, ...) ----
// PyTorch's backward of relu, sigmoid, tanh and gelu is an op of its own: one fused kernel, and when
// its inputs require grad (create_graph) a node of its own (`<Op>BackwardBackward0`) whose formula is
// made of differentiable ops again (so third derivatives work as well).

/** threshold_backward(g, self): g where self > 0, else 0. ThresholdBackwardBackward0 saves self. */
export function thresholdBackward(g: Tensor, self: Tensor): Tensor {
  const out = ew.binary("threshold_backward", g, self);
  if (needsGrad(g, self)) attach("ThresholdBackwardBackward0", [g, self], [out], thresholdBackwardFormula, { self, threshold: 0 });
  return out;
}
function thresholdBackwardFormula(n: FormulaNode, [gg]: Grads): Grads {
  const self = n.unpack("self");
  return [n.needs(0) ? thresholdBackward(gg!, self) : null, n.needs(1) ? zerosLike(gg!) : null];
}

/** sigmoid_backward(g, out): g * out * (1 - out). SigmoidBackwardBackward0 saves both. */
export function sigmoidBackward(g: Tensor, out: Tensor): Tensor {
  const r = ew.binary("sigmoid_backward", g, out);
  if (needsGrad(g, out)) attach("SigmoidBackwardBackward0", [g, out], [r], sigmoidBackwardFormula, { grad_output: g, output: out });
  return r;
}
function sigmoidBackwardFormula(n: FormulaNode, [gg]: Grads): Grads {
  const out = n.unpack("output");
  return [n.needs(0) ? sigmoidBackward(gg!, out) : null, n.needs(1) ? gg!.mul(n.unpack("grad_output")).mul(out.mul(-2).add(1)) : null];
}

/** tanh_backward(g, out): g * (1 - out²). TanhBackwardBackward0 saves both. */
export function tanhBackward(g: Tensor, out: Tensor): Tensor {
  const r = ew.binary("tanh_backward", g, out);
  if (needsGrad(g, out)) attach("TanhBackwardBackward0", [g, out], [r], tanhBackwardFormula, { grad_output: g, output: out });
  return r;
}
function tanhBackwardFormula(n: FormulaNode, [gg]: Grads): Grads {
  const out = n.unpack("output");
  return [n.needs(0) ? tanhBackward(gg!, out) : null, n.needs(1) ? gg!.mul(n.unpack("grad_output")).mul(out).mul(-2) : null];
}

/** gelu_backward(g, self, approximate): g * gelu'(self). GeluBackwardBackward0 saves g, self and approximate. */
function geluBackward(g: Tensor, self: Tensor, approximate: "none" | "tanh"): Tensor {
  const r = ew.binary(approximate === "tanh" ? "gelu_tanh_backward" : "gelu_backward", g, self);
  if (needsGrad(g, self)) attach("GeluBackwardBackward0", [g, self], [r], geluBackwardFormula, { approximate, grad_output: g, self });
  return r;
}
function geluBackwardFormula(n: FormulaNode, [gg]: Grads): Grads {
  const self = n.unpack("self");
  const approximate = n.value<"none" | "tanh">("approximate");
  return [
    n.needs(0) ? geluBackward(gg!, self, approximate) : null,
    n.needs(1) ? gg!.mul(n.unpack("grad_output")).mul(geluSecondDerivative(self, approximate)) : null,
  ];
}
/**
 * gelu''(x), from differentiable ops. Exact: gelu = x Φ(x), gelu'' = φ(x) (2 - x²). Tanh: gelu =
 * x (1 + t) / 2 with t = tanh(u), u = β (x + κ x³): gelu'' = (1 - t²) (u' + x (u'' - 2 t u'²) / 2).
 */
function geluSecondDerivative(x: Tensor, approximate: "none" | "tanh"): Tensor {
  const x2 = x.mul(x);
  if (approximate !== "tanh")
    return x2
      .mul(-0.5)
      .exp()
      .mul(1 / Math.sqrt(2 * Math.PI))
      .mul(x2.neg().add(2));
  const beta = Math.sqrt(2 / Math.PI);
  const kappa = 0.044715;
  const t = x.add(x2.mul(x).mul(kappa)).mul(beta).tanh();
  const du = x2
    .mul(3 * kappa)
    .add(1)
    .mul(beta);
  const ddu = x.mul(6 * beta * kappa);
  const inner = ddu.sub(t.mul(du).mul(du).mul(2)).mul(x).mul(0.5).add(du);
  return t.mul(t).neg().add(1).mul(inner);
}

/** A differentiable one-input op, as the op table declares it (api/functions.ts). */
export interface UnarySpec {
  kernel: UnaryKernel;
  /** PyTorch's backward node. */
  node: string;
  /** Which tensor the formula reads: the input (`_saved_self`), the output (`_saved_result`) or none. */
  saves: "self" | "result" | null;
  /** dL/dx from the incoming gradient g and the saved tensor (g itself when nothing is saved). */
  grad: (g: Tensor, saved: Tensor) => Tensor;
}

/** The forward function and its in-place variant (which rebases the tensor's history) of a unary op. */
export function unaryOp(spec: UnarySpec): { forward: (x: Tensor) => Tensor; inplace: <T extends Tensor>(x: T) => T } {
  // Made here, where no tensor handle is in scope (see attach).
  const { kernel, node, saves, grad } = spec;
  const formula: Formula = (n, [g]) => [grad(g!, saves ? n.unpack(saves) : g!)];
  const record = (x: Tensor, out: Tensor) => {
    attach(node, [x], [out], formula, saves ? { [saves]: saves === "self" ? x : out } : {});
  };
  return {
    forward(x: Tensor): Tensor {
      const out = ew.unary(kernel, x);
      if (needsGrad(x)) record(x, out);
      return out;
    },
    inplace<T extends Tensor>(x: T): T {
      const track = checkInplace(x);
      ew.inplaceUnary(kernel, x);
      if (track) rebase(x, record);
      return x;
    },
  };
}

export function gelu(x: Tensor, approximate: "none" | "tanh" = "none"): Tensor {
  const out = ew.gelu(x, approximate);
  if (needsGrad(x)) attach("GeluBackward0", [x], [out], geluFormula, { self: x, approximate });
  return out;
}
const geluFormula: Formula = (n, [g]) => [geluBackward(g!, n.unpack("self"), n.value<"none" | "tanh">("approximate"))];

type ClampArg = number | null | undefined | { min?: number; max?: number };
function bounds(min: ClampArg, max: number | null | undefined): [number | null, number | null] {
  if (typeof min === "object" && min !== null) return [min.min ?? null, min.max ?? null];
  return [min ?? null, max ?? null];
}
const clampFormula: Formula = (n, [g]) => {
  const self = n.unpack("self");
  const lo = n.value<number | null>("min");
  const hi = n.value<number | null>("max");
  let mask = lo === null ? null : self.ge(lo);
  if (hi !== null) mask = mask ? mask.mul(self.le(hi)) : self.le(hi);
  // where() as PyTorch's clamp_backward (not a product with the mask): the same graph under create_graph
  return [where(mask!, g!, 0)];
};
function attachClamp(x: Tensor, out: Tensor, lo: number | null, hi: number | null, savedSelf: Tensor = x): void {
  attach("ClampBackward1", [x], [out], clampFormula, { self: savedSelf, min: lo, max: hi });
}
export function clamp(x: Tensor, min: ClampArg, max?: number | null): Tensor {
  const out = ew.clamp(x, min, max);
  if (needsGrad(x)) attachClamp(x, out, ...bounds(min, max));
  return out;
}
export function clampInplace<T extends Tensor>(x: T, min: ClampArg, max?: number | null): T {
  const track = checkInplace(x);
  // The formula needs the input as it was before the write.
  const before = track ? ew.copyOf(x) : null;
  ew.clampInplace(x, min, max);
  if (track) rebase(x, (prev, out) => attachClamp(prev, out, ...bounds(min, max), before!), before);
  return x;
}

/**
 * What a binary node may save: the operands, the output, and add/sub's alpha.
 * @public (part of the runtime's typed API)
 */
export type BinarySaved = "self" | "other" | "exponent" | "result" | "alpha";
/** Shapes and alpha of the forward call, which every binary formula may need (node.consts). */
export interface BinaryConsts {
  aShape: number[];
  bShape: number[];
  alpha: number;
}

/** A differentiable two-input op (the second may be a number), as the op table declares it. */
export interface BinarySpec {
  kernel: BinaryKernel;
  node: string;
  saves: readonly BinarySaved[];
  /**
   * Where a number as the second operand makes another node, with only the first operand as an edge
   * (pow: PowBackward0 saves self and the exponent as a value). Otherwise a number gets an empty edge
   * slot, as PyTorch 1.13 wraps it in a tensor.
   */
  scalar?: { node: string; saves: readonly BinarySaved[] };
  /** Which input's gradient reads each saved operand (saved only when that input requires grad). */
  savedFor?: Partial<Record<BinarySaved, readonly number[]>>;
  /** The gradients for a and b, reading saved tensors through the node (see attach). */
  grad: (n: FormulaNode, g: Tensor, c: BinaryConsts) => Grads;
}

/** The other operand as saved: a tensor, or a number saved as a value. */
export const savedOther = (n: FormulaNode, name = "other"): TensorOrScalar => n.savedTensor(name) ?? n.value<number>(name);

export function binaryOp(spec: BinarySpec): {
  forward: (a: Tensor, b: TensorOrScalar, alpha?: number) => Tensor;
  inplace: <T extends Tensor>(self: T, other: TensorOrScalar, alpha?: number) => T;
} {
  const { kernel, grad } = spec;
  const formula: Formula = (n, [g]) => grad(n, g!, n.consts as unknown as BinaryConsts);
  /**
   * `self` is what the formula reads for a: its value before an in-place write, when it needs it;
   * `other` what it reads for b, when that is not b itself (x.mul_(x): x as it was before the write).
   */
  const record = (a: Tensor, b: TensorOrScalar, out: Tensor, alpha: number, self: Tensor | SavedAt, other: Tensor | SavedAt | null = null) => {
    const bt = b instanceof Tensor ? b : null;
    const variant = !bt && spec.scalar ? spec.scalar : spec;
    const values: Record<BinarySaved, unknown> = { self, other: other ?? b, exponent: other ?? b, result: out, alpha };
    const saves: Saves = {};
    for (const k of variant.saves) saves[k] = values[k];
    const node = attach(variant.node, variant === spec ? [a, bt] : [a], [out], formula, saves, spec.savedFor);
    node.consts = { aShape: [...a.shape], bShape: bt ? [...bt.shape] : [], alpha } satisfies BinaryConsts;
  };
  const needsSelf = spec.saves.includes("self");
  return {
    forward(a: Tensor, b: TensorOrScalar, alpha = 1): Tensor {
      const out = ew.binary(kernel, a, b, alpha);
      if (needsGrad(a, b)) record(a, b, out, alpha, a);
      return out;
    },
    inplace<T extends Tensor>(self: T, other: TensorOrScalar, alpha = 1): T {
      const track = checkInplace(self, other);
      // x.mul_(x): the other operand is the tensor being written. PyTorch saves x itself (its original
      // variable, no copy) at the version before the write, so backward through the node raises "modified
      // by an inplace operation"; so does GradLab. x's grad_fn is then the node that saved x: torch 1.13
      // keeps that cycle (and the graph under it) alive for good once x is deleted without a backward
      // through it (checked with a weakref: test/fixtures/gen_diff.py's leaked_bytes), and so does GradLab,
      // so that memory_allocated stays PyTorch's figure.
      const same = other instanceof Tensor && other._meta === self._meta;
      const version = self._version;
      // The formula for other needs self's old value: keep a copy (PyTorch's original_self), x.mul_(x)
      // included (torch 1.13's MulBackward0._saved_self is then a clone, though backward raises anyway:
      // the copy counts in memory_allocated). A clone on the graph when self requires grad, so that under
      // create_graph the other operand's gradient still depends on self's old value.
      const before = track && needsSelf && other instanceof Tensor && other.requires_grad ? (self.requires_grad ? self.clone() : ew.copyOf(self)) : null;
      ew.inplaceBinary(kernel, self, other, alpha);
      if (track) {
        rebase(
          self,
          (prev, out) => {
            // Another view of the same memory (x.view(2).mul_(x.view(2))) is saved as it was too.
            const aliased = !same && other instanceof Tensor && other._versionCounter === self._versionCounter;
            const old = same ? new SavedAt(self, version) : aliased ? new SavedAt(other, version) : null;
            record(prev, same ? prev : other, out, alpha, before ?? (same ? old : null) ?? prev, old);
          },
          before,
        );
      }
      return self;
    },
  };
}

const rsubFormula: Formula = (n, [g]) => [mulScalar(g!.neg(), n.value<number>("alpha"))];
/** scalar - x (Python's `2 - x`). */
export function rsub(x: Tensor, s: number, alpha = 1): Tensor {
  const out = ew.binary("sub", x, s, 1).neg();
  if (needsGrad(x)) attach("RsubBackward1", [x], [out], rsubFormula, { alpha });
  return out;
}

export const where = asOp("where", function where(cond: Tensor, a: TensorOrScalar, b: TensorOrScalar): Tensor {
  const out = ew.where(cond, a, b);
  if (!needsGrad(a, b)) return out;
  const at = a instanceof Tensor ? a : null;
  const bt = b instanceof Tensor ? b : null;
  const node = attach("WhereBackward0", [at, bt], [out], whereFormula, { condition: cond });
  node.consts = { aShape: at ? [...at.shape] : [], bShape: bt ? [...bt.shape] : [] };
  return out;
});
function whereFormula(n: FormulaNode, [g]: Grads): Grads {
  const { aShape, bShape } = n.consts as { aShape: number[]; bShape: number[] };
  const c = n.unpack("condition");
  // where() itself (not the raw kernel), so that under create_graph the gradient stays on g's graph
  return [n.needs(0) ? sumTo(where(c, g!, 0), aShape) : null, n.needs(1) ? sumTo(where(c, 0, g!), bShape) : null];
}

/** copy_, fill_, zero_: the written values no longer depend on the old ones. */
export function copyInplace<T extends Tensor>(self: T, src: Tensor): T {
  const track = checkInplace(self, src);
  ew.copyInplace(self, src);
  if (track) {
    rebase(self, (prev, out) => {
      attach("torch::autograd::CopyBackwards", [prev, src], [out], copyFormula).consts = { srcShape: [...src.shape] };
    });
  }
  return self;
}
function copyFormula(n: FormulaNode, [g]: Grads): Grads {
  return [n.needs(0) ? zerosLike(g!) : null, n.needs(1) ? sumTo(g!, (n.consts as { srcShape: number[] }).srcShape) : null];
}
const zeroFormula: Formula = (_n, [g]) => [zerosLike(g!)];

/**
 * fill_(Tensor value) (FillBackward3): every element becomes the 0-dim value; its gradient is the sum
 * of g. Python's `x[i] = 2.0` wraps the number as a 0-dim tensor and records this node too, with no edge
 * for the number: `value` may be a number here, and then nothing is allocated for it.
 */
export function fillTensorInplace<T extends Tensor>(self: T, value: Tensor | Scalar): T {
  const v = value instanceof Tensor ? value : null;
  if (v && v.ndim !== 0) {
    throw new RuntimeError(`fill_ only supports 0-dimension value tensor but got tensor with ${v.ndim} dimensions.`);
  }
  const track = checkInplace(self, v);
  if (v) ew.copyInplace(self, v);
  else ew.fillInplace(self, value as Scalar);
  if (track) rebase(self, (prev, out) => attach("FillBackward3", [prev, v], [out], fill3Formula));
  return self;
}
const fill3Formula: Formula = (n, [g]) => [n.needs(0) ? g!.mul(0) : null, n.needs(1) ? g!.sum() : null];

export function fillInplace<T extends Tensor>(self: T, value: Scalar, name: "FillBackward2" | "ZeroBackward0"): T {
  const track = checkInplace(self);
  ew.fillInplace(self, value);
  if (track) rebase(self, (prev, out) => attach(name, [prev], [out], zeroFormula));
  return self;
}
