// Reductions over dims (with keepdim), softmax and log_softmax. The input is laid out as rows of
// reduced elements (kept dims first); rows that are very long and few are reduced in two passes so
// that the GPU has enough parallel work (kernels-wgsl/reduce.wgsl).

import { dtypeCode, type DType } from "../dtype.ts";
import { IndexError, RuntimeError } from "../errors.ts";
import { Tensor, numelOf, type DimArg, type ReduceOpts } from "../tensor.ts";
import { coalesce, dispatch, f32bits, fitsOneBinding, maxBindingBytes } from "./launch.ts";
import { contiguousOf, permute, reshape } from "./views.ts";
import { wrapDim } from "../dims.ts";
import { fillNew, unary } from "./elementwise.ts";
import { REDUCE_CODE } from "./kernel-codes.ts";

/** mean is a sum scaled in the kernel. */
const OPS = { ...REDUCE_CODE, mean: REDUCE_CODE.sum };
type ReduceOp = keyof typeof OPS;
const CHUNK = 1024;
/** At most this many partial results per row: the first pass's scratch stays a few KiB (PyTorch's
 * global-reduce staging buffer is similarly small), so a sum does not show up in the peak. */
const MAX_CHUNKS = 1024;

function dimsOf(x: Tensor, dim: DimArg): number[] {
  if (dim === undefined) return x.shape.map((_, i) => i);
  const list = Array.isArray(dim) ? dim : [dim];
  const w = list.map((d) => wrapDim(d, x.ndim));
  if (new Set(w).size !== w.length) throw new RuntimeError(`dim ${w.find((d, i) => w.indexOf(d) !== i)} appears multiple times in the list of dims`);
  return x.ndim === 0 ? [] : w;
}

function splitArgs<O extends ReduceOpts>(dim: DimArg | O | undefined, opts: O | undefined): { dim: DimArg; opts: O } {
  if (dim !== undefined && typeof dim === "object" && !Array.isArray(dim)) return { dim: dim.dim, opts: dim };
  return { dim: dim as DimArg, opts: (opts ?? {}) as O };
}

function outShape(x: Tensor, dims: number[], keepdim: boolean): number[] {
  const out: number[] = [];
  x.shape.forEach((s, i) => {
    if (!dims.includes(i)) out.push(s);
    else if (keepdim) out.push(1);
  });
  return out;
}

