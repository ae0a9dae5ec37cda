// torch.nn.functional: the ops the tutorials' models use, with PyTorch's argument order. Keyword
// arguments may also come as a trailing options object; every option is checked (src/kwargs.ts): one
// GradLab does not support raises, none is dropped.

import { RuntimeError } from "../errors.ts";
import type { Tensor } from "../tensor.ts";
import * as rd from "../autograd/functions/reductions.ts";
import * as al from "../autograd/functions/linalg.ts";
import * as nnf from "../autograd/functions/nn.ts";
import * as api from "../api/functions.ts";
import { gelu as geluOp } from "../api/methods.ts";
import { no_grad } from "../autograd/grad-mode.ts";
import { ones_like, tensor } from "../ops/creation.ts";
import { native_dropout } from "../ops/norm.ts";
import { TypeError_ } from "../errors.ts";
import { checkKwargs, flag, isFalse, isNone, isOpts } from "../kwargs.ts";

export { native_layer_norm, native_dropout } from "../ops/norm.ts";

type Opts = Record<string, unknown>;

/** Python's arity error for a function given more positional arguments than it takes. */
function arity(fn: string, takes: number, args: unknown[]): void {
  if (args.length > takes) {
    throw new TypeError_(`${fn}() takes ${takes} positional argument${takes === 1 ? "" : "s"} but ${args.length} were given`);
  }
}

/**
 * Positional arguments after the tensor(s), then an optional trailing options object: the named
 * values, positional first, keyword second (Python refuses both; so does this).
 */
function params(fn: string, names: readonly string[], args: unknown[], unsupported: Readonly<Record<string, (v: unknown) => boolean>> = {}): Opts {
  const last = args[args.length - 1];
  const kw = args.length > 0 && isOpts(last) ? (last as Opts) : null;
  const pos = kw ? args.slice(0, -1) : args;
  arity(fn, names.length, pos);
  checkKwargs(fn, kw, names, unsupported);
  const out: Opts = {};
  pos.forEach((v, i) => {
    out[names[i]] = v;
  });
  for (const [k, v] of Object.entries(kw ?? {})) {
    if (k in out) throw new TypeError_(`${fn}() got multiple values for argument '${k}'`);
    out[k] = v;
  }
  return out;
}

/** F.relu(input, inplace=False): `F.relu(x, true)` or `F.relu(x, {inplace: true})` writes x (ReluBackward0 on its new version). */
export function relu(x: Tensor, ...args: Array<boolean | Opts>): Tensor {
  const p = params("relu", ["inplace"], args);
  return flag("relu", "inplace", p.inplace) ? x.relu_() : api.relu(x);
}

/** F.sigmoid(input). */
export function sigmoid(x: Tensor, ...args: unknown[]): Tensor {
  arity("sigmoid", 1, [x, ...args]);
  return api.sigmoid(x);
}

/** F.tanh(input). */
export function tanh(x: Tensor, ...args: unknown[]): Tensor {
  arity("tanh", 1, [x, ...args]);
  return api.tanh(x);
}

/** F.gelu(input, approximate='none'). */
export function gelu(x: Tensor, ...args: Array<string | Opts>): Tensor {
  const p = params("gelu", ["approximate"], args);
  const a = p.approximate ?? "none";
  if (a !== "none" && a !== "tanh") throw new RuntimeError("approximate argument must be either none or tanh.");
  return geluOp(x, { approximate: a });
}

function softmaxArgs(fn: string, x: Tensor, args: unknown[]): number {
  const p = params(fn, ["dim", "_stacklevel", "dtype"], args);
  if (p.dtype !== undefined && p.dtype !== null && p.dtype !== "float32") {
    throw new RuntimeError(`GradLab's ${fn}() computes in float32 only, not dtype=${String(p.dtype)}`);
  }
  if (p.dim === undefined || p.dim === null) {
    // PyTorch's _get_softmax_dim (with its deprecation warning): 0 for 0-, 1- and 3-d inputs, else 1.
    return x.ndim === 0 || x.ndim === 1 || x.ndim === 3 ? 0 : 1;
  }
  if (typeof p.dim !== "number") throw new TypeError_(`${fn}(): argument 'dim' must be int, not ${typeof p.dim}`);
  return p.dim;
}

/** F.softmax(input, dim, dtype=None). */
export function softmax(x: Tensor, ...args: unknown[]): Tensor {
  return api.softmax(x, softmaxArgs("softmax", x, args));
}

