// Differentiable nn ops with their own backward nodes (derivatives.yaml's embedding, nll_loss_forward,
// mse_loss): forward kernels from ops/gather.ts and plain tensor ops run without recording, then one
// node with PyTorch's name and saved attributes.

import { type Tensor, numelOf } from "../../tensor.ts";
import { RuntimeError, ValueError } from "../../errors.ts";
import { scope } from "../../memory/lifetime.ts";
import { is_grad_enabled, no_grad } from "../grad-mode.ts";
import { attach, needsGrad, sumTo } from "../record.ts";
import { zerosLike } from "./pointwise.ts";
import type { FormulaNode, Grads } from "../node.ts";
import { indexAddRows, indexSelectRows, nllPick, nllReduce, nllScatter } from "../../ops/gather.ts";
import { broadcastShapes, mseKernel } from "../../ops/elementwise.ts";

export type Reduction = "none" | "mean" | "sum";
/** at::Reduction's enum values, as `_saved_reduction` shows them. */
const REDUCTION_CODE: Record<Reduction, number> = { none: 0, mean: 1, sum: 2 };

function checkReduction(r: string): Reduction {
  if (r !== "none" && r !== "mean" && r !== "sum") throw new ValueError(`${r} is not a valid value for reduction`);
  return r;
}

/** weight[indices]; the gradient is scatter-added into the rows (none into padding_idx's). */
export function embedding(indices: Tensor, weight: Tensor, paddingIdx = -1): Tensor {
  const out = indexSelectRows(weight, indices);
  if (!needsGrad(weight)) return out;
  const [V, D] = weight.shape;
  attach("EmbeddingBackward0", [weight], [out], (n, [g]) => [embeddingDenseBackward(g!, n.unpack("indices"), V, D, paddingIdx)], {
    indices,
    weight,
    padding_idx: paddingIdx,
    scale_grad_by_freq: false,
    sparse: false,
  });
  return out;
}

/** embedding_dense_backward: g's rows added into a [V, D] gradient; under create_graph EmbeddingDenseBackwardBackward0. */
function embeddingDenseBackward(g: Tensor, indices: Tensor, V: number, D: number, paddingIdx: number): Tensor {
  const out = no_grad(() => indexAddRows(V, g.reshape([-1, D]), indices, paddingIdx));
  if (needsGrad(g)) {
    attach("EmbeddingDenseBackwardBackward0", [g], [out], embeddingDoubleFormula, { indices, padding_idx: paddingIdx }).consts = {
      gShape: [...g.shape],
    };
  }
  return out;
}
function embeddingDoubleFormula(n: FormulaNode, [gg]: Grads): Grads {
  // The rows of gg at the indices (0 for padding_idx, whose row got no gradient).
  const indices = n.unpack("indices");
  const pad = n.value<number>("padding_idx");
  const rows = embedding(indices, gg!);
  const kept = pad >= 0 ? rows.mul(indices.ne(pad).unsqueeze(-1)) : rows;
  return [kept.reshape((n.consts as { gShape: number[] }).gShape)];
}

/** nll_loss over log-probabilities [N, C] (or [C]) and int32 class targets [N] (or []). */
export function nllLoss(input: Tensor, target: Tensor, reductionArg: Reduction = "mean", ignoreIndex = -100): Tensor {
  const reduction = checkReduction(reductionArg);
  input.check();
  target.check();
  if (input.ndim < 1 || input.ndim > 2) {
    throw new RuntimeError(
      `GradLab's nll_loss takes input of shape (N, C) or (C), got [${input.shape.join(", ")}]; flatten the extra dims first (input.view(-1, C))`,
    );
  }
  const single = input.ndim === 1;
  if (single ? target.ndim !== 0 : target.ndim !== 1) {
    throw new RuntimeError(
      single ? `0D or 1D target tensor expected, multi-target not supported` : `0D or 1D target tensor expected, multi-target not supported`,
    );
  }
  const x = single ? input.unsqueeze(0) : input;
  const t = single ? target.reshape([1]) : target;
  if (x.shape[0] !== t.shape[0]) throw new ValueError(`Expected input batch_size (${x.shape[0]}) to match target batch_size (${t.shape[0]}).`);
  const C = x.shape[1];
  const { out, total } = no_grad(() =>
    scope(() => {
      // ATen's nll_loss_forward: the loss and the total weight, no per-row temporaries.
      const fusedOut = nllReduce(x, t, ignoreIndex, reduction);
      if (fusedOut) {
        if (reduction !== "none") return { out: fusedOut.out!, total: fusedOut.total };
        const picked = nllPick(x, t, ignoreIndex);
        return { out: single ? picked.reshape([]) : picked, total: fusedOut.total };
      }
      const picked = nllPick(x, t, ignoreIndex);
      const total = t.ne(ignoreIndex).float().sum();
      if (reduction === "none") return { out: single ? picked.reshape([]) : picked, total };
      const s = picked.sum();
      return { out: reduction === "sum" ? s : s.div(total), total };
    }),
  );
  if (single) {
    x.dispose();
    t.dispose();
  }
  if (needsGrad(input)) {
    attach("NllLossBackward0", [input], [out], nllFormula, {
      ignore_index: ignoreIndex,
      reduction: REDUCTION_CODE[reduction],
      self: input,
      target,
      total_weight: total,
      weight: null,
    }).consts = { inShape: [...input.shape], C, reduction };
  }
  total.dispose();
  return out;
}

