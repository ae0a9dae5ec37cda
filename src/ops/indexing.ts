// Python's basic indexing, x[...] and x[...] = v, from a NumPy-style string ("0, 1:3, ..., None, ::2"),
// since TypeScript has no slice syntax. Basic indexing only returns views, so reads cost no memory.

import { IndexError, RuntimeError, TypeError_ } from "../errors.ts";
import { Tensor, type TensorOrScalar } from "../tensor.ts";
import { alias, makeView, select, slice, unsqueeze, view } from "./views.ts";
import { fillInplace, full } from "./elementwise.ts";

type Part = { kind: "int"; i: number } | { kind: "slice"; start?: number; end?: number; step: number } | { kind: "ellipsis" } | { kind: "none" };

function parseInt_(s: string, whole: string): number {
  if (!/^-?\d+$/.test(s)) throw new IndexError(`invalid index "${s}" in "${whole}": use integers, slices like 1:3 or ::2, "...", or None`);
  return Number(s);
}

function parse(index: string | number): Part[] {
  if (typeof index === "number") {
    if (!Number.isInteger(index))
      throw new IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got float)");
    return [{ kind: "int", i: index }];
  }
  if (typeof index !== "string") {
    const what = index === null || index === undefined ? String(index) : Array.isArray(index) ? "an array" : typeof index;
    throw new TypeError_(`index must be a string such as "0, 1:3, ..., None" or an integer, not ${what}`);
  }
  const whole = index;
  return index
    .split(",")
    .map((raw) => raw.trim())
    .filter((s, _i, all) => s !== "" || all.length === 1)
    .map((s): Part => {
      if (s === "...") return { kind: "ellipsis" };
      if (s === "None") return { kind: "none" };
      if (s === "" || s === ":") return { kind: "slice", step: 1 };
      if (s.includes(":")) {
        const [a, b, c] = s.split(":").map((x) => x.trim());
        if (s.split(":").length > 3) throw new IndexError(`invalid slice "${s}" in "${whole}"`);
        const step = c ? parseInt_(c, whole) : 1;
        if (step <= 0) throw new RuntimeError("step must be greater than zero");
        return { kind: "slice", start: a ? parseInt_(a, whole) : undefined, end: b ? parseInt_(b, whole) : undefined, step };
      }
      return { kind: "int", i: parseInt_(s, whole) };
    });
}

/** The view ops getitem composes: plain ones here, autograd-recording ones from Tensor.getitem. */
export interface ViewOps {
  select(t: Tensor, dim: number, index: number): Tensor;
  slice(t: Tensor, dim: number, start?: number, end?: number, step?: number): Tensor;
  unsqueeze(t: Tensor, dim: number): Tensor;
  /** fill_ from a number or 0-dim tensor as Python's setitem does it (FillBackward3); plain fill without autograd. */
  fillWrapped?(t: Tensor, value: Tensor | number | boolean): Tensor;
}

export function getitem(t: Tensor, index: string | number, ops: ViewOps = { select, slice, unsqueeze }): Tensor {
  return indexInto(t, index, ops, true);
}

/**
 * x[index]. An index that makes no view op (only "...") is still a new view in PyTorch, with
 * AliasBackward0; assignment (`forRead` false) writes through x itself, as Python's x[...] = v does.
 */
function indexInto(t: Tensor, index: string | number, ops: ViewOps, forRead: boolean): Tensor {
  t.check();
  const parts = parse(index);
  const consumed = parts.filter((p) => p.kind === "int" || p.kind === "slice").length;
  if (parts.filter((p) => p.kind === "ellipsis").length > 1) throw new IndexError("an index can only have a single ellipsis ('...')");
  if (t.ndim === 0) {
    // PyTorch's words for x[0] / x[0:1] on a 0-dim tensor.
    const first = parts.find((p) => p.kind === "int" || p.kind === "slice");
    if (first?.kind === "int") {
      throw new IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
    }
    if (first?.kind === "slice") throw new IndexError("slice() cannot be applied to a 0-dim tensor.");
  }
  if (consumed > t.ndim) throw new IndexError(`too many indices for tensor of dimension ${t.ndim}`);
  let cur = alias(t);
  let dim = 0;
  let viewed = false;
  const step = (next: Tensor) => {
    cur.dispose();
    cur = next;
    viewed = true;
  };
  try {
    for (const p of parts) {
      if (p.kind === "ellipsis") dim += t.ndim - consumed;
      else if (p.kind === "none") {
        step(ops.unsqueeze(cur, dim));
        dim++;
      } else if (p.kind === "slice") {
        // As at::indexing's applySlice for assignment: a slice written start 0 (or none), stop exactly the
        // dim's size, step 1 is the tensor itself, not a view (so `x[:n] = 2.0` records FillBackward3).
        const whole = !forRead && (p.start ?? 0) === 0 && p.end === cur.shape[dim] && p.step === 1;
        if (!whole) step(ops.slice(cur, dim, p.start, p.end, p.step));
        dim++;
      } else {
        const size = cur.shape[dim];
        if (p.i < -size || p.i >= size) throw new IndexError(`index ${p.i} is out of bounds for dimension ${dim} with size ${size}`);
        step(ops.select(cur, dim, p.i));
      }
    }
    if (forRead && !viewed) {
      const v = (ops as { view?: (t: Tensor, s: number[], name?: string) => Tensor }).view;
      step(v ? v(cur, cur.shape, "AliasBackward0") : makeView(cur, cur.shape, cur._strides, cur._offset));
    }
  } catch (e) {
    cur.dispose(); // nothing half-built survives a bad index
    throw e;
  }
  return cur;
}

export function setitem(t: Tensor, index: string | number, value: TensorOrScalar, ops?: ViewOps): void {
  if (!(value instanceof Tensor) && typeof value !== "number" && typeof value !== "boolean") {
    throw new TypeError_(
      `can't assign a ${value === null || value === undefined ? "NoneType" : typeof value === "string" ? "str" : typeof value} to a torch.FloatTensor`,
    );
  }
  const target = indexInto(t, index, ops ?? { select, slice, unsqueeze }, false);
  let squeezed: Tensor | null = null;
  try {
    // As Python's __setitem__ (copy_to): the value's leading size-1 dims are dropped before the copy.
    if (value instanceof Tensor && value.ndim > target.ndim) {
      let lead = 0;
      while (lead < value.ndim - target.ndim && value.shape[lead] === 1) lead++;
      if (lead > 0) {
        const v = (ops as { view?: (t: Tensor, s: number[]) => Tensor } | undefined)?.view ?? view;
        squeezed = v(value, value.shape.slice(lead));
        value = squeezed;
      }
    }
    // As Python's __setitem__ (copy_to): a value of the target's shape is copied (copy_); a number (a
    // wrapped 0-dim CPU tensor there) or a 0-dim tensor fills (fill_, FillBackward3); any other is broadcast and copied.
    // (A number into a 0-dim target has the target's shape: copied, CopyBackwards.)
    const sameShape = value instanceof Tensor ? value.ndim === target.ndim && value.shape.every((s, i) => s === target.shape[i]) : target.ndim === 0;
    if (!sameShape && (!(value instanceof Tensor) || value.ndim === 0)) {
      if (ops?.fillWrapped) ops.fillWrapped(target, value);
      else if (value instanceof Tensor) target.copy_(value);
      else fillInplace(target, value);
    } else if (value instanceof Tensor) target.copy_(value);
    else {
      const v = full([], value, target.dtype);
      try {
        target.copy_(v);
      } finally {
        v.dispose();
      }
    }
  } finally {
    target.dispose();
    squeezed?.dispose();
  }
}