/** F.log_softmax(input, dim, dtype=None). */
export function log_softmax(x: Tensor, ...args: unknown[]): Tensor {
  return api.log_softmax(x, softmaxArgs("log_softmax", x, args));
}

/** F.layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5). */
export function layer_norm(x: Tensor, normalized_shape: number[], ...args: Array<Tensor | number | null | Opts>): Tensor {
  const p = params("layer_norm", ["weight", "bias", "eps"], args);
  return rd.layerNorm(x, normalized_shape, (p.weight as Tensor | null) ?? null, (p.bias as Tensor | null) ?? null, (p.eps as number | undefined) ?? 1e-5);
}

/** F.linear(input, weight, bias=None). */
export function linear(x: Tensor, weight: Tensor, ...args: Array<Tensor | null | Opts>): Tensor {
  const p = params("linear", ["bias"], args);
  return al.linear(x, weight, (p.bias as Tensor | null) ?? null);
}

/**
 * F.dropout(input, p=0.5, training=True, inplace=False). In place, as at::dropout_: x.mul_(noise) with
 * noise = bernoulli(1 - p) / (1 - p), so the node is MulBackward0 on x's new version.
 */
export function dropout(x: Tensor, ...args: Array<number | boolean | Opts>): Tensor {
  const o = params("dropout", ["p", "training", "inplace"], args);
  const p = (o.p as number | undefined) ?? 0.5;
  const training = o.training === undefined ? true : flag("dropout", "training", o.training);
  if (!flag("dropout", "inplace", o.inplace)) return rd.dropout(x, p, training);
  if (!(p >= 0 && p <= 1)) throw new RuntimeError(`dropout probability has to be between 0 and 1, but got ${p}`);
  if (!training || p === 0 || x.numel() === 0) return x;
  const noise = no_grad(() => {
    if (p === 1) return tensor(0);
    const one = ones_like(x);
    const [scaled, mask] = native_dropout(one, p, true);
    one.dispose();
    mask.dispose();
    return scaled;
  });
  try {
    return x.mul_(noise);
  } finally {
    noise.dispose();
  }
}

// ---- embedding and losses (autograd/functions/nn.ts holds their backward nodes) ----

const EMBEDDING_UNSUPPORTED = { max_norm: isNone, norm_type: (v: unknown) => v === 2, scale_grad_by_freq: isFalse, sparse: isFalse };

/** F.embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False). */
export function embedding(input: Tensor, weight: Tensor, ...args: Array<number | boolean | null | Opts>): Tensor {
  const names = ["padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse"];
  const p = params("embedding", names, args, EMBEDDING_UNSUPPORTED);
  for (const [k, isDefault] of Object.entries(EMBEDDING_UNSUPPORTED)) {
    const v = p[k];
    if (v !== undefined && !isDefault(v)) throw new RuntimeError(`GradLab's embedding() does not support ${k}=${String(v)} (only its default)`);
  }
  const padding_idx = (p.padding_idx as number | null | undefined) ?? null;
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
  size_average?: null;
  reduce?: null;
}

/** The deprecated size_average/reduce keywords: accepted only as None (their default). */
const LEGACY = { size_average: isNone, reduce: isNone };

export function nll_loss(input: Tensor, target: Tensor, opts: LossOpts = {}): Tensor {
  checkKwargs("nll_loss", opts, ["reduction", "ignore_index"], { weight: isNone, ...LEGACY });
  return nnf.nllLoss(input, target, opts.reduction ?? "mean", opts.ignore_index ?? -100);
}

/** log_softmax over the class dim, then nll_loss: PyTorch's graph (NllLossBackward0 → LogSoftmaxBackward0). */
export function cross_entropy(input: Tensor, target: Tensor, opts: LossOpts = {}): Tensor {
  checkKwargs("cross_entropy", opts, ["reduction", "ignore_index"], { weight: isNone, label_smoothing: (v) => v === 0, ...LEGACY });
  if (target.check().dtype !== "int32")
    throw new RuntimeError("GradLab's cross_entropy takes int32 class indices as target (class probabilities are not supported yet)");
  const logp = input.log_softmax(input.ndim === 1 ? 0 : 1);
  try {
    return nnf.nllLoss(logp, target, opts.reduction ?? "mean", opts.ignore_index ?? -100);
  } finally {
    logp.dispose();
  }
}

export function mse_loss(input: Tensor, target: Tensor, opts: { reduction?: nnf.Reduction; size_average?: null; reduce?: null } = {}): Tensor {
  checkKwargs("mse_loss", opts, ["reduction"], LEGACY);
  return nnf.mseLoss(input, target, opts.reduction ?? "mean");
}
