// Views: new shape/stride/offset over the same storage and version counter; they cost no memory.
// Error texts follow ATen's (TensorShape.cpp, WrapDimUtils.h).

import { IndexError, RuntimeError } from "../errors.ts";
import { contiguousStrides, numelOf, Tensor, type Shape } from "../tensor.ts";
import { wrapDim } from "../dims.ts";
import { copyOf } from "./elementwise.ts";

/** Accepts `view(2, 3)` and `view([2, 3])`. */
export function flatShape(args: Array<number | number[] | readonly number[]>): number[] {
  return args.length === 1 && Array.isArray(args[0]) ? [...args[0]] : (args as number[]);
}

/** A new tensor over base's storage and version counter; `isView` false for detach() (no `_base`). */
export function makeView(base: Tensor, shape: Shape, strides: Shape, offset: number, isView = true): Tensor {
  base.check();
  const v = new Tensor(base.storage, shape, strides, offset, base.dtype, base._versionCounter, isView ? (base._base ?? base) : null);
  // As in PyTorch, a view (detach() included) of an inference tensor is an inference tensor, made
  // inside inference mode or not: it shares memory that autograd never tracked.
  if (base._meta.inference) {
    v._meta.inference = true;
    v._meta.inferenceDetached = !isView;
  }
  return v;
}

export const alias = (t: Tensor) => t._alias();

/** contiguous() without autograd: forward kernels use it on their inputs. */
export function contiguousOf(t: Tensor): Tensor {
  // An empty tensor is contiguous whatever its strides (as in PyTorch): nothing to copy.
  return t.check().is_contiguous() || t.numel() === 0 ? t._alias() : copyOf(t);
}

function inferSize(shape: number[], numel: number): number[] {
  let infer = -1;
  let known = 1;
  shape.forEach((s, i) => {
    if (s === -1) {
      if (infer >= 0) throw new RuntimeError("only one dimension can be inferred");
      infer = i;
    } else if (!Number.isInteger(s) || s < 0) {
      throw new RuntimeError(`invalid shape dimension ${s}`);
    } else known *= s;
  });
  const out = [...shape];
  if (infer >= 0 && known !== 0 && numel % known === 0) out[infer] = numel / known;
  if ((infer >= 0 && (known === 0 || numel % known !== 0)) || (infer < 0 && known !== numel)) {
    throw new RuntimeError(`shape '[${shape.join(", ")}]' is invalid for input of size ${numel}`);
  }
  return out;
}

/** ATen's computeStride: strides for viewing (shape, strides) as newShape, or null if impossible. */
function computeStride(oldShape: Shape, oldStrides: Shape, newShape: Shape): number[] | null {
  if (oldShape.length === 0) return newShape.map(() => 1);
  const numel = numelOf(oldShape);
  if (numel === 0) return contiguousStrides(newShape);
  const newStrides = new Array<number>(newShape.length);
  let viewD = newShape.length - 1;
  let chunkBase = oldStrides[oldStrides.length - 1];
  let tensorNumel = 1;
  let viewNumel = 1;
  for (let d = oldShape.length - 1; d >= 0; d--) {
    tensorNumel *= oldShape[d];
    if (d === 0 || (oldShape[d - 1] !== 1 && oldStrides[d - 1] !== tensorNumel * chunkBase)) {
      while (viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] === 1)) {
        newStrides[viewD] = viewNumel * chunkBase;
        viewNumel *= newShape[viewD];
        viewD--;
      }
      if (viewNumel !== tensorNumel) return null;
      if (d > 0) {
        chunkBase = oldStrides[d - 1];
        tensorNumel = 1;
        viewNumel = 1;
      }
    }
  }
  if (viewD !== -1) return null;
  return newStrides;
}

export function view(t: Tensor, shape: Shape): Tensor {
  t.check();
  const newShape = inferSize([...shape], t.numel());
  const strides = computeStride(t.shape, t._strides, newShape);
  if (!strides) {
    throw new RuntimeError(
      "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
    );
  }
  return makeView(t, newShape, strides, t._offset);
}

export function reshape(t: Tensor, shape: Shape): Tensor {
  t.check();
  const newShape = inferSize([...shape], t.numel());
  const strides = computeStride(t.shape, t._strides, newShape);
  if (strides) return makeView(t, newShape, strides, t._offset);
  const c = contiguousOf(t);
  try {
    return view(c, newShape);
  } finally {
    c.dispose();
  }
}

export function flatten(t: Tensor, start: number, end: number): Tensor {
  if (t.ndim === 0) return reshape(t, [1]);
  const s = wrapDim(start, t.ndim);
  const e = wrapDim(end, t.ndim);
  if (s > e) throw new RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim");
  const shape = [...t.shape.slice(0, s), numelOf(t.shape.slice(s, e + 1)), ...t.shape.slice(e + 1)];
  return reshape(t, shape);
}

export function permute(t: Tensor, dims: number[]): Tensor {
  t.check();
  if (dims.length !== t.ndim) {
    throw new RuntimeError(
      `permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = ${t.ndim} is not equal to len(dims) = ${dims.length}`,
    );
  }
  const w = dims.map((d) => wrapDim(d, t.ndim));
  if (new Set(w).size !== w.length) throw new RuntimeError("permute(): duplicate dims are not allowed.");
  return makeView(
    t,
    w.map((d) => t.shape[d]),
    w.map((d) => t._strides[d]),
    t._offset,
  );
}

