// torch.nn.functional: the ops the tutorials' models use, with PyTorch's argument order.

import { RuntimeError } from "../errors.ts";
import type { Tensor } from "../tensor.ts";
import * as rd from "../autograd/functions/reductions.ts";
import * as al from "../autograd/functions/linalg.ts";
import * as nnf from "../autograd/functions/nn.ts";

// The activations are the op table's (one declaration for torch.relu, F.relu and x.relu()).
export { relu, sigmoid, tanh, softmax, log_softmax } from "../api/functions.ts";
export { gelu } from "../api/methods.ts";
export { native_layer_norm, native_dropout } from "../ops/norm.ts";

export function layer_norm(x: Tensor, normalized_shape: number[], weight: Tensor | null = null, bias: Tensor | null = null, eps = 1e-5): Tensor {
  return rd.layerNorm(x, normalized_shape, weight, bias, eps);
}

export function linear(x: Tensor, weight: Tensor, bias: Tensor | null = null): Tensor {
  return al.linear(x, weight, bias);
}

export function dropout(x: Tensor, p = 0.5, training = true): Tensor {
  return rd.dropout(x, p, training);
}

// ---- embedding and losses (autograd/functions/nn.ts holds their backward nodes) ----

export function embedding(input: Tensor, weight: Tensor, padding_idx: number | null = null): Tensor {
  let pad = padding_idx ?? -1;
  if (padding_idx !== null) {
    const V = weight.shape[0];
    if (padding_idx >= V || padding_idx < -V) throw new RuntimeError("Padding_idx must be within num_embeddings");
    if (padding_idx < 0) pad = V + padding_idx;
  }
  return nnf.embedding(input, weight, pad);
}

export interface LossOpts {
  reduction?: nnf.Reduction;
  ignore_index?: number;
  label_smoothing?: number;
  weight?: Tensor | null;
}

export function nll_loss(input: Tensor, target: Tensor, opts: LossOpts = {}): Tensor {
  if (opts.weight) throw new RuntimeError("GradLab's nll_loss does not support class weights yet");
  return nnf.nllLoss(input, target, opts.reduction ?? "mean", opts.ignore_index ?? -100);
}

/** log_softmax over the class dim, then nll_loss: PyTorch's graph (NllLossBackward0 → LogSoftmaxBackward0). */
export function cross_entropy(input: Tensor, target: Tensor, opts: LossOpts = {}): Tensor {
  if (opts.label_smoothing) throw new RuntimeError("GradLab's cross_entropy does not support label_smoothing yet");
  if (target.check().dtype !== "int32")
    throw new RuntimeError("GradLab's cross_entropy takes int32 class indices as target (class probabilities are not supported yet)");
  const logp = input.log_softmax(input.ndim === 1 ? 0 : 1);
  try {
    return nll_loss(logp, target, opts);
  } finally {
    logp.dispose();
  }
}

export function mse_loss(input: Tensor, target: Tensor, opts: { reduction?: nnf.Reduction } = {}): Tensor {
  return nnf.mseLoss(input, target, opts.reduction ?? "mean");
}