/** Records the row reduction of x over dims into `out` (contiguous, shape = kept dims). */
function reduceInto(op: ReduceOp, x: Tensor, dims: number[], out: Tensor, scale: number): void {
  if (x.numel() === 0) {
    // Nothing to read (an empty tensor has no memory): each row is the reduction of no elements, as
    // PyTorch gives it: sum 0, prod 1, mean and var NaN. (max/min/argmax of nothing raised before.)
    if (out.numel() > 0) fillNew(out, op === "sum" ? 0 : op === "prod" ? 1 : NaN);
    return;
  }
  const kept = x.shape.map((_, i) => i).filter((i) => !dims.includes(i));
  let src = x;
  const temps: Tensor[] = [];
  let rows = numelOf(kept.map((i) => x.shape[i]));
  const len = numelOf(dims.map((i) => x.shape[i]));
  // Try to address x directly: kept dims must coalesce to one row stride, reduced dims to one element stride.
  const ck = coalesce(
    kept.map((i) => x.shape[i]),
    [kept.map((i) => x._strides[i])],
  );
  const cr = coalesce(
    dims.map((i) => x.shape[i]),
    [dims.map((i) => x._strides[i])],
  );
  let rowStride = ck.shape.length === 0 ? 0 : ck.strides[0][0];
  let es = cr.shape.length === 0 ? 1 : cr.strides[0][0];
  // Over the binding limit, rows must be contiguous to run in windows (a strided row spans the tensor).
  const strided = (es !== 1 || (ck.shape.length > 0 && rowStride !== len)) && !fitsOneBinding([x]);
  if (ck.shape.length > 1 || cr.shape.length > 1 || strided) {
    const p = permute(x, [...kept, ...dims]);
    src = contiguousOf(p);
    temps.push(p, src);
    rowStride = len;
    es = 1;
  }
  const params = (rowsN: number, rowLen: number, rs: number, off: number, e: number, idt: DType, odt: DType, chunks: number, total: number, s0: number) => [
    rowsN,
    rowLen,
    f32bits(s0),
    rs,
    off,
    e,
    0,
    dtypeCode[idt],
    dtypeCode[odt],
    chunks,
    total,
  ];
  /** What row reduction r reads of its input (rows of `chunks` chunks of `len`, see reduce.wgsl). */
  const rowsExtent =
    (off: number, rs: number, e: number, len: number, chunks: number, total: number) =>
    (k: number, r0: number, r1: number): [number, number] => {
      if (k === 0) return [r0, r1 - 1];
      const q0 = Math.floor(r0 / chunks);
      const q1 = Math.floor((r1 - 1) / chunks);
      const c0 = r0 % chunks;
      const c1 = (r1 - 1) % chunks;
      const last = Math.max(Math.min(total, (c1 + 1) * len) - 1, 0);
      if (q0 === q1) return [off + q0 * rs + c0 * len * e, off + q0 * rs + Math.max(last, c0 * len) * e];
      return [off + q0 * rs + Math.min(c0 * len * e, rs), off + q1 * rs + Math.max(total - 1, 0) * e];
    };
  const chunkable = op === "sum" || op === "mean" || op === "max" || op === "min" || op === "prod";
  // A row longer than one binding may cover is reduced in chunks that each fit a window.
  const maxChunk = Math.floor(maxBindingBytes() / 8);
  const chunked = chunkable && ((rows < 256 && len > 4 * CHUNK) || (len > maxChunk && !fitsOneBinding([src])));
  try {
    if (chunked) {
      const chunkLen = Math.min(Math.max(CHUNK, Math.ceil(len / MAX_CHUNKS)), maxChunk);
      const chunks = Math.ceil(len / chunkLen);
      const partial = Tensor.empty([rows, chunks], src.dtype === "float32" || out.dtype === "float32" ? "float32" : "int32");
      temps.push(partial);
      dispatch(
        "reduce",
        "reduce_rows",
        [partial, src],
        params(rows * chunks, chunkLen, rowStride, src._offset, es, src.dtype, partial.dtype, chunks, len, 1),
        rows * chunks,
        { OP: OPS[op] },
        { extent: rowsExtent(src._offset, rowStride, es, chunkLen, chunks, len) },
      );
      dispatch(
        "reduce",
        "reduce_rows",
        [out, partial],
        params(rows, chunks, chunks, 0, 1, partial.dtype, out.dtype, 1, chunks, scale),
        rows,
        { OP: OPS[op] },
        { extent: rowsExtent(0, chunks, 1, chunks, 1, chunks) },
      );
    } else {
      rows = Math.max(rows, 1);
      dispatch(
        "reduce",
        "reduce_rows",
        [out, src],
        params(rows, len, rowStride, src._offset, es, src.dtype, out.dtype, 1, len, scale),
        rows,
        { OP: OPS[op] },
        { extent: rowsExtent(src._offset, rowStride, es, len, 1, len) },
      );
    }
  } finally {
    for (const t of temps) if (t !== x) t.dispose();
  }
}

export function reduce(op: "sum" | "mean" | "prod", x: Tensor, dimArg?: DimArg | ReduceOpts, optsArg?: ReduceOpts): Tensor {
  x.check();
  const { dim, opts } = splitArgs(dimArg, optsArg);
  const dims = dimsOf(x, dim);
  // PyTorch sums and multiplies integers and bools in int64, and prints the result as an integer
  // tensor. GradLab has no int64: its integer dtype, int32, stands in (as for argmax's indices), so the
  // result is an integer tensor that prints without a decimal point; unlike int64 it wraps around past
  // 2^31 - 1, as torch.sum(x, dtype=torch.int32) does. {dtype} chooses the arithmetic, as in PyTorch.
  const asked = (opts as { dtype?: DType }).dtype;
  if (asked !== undefined && asked !== "float32" && asked !== "int32") throw new RuntimeError(`${op}(): dtype must be float32 or int32, got ${String(asked)}`);
  if (op === "mean" && (asked ?? x.dtype) !== "float32") {
    const got = asked ?? x.dtype;
    throw new RuntimeError(
      `mean(): could not infer output dtype. ${asked ? "Optional" : "Input"} dtype must be either a floating point or complex dtype. Got: ${got === "int32" ? "Int" : "Bool"}`,
    );
  }
  const dtype: DType = asked ?? (x.dtype === "float32" ? "float32" : "int32");
  const out = Tensor.empty(outShape(x, dims, opts.keepdim ?? false), dtype);
  const count = numelOf(dims.map((i) => x.shape[i]));
  reduceInto(op === "mean" ? "mean" : op, x, dims, out, op === "mean" ? 1 / count : 1);
  return out;
}

function checkNonEmpty(name: string, x: Tensor, dim: number | undefined): void {
  if (dim === undefined && x.numel() === 0 && (name === "argmax" || name === "argmin")) {
    throw new IndexError(`${name}(): Expected reduction dim to be specified for input.numel() == 0.`);
  }
  if (dim === undefined && x.numel() === 0) {
    throw new RuntimeError(`${name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.`);
  }
  if (dim !== undefined && x.ndim > 0 && x.shape[wrapDim(dim, x.ndim)] === 0) {
    throw new IndexError(`${name}(): Expected reduction dim ${wrapDim(dim, x.ndim)} to have non-zero size.`);
  }
}