export function transpose(t: Tensor, d0: number, d1: number): Tensor {
  if (t.ndim === 0) {
    wrapDim(d0, 0);
    wrapDim(d1, 0);
    return makeView(t, t.shape, t._strides, t._offset); // a view of its own, as for squeeze
  }
  const a = wrapDim(d0, t.ndim);
  const b = wrapDim(d1, t.ndim);
  const order = t.shape.map((_, i) => i);
  [order[a], order[b]] = [order[b], order[a]];
  return permute(t, order);
}

export function t(x: Tensor): Tensor {
  if (x.ndim > 2) throw new RuntimeError(`t() expects a tensor with <= 2 dimensions, but self is ${x.ndim}D`);
  return x.ndim < 2 ? makeView(x, x.shape, x._strides, x._offset) : transpose(x, 0, 1);
}

export function expand(t: Tensor, sizes: Shape): Tensor {
  t.check();
  if (sizes.length < t.ndim) {
    throw new RuntimeError(
      `expand(torch.FloatTensor{[${t.shape.join(", ")}]}, size=[${sizes.join(", ")}]): the number of sizes provided (${sizes.length}) must be greater or equal to the number of dimensions in the tensor (${t.ndim})`,
    );
  }
  // torch 1.13 lets -1 through for a 0-dim tensor and then fails computing the element count.
  if (t.ndim === 0 && sizes.includes(-1)) throw new RuntimeError("numel: integer multiplication overflow");
  const lead = sizes.length - t.ndim;
  const shape: number[] = [];
  const strides: number[] = [];
  sizes.forEach((s, i) => {
    const j = i - lead;
    const have = j >= 0 ? t.shape[j] : 1;
    const target = s === -1 ? have : s;
    if (j < 0 && s === -1) {
      throw new RuntimeError(`The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension ${i}`);
    }
    if (have !== target && have !== 1) {
      throw new RuntimeError(
        `The expanded size of the tensor (${target}) must match the existing size (${have}) at non-singleton dimension ${i}.  Target sizes: [${sizes.join(", ")}].  Tensor sizes: [${t.shape.join(", ")}]`,
      );
    }
    shape.push(target);
    strides.push(j >= 0 && have === target ? t._strides[j] : 0);
  });
  return makeView(t, shape, strides, t._offset);
}

export function unsqueeze(t: Tensor, dim: number): Tensor {
  const d = wrapDim(dim, t.ndim + 1);
  const shape = [...t.shape];
  const strides = [...t._strides];
  const st = d < t.ndim ? t.shape[d] * t._strides[d] : 1;
  shape.splice(d, 0, 1);
  strides.splice(d, 0, st);
  return makeView(t, shape, strides, t._offset);
}

export function squeeze(t: Tensor, dim?: number): Tensor {
  if (dim === undefined) {
    const keep = t.shape.map((s, i) => (s !== 1 ? i : -1)).filter((i) => i >= 0);
    return makeView(
      t,
      keep.map((i) => t.shape[i]),
      keep.map((i) => t._strides[i]),
      t._offset,
    );
  }
  const d = wrapDim(dim, t.ndim);
  // Nothing to squeeze: still a new view (PyTorch's too), never the input's own handle and autograd
  // identity, whose grad_fn the caller's SqueezeBackward node would overwrite.
  if (t.ndim === 0 || t.shape[d] !== 1) return makeView(t, t.shape, t._strides, t._offset);
  return makeView(
    t,
    t.shape.filter((_, i) => i !== d),
    t._strides.filter((_, i) => i !== d),
    t._offset,
  );
}

export function slice(t: Tensor, dim: number, start = 0, end = Number.MAX_SAFE_INTEGER, step = 1): Tensor {
  if (t.ndim === 0) throw new IndexError("slice() cannot be applied to a 0-dim tensor.");
  const d = wrapDim(dim, t.ndim);
  if (step <= 0) throw new RuntimeError("slice step must be positive");
  const size = t.shape[d];
  const clampIdx = (i: number) => Math.min(Math.max(i < 0 ? i + size : i, 0), size);
  const s = clampIdx(start);
  const e = Math.max(clampIdx(end), s);
  const shape = [...t.shape];
  const strides = [...t._strides];
  shape[d] = Math.ceil((e - s) / step);
  strides[d] *= step;
  return makeView(t, shape, strides, t._offset + s * t._strides[d]);
}

export function narrow(t: Tensor, dim: number, start: number, length: number): Tensor {
  if (t.check().ndim === 0) throw new RuntimeError("narrow() cannot be applied to a 0-dim tensor.");
  const d = wrapDim(dim, t.ndim);
  const size = t.shape[d];
  const s = start < 0 ? start + size : start;
  if (s < 0 || s > size) {
    throw new IndexError(`start out of range (expected to be in range of [${-size}, ${size}], but got ${start})`);
  }
  if (length < 0 || s + length > size) {
    throw new RuntimeError(`start (${s}) + length (${length}) exceeds dimension size (${size}).`);
  }
  return slice(t, d, s, s + length, 1);
}

export function select(t: Tensor, dim: number, index: number): Tensor {
  if (t.ndim === 0) throw new IndexError("select() cannot be applied to a 0-dim tensor.");
  const d = wrapDim(dim, t.ndim);
  const size = t.shape[d];
  if (index < -size || index >= size) {
    throw new IndexError(`select(): index ${index} out of range for tensor of size [${t.shape.join(", ")}] at dimension ${d}`);
  }
  const i = index < 0 ? index + size : index;
  return makeView(
    t,
    t.shape.filter((_, k) => k !== d),
    t._strides.filter((_, k) => k !== d),
    t._offset + i * t._strides[d],
  );
}
