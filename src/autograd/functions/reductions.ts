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
import { divScalar, maskedFill, mulScalar, where } from "./pointwise.ts";
import { enable_grad, is_grad_enabled, no_grad } from "../grad-mode.ts";
import { grad as autogradGrad } from "../api.ts";

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
      return [op === "mean" ? divScalar(e, count) : e];
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
  const zero = self.eq(0);
  const zeros = back(reduce(zero.float(), "sum"), true);
  // Differentiable throughout (where(), not the raw kernel), with the zeros replaced by 1 where it
  // divides or multiplies, so that second derivatives stay finite and on the graph.
  const safe = where(zero, 1, self);
  const others = back(reduce(safe, "prod"), true);
  const factor = where(zeros.eq(0), back(n.unpack("result"), keepdim).div(safe), where(zeros.eq(1), where(zero, others, 0), 0));
  // g broadcast (unsqueezed where the dim was dropped), as PyTorch's prod_backward
  return [(whole || keepdim ? g! : g!.unsqueeze(dims[0])).mul(factor)];
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
        const mask = self.eq(n.unpack("result"));
        // PyTorch's evenly_distribute_backward (its CPU form): zeros.masked_fill_(mask, g / count)
        return [maskedFillValue(mask, g!.div(mask.float().sum()))];
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
      return [scatterAlong(shape, d, idx, keepdim ? g! : g!.unsqueeze(d))];
    },
    { dim: d, keepdim, indices: out.indices, self_sizes: shape },
  );
  return out;
}

/** zeros.masked_fill(mask, value) for a 0-d value; under create_graph MaskedFillBackward1 (an edge to value only). */
function maskedFillValue(mask: Tensor, value: Tensor): Tensor {
  if (!needsGrad(value)) return where(mask, value, 0);
  const r = no_grad(() => where(mask, value, 0));
  attach("MaskedFillBackward1", [null, value], [r], maskedFillValueFormula, { mask });
  return r;
}
const maskedFillValueFormula = (n: FormulaNode, [gg]: Grads): Grads => [null, where(n.unpack("mask"), gg!, 0).sum()];

/**
 * zeros(shape).scatter(d, idx, src) for src with one element along d (the values of max(dim)); under
 * create_graph ScatterBackward0, whose gradient for src is its own gradient gathered at idx.
 */
function scatterAlong(shape: number[], d: number, idx: Tensor, src: Tensor): Tensor {
  const onehot = positionsAlong(shape, d).eq(idx);
  if (!needsGrad(src)) return src.expand(shape).mul(onehot);
  const out = no_grad(() => src.expand(shape).mul(onehot));
  attach("ScatterBackward0", [null, src], [out], scatterFormula, { dim: d, index: idx }).consts = { shape };
  return out;
}
function scatterFormula(n: FormulaNode, [gg]: Grads): Grads {
  const d = n.value<number>("dim");
  const onehot = positionsAlong((n.consts as { shape: number[] }).shape, d).eq(n.unpack("index"));
  return [null, gg!.mul(onehot).sum(d, { keepdim: true })];
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
      if (shape.length === 0) {
        // a 0-d tensor is its own mean: PyTorch's var_backward gives grad * 2 / (N - correction) there
        if (std) gg = where(node.unpack("result").eq(0), 0, gg.div(node.unpack("result")));
        return [gg.mul(std ? 1 : scale)];
      }
      if (std) {
        // PyTorch's std_backward: d std = d var / (2 std), masked to 0 where std is 0 (a constant row)
        const r = expandBack(node.unpack("result"), shape, dims, keepdim);
        gg = maskedFill(gg.div(mulScalar(r, 2, true)), r.eq(0), 0);
      }
      // PyTorch's var_backward: (2 / (N - correction)) * grad * (self - mean), op for op
      const centered = self.sub(self.mean(dims, { keepdim: true }));
      return [mulScalar(gg, 2 / Math.max(n - correction, 0), true).mul(centered)];
    },
    { correction, dim: o.dim === undefined ? null : dims, keepdim, self: x, result: std ? out : undefined },
  );
  return out;
}