export function minmax(op: "max" | "min", x: Tensor, dim?: number, opts?: ReduceOpts): Tensor | { values: Tensor; indices: Tensor } {
  x.check();
  checkNonEmpty(op, x, dim);
  if (dim === undefined) {
    const out = Tensor.empty([], x.dtype);
    reduceInto(op, x, dimsOf(x, undefined), out, 1);
    return out;
  }
  const dims = dimsOf(x, dim);
  const shape = outShape(x, dims, opts?.keepdim ?? false);
  const values = Tensor.empty(shape, x.dtype);
  const indices = Tensor.empty(shape, "int32");
  reduceInto(op, x, dims, values, 1);
  reduceInto(op === "max" ? "argmax" : "argmin", x, dims, indices, 1);
  return { values, indices };
}

export function arg(op: "argmax" | "argmin", x: Tensor, dim?: number, opts?: ReduceOpts): Tensor {
  x.check();
  checkNonEmpty(op, x, dim);
  const dims = dimsOf(x, dim);
  // Without dim, PyTorch returns the index into the flattened tensor.
  const src = dim === undefined ? reshape(x, [-1]) : x;
  try {
    const shape = dim === undefined ? (opts?.keepdim ? x.shape.map(() => 1) : []) : outShape(x, dims, opts?.keepdim ?? false);
    const out = Tensor.empty(shape, "int32");
    reduceInto(op, src, dim === undefined ? [0] : dims, out, 1);
    return out;
  } finally {
    if (src !== x) src.dispose();
  }
}

type VarOpts = ReduceOpts & { correction?: number; unbiased?: boolean };
export function variance(x: Tensor, dimArg?: DimArg | VarOpts, optsArg?: VarOpts, std = false): Tensor {
  x.check();
  const { dim, opts } = splitArgs<VarOpts>(dimArg, optsArg);
  if (x.dtype !== "float32") throw new RuntimeError(`std and var only support floating point and complex dtypes`);
  const correction = opts.correction ?? (opts.unbiased === false ? 0 : 1);
  const dims = dimsOf(x, dim);
  const out = Tensor.empty(outShape(x, dims, opts.keepdim ?? false), "float32");
  reduceInto("var", x, dims, out, correction);
  if (!std) return out;
  try {
    return unary("sqrt", out);
  } finally {
    out.dispose();
  }
}

export function softmax(x: Tensor, dim: number, log: boolean): Tensor {
  x.check();
  if (x.dtype !== "float32") {
    throw new RuntimeError(`"${log ? "log_softmax" : "softmax"}_lastdim_kernel_impl" not implemented for '${x.dtype === "int32" ? "Int" : "Bool"}'`);
  }
  const d = x.ndim === 0 ? 0 : wrapDim(dim, x.ndim);
  // Over the binding limit a row strided across the tensor (dim not last) cannot run in windows:
  // move dim last (a contiguous copy), normalise rows, and move it back (another copy).
  const inner0 = numelOf(x.shape.slice(d + 1));
  if (inner0 > 1 && x.shape[d] > 1 && !fitsOneBinding([x]) && x.shape[d] * inner0 * 4 > maxBindingBytes()) {
    const order = x.shape.map((_, i) => i).filter((i) => i !== d);
    order.push(d);
    const back = x.shape.map((_, i) => (i < d ? i : i === d ? x.ndim - 1 : i - 1));
    const moved = permute(x, order);
    let rowsOut: Tensor | null = null;
    let view: Tensor | null = null;
    try {
      rowsOut = softmax(moved, -1, log);
      view = permute(rowsOut, back);
      return contiguousOf(view);
    } finally {
      moved.dispose();
      rowsOut?.dispose();
      view?.dispose();
    }
  }
  const src = contiguousOf(x);
  try {
    const out = Tensor.empty(x.shape, "float32");
    const n = x.ndim === 0 ? 1 : x.shape[d];
    const inner = numelOf(x.shape.slice(d + 1));
    const rows = n === 0 ? 0 : x.numel() / n;
    const extent = (k: number, r0: number, r1: number): [number, number] => {
      const off = k === 0 ? 0 : src._offset;
      const o0 = Math.floor(r0 / inner);
      const o1 = Math.floor((r1 - 1) / inner);
      if (o0 === o1) return [off + o0 * n * inner + (r0 % inner), off + o0 * n * inner + (n - 1) * inner + ((r1 - 1) % inner)];
      return [off + o0 * n * inner, off + (o1 + 1) * n * inner - 1];
    };
    dispatch("rows", "softmax", [out, src], [rows, n, inner, src._offset, 0], rows, { LOG: log ? 1 : 0 }, { extent });
    return out;
  } finally {
    src.dispose();
  }
}
