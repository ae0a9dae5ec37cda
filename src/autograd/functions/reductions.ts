// Differentiable reductions and normalisations (derivatives.yaml's entries for sum, mean, max, var,
// softmax, log_softmax, native_layer_norm, native_dropout).

import * as red from "../../ops/reduce.ts";
import { native_dropout, native_layer_norm, native_layer_norm_backward } from "../../ops/norm.ts";
import { Tensor, numelOf, type DimArg, type ReduceOpts } from "../../tensor.ts";
import { wrapDim } from "../../dims.ts";
import { tensor } from "../../ops/creation.ts";
import { RuntimeError } from "../../errors.ts";
import { asOp } from "../../ops/op-context.ts";
import { SavedOutput, attach, needsGrad } from "../record.ts";
import type { FormulaNode, Grads } from "../node.ts";
import { where } from "../../ops/elementwise.ts";
import { is_grad_enabled } from "../grad-mode.ts";

/** The reduced dims of x (all when dim is undefined), normalised. */
function reducedDims(x: Tensor, dim: DimArg): number[] {
  if (dim === undefined) return x.shape.map((_, i) => i);
  const ds = (Array.isArray(dim) ? dim : [dim]).map((d) => wrapDim(d, Math.max(x.ndim, 1)));
  // A 0-d tensor reduced over dim 0 or -1 is reduced over nothing (PyTorch treats it as 1 element).
  return x.ndim === 0 ? [] : ds;
}

/** g (reduced, maybe without keepdim) broadcast back over x's shape. */
function expandBack(g: Tensor, shape: number[], dims: number[], keepdim: boolean): Tensor {
  let r = g;
  if (!keepdim) for (const d of [...dims].sort((a, b) => a - b)) r = r.unsqueeze(d);
  return r.expand(shape);
}

function splitArgs(dim: DimArg | ReduceOpts | undefined, opts?: ReduceOpts): { dim: DimArg; keepdim: boolean } {
  if (dim !== undefined && typeof dim === "object" && !Array.isArray(dim)) return { dim: dim.dim, keepdim: dim.keepdim ?? false };
  return { dim: dim as DimArg, keepdim: opts?.keepdim ?? false };
}

export function sumOrMean(op: "sum" | "mean", x: Tensor, dimArg?: DimArg | ReduceOpts, opts?: ReduceOpts): Tensor {
  const out = red.reduce(op, x, dimArg, opts);
  if (!needsGrad(x)) return out;
  const { dim, keepdim } = splitArgs(dimArg, opts);
  const dims = reducedDims(x, dim);
  const shape = [...x.shape];
  const count = numelOf(dims.map((d) => shape[d]));
  const whole = dim === undefined;
  const name = `${op === "sum" ? "Sum" : "Mean"}Backward${whole ? 0 : 1}`;
  attach(
    name,
    [x],
    [out],
    (_n, [g]) => {
      const e = expandBack(g!, shape, dims, keepdim || whole);
      // As PyTorch: sum's gradient is an expanded view (no memory), mean's a real division.
      return [op === "mean" ? e.div(count) : e];
    },
    {
      dim: whole ? undefined : dims,
      keepdim: whole ? undefined : keepdim,
      ...(op === "mean" && whole ? { self_numel: numelOf(shape), self_sizes: shape } : { self_sym_sizes: shape }),
      // PyTorch 1.13's MeanBackward1 keeps the whole input alive (for its numel); so does GradLab's.
      self: op === "mean" && !whole ? x : undefined,
    },
  );
  return out;
}

/** prod and prod(dim): ProdBackward0 / ProdBackward1, zero-safe as PyTorch's prod_backward. */
export function prod(x: Tensor, dimArg?: number | ReduceOpts, opts?: ReduceOpts): Tensor {
  const out = red.reduce("prod", x, dimArg, opts);
  if (!needsGrad(x)) return out;
  const { dim, keepdim } = splitArgs(dimArg, opts);
  const whole = dim === undefined;
  const dims = reducedDims(x, dim);
  const node = whole
    ? attach("ProdBackward0", [x], [out], prodFormula, { self: x, result: out })
    : attach("ProdBackward1", [x], [out], prodFormula, { dim: dims[0], keepdim, self: x, result: out });
  node.consts = { shape: [...x.shape], dims, keepdim: keepdim || whole, whole };
  return out;
}

/**
 * d prod / d x_i = prod of the other elements: result / x_i where no element is 0; where exactly one
 * is 0, the product of the non-zero ones at that element and 0 elsewhere; 0 everywhere with two or more.
 */
