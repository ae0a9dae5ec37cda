// GradLab's runtime: `import * as torch from "gradlab"`. Importing touches no GPU; the device is
// acquired at the first readback, synchronize() or webgpu.init().

import { Tensor } from "./tensor.ts";
import * as pw from "./autograd/functions/pointwise.ts";
import * as al from "./autograd/functions/linalg.ts";
import { formatTensor } from "./format.ts";
import { pyStr } from "./pystr.ts";
import type { TensorOrScalar, DimArg, ReduceOpts } from "./tensor.ts";
import * as webgpuApi from "./device/api.ts";

export { Tensor };
export * from "./dtype.ts";
export { RuntimeError, IndexError, ValueError, OutOfMemoryError } from "./errors.ts";
export {
  tensor, scalar_tensor, empty, zeros, ones, fullOf as full, empty_like, zeros_like, ones_like, full_like, rand_like,
  randn_like, arange, linspace, rand, randn, randint, manual_seed, initial_seed, get_rng_state, set_rng_state,
} from "./ops/creation.ts";
export { scope, gc } from "./memory/lifetime.ts";
export { _save_runtime_state } from "./runtime-state.ts";
export * as autograd from "./autograd/api.ts";
export { no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled, is_inference_mode_enabled } from "./autograd/grad-mode.ts";
export * as nn from "./nn/index.ts";
export * as utils from "./utils/index.ts";
export * as optim from "./optim/index.ts";
export * as viz from "./viz/index.ts";

export const webgpu = webgpuApi;
/** The article's code says torch.cuda; here it is the WebGPU device. */
export const cuda = webgpuApi;

/** torch.del(t): what Python's `del t` does to the last reference. */
export function del(...ts: Tensor[]): void {
  for (const t of ts) t.dispose();
}

// Functional forms of the Tensor methods, with PyTorch's names.
/** torch.add(a, b, {alpha}): a + alpha * b, broadcasting; b may be a number. Autograd: AddBackward0. As a method: a.add(b). */
export const add = (a: Tensor, b: TensorOrScalar, opts?: { alpha?: number }) => a.add(b, opts);
/** torch.sub(a, b, {alpha}): a - alpha * b, broadcasting. Autograd: SubBackward0. As a method: a.sub(b). */
export const sub = (a: Tensor, b: TensorOrScalar, opts?: { alpha?: number }) => a.sub(b, opts);
/** torch.mul(a, b): elementwise product, broadcasting; saves both operands for backward (MulBackward0). */
export const mul = (a: Tensor, b: TensorOrScalar) => a.mul(b);
/** torch.div(a, b): true division (float32), broadcasting. Autograd: DivBackward0 (saves both operands). */
export const div = (a: Tensor, b: TensorOrScalar) => a.div(b);
/** torch.pow(a, exponent): a number exponent gives PowBackward0 (saves a), a tensor one PowBackward1 (saves a, exponent, result). */
export const pow = (a: Tensor, b: TensorOrScalar) => a.pow(b);
export const maximum = (a: Tensor, b: Tensor) => a.maximum(b);
export const minimum = (a: Tensor, b: Tensor) => a.minimum(b);
export const eq = (a: Tensor, b: TensorOrScalar) => a.eq(b);
export const ne = (a: Tensor, b: TensorOrScalar) => a.ne(b);
export const lt = (a: Tensor, b: TensorOrScalar) => a.lt(b);
export const le = (a: Tensor, b: TensorOrScalar) => a.le(b);
export const gt = (a: Tensor, b: TensorOrScalar) => a.gt(b);
export const ge = (a: Tensor, b: TensorOrScalar) => a.ge(b);
export const neg = (a: Tensor) => a.neg();
export const abs = (a: Tensor) => a.abs();
export const exp = (a: Tensor) => a.exp();
export const log = (a: Tensor) => a.log();
export const sqrt = (a: Tensor) => a.sqrt();
export const rsqrt = (a: Tensor) => a.rsqrt();
/** torch.relu(a): saves its result (ReluBackward0); backward is one fused kernel, one allocation, as in PyTorch. */
export const relu = (a: Tensor) => a.relu();
export const sigmoid = (a: Tensor) => a.sigmoid();
export const tanh = (a: Tensor) => a.tanh();
/** torch.clamp(a, min, max): either bound may be null; saves the input (ClampBackward1). */
export const clamp = (a: Tensor, min?: number | null, max?: number | null) => a.clamp(min, max);
/** torch.where(cond, a, b): a where cond is true, else b (numbers allowed); saves cond (WhereBackward0). */
export const where = (cond: Tensor, a: TensorOrScalar, b: TensorOrScalar) => pw.where(cond, a, b);
/** torch.sum(a, dim?, {keepdim}): over all elements (SumBackward0) or the given dims (SumBackward1). Its gradient is an expanded view: no memory. GradLab: int32 sums return float32 (no int64). */
export const sum = (a: Tensor, dim?: DimArg | ReduceOpts, opts?: ReduceOpts) => a.sum(dim, opts);
/** torch.mean(a, dim?, {keepdim}): float32 only. MeanBackward1 keeps the whole input alive, as PyTorch 1.13 does. */
export const mean = (a: Tensor, dim?: DimArg | ReduceOpts, opts?: ReduceOpts) => a.mean(dim, opts);
export const argmax = (a: Tensor, dim?: number, opts?: ReduceOpts) => a.argmax(dim, opts);
export const argmin = (a: Tensor, dim?: number, opts?: ReduceOpts) => a.argmin(dim, opts);
export const max = (a: Tensor) => a.max();
export const min = (a: Tensor) => a.min();
/** torch.softmax(a, dim): saves its result (SoftmaxBackward0), which the backward formula needs. */
export const softmax = (a: Tensor, dim: number) => a.softmax(dim);
/** torch.log_softmax(a, dim): saves its result (LogSoftmaxBackward0). */
export const log_softmax = (a: Tensor, dim: number) => a.log_softmax(dim);
/**
 * torch.matmul(a, b): the product of 1-D to N-D tensors with PyTorch's rules: dot (1-D·1-D), mv, mm, and
 * batched products with broadcast batch dims (folded into one mm when b is 2-D, as ATen folds them).
 * The graph has ATen's nodes (DotBackward0, MvBackward0, MmBackward0, BmmBackward0, UnsafeViewBackward0)
 * and saves the operands. GradLab: float32 only; on lavapipe a 1024² product runs at ~15–17 GFLOP/s.
 */
