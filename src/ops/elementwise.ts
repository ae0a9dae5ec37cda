// Broadcasting elementwise ops, their in-place variants, copies and casts. Type promotion and error
// texts follow ATen (TensorIterator, ExpandUtils.cpp).

import { promoteTypes, promoteWithScalar, type DType } from "../dtype.ts";
import { pyTypeName } from "../pystr.ts";
import { RuntimeError, TypeError_ } from "../errors.ts";
import { contiguousStrides, Tensor, type Scalar, type TensorOrScalar } from "../tensor.ts";
import { elementwise } from "./elementwise-launch.ts";
import { BINARY_CODE, UNARY_CODE, binaryIntMath, binaryResult, floatingResult, type BinaryKernel, type UnaryKernel } from "./kernel-codes.ts";

export type UnaryOp = UnaryKernel;
export type BinaryOp = BinaryKernel;

const typeName: Record<DType, string> = { float32: "Float", int32: "Int", bool: "Bool" };

/** ATen's infer_size: the broadcast shape of a and b, or its error. */
export function broadcastShapes(a: readonly number[], b: readonly number[]): number[] {
  const n = Math.max(a.length, b.length);
  const out = new Array<number>(n);
  for (let i = n - 1; i >= 0; i--) {
    const da = a[i - n + a.length] ?? 1;
    const db = b[i - n + b.length] ?? 1;
    if (da !== db && da !== 1 && db !== 1) {
      throw new RuntimeError(`The size of tensor a (${da}) must match the size of tensor b (${db}) at non-singleton dimension ${i}`);
    }
    out[i] = da === 1 ? db : da;
  }
  return out;
}

/** t's strides when read over `shape` (0 on broadcast dims). */
function stridesOver(t: Tensor, shape: readonly number[]): number[] {
  const lead = shape.length - t.ndim;
  return shape.map((s, i) => (i < lead || t.shape[i - lead] !== s ? 0 : t._strides[i - lead]));
}

/**
 * The strides of an elementwise result, as ATen's TensorIterator lays it out: the dims ordered as the
 * inputs' strides order them (the first input that tells two dims apart decides; broadcast dims and
 * equal strides defer to the next input), then dense in that order. So x.t().exp() is laid out as
 * x.t() is, and .view() refuses on it exactly where PyTorch refuses.
 */
function resultStrides(shape: readonly number[], inputs: readonly Tensor[]): number[] {
  const nd = shape.length;
  if (denseRowMajor(shape, inputs)) return contiguousStrides(shape);
  const strides = inputs.map((t) => stridesOver(t, shape));
  // should_swap in TensorIterator::reorder_dimensions: > 0 when dim0 should come after dim1 (faster first).
  const compare = (d0: number, d1: number): number => {
    for (const s of strides) {
      const a = s[d0];
      const b = s[d1];
      if (a === 0 || b === 0) continue;
      if (a < b) return -1;
      if (a > b) return 1;
      if (shape[d0] > shape[d1]) return 1;
    }
    return 0;
  };
  // perm[0] is the fastest-moving dim; start from the row-major order and insertion-sort as ATen does.
  const perm = Array.from({ length: nd }, (_, i) => nd - 1 - i);
  for (let i = 1; i < nd; i++) {
    let d1 = i;
    for (let d0 = i - 1; d0 >= 0; d0--) {
      const c = compare(perm[d0], perm[d1]);
      if (c > 0) {
        [perm[d0], perm[d1]] = [perm[d1], perm[d0]];
        d1 = d0;
      } else if (c < 0) break;
    }
  }
  const out = new Array<number>(nd);
  let acc = 1;
  for (const d of perm) {
    out[d] = acc;
    acc *= Math.max(shape[d], 1);
  }
  return out;
}

/**
 * Whether resultStrides' ordering is row-major without sorting: at most one dim, or every input of
 * `shape` itself, row-major, with every dim larger than 1 (its strides then strictly decrease, so
 * TensorIterator's insertion sort swaps nothing).
 */
function denseRowMajor(shape: readonly number[], inputs: readonly Tensor[]): boolean {
  if (shape.length <= 1) return true;
  for (const t of inputs) {
    if (t.shape.length !== shape.length) return false;
    let acc = 1;
    for (let d = shape.length - 1; d >= 0; d--) {
      if (shape[d] < 2 || t.shape[d] !== shape[d] || t._strides[d] !== acc) return false;
      acc *= shape[d];
    }
  }
  return true;
}

