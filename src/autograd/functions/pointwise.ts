// Differentiable pointwise ops: forward kernel, PyTorch's node name, what is saved, and the backward
// formula, side by side (as tools/autograd/derivatives.yaml does). Formulas are written with tensor ops,
// so under create_graph they are themselves recorded (double backward).

import * as ew from "../../ops/elementwise.ts";
import { Tensor, type Scalar, type TensorOrScalar } from "../../tensor.ts";
import { attach, needsGrad, sumTo, type Formula, type Saves } from "../record.ts";
import type { FormulaNode, Grads } from "../node.ts";
import { is_grad_enabled } from "../grad-mode.ts";
import { asOp } from "../../ops/op-context.ts";
import { checkInplace, rebase } from "./inplace.ts";

type Unary = "neg" | "abs" | "exp" | "log" | "sqrt" | "rsqrt" | "relu" | "sigmoid" | "tanh";

/**
 * A backward formula that PyTorch runs as one fused kernel (one allocation): fused when nothing records
 * (plain backward, so memory matches PyTorch's), composed from differentiable ops under create_graph.
 */
function fused(op: "gelu_backward" | "gelu_tanh_backward" | "threshold_backward" | "sigmoid_backward" | "tanh_backward", composed: (g: Tensor, t: Tensor) => Tensor) {
  return (g: Tensor, t: Tensor) => (is_grad_enabled() ? composed(g, t) : ew.binary(op, g, t));
}

/** name, which tensor the formula needs (input or result), and dL/dx given g and that tensor. */
const UNARY: Record<Unary, [string, "self" | "result" | null, (g: Tensor, t: Tensor) => Tensor]> = {
  neg: ["NegBackward0", null, (g) => g.neg()],
  abs: ["AbsBackward0", "self", (g, x) => g.mul(ew.unary("sign", x))],
  exp: ["ExpBackward0", "result", (g, r) => g.mul(r)],
  log: ["LogBackward0", "self", (g, x) => g.div(x)],
  sqrt: ["SqrtBackward0", "result", (g, r) => g.div(r.mul(2))],
  rsqrt: ["RsqrtBackward0", "result", (g, r) => g.mul(r.pow(3)).mul(-0.5)],
  relu: ["ReluBackward0", "result", fused("threshold_backward", (g, r) => g.mul(r.gt(0)))],
  sigmoid: ["SigmoidBackward0", "result", fused("sigmoid_backward", (g, r) => g.mul(r).mul(r.neg().add(1)))],
  tanh: ["TanhBackward0", "result", fused("tanh_backward", (g, r) => g.mul(r.mul(r).neg().add(1)))],
};

/** The node's formula, made where no tensor handle is in scope (see attach). */
function unaryFormula(op: Unary): Formula {
  const [, saved, formula] = UNARY[op];
  return (n, [g]) => [formula(g!, saved ? n.unpack(saved) : g!)];
}
const UNARY_FORMULA = Object.fromEntries(Object.keys(UNARY).map((op) => [op, unaryFormula(op as Unary)])) as Record<Unary, Formula>;

function attachUnary(op: Unary, x: Tensor, out: Tensor): void {
  const [name, saved] = UNARY[op];
  attach(name, [x], [out], UNARY_FORMULA[op], saved ? { [saved]: saved === "self" ? x : out } : {});
}

export function unary(op: Unary, x: Tensor): Tensor {
  const out = ew.unary(op, x);
  if (needsGrad(x)) attachUnary(op, x, out);
  return out;
}

export function unaryInplace<T extends Tensor>(op: "relu", x: T): T {
  const track = checkInplace(x);
  ew.inplaceUnary(op, x);
  if (track) rebase(x, (prev, out) => attachUnary(op, prev, out));
  return x;
}

