// torch.nn.functional: the ops the tutorials' models use, with PyTorch's argument order.

import { RuntimeError } from "../errors.ts";
import { dispatch, f32bits } from "../ops/launch.ts";
import { draw } from "../ops/creation.ts";
import { Tensor, numelOf } from "../tensor.ts";
import { contiguousOf } from "../ops/views.ts";
import { copyOf } from "../ops/elementwise.ts";
import * as rd from "../autograd/functions/reductions.ts";
import * as al from "../autograd/functions/linalg.ts";
import * as nnf from "../autograd/functions/nn.ts";

// The activations are the op table's (one declaration for torch.relu, F.relu and x.relu()).
export { relu, sigmoid, tanh, softmax, log_softmax } from "../api/functions.ts";
export { gelu } from "../api/methods.ts";

/** Layer norm output with the per-row statistics PyTorch's native_layer_norm also returns. */
export function native_layer_norm(x: Tensor, normalized_shape: number[], weight: Tensor | null, bias: Tensor | null, eps: number): [Tensor, Tensor, Tensor] {
  x.check();
  const k = normalized_shape.length;
  const tail = x.shape.slice(x.ndim - k);
  if (k === 0 || x.ndim < k || tail.some((s, i) => s !== normalized_shape[i])) {
    throw new RuntimeError(
      `Given normalized_shape=[${normalized_shape.join(", ")}], expected input with shape [*, ${normalized_shape.join(", ")}], but got input of size[${x.shape.join(", ")}]`,
    );
  }
  for (const [name, p] of [["weight", weight], ["bias", bias]] as const) {
    if (p && (p.check().numel() !== numelOf(normalized_shape) || p.dtype !== "float32")) {
      throw new RuntimeError(`Expected ${name} to be of same shape as normalized_shape, but got ${name} of shape [${p.shape.join(", ")}] and normalized_shape = [${normalized_shape.join(", ")}]`);
    }
  }
  if (x.dtype !== "float32") throw new RuntimeError(`"LayerNormKernelImpl" not implemented for '${x.dtype === "int32" ? "Int" : "Bool"}'`);
  const n = numelOf(normalized_shape);
  const rows = n === 0 ? 0 : x.numel() / n;
  const src = contiguousOf(x);
  const w = weight ? contiguousOf(weight) : null;
  const b = bias ? contiguousOf(bias) : null;
  try {
    const y = Tensor.empty(x.shape);
    const statShape = [...x.shape.slice(0, x.ndim - k), ...normalized_shape.map(() => 1)];
    const mean = Tensor.empty(statShape);
    const rstd = Tensor.empty(statShape);
    // Absent weight/bias bind the input in their slots; the kernel's flags keep them unread.
    dispatch("rows", "layer_norm", [y, src, w ?? src, b ?? src, mean, rstd],
      [rows, n, f32bits(eps), src._offset, w ? 1 : 0, b ? 1 : 0, w?._offset ?? 0, b?._offset ?? 0], rows);
    return [y, mean, rstd];
  } finally {
    for (const t of [src, w, b]) t?.dispose();
  }
}

export function layer_norm(x: Tensor, normalized_shape: number[], weight: Tensor | null = null, bias: Tensor | null = null, eps = 1e-5): Tensor {
  return rd.layerNorm(x, normalized_shape, weight, bias, eps);
}

export function linear(x: Tensor, weight: Tensor, bias: Tensor | null = null): Tensor {
  return al.linear(x, weight, bias);
}

/** Dropout with the generator's (seed, offset): the kept mask is also returned for autograd. */
export function native_dropout(x: Tensor, p: number, train: boolean): [Tensor, Tensor] {
  x.check();
  if (!(p >= 0 && p <= 1)) throw new RuntimeError(`dropout probability has to be between 0 and 1, but got ${p}`);
  const mask = Tensor.empty(x.shape, "bool");
  if (!train || p === 0) return [copyOf(x), mask.fill_(true)];
  const out = Tensor.empty(x.shape);
  if (p === 1) return [out.zero_(), mask.fill_(false)];
  const src = contiguousOf(x);
  try {
    draw(3, out, p, 1 / (1 - p), [src, mask], src._offset);
  } finally {
    src.dispose();
  }
  return [out, mask];
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

export interface LossOpts { reduction?: nnf.Reduction; ignore_index?: number; label_smoothing?: number; weight?: Tensor | null }

export function nll_loss(input: Tensor, target: Tensor, opts: LossOpts = {}): Tensor {
  if (opts.weight) throw new RuntimeError("GradLab's nll_loss does not support class weights yet");
  return nnf.nllLoss(input, target, opts.reduction ?? "mean", opts.ignore_index ?? -100);
}

/** log_softmax over the class dim, then nll_loss: PyTorch's graph (NllLossBackward0 → LogSoftmaxBackward0). */
export function cross_entropy(input: Tensor, target: Tensor, opts: LossOpts = {}): Tensor {
  if (opts.label_smoothing) throw new RuntimeError("GradLab's cross_entropy does not support label_smoothing yet");
  if (target.check().dtype !== "int32") throw new RuntimeError("GradLab's cross_entropy takes int32 class indices as target (class probabilities are not supported yet)");
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