function prodFormula(n: FormulaNode, [g]: Grads): Grads {
  const { shape, dims, keepdim, whole } = n.consts as { shape: number[]; dims: number[]; keepdim: boolean; whole: boolean };
  const self = n.unpack("self");
  // reduce like the forward did, keeping dims, then broadcast back over the input
  const reduce = (t: Tensor, op: "sum" | "prod") => (whole ? t[op]() : t[op](dims[0], { keepdim: true }));
  const back = (t: Tensor, kept: boolean) => expandBack(t, shape, dims, kept);
  const G = back(g!, keepdim);
  const zero = self.eq(0);
  const zeros = back(reduce(zero.float(), "sum"), true);
  const others = back(reduce(where(zero, 1, self), "prod"), true);
  const noZero = G.mul(back(n.unpack("result"), keepdim)).div(self);
  const oneZero = where(zero, G.mul(others), 0);
  return [where(zeros.eq(0), noZero, where(zeros.eq(1), oneZero, 0))];
}

export function minmax(op: "max" | "min", x: Tensor, dim?: number, opts?: ReduceOpts): Tensor | { values: Tensor; indices: Tensor } {
  const out = red.minmax(op, x, dim, opts);
  if (!needsGrad(x)) return out;
  const Op = op === "max" ? "Max" : "Min";
  if (out instanceof Tensor) {
    // Gradient shared evenly among the elements equal to the extreme (PyTorch's evenly_distribute_backward).
    attach(
      `${Op}Backward1`,
      [x],
      [out],
      (n, [g]) => {
        const self = n.unpack("self");
        const mask = self.eq(n.unpack("result")).float();
        return [mask.mul(g!.div(mask.sum()))];
      },
      { self: x, result: out },
    );
    return out;
  }
  const d = x.ndim === 0 ? 0 : wrapDim(dim!, x.ndim);
  const keepdim = opts?.keepdim ?? false;
  const shape = [...x.shape];
  attach(
    `${Op}Backward0`,
    [x],
    [out.values],
    (n, [g]) => {
      if (shape.length === 0) return [g!]; // a 0-d tensor is its own max
      // Scatter g to the arg positions: a one-hot mask along d from the saved indices.
      const idx = keepdim ? n.unpack("indices") : n.unpack("indices").unsqueeze(d);
      const onehot = positionsAlong(shape, d).eq(idx);
      return [expandBack(g!, shape, [d], keepdim).mul(onehot)];
    },
    { dim: d, keepdim, indices: out.indices, self_sizes: shape },
  );
  return out;
}

/** arange(shape[d]) laid along dim d, broadcastable against a tensor of `shape` (a small exact upload). */
function positionsAlong(shape: number[], d: number): Tensor {
  const ar = tensor(Int32Array.from({ length: shape[d] }, (_, i) => i));
  return ar.reshape(shape.map((_, i) => (i === d ? shape[d] : 1)));
}

type VarOpts = ReduceOpts & { correction?: number; unbiased?: boolean };
export function variance(x: Tensor, dimArg?: DimArg | VarOpts, optsArg?: VarOpts, std = false): Tensor {
  const out = red.variance(x, dimArg, optsArg, std);
  if (!needsGrad(x)) return out;
  const o: VarOpts = dimArg !== undefined && typeof dimArg === "object" && !Array.isArray(dimArg) ? dimArg : { ...optsArg, dim: dimArg as DimArg };
  const correction = o.correction ?? (o.unbiased === false ? 0 : 1);
  const dims = reducedDims(x, o.dim);
  const keepdim = o.keepdim ?? false;
  const shape = [...x.shape];
  const n = numelOf(dims.map((d) => shape[d]));
  const scale = (std ? 1 : 2) / Math.max(n - correction, 0);
  attach(
    std ? "StdBackward0" : "VarBackward0",
    [x],
    [out],
    (node, [g]) => {
      const self = node.unpack("self");
      let gg = expandBack(g!, shape, dims, keepdim);
      if (std) {
        // d std = d var / (2 std); where std is 0 (a constant row) PyTorch masks the gradient to 0
        const r = expandBack(node.unpack("result"), shape, dims, keepdim);
        gg = where(r.eq(0), 0, gg.div(r));
      }
      // a 0-d tensor is its own mean: PyTorch's var_backward gives grad * 2 / (N - correction) there
      if (shape.length === 0) return [gg.mul(std ? 1 : scale)];
      const centered = self.sub(self.mean(dims, { keepdim: true }));
      return [gg.mul(centered).mul(scale)];
    },
    { correction, dim: o.dim === undefined ? null : dims, keepdim, self: x, result: std ? out : undefined },
  );
  return out;
}