export function gelu(x: Tensor, approximate: "none" | "tanh" = "none"): Tensor {
  const out = ew.gelu(x, approximate);
  if (needsGrad(x)) {
    const formula = fused(approximate === "tanh" ? "gelu_tanh_backward" : "gelu_backward",
      (g, x) => g.mul(ew.unary(approximate === "tanh" ? "gelu_tanh_grad" : "gelu_grad", x)));
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

type Binary = "add" | "sub" | "mul" | "div" | "pow" | "maximum" | "minimum";
const BINARY_NAME: Record<Binary, string> = {
  add: "AddBackward0", sub: "SubBackward0", mul: "MulBackward0", div: "DivBackward0", pow: "PowBackward0", maximum: "MaximumBackward0", minimum: "MinimumBackward0",
};

/**
 * Attaches the node of `a op b -> out`. `self` is the tensor to use for a (its value before an in-place
 * write, when the formula needs it). Scalars get an empty edge, as PyTorch 1.13 wraps them.
 */
function attachBinary(op: Binary, a: Tensor, b: TensorOrScalar, out: Tensor, alpha: number, selfForFormula: Tensor): void {
  const bt = b instanceof Tensor ? b : null;
  const scalarPow = op === "pow" && !bt;
  const name = op === "pow" && bt ? "PowBackward1" : BINARY_NAME[op];
  const edges: Array<Tensor | null> = scalarPow ? [a] : [a, bt];
  const saves: Saves = {};
  if (op === "add" || op === "sub") saves.alpha = alpha;
  if (op === "mul" || op === "div" || op === "maximum" || op === "minimum") Object.assign(saves, { self: selfForFormula, other: b });
  if (op === "pow") Object.assign(saves, bt ? { self: selfForFormula, exponent: bt, result: out } : { self: selfForFormula, exponent: b });
  const node = attach(name, edges, [out], BINARY_FORMULA[op], saves);
  node.consts = { aShape: [...a.shape], bShape: bt ? [...bt.shape] : [], alpha };
}

/** Backward of `a op b` (b a tensor or a number); reads everything from the node (see attach). */
function binaryFormula(op: Binary): Formula {
  return (n, [g]) => {
    const G = g!;
    const { aShape, bShape, alpha } = n.consts as { aShape: number[]; bShape: number[]; alpha: number };
    const other = (): TensorOrScalar => n.savedTensor("other") ?? n.value<number>("other");
    switch (op) {
      case "add":
      case "sub":
        return [n.needs(0) ? sumTo(G, aShape) : null, n.needs(1) ? sumTo(G.mul(op === "sub" ? -alpha : alpha), bShape) : null];
      case "mul":
        return [n.needs(0) ? sumTo(G.mul(other()), aShape) : null, n.needs(1) ? sumTo(G.mul(n.unpack("self")), bShape) : null];
      case "div": {
        const o = other();
        return [
          n.needs(0) ? sumTo(G.div(o), aShape) : null,
          n.needs(1) ? sumTo(G.mul(n.unpack("self")).div((o as Tensor).mul(o)).neg(), bShape) : null,
        ];
      }
      case "pow": {
        const self = n.unpack("self");
        const e = n.savedTensor("exponent");
        if (!e) {
          const k = n.value<number>("exponent");
          return [k === 0 ? G.mul(0) : G.mul(self.pow(k - 1)).mul(k)];
        }
        const r = n.unpack("result");
        return [
          n.needs(0) ? sumTo(G.mul(e).mul(self.pow(e.sub(1))), aShape) : null,
          // d/de a^e = a^e log a, taken as 0 where a == 0 and e >= 0 (PyTorch's masking)
          n.needs(1) ? sumTo(ew.where(self.eq(0).mul(e.ge(0)).bool(), 0, G.mul(r).mul(self.log())), bShape) : null,
        ];
      }
      case "maximum":
      case "minimum": {
        const self = n.unpack("self");
        const o = n.unpack("other");
        const pick = op === "maximum" ? self.gt(o) : self.lt(o);
        const tie = self.eq(o);
        const half = G.mul(0.5);
        return [
          n.needs(0) ? sumTo(ew.where(tie, half, G.mul(pick)), aShape) : null,
          n.needs(1) ? sumTo(ew.where(tie, half, G.mul(pick.eq(false).mul(tie.eq(false)))), bShape) : null,
        ];
      }
    }
  };
}
const BINARY_FORMULA = Object.fromEntries(Object.keys(BINARY_NAME).map((op) => [op, binaryFormula(op as Binary)])) as Record<Binary, Formula>;

export function binary(op: Binary, a: Tensor, b: TensorOrScalar, alpha = 1): Tensor {
  const out = ew.binary(op, a, b, alpha);
  if (needsGrad(a, b)) attachBinary(op, a, b, out, alpha, a);
  return out;
}

const rsubFormula: Formula = (n, [g]) => [g!.mul(-n.value<number>("alpha"))];
/** scalar - x (Python's `2 - x`). */
export function rsub(x: Tensor, s: number, alpha = 1): Tensor {
  const out = ew.binary("sub", x, s, 1).neg();
  if (needsGrad(x)) attach("RsubBackward1", [x], [out], rsubFormula, { alpha });
  return out;
}

export function binaryInplace<T extends Tensor>(op: "add" | "sub" | "mul" | "div", self: T, other: TensorOrScalar, alpha = 1): T {
  const track = checkInplace(self, other);
  // mul_/div_ need self's old value when other requires grad: keep a copy (PyTorch's original_self).
  const before = track && (op === "mul" || op === "div") && other instanceof Tensor && other.requires_grad ? ew.copyOf(self) : null;
  ew.inplaceBinary(op, self, other, alpha);
  // x.mul_(x): the other operand is the tensor being written; its history before the write (prev) is
  // what the node needs, and saving x itself would make a cycle through its new grad_fn.
  const same = other instanceof Tensor && other._meta === self._meta;
  if (track) rebase(self, (prev, out) => attachBinary(op, prev, same ? prev : other, out, alpha, before ?? prev), before);
  return self;
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

export function fillInplace<T extends Tensor>(self: T, value: Scalar, name: "FillBackward2" | "ZeroBackward0"): T {
  const track = checkInplace(self);
  ew.fillInplace(self, value);
  if (track) rebase(self, (prev, out) => attach(name, [prev], [out], zeroFormula));
  return self;
}

export function cast(x: Tensor, dtype: Tensor["dtype"]): Tensor {
  const out = ew.cast(x, dtype);
  if (needsGrad(x) && dtype === "float32") attach("ToCopyBackward0", [x], [out], castFormula).consts = { dtype: x.dtype };
  return out;
}
function castFormula(n: FormulaNode, [g]: Grads): Grads {
  return [g!.to((n.consts as { dtype: Tensor["dtype"] }).dtype)];
}
