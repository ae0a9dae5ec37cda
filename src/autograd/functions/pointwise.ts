// Differentiable pointwise ops: forward kernel, PyTorch's node name, what is saved, and the backward
// formula, side by side (as tools/autograd/derivatives.yaml does). Formulas are written with tensor ops,
// so under create_graph they are themselves recorded (double backward).

import { RuntimeError } from "../../errors.ts";
import * as ew from "../../ops/elementwise.ts";
import type { BinaryKernel, UnaryKernel } from "../../ops/kernel-codes.ts";
import { Tensor, type Scalar, type TensorOrScalar } from "../../tensor.ts";
import { SavedAt, attach, needsGrad, sumTo, type Formula, type Saves } from "../record.ts";
import type { FormulaNode, Grads } from "../node.ts";
import { is_grad_enabled } from "../grad-mode.ts";
import { asOp } from "../../ops/op-context.ts";
import { checkInplace, rebase } from "./inplace.ts";

/**
 * A backward formula that PyTorch runs as one fused kernel (one allocation): fused when nothing records
 * (plain backward, so memory matches PyTorch's), composed from differentiable ops under create_graph.
 */
export function fused(op: BinaryKernel, composed: (g: Tensor, t: Tensor) => Tensor) {
  return (g: Tensor, t: Tensor) => (is_grad_enabled() ? composed(g, t) : ew.binary(op, g, t));
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
  if (needsGrad(x)) {
    const formula = fused(approximate === "tanh" ? "gelu_tanh_backward" : "gelu_backward", (g, x) =>
      g.mul(ew.unary(approximate === "tanh" ? "gelu_tanh_grad" : "gelu_grad", x)),
    );
    attach("GeluBackward0", [x], [out], (n, [g]) => [formula(g!, n.unpack("self"))], { self: x, approximate });
  }
  return out;
}

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
  return [g!.mul(mask!)];
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
      // x.mul_(x): the other operand is the tensor being written. PyTorch saves it as it was (no copy),
      // so backward through the node raises "modified by an inplace operation"; so does GradLab, by
      // saving the history before the write (prev: saving x would make a cycle through its new grad_fn)
      // at the version it had then.
      const same = other instanceof Tensor && other._meta === self._meta;
      const version = self._version;
      // Otherwise the formula for other needs self's old value: keep a copy (PyTorch's original_self).
      const before = track && needsSelf && !same && other instanceof Tensor && other.requires_grad ? ew.copyOf(self) : null;
      ew.inplaceBinary(kernel, self, other, alpha);
      if (track) {
        rebase(
          self,
          (prev, out) => {
            // Another view of the same memory (x.view(2).mul_(x.view(2))) is saved as it was too.
            const aliased = !same && other instanceof Tensor && other._versionCounter === self._versionCounter;
            const old = same ? new SavedAt(prev, version) : aliased ? new SavedAt(other, version) : null;
            record(prev, same ? prev : other, out, alpha, before ?? (same ? old : null) ?? prev, old);
          },
          before,
        );
      }
      return self;
    },
  };
}

const rsubFormula: Formula = (n, [g]) => [g!.mul(-n.value<number>("alpha"))];
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
  return [n.needs(0) ? sumTo(ew.where(c, g!, 0), aShape) : null, n.needs(1) ? sumTo(ew.where(c, 0, g!), bShape) : null];
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
  return [n.needs(0) ? g!.mul(0) : null, n.needs(1) ? sumTo(g!, (n.consts as { srcShape: number[] }).srcShape) : null];
}
const zeroFormula: Formula = (_n, [g]) => [g!.mul(0)];

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
