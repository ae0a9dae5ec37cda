// Differentiable nn ops with their own backward nodes (derivatives.yaml's embedding, nll_loss_forward,
// mse_loss): forward kernels from ops/gather.ts and plain tensor ops run without recording, then one
// node with PyTorch's name and saved attributes.

import { type Tensor, numelOf } from "../../tensor.ts";
import { RuntimeError, ValueError } from "../../errors.ts";
import { scope } from "../../memory/lifetime.ts";
import { is_grad_enabled, no_grad } from "../grad-mode.ts";
import { attach, needsGrad, sumTo } from "../record.ts";
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
  attach("EmbeddingBackward0", [weight], [out], (n, [g]) => [indexAddRows(V, g!.reshape([-1, D]), n.unpack("indices"), paddingIdx)], {
    indices,
    weight,
    padding_idx: paddingIdx,
    scale_grad_by_freq: false,
    sparse: false,
  });
  return out;
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
  return [nllScatter(coef, tgt.reshape([N]), C, n.value<number>("ignore_index")).reshape(inShape)];
}

function mseFormula(n: FormulaNode, [g]: Grads): Grads {
  const { inShape, tShape, count } = n.consts as { inShape: number[]; tShape: number[]; count: number };
  const norm = n.value<number>("reduction") === REDUCTION_CODE.mean ? 2 / count : 2;
  const self = n.unpack("self");
  const target = n.unpack("target");
  if (!is_grad_enabled()) {
    // Plain backward: ATen's mse_loss_backward, one fused kernel and one allocation per input (the
    // target's gradient is mse_loss_backward(grad, target, self), as derivatives.yaml has it).
    return [
      n.needs(0) ? sumTo(mseKernel("mse_backward", self, target, g!, norm), inShape) : null,
      n.needs(1) ? sumTo(mseKernel("mse_backward", target, self, g!, norm), tShape) : null,
    ];
  }
  const gi = self.sub(target).mul(norm).mul(g!);
  return [n.needs(0) ? sumTo(gi, inShape) : null, n.needs(1) ? sumTo(gi.neg(), tShape) : null];
}