/** A new elementwise result over `shape`, laid out after its inputs (resultStrides). */
function emptyResult(shape: readonly number[], dtype: DType, inputs: readonly Tensor[]): Tensor {
  return Tensor.empty(shape, dtype, inputs.length ? resultStrides(shape, inputs) : undefined);
}

function checkWritable(out: Tensor): void {
  if (out.shape.some((s, i) => s > 1 && out._strides[i] === 0)) {
    throw new RuntimeError(
      "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.",
    );
  }
}

/** ATen's is_non_overlapping_and_dense: the elements fill [offset, offset + numel) once each, in some
 *  order of the dimensions. */
function denseInSomeOrder(t: Tensor): boolean {
  const dims = t.shape.map((s, i) => [s, t._strides[i]] as const).filter(([s]) => s !== 1);
  dims.sort((a, b) => a[1] - b[1]);
  let expected = 1;
  for (const [s, st] of dims) {
    if (st !== expected) return false;
    expected *= s;
  }
  return true;
}

/**
 * ATen's assert_no_partial_overlap (MemoryOverlap.cpp's get_overlap_status): an input may be the output
 * itself (the same memory with the same strides), but an input that shares some of the output's memory
 * with another layout would be read after it is overwritten. As ATen, only two dense layouts are
 * compared; where either has gaps the answer is "too hard" and the op runs (`x[::2].add_(x[1::2])`).
 */
function checkNoPartialOverlap(input: Tensor, out: Tensor): void {
  if (input === out || input.storage !== out.storage || input.numel() === 0 || out.numel() === 0) return;
  if (!denseInSomeOrder(input) || !denseInSomeOrder(out)) return;
  const a0 = input._offset;
  const a1 = a0 + input.numel();
  const b0 = out._offset;
  const b1 = b0 + out.numel();
  const sameStrides = input.ndim === out.ndim && input._strides.every((s, i) => s === out._strides[i]);
  if (a0 === b0 && a1 === b1 && sameStrides) return;
  if (a0 < b1 && b0 < a1) {
    throw new RuntimeError(
      "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.",
    );
  }
}

function checkCast(result: DType, out: Tensor): void {
  if (promoteTypes(result, out.dtype) !== out.dtype) {
    throw new RuntimeError(`result type ${typeName[result]} can't be cast to the desired output type ${typeName[out.dtype]}`);
  }
}

function checkInplaceShape(out: Tensor, shape: readonly number[]): void {
  if (shape.length !== out.ndim || shape.some((s, i) => s !== out.shape[i])) {
    throw new RuntimeError(`output with shape [${out.shape.join(", ")}] doesn't match the broadcast shape [${shape.join(", ")}]`);
  }
}

/**
 * The kernels' constants, one object per combination: launch.ts finds an op's pipeline by this object's
 * identity (no key string per dispatch).
 */
const unaryConstants: Array<Record<string, number>> = [];
const binaryConstants: Array<Record<string, number>> = [];
const MSE_BACKWARD = { TERNARY: 1 };
const SQDIFF = { TERNARY: 2 };
const WHERE = {};

function unaryInto(op: UnaryOp, out: Tensor, x: Tensor | null, s0 = 0, s1 = 0): void {
  const code = UNARY_CODE[op];
  elementwise("unary", (unaryConstants[code] ??= { OP: code }), out, x ? [{ t: x, strides: stridesOver(x, out.shape) }] : [], [s0, s1]);
}

export function unary(op: UnaryOp, x: Tensor): Tensor {
  x.check();
  if (op === "neg" && x.dtype === "bool") {
    throw new RuntimeError(
      "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
    );
  }
  const dtype = floatingResult(op) ? "float32" : x.dtype;
  const out = emptyResult(x.shape, dtype, [x]);
  unaryInto(op, out, x);
  return out;
}

export function gelu(x: Tensor, approximate: "none" | "tanh" = "none"): Tensor {
  if (approximate !== "none" && approximate !== "tanh") throw new RuntimeError(`approximate argument must be either none or tanh.`);
  return unary(approximate === "tanh" ? "gelu_tanh" : "gelu", x);
}

type ClampArg = number | null | undefined | { min?: number; max?: number };
function clampBounds(min: ClampArg, max: number | null | undefined): [number, number] {
  const o = typeof min === "object" && min !== null ? min : { min: min ?? undefined, max: max ?? undefined };
  // PyTorch's argument parser refuses anything but numbers (and None) for the bounds (torch 1.13's words).
  const kind = (v: unknown) => pyTypeName(v);
  for (const v of [o.min, o.max]) {
    if (v !== undefined && v !== null && typeof v !== "number") {
      const got =
        typeof min === "object" && min !== null ? `min=${kind(o.min)}, max=${kind(o.max)}` : max === undefined ? kind(min) : `${kind(min)}, ${kind(max)}`;
      throw new TypeError_(
        `clamp() received an invalid combination of arguments - got (${got}), but expected one of: (Tensor input, Number min, Number max), (Tensor input, Tensor min, Tensor max)`,
      );
    }
  }
  if (o.min === undefined && o.max === undefined) throw new RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None");
  return [o.min ?? NaN, o.max ?? NaN];
}

