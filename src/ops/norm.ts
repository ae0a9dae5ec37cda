// The kernels of layer_norm and dropout (PyTorch's native_layer_norm and native_dropout): forward
// results with what backward needs (the per-row statistics, the kept mask). autograd/functions/
// reductions.ts records their nodes; torch.nn.functional exposes them.

import { RuntimeError } from "../errors.ts";
import { Tensor, numelOf } from "../tensor.ts";
import { dispatch, f32bits, fitsOneBinding } from "./launch.ts";
import { draw } from "./creation.ts";
import { contiguousOf } from "./views.ts";
import { copyOf, fillNew } from "./elementwise.ts";

/** Layer norm output with the per-row statistics PyTorch's native_layer_norm also returns. */
export function native_layer_norm(x: Tensor, normalized_shape: number[], weight: Tensor | null, bias: Tensor | null, eps: number): [Tensor, Tensor, Tensor] {
  x.check();
  const k = normalized_shape.length;
  // torch 1.13's _check_layer_norm_inputs, in its order: normalized_shape, weight, bias, then the input.
  if (k === 0) {
    throw new RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = []");
  }
  for (const [name, p] of [
    ["weight", weight],
    ["bias", bias],
  ] as const) {
    if (p && (p.check().ndim !== k || p.shape.some((s, i) => s !== normalized_shape[i]))) {
      throw new RuntimeError(
        `Expected ${name} to be of same shape as normalized_shape, but got ${name} of shape [${p.shape.join(", ")}] and normalized_shape = [${normalized_shape.join(", ")}]`,
      );
    }
  }
  const tail = x.shape.slice(x.ndim - k);
  if (x.ndim < k || tail.some((s, i) => s !== normalized_shape[i])) {
    throw new RuntimeError(
      `Given normalized_shape=[${normalized_shape.join(", ")}], expected input with shape [*, ${normalized_shape.join(", ")}], but got input of size[${x.shape.join(", ")}]`,
    );
  }
  for (const p of [weight, bias]) {
    if (p && p.dtype !== "float32") throw new RuntimeError(`expected scalar type Float but found ${p.dtype === "int32" ? "Int" : "Bool"}`);
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
    dispatch(
      "rows",
      "layer_norm",
      [y, src, w ?? src, b ?? src, mean, rstd],
      [rows, n, f32bits(eps), src._offset, w ? 1 : 0, b ? 1 : 0, w?._offset ?? 0, b?._offset ?? 0],
      rows,
    );
    return [y, mean, rstd];
  } finally {
    for (const t of [src, w, b]) t?.dispose();
  }
}

/** Dropout with the generator's (seed, offset): the kept mask is also returned for autograd. */
export function native_dropout(x: Tensor, p: number, train: boolean): [Tensor, Tensor] {
  x.check();
  if (!(p >= 0 && p <= 1)) throw new RuntimeError(`dropout probability has to be between 0 and 1, but got ${p}`);
  const mask = Tensor.empty(x.shape, "bool");
  if (!train || p === 0) {
    fillNew(mask, true);
    return [copyOf(x), mask];
  }
  const out = Tensor.empty(x.shape);
  if (p === 1) {
    fillNew(out, 0);
    fillNew(mask, false);
    return [out, mask];
  }
  const src = contiguousOf(x);
  try {
    draw(3, out, p, 1 / (1 - p), [src, mask], src._offset);
  } finally {
    src.dispose();
  }
  return [out, mask];
}

/**
 * PyTorch's native_layer_norm_backward: the input gradient (one input-sized allocation) and, as asked,
 * the weight and bias gradients (normalized_shape each), from the incoming gradient, the input and the
 * saved per-row mean and rstd. Null where the mask says no. The weight/bias pass reads a column across
 * every row: over one binding it is left to the caller (returns null for both, `paramsDone` false).
 */
export function native_layer_norm_backward(
  g: Tensor,
  x: Tensor,
  mean: Tensor,
  rstd: Tensor,
  weight: Tensor | null,
  normalized_shape: number[],
  mask: [boolean, boolean, boolean],
): { dx: Tensor | null; dw: Tensor | null; db: Tensor | null; paramsDone: boolean } {
  const n = numelOf(normalized_shape);
  const rows = n === 0 ? 0 : x.numel() / n;
  const gs = contiguousOf(g);
  const xs = contiguousOf(x);
  const ms = contiguousOf(mean);
  const rs = contiguousOf(rstd);
  const w = weight ? contiguousOf(weight) : null;
  try {
    let dx: Tensor | null = null;
    if (mask[0]) {
      dx = Tensor.empty(x.shape);
      dispatch(
        "rows",
        "layer_norm_backward",
        [dx, gs, xs, w ?? xs, ms, rs],
        [rows, n, gs._offset, xs._offset, w ? 1 : 0, w?._offset ?? 0, ms._offset, rs._offset],
        rows,
      );
    }
    if (!(mask[1] || mask[2])) return { dx, dw: null, db: null, paramsDone: true };
    if (!fitsOneBinding([gs, xs])) return { dx, dw: null, db: null, paramsDone: false };
    const dw = Tensor.empty(normalized_shape);
    const db = Tensor.empty(normalized_shape);
    dispatch("rows", "layer_norm_backward_params", [dw, db, gs, xs, ms, rs], [n, rows, gs._offset, xs._offset, ms._offset, rs._offset], n, undefined, {
      writes: [0, 1],
    });
    if (!mask[1]) dw.dispose();
    if (!mask[2]) db.dispose();
    return { dx, dw: mask[1] ? dw : null, db: mask[2] ? db : null, paramsDone: true };
  } finally {
    for (const t of [gs, xs, ms, rs, w]) t?.dispose();
  }
}