export const matmul = (a: Tensor, b: Tensor) => a.matmul(b);
/** torch.mm(a, b): 2-D matrix product; saves both (MmBackward0); gradients come in each operand's layout, as ATen's. */
export const mm = (a: Tensor, b: Tensor) => a.mm(b);
/** torch.bmm(a, b): batched 3-D product [B, n, m] @ [B, m, p]; saves both (BmmBackward0). */
export const bmm = (a: Tensor, b: Tensor) => a.bmm(b);
export const addmm = al.addmm;
/** torch.transpose(a, d0, d1): a view (shares storage and version counter); TransposeBackward0 saves nothing. */
export const transpose = (a: Tensor, d0: number, d1: number) => a.transpose(d0, d1);
export const t = (a: Tensor) => a.t();
export const permute = (a: Tensor, dims: number[]) => a.permute(dims);
/** torch.reshape(a, shape): a view when the strides allow (no memory), otherwise a copy (CloneBackward0 + UnsafeViewBackward0). */
export const reshape = (a: Tensor, shape: number[]) => a.reshape(shape);
export const unsqueeze = (a: Tensor, dim: number) => a.unsqueeze(dim);
export const squeeze = (a: Tensor, dim?: number) => a.squeeze(dim);
export const narrow = (a: Tensor, dim: number, start: number, length: number) => a.narrow(dim, start, length);
export const select = (a: Tensor, dim: number, index: number) => a.select(dim, index);
export const flatten = (a: Tensor, start = 0, end = -1) => a.flatten(start, end);
/** torch.clone(a): a copy in new memory (CloneBackward0). */
export const clone = (a: Tensor) => a.clone();

/** Python's print(): tensors in PyTorch's repr, other values as Python's str() shows them. */
export async function print(...values: unknown[]): Promise<void> {
  const parts = await Promise.all(values.map((v) => (v instanceof Tensor ? v.repr() : pyStr(v))));
  console.log(parts.join(" "));
}
export { f, pyStr as str, pyRepr as repr } from "./pystr.ts";

export { formatTensor };