export function softmax(x: Tensor, dim: number, log: boolean): Tensor {
  const out = red.softmax(x, dim, log);
  if (!needsGrad(x)) return out;
  const d = x.ndim === 0 ? 0 : wrapDim(dim, x.ndim);
  attach(log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", [x], [out], softmaxFormula, { dim: d, result: out }).consts = { log };
  return out;
}
const softmaxFormula = (n: FormulaNode, [g]: Grads): Grads => [
  softmaxBackwardData(g!, n.unpack("result"), n.value<number>("dim"), (n.consts as { log: boolean }).log),
];

/**
 * _softmax_backward_data / _log_softmax_backward_data: the gradient of (log_)softmax from its output.
 * Under create_graph an op of its own, (Log)SoftmaxBackwardDataBackward0, as in PyTorch.
 */
function softmaxBackwardData(g: Tensor, out: Tensor, d: number, log: boolean): Tensor {
  // The value: PyTorch's _softmax_backward_data, one fused kernel and one allocation where it applies.
  const compute = () =>
    red.softmaxBackward(g, out, d, log) ?? (log ? g.sub(out.exp().mul(g.sum(d, { keepdim: true }))) : out.mul(g.sub(g.mul(out).sum(d, { keepdim: true }))));
  if (!needsGrad(g, out)) return compute();
  const r = no_grad(compute);
  attach(log ? "LogSoftmaxBackwardDataBackward0" : "SoftmaxBackwardDataBackward0", [g, out], [r], softmaxDoubleFormula, {
    dim: d,
    grad_output: g,
    output: out,
  }).consts = { log };
  return r;
}
function softmaxDoubleFormula(n: FormulaNode, [gg]: Grads): Grads {
  const { log } = n.consts as { log: boolean };
  const d = n.value<number>("dim");
  const g = n.unpack("grad_output");
  const out = n.unpack("output");
  if (log) {
    // y = g - exp(out) Σg:  dy/dg = gg - Σ(gg exp(out)),  dy/dout = -gg exp(out) Σg
    const e = out.exp();
    return [
      n.needs(0) ? gg!.sub(gg!.mul(e).sum(d, { keepdim: true })) : null,
      n.needs(1)
        ? gg!
            .mul(e)
            .mul(g.sum(d, { keepdim: true }))
            .neg()
        : null,
    ];
  }
  // y = out (g - Σ g out):  dy/dg = softmax_backward(gg, out),  dy/dout = gg (g - Σ g out) - g Σ(gg out)
  return [
    n.needs(0) ? softmaxBackwardData(gg!, out, d, false) : null,
    n.needs(1) ? gg!.mul(g.sub(g.mul(out).sum(d, { keepdim: true }))).sub(g.mul(gg!.mul(out).sum(d, { keepdim: true }))) : null,
  ];
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
    attach("NativeLayerNormBackward0", [x, weight, bias], [y], layerNormFormula, {
      input: x,
      weight,
      bias,
      result1: new SavedOutput(mean, 1),
      result2: new SavedOutput(rstd, 2),
      normalized_shape,
    }).consts = { wShape: weight ? [...weight.shape] : bias ? [...bias.shape] : normalized_shape, eps };
    mean.dispose();
    rstd.dispose();
    return y;
  },
);

function layerNormFormula(n: FormulaNode, [g]: Grads): Grads {
  const { wShape, eps } = n.consts as { wShape: number[]; eps: number };
  // mean and rstd are not differentiable outputs (PyTorch's NativeLayerNormBackwardBackward0 has no edge to them)
  const mean = n.unpack("result1").detach();
  const rstd = n.unpack("result2").detach();
  const weight = n.savedTensor("weight");
  const mask = [n.needs(0), n.needs(1), n.needs(2)];
  const bias = n.savedTensor("bias");
  return layerNormBackward(g!, n.unpack("input"), mean, rstd, weight, bias, n.value<number[]>("normalized_shape"), mask, wShape, eps);
}

/**
 * native_layer_norm_backward's values as PyTorch computes them: the input gradient per row and the
 * weight/bias gradients per column in fused kernels (no input-sized temporaries), the composite where
 * the kernels do not apply (the weight/bias sums of rows longer than they take).
 */
function layerNormBackwardFused(
  g: Tensor,
  input: Tensor,
  mean: Tensor,
  rstd: Tensor,
  weight: Tensor | null,
  normalized_shape: number[],
  mask: boolean[],
  wShape: number[],
): Grads {
  const r = native_layer_norm_backward(g, input, mean, rstd, weight, normalized_shape, mask as [boolean, boolean, boolean]);
  if (r.paramsDone) return [r.dx, r.dw?.reshape(wShape) ?? null, r.db?.reshape(wShape) ?? null];
  const [, gradW, gradB] = layerNormBackwardComposite(g, input, mean, rstd, weight, normalized_shape, [false, mask[1], mask[2]], wShape);
  return [r.dx, gradW, gradB];
}