export function clamp(x: Tensor, min: ClampArg, max: number | null | undefined): Tensor {
  x.check();
  const [lo, hi] = clampBounds(min, max);
  const out = emptyResult(x.shape, x.dtype, [x]);
  unaryInto("clamp", out, x, lo, hi);
  return out;
}

export function clampInplace<T extends Tensor>(x: T, min: ClampArg, max: number | null | undefined): T {
  x.check();
  checkWritable(x);
  const [lo, hi] = clampBounds(min, max);
  unaryInto("clamp", x, x, lo, hi);
  x._bump_version();
  return x;
}

export function inplaceUnary<T extends Tensor>(op: UnaryOp, x: T): T {
  x.check();
  checkWritable(x);
  unaryInto(op, x, x);
  x._bump_version();
  return x;
}

function resultType(op: BinaryOp, a: Tensor, b: TensorOrScalar): DType {
  const t = b instanceof Tensor ? promoteTypes(a.dtype, b.dtype) : promoteWithScalar(a.dtype, b);
  return binaryResult(op) === "float" ? "float32" : t;
}

function binaryInto(op: BinaryOp, out: Tensor, a: Tensor, b: TensorOrScalar, alpha: number, compute: DType): void {
  const intMath = compute !== "float32" && binaryIntMath(op) ? 1 : 0;
  const code = BINARY_CODE[op];
  const bScalar = b instanceof Tensor ? 0 : 1;
  const constants = (binaryConstants[code * 4 + bScalar * 2 + intMath] ??= { OP: code, B_SCALAR: bScalar, INT_MATH: intMath });
  if (b instanceof Tensor) {
    elementwise(
      "binary",
      constants,
      out,
      [
        { t: a, strides: stridesOver(a, out.shape) },
        { t: b, strides: stridesOver(b, out.shape) },
      ],
      [0, alpha],
    );
  } else {
    elementwise("binary", constants, out, [{ t: a, strides: stridesOver(a, out.shape) }], [Number(b), alpha]);
  }
}

function checkOperand(b: unknown, op: string): void {
  if (b instanceof Tensor) b.check();
  else if (typeof b !== "number" && typeof b !== "boolean") {
    throw new TypeError_(`${op}(): argument 'other' must be a Tensor or a number, not ${b === null ? "null" : typeof b}`);
  }
}

export function binary(op: BinaryOp, a: Tensor, b: TensorOrScalar, alpha = 1): Tensor {
  a.check();
  checkOperand(b, op);
  const shape = b instanceof Tensor ? broadcastShapes(a.shape, b.shape) : [...a.shape];
  const compute = resultType(op, a, b);
  const out = emptyResult(shape, binaryResult(op) === "bool" ? "bool" : compute, b instanceof Tensor ? [a, b] : [a]);
  binaryInto(op, out, a, b, alpha, compute);
  return out;
}

/** out += t, for a kernel that accumulates its own fresh result in parts (no version bump: out is not user-visible yet). */
export function accumulateInto(out: Tensor, t: Tensor): void {
  binaryInto("add", out, out, t, 1, "float32");
}

/** out = a + alpha * b into a fresh float32 `out` (which may be b itself): addmm's epilogue, no new allocation. */
export function addInto(out: Tensor, a: Tensor, b: Tensor, alpha: number): void {
  binaryInto("add", out, a, b, alpha, "float32");
}

export function inplaceBinary<T extends Tensor>(op: BinaryOp, self: T, other: TensorOrScalar, alpha = 1): T {
  self.check();
  checkOperand(other, `${op}_`);
  // TensorIterator's order: the output's own overlap, the inputs' overlap with it, shapes, then types
  checkWritable(self);
  if (other instanceof Tensor) checkNoPartialOverlap(other, self);
  if (other instanceof Tensor) checkInplaceShape(self, broadcastShapes(self.shape, other.shape));
  const compute = resultType(op, self, other);
  checkCast(compute, self);
  binaryInto(op, self, self, other, alpha, compute);
  self._bump_version();
  return self;
}