export function softmax(x: Tensor, dim: number, log: boolean): Tensor {
  const out = red.softmax(x, dim, log);
  if (!needsGrad(x)) return out;
  const d = x.ndim === 0 ? 0 : wrapDim(dim, x.ndim);
  attach(
    log ? "LogSoftmaxBackward0" : "SoftmaxBackward0",
    [x],
    [out],
    (n, [g]) => {
      const r = n.unpack("result");
      if (!is_grad_enabled()) {
        // Plain backward: one fused kernel, one allocation (PyTorch's _softmax_backward_data).
        const fusedGrad = red.softmaxBackward(g!, r, d, log);
        if (fusedGrad) return [fusedGrad];
      }
      if (log) return [g!.sub(r.exp().mul(g!.sum(d, { keepdim: true })))];
      return [r.mul(g!.sub(g!.mul(r).sum(d, { keepdim: true })))];
    },
    { dim: d, result: out },
  );
  return out;
}

export const layerNorm = asOp(
  "layer_norm",
  function layerNorm(x: Tensor, normalized_shape: number[], weight: Tensor | null, bias: Tensor | null, eps: number): Tensor {
    const [y, mean, rstd] = native_layer_norm(x, normalized_shape, weight, bias, eps);
    if (!needsGrad(x, weight, bias)) {
      mean.dispose();
      rstd.dispose();
      return y;
    }
    const k = normalized_shape.length;
    const lead = x.ndim - k; // not x itself in the closure: the formula below would share it (see attach)
    const normDims = normalized_shape.map((_, i) => lead + i);
    const batchDims = x.shape.slice(0, x.ndim - k).map((_, i) => i);
    const wShape = weight ? [...weight.shape] : bias ? [...bias.shape] : [];
    const hasWeight = weight !== null;
    attach(
      "NativeLayerNormBackward0",
      [x, weight, bias],
      [y],
      (n, [g]) => {
        const input = n.unpack("input");
        if (!is_grad_enabled()) {
          // Plain backward: PyTorch's fused native_layer_norm_backward (the input gradient and the
          // per-column weight/bias sums, no input-sized temporaries).
          const r = native_layer_norm_backward(g!, input, n.unpack("result1"), n.unpack("result2"), hasWeight ? n.unpack("weight") : null, normalized_shape, [
            n.needs(0),
            n.needs(1),
            n.needs(2),
          ]);
          if (r.paramsDone) return [r.dx, r.dw?.reshape(wShape) ?? null, r.db?.reshape(wShape) ?? null];
          const xh = input.sub(n.unpack("result1")).mul(n.unpack("result2"));
          const gradW = n.needs(1) ? (batchDims.length ? g!.mul(xh).sum(batchDims) : g!.mul(xh)).reshape(wShape) : null;
          const gradB = n.needs(2) ? (batchDims.length ? g!.sum(batchDims) : g!.clone()).reshape(wShape) : null;
          return [r.dx, gradW, gradB];
        }
        const xhat = input.sub(n.unpack("result1")).mul(n.unpack("result2"));
        const gw = hasWeight ? g!.mul(n.unpack("weight").reshape(normalized_shape)) : g!;
        const N = numelOf(normalized_shape);
        const gradInput = n.needs(0)
          ? n
              .unpack("result2")
              .div(N)
              .mul(
                gw
                  .mul(N)
                  .sub(gw.sum(normDims, { keepdim: true }))
                  .sub(xhat.mul(gw.mul(xhat).sum(normDims, { keepdim: true }))),
              )
          : null;
        const gradW = n.needs(1) ? (batchDims.length ? g!.mul(xhat).sum(batchDims) : g!.mul(xhat)).reshape(wShape) : null;
        const gradB = n.needs(2) ? (batchDims.length ? g!.sum(batchDims) : g!.clone()).reshape(wShape) : null;
        return [gradInput, gradW, gradB];
      },
      { input: x, weight, bias, result1: new SavedOutput(mean, 1), result2: new SavedOutput(rstd, 2), normalized_shape },
    );
    mean.dispose();
    rstd.dispose();
    return y;
  },
);

export const dropout = asOp("dropout", function dropout(x: Tensor, p: number, training: boolean): Tensor {
  if (!(p >= 0 && p <= 1)) throw new RuntimeError(`dropout probability has to be between 0 and 1, but got ${p}`);
  // As at::dropout: no-op dropout is the input itself (here another handle to it, so that disposing the
  // result leaves the input alone); p = 1 multiplies by a zero tensor (MulBackward0).
  if (!training || p === 0) return x._alias();
  if (p === 1) {
    // The zero is a temporary: MulBackward0 keeps its own reference when it saves it.
    const zero = tensor(0);
    try {
      return x.mul(zero);
    } finally {
      zero.dispose();
    }
  }
  const [out, mask] = native_dropout(x, p, training);
  if (needsGrad(x)) {
    const scale = 1 / (1 - p);
    attach("NativeDropoutBackward0", [x], [out], (n, [g]) => [g!.mul(n.unpack("result1")).mul(scale)], { result1: new SavedOutput(mask, 1), scale });
  }
  mask.dispose();
  return out;
});