/** native_layer_norm_backward from its saved statistics: [grad_input, grad_weight, grad_bias] as `mask` asks. */
function layerNormBackwardComposite(
  g: Tensor,
  input: Tensor,
  mean: Tensor,
  rstd: Tensor,
  weight: Tensor | null,
  normalized_shape: number[],
  mask: boolean[],
  wShape: number[],
): Grads {
  const k = normalized_shape.length;
  const lead = input.ndim - k;
  const normDims = normalized_shape.map((_, i) => lead + i);
  const batchDims = input.shape.slice(0, lead).map((_, i) => i);
  const xhat = input.sub(mean).mul(rstd);
  const gw = weight ? g.mul(weight.reshape(normalized_shape)) : g;
  const N = numelOf(normalized_shape);
  const gradInput = mask[0]
    ? rstd.div(N).mul(
        gw
          .mul(N)
          .sub(gw.sum(normDims, { keepdim: true }))
          .sub(xhat.mul(gw.mul(xhat).sum(normDims, { keepdim: true }))),
      )
    : null;
  const gradW = mask[1] ? (batchDims.length ? g.mul(xhat).sum(batchDims) : g.mul(xhat)).reshape(wShape) : null;
  const gradB = mask[2] ? (batchDims.length ? g.sum(batchDims) : g.clone()).reshape(wShape) : null;
  return [gradInput, gradW, gradB];
}

/**
 * The gradients of layer_norm. Under create_graph an op of its own, NativeLayerNormBackwardBackward0
 * (edges: grad_out, input, mean, rstd, weight, bias, as PyTorch's), whose formula differentiates the
 * composite again, with mean and rstd recomputed from the input.
 */
function layerNormBackward(
  g: Tensor,
  input: Tensor,
  mean: Tensor,
  rstd: Tensor,
  weight: Tensor | null,
  bias: Tensor | null,
  normalized_shape: number[],
  mask: boolean[],
  wShape: number[],
  eps: number,
): Grads {
  if (!needsGrad(g, input, weight)) return layerNormBackwardFused(g, input, mean, rstd, weight, normalized_shape, mask, wShape);
  const outs = no_grad(() => layerNormBackwardFused(g, input, mean, rstd, weight, normalized_shape, mask, wShape));
  // bias has an edge (its gradient is 0) as native_layer_norm_backward takes it, as in PyTorch
  attach("NativeLayerNormBackwardBackward0", [g, input, null, null, weight, bias], outs, layerNormDoubleFormula, {
    grad_out: g,
    input,
    mean,
    normalized_shape,
    rstd,
    weight,
  }).consts = { wShape, eps };
  return outs;
}

function layerNormDoubleFormula(n: FormulaNode, grads: Grads): Grads {
  const { wShape, eps } = n.consts as { wShape: number[]; eps: number };
  const normalized_shape = n.value<number[]>("normalized_shape");
  const create = is_grad_enabled();
  const real = [n.unpack("grad_out"), n.unpack("input"), n.savedTensor("weight")];
  // The tensors themselves when this pass builds a graph (a third derivative), else detached copies.
  const ins = real.map((t) => (t === null ? null : create ? t : t.detach().requires_grad_()));
  const wanted = [0, 1, 2].filter((i) => ins[i]?.requires_grad && n.needs([0, 1, 4][i]));
  const res = enable_grad(() => {
    const [g, x, w] = ins as [Tensor, Tensor, Tensor | null];
    const lead = x.ndim - normalized_shape.length;
    const normDims = normalized_shape.map((_, i) => lead + i);
    const mean = x.mean(normDims, { keepdim: true });
    const rstd = x.var(normDims, { correction: 0, keepdim: true }).add(eps).rsqrt();
    const outs = layerNormBackwardComposite(g, x, mean, rstd, w, normalized_shape, [true, w !== null, grads[2] !== null], wShape);
    const used = outs.map((o, i) => (o && grads[i] ? i : -1)).filter((i) => i >= 0);
    if (!used.length || !wanted.length) return [];
    return autogradGrad(
      used.map((i) => outs[i]!),
      wanted.map((i) => ins[i]!),
      { grad_outputs: used.map((i) => grads[i]!), create_graph: create, retain_graph: create, allow_unused: true },
    );
  });
  const out: Grads = [null, null, null, null, null, null];
  wanted.forEach((i, j) => {
    out[[0, 1, 4][i]] = res[j] ?? null;
  });
  return out;
}

export const dropout = asOp("dropout", function dropout(x: Tensor, p: number, training: boolean): Tensor {
  if (!(p >= 0 && p <= 1)) throw new RuntimeError(`dropout probability has to be between 0 and 1, but got ${p}`);
  // As at::dropout: no-op dropout is the input itself (here another handle to it, so that disposing the
  // result leaves the input alone), and so is dropout of an empty tensor, whatever p; p = 1 multiplies
  // by a zero tensor (MulBackward0).
  if (!training || p === 0 || x.numel() === 0) return x._alias();
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