export function fillInplace<T extends Tensor>(self: T, value: Scalar): T {
  self.check();
  if (typeof value !== "number" && typeof value !== "boolean") {
    throw new TypeError_(
      `fill_() received an invalid combination of arguments - got (${value === null || value === undefined ? "NoneType" : typeof value === "string" ? "str" : typeof value}), but expected one of: (Number value), (Tensor value)`,
    );
  }
  checkInt32(Number(value), self.dtype, "int");
  checkWritable(self);
  unaryInto("fill", self, null, Number(value));
  self._bump_version();
  return self;
}

export function copyInplace<T extends Tensor>(self: T, src: Tensor): T {
  self.check();
  if (!(src instanceof Tensor)) throw new TypeError_("copy_(): argument 'src' must be a Tensor");
  src.check();
  checkWritable(self);
  checkNoPartialOverlap(src, self);
  checkInplaceShape(self, broadcastShapes(self.shape, src.shape));
  unaryInto("copy", self, src);
  self._bump_version();
  return self;
}

/** A contiguous copy (also how contiguous() materialises a non-contiguous view). */
export function copyOf(x: Tensor): Tensor {
  x.check();
  const out = Tensor.empty(x.shape, x.dtype);
  unaryInto("copy", out, x);
  return out;
}

/** Writes src (cast) into a tensor just made by the caller (its first write: no version bump). */
export function copyInto(out: Tensor, src: Tensor): void {
  unaryInto("copy", out, src);
}

export function cast(x: Tensor, dtype: DType): Tensor {
  x.check();
  const out = emptyResult(x.shape, dtype, [x]);
  unaryInto("copy", out, x);
  return out;
}

/** PyTorch refuses an int32 value outside [-2^31, 2^31 - 1] instead of wrapping it. */
export function checkInt32(v: number, dtype: DType, name = "int32"): void {
  if (dtype === "int32" && Number.isFinite(v) && (Math.trunc(v) > 2147483647 || Math.trunc(v) < -2147483648)) {
    throw new RuntimeError(`value cannot be converted to type ${name} without overflow`);
  }
}

export function full(shape: readonly number[], value: Scalar, dtype: DType): Tensor {
  checkInt32(Number(value), dtype, "int");
  const out = Tensor.empty(shape, dtype);
  fillNew(out, value);
  return out;
}

/** Fills a tensor just made by the caller (its first write: no version bump, as ATen's out= kernels). */
export function fillNew(out: Tensor, value: Scalar): void {
  unaryInto("fill", out, null, Number(value));
}

/**
 * The fused MSE kernels (float32, one allocation each, as ATen's): `mse_backward` is
 * norm * (a - b) * g (mse_loss_backward's grad_input; g broadcast), `sqdiff` is (a - b)^2.
 */
export function mseKernel(kind: "mse_backward" | "sqdiff", a: Tensor, b: Tensor, g: Tensor | null = null, norm = 1): Tensor {
  let shape = broadcastShapes(a.check().shape, b.check().shape);
  if (g) shape = broadcastShapes(shape, g.check().shape);
  const out = emptyResult(shape, "float32", g ? [a, b, g] : [a, b]);
  const third = g ?? b;
  elementwise(
    "where3",
    kind === "mse_backward" ? MSE_BACKWARD : SQDIFF,
    out,
    [a, b, third].map((t) => ({ t, strides: stridesOver(t, shape) })),
    [norm, 0],
  );
  return out;
}

export function where(cond: Tensor, a: TensorOrScalar, b: TensorOrScalar): Tensor {
  cond.check();
  if (cond.dtype !== "bool") {
    throw new RuntimeError(`where expected condition to be a boolean tensor, but got a tensor with dtype ${typeName[cond.dtype]}`);
  }
  const made: Tensor[] = [];
  const asTensor = (v: TensorOrScalar, other: TensorOrScalar): Tensor => {
    if (v instanceof Tensor) return v.check();
    const dt = other instanceof Tensor ? promoteWithScalar(other.dtype, v) : "float32";
    const t = full([], v, dt);
    made.push(t);
    return t;
  };
  try {
    const ta = asTensor(a, b);
    const tb = asTensor(b, a);
    const shape = broadcastShapes(broadcastShapes(cond.shape, ta.shape), tb.shape);
    const out = emptyResult(shape, promoteTypes(ta.dtype, tb.dtype), [cond, ta, tb]);
    elementwise(
      "where3",
      WHERE,
      out,
      [cond, ta, tb].map((t) => ({ t, strides: stridesOver(t, shape) })),
    );
    return out;
  } finally {
    for (const t of made) t.dispose();
  }
}
