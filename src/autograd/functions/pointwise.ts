// Differentiable pointwise ops: forward kernel, PyTorch's node name, what is saved, and the backward
// formula, side by side (as tools/autograd/derivatives.yaml does). Formulas are written with tensor ops,
// so under create_graph they are themselves recorded (double backward).

import * as ew from "../../ops/elementwise.ts";
import { Tensor, type Scalar, type TensorOrScalar } from "../../tensor.ts";
import { attach, needsGrad, sumTo } from "../record.ts";
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

function attachUnary(op: Unary, x: Tensor, out: Tensor): void {
  const [name, saved, formula] = UNARY[op];
  attach(name, [x], [out], (n, [g]) => [formula(g!, saved ? n.unpack(saved) : g!)], (n) => {
    if (saved === "self") n.save("self", x);
    if (saved === "result") n.save("result", out, 0);
  });
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
    attach("GeluBackward0", [x], [out], (n, [g]) => [formula(g!, n.unpack("self"))], (n) => {
      n.save("self", x);
      n.saveValue("approximate", approximate);
    });
  }
  return out;
}

type ClampArg = number | null | undefined | { min?: number; max?: number };
function bounds(min: ClampArg, max: number | null | undefined): [number | null, number | null] {
  if (typeof min === "object" && min !== null) return [min.min ?? null, min.max ?? null];
  return [min ?? null, max ?? null];
}
function attachClamp(x: Tensor, out: Tensor, lo: number | null, hi: number | null, savedSelf: Tensor = x): void {
  attach("ClampBackward1", [x], [out], (n, [g]) => {
    const self = n.unpack("self");
    let mask = lo === null ? null : self.ge(lo);
    if (hi !== null) mask = mask ? mask.mul(self.le(hi)) : self.le(hi);
    return [g!.mul(mask!)];
  }, (n) => {
    n.save("self", savedSelf);
    n.saveValue("min", lo);
    n.saveValue("max", hi);
  });
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
  const aShape = [...a.shape];
  const bShape = b instanceof Tensor ? [...b.shape] : [];
  const bt = b instanceof Tensor ? b : null;
  const scalarPow = op === "pow" && !bt;
  const name = op === "pow" && bt ? "PowBackward1" : BINARY_NAME[op];
  const edges: Array<Tensor | null> = scalarPow ? [a] : [a, bt];
  attach(name, edges, [out], (n, [g]) => {
    const G = g!;
    const other = (): TensorOrScalar => (bt ? n.unpack("other") : (b as number));
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
        if (!bt) {
          const e = b as number;
          return [e === 0 ? G.mul(0) : G.mul(self.pow(e - 1)).mul(e)];
        }
        const e = n.unpack("exponent");
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
  }, (n) => {
    if (op === "add" || op === "sub") n.saveValue("alpha", alpha);
    if (op === "mul" || op === "div" || op === "maximum" || op === "minimum") {
      n.save("self", selfForFormula);
      if (bt) n.save("other", bt);
      else n.saveValue("other", b);
    }
    if (op === "pow") {
      n.save("self", selfForFormula);
      if (bt) {
        n.save("exponent", bt);
        n.save("result", out, 0);
      } else n.saveValue("exponent", b);
    }
  });
}

export function binary(op: Binary, a: Tensor, b: TensorOrScalar, alpha = 1): Tensor {
  const out = ew.binary(op, a, b, alpha);
  if (needsGrad(a, b)) attachBinary(op, a, b, out, alpha, a);
  return out;
}

/** scalar - x (Python's `2 - x`). */
export function rsub(x: Tensor, s: number, alpha = 1): Tensor {
  const out = ew.binary("sub", x, s, 1).neg();
  if (needsGrad(x)) attach("RsubBackward1", [x], [out], (_n, [g]) => [g!.mul(-alpha)], (n) => n.saveValue("alpha", alpha));
  return out;
}

export function binaryInplace<T extends Tensor>(op: "add" | "sub" | "mul" | "div", self: T, other: TensorOrScalar, alpha = 1): T {
  const track = checkInplace(self, other);
  // mul_/div_ need self's old value when other requires grad: keep a copy (PyTorch's original_self).
  const before = track && (op === "mul" || op === "div") && other instanceof Tensor && other.requires_grad ? ew.copyOf(self) : null;
  ew.inplaceBinary(op, self, other, alpha);
  if (track) rebase(self, (prev, out) => attachBinary(op, prev, other, out, alpha, before ?? prev), before);
  return self;
}

export const where = asOp("where", function where(cond: Tensor, a: TensorOrScalar, b: TensorOrScalar): Tensor {
  const out = ew.where(cond, a, b);
  if (!needsGrad(a, b)) return out;
  const at = a instanceof Tensor ? a : null;
  const bt = b instanceof Tensor ? b : null;
  const aShape = at ? [...at.shape] : [];
  const bShape = bt ? [...bt.shape] : [];
  attach("WhereBackward0", [at, bt], [out], (n, [g]) => {
    const c = n.unpack("condition");
    return [n.needs(0) ? sumTo(ew.where(c, g!, 0), aShape) : null, n.needs(1) ? sumTo(ew.where(c, 0, g!), bShape) : null];
  }, (n) => n.save("condition", cond));
  return out;
});

/** copy_, fill_, zero_: the written values no longer depend on the old ones. */
export function copyInplace<T extends Tensor>(self: T, src: Tensor): T {
  const track = checkInplace(self, src);
  ew.copyInplace(self, src);
  if (track) {
    const srcShape = [...src.shape];
    rebase(self, (prev, out) => attach("torch::autograd::CopyBackwards", [prev, src], [out], (n, [g]) => [n.needs(0) ? g!.mul(0) : null, n.needs(1) ? sumTo(g!, srcShape) : null]));
  }
  return self;
}

export function fillInplace<T extends Tensor>(self: T, value: Scalar, name: "FillBackward2" | "ZeroBackward0"): T {
  const track = checkInplace(self);
  ew.fillInplace(self, value);
  if (track) rebase(self, (prev, out) => attach(name, [prev], [out], (_n, [g]) => [g!.mul(0)]));
  return self;
}

export function cast(x: Tensor, dtype: Tensor["dtype"]): Tensor {
  const out = ew.cast(x, dtype);
  if (needsGrad(x) && dtype === "float32") attach("ToCopyBackward0", [x], [out], (_n, [g]) => [g!.to(x.dtype)]);
  return out;
}