/** (input - target)² reduced; both sides differentiable, broadcasting as PyTorch's mse_loss does. */
export function mseLoss(input: Tensor, target: Tensor, reductionArg: Reduction = "mean"): Tensor {
  const reduction = checkReduction(reductionArg);
  const shape = broadcastShapes(input.check().shape, target.check().shape);
  const count = numelOf(shape);
  const out = no_grad(() =>
    scope(() => {
      // One unreduced buffer, as ATen's mse_loss (not a difference and then its square).
      const sq = mseKernel("sqdiff", input, target);
      return reduction === "none" ? sq : reduction === "sum" ? sq.sum() : sq.mean();
    }),
  );
  if (!needsGrad(input, target)) return out;
  attach("MseLossBackward0", [input, target], [out], mseFormula, { reduction: REDUCTION_CODE[reduction], self: input, target }).consts = {
    inShape: [...input.shape],
    tShape: [...target.shape],
    count,
  };
  return out;
}

// Formulas at module level: nllLoss and mseLoss hold their inputs in closures (scope), which a formula
// made inside them would share (see autograd/record.ts's attach).
function nllFormula(n: FormulaNode, [g]: Grads): Grads {
  const { inShape, C, reduction } = n.consts as { inShape: number[]; C: number; reduction: Reduction };
  const N = inShape.length === 1 ? 1 : inShape[0];
  const tw = n.unpack("total_weight");
  if (!is_grad_enabled()) {
    // Plain backward: ATen's nll_loss_backward, the zeroed input gradient written in one kernel.
    const tgt = n.unpack("target");
    const coef = reduction === "none" ? g!.reshape([N]) : g!;
    return [nllScatter(coef, tgt.reshape([N]), C, n.value<number>("ignore_index"), N, reduction === "mean" ? tw : null).reshape(inShape)];
  }
  const coef = reduction === "none" ? g!.reshape([N]) : (reduction === "mean" ? g!.div(tw) : g!).reshape([1]).expand([N]);
  const tgt = n.unpack("target");
  const out = no_grad(() => nllScatter(coef, tgt.reshape([N]), C, n.value<number>("ignore_index")).reshape(inShape));
  // Under create_graph, nll_loss_backward is an op of its own (NllLossBackwardBackward0), linear in g.
  const self = n.unpack("self");
  // An edge to self as in PyTorch (its gradient is 0), so the result requires grad whenever self does.
  if (needsGrad(g, self)) {
    attach("NllLossBackwardBackward0", [g, self], [out], nllDoubleFormula, {
      ignore_index: n.value<number>("ignore_index"),
      reduction: n.value<number>("reduction"),
      target: tgt,
      weight: null,
    }).consts = { reduction };
  }
  return [out];
}
function nllDoubleFormula(n: FormulaNode, [gg]: Grads): Grads {
  const { reduction } = n.consts as { reduction: Reduction };
  return [n.needs(0) ? nllLoss(gg!, n.unpack("target"), reduction, n.value<number>("ignore_index")) : null, n.needs(1) ? zerosLike(gg!) : null];
}

function mseFormula(n: FormulaNode, [g]: Grads): Grads {
  const { inShape, tShape, count } = n.consts as { inShape: number[]; tShape: number[]; count: number };
  const norm = n.value<number>("reduction") === REDUCTION_CODE.mean ? 2 / count : 2;
  const self = n.unpack("self");
  const target = n.unpack("target");
  // As PyTorch: mse_loss_backward(g, self, target) for self, mse_loss_backward(g, target, self) for target.
  const reduction = n.value<number>("reduction");
  return [
    n.needs(0) ? sumTo(mseBackward(g!, self, target, norm, reduction), inShape) : null,
    n.needs(1) ? sumTo(mseBackward(g!, target, self, norm, reduction), tShape) : null,
  ];
}

/** mse_loss_backward: norm (self - target) g; under create_graph an op of its own, MseLossBackwardBackward0. */
function mseBackward(g: Tensor, self: Tensor, target: Tensor, norm: number, reduction: number): Tensor {
  // The value: ATen's mse_loss_backward, one fused kernel and one allocation.
  const compute = () => mseKernel("mse_backward", self, target, g, norm);
  if (!needsGrad(g, self, target)) return compute();
  const out = no_grad(compute);
  attach("MseLossBackwardBackward0", [g, self, target], [out], mseDoubleFormula, { grad_output: g, reduction, self, target }).consts = {
    norm,
    gShape: [...g.shape],
    sShape: [...self.shape],
    tShape: [...target.shape],
  };
  return out;
}
function mseDoubleFormula(n: FormulaNode, [gg]: Grads): Grads {
  const { gShape, sShape, tShape, norm } = n.consts as { gShape: number[]; sShape: number[]; tShape: number[]; norm: number };
  const g = n.unpack("grad_output");
  const ggg = n.needs(1) || n.needs(2) ? gg!.mul(g).mul(norm) : null;
  return [
    n.needs(0) ? sumTo(gg!.mul(n.unpack("self").sub(n.unpack("target"))).mul(norm), gShape) : null,
    n.needs(1) ? sumTo(ggg!, sShape) : null,
    n.needs(2) ? sumTo(ggg!.neg(), tShape) : null,
  ];
}
