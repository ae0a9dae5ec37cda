// Differentiable views: each view of a tensor that requires grad gets its PyTorch node
// (ViewBackward0, TBackward0, SliceBackward0, ...), whose backward puts the gradient back in shape.

import * as vw from "../../ops/views.ts";
import { wrapDim } from "../../dims.ts";
import * as ew from "../../ops/elementwise.ts";
import { Tensor, type Shape } from "../../tensor.ts";
import { attach, needsGrad, sumTo, type Formula, type Saves } from "../record.ts";
import { no_grad } from "../grad-mode.ts";

/** `back` is made by each view function below, none of which holds a tensor in a closure (see attach). */
function viewOp(x: Tensor, out: Tensor, name: string, back: (g: Tensor) => Tensor, saves?: Saves): Tensor {
  if (needsGrad(x)) attach(name, [x], [out], (_n, [g]) => [back(g!)], saves);
  return out;
}

const sizes = (x: Tensor) => [...x.shape];

/**
 * The same memory as a tensor of its own, not a view: what ATen's _unsafe_view and an in-place squeeze_
 * of a temporary give (matmul's results). An in-place op on it then rebases its own history, where a
 * view would route it through CopySlices to a temporary base that no longer exists.
 */
export function unview(t: Tensor): Tensor {
  if (!t._base) return t;
  const own = new Tensor(t.storage, t.shape, t._strides, t._offset, t.dtype);
  t.dispose();
  return own;
}

export function view(x: Tensor, shape: Shape, name = "ViewBackward0"): Tensor {
  const s = sizes(x);
  const out = vw.view(x, shape);
  return viewOp(x, name === "UnsafeViewBackward0" ? unview(out) : out, name, (g) => g.reshape(s), { self_sym_sizes: s });
}

/** reshape: a view when strides allow (ReshapeAliasBackward0), else a copy then a view (CloneBackward0 + UnsafeViewBackward0). */
export function reshape(x: Tensor, shape: Shape): Tensor {
  const out = vw.reshape(x, shape);
  if (!needsGrad(x)) return out;
  const s = sizes(x);
  if (out.storage === x.storage) {
    return viewOp(x, out, "ReshapeAliasBackward0", (g) => g.reshape(s), { self_sym_sizes: s });
  }
  // Record the copy as clone + view, as ATen's reshape does for non-viewable strides.
  out.dispose();
  const c = clone(x);
  try {
    return view(c, shape, "UnsafeViewBackward0");
  } finally {
    c.dispose();
  }
}

export function clone(x: Tensor): Tensor {
  const out = ew.copyOf(x);
  if (needsGrad(x)) attach("CloneBackward0", [x], [out], (_n, [g]) => [g]);
  return out;
}

/** flatten is a reshape (so a non-viewable input gets CloneBackward0 + UnsafeViewBackward0, as in ATen). */
export function flatten(x: Tensor, start: number, end: number): Tensor {
  // ATen returns the input itself when there is nothing to merge: the same tensor (same grad_fn, same
  // .grad, no memory), as another handle, so that disposing the result does not dispose the input
  if (x.ndim > 0 && wrapDim(start, x.ndim) === wrapDim(end, x.ndim)) return x._alias();
  const probe = vw.flatten(x, start, end);
  const shape = [...probe.shape];
  probe.dispose();
  return reshape(x, shape);
}

/**
 * A view op that changes nothing (t() of a 0-d or 1-d tensor, transpose(d, d) of a 0-d one) still
 * returns a new view with its own node, as PyTorch does: never the input's own handle or identity, whose
 * grad_fn the node would overwrite (the leaf would stop being a leaf).
 */
function asView(x: Tensor, out: Tensor): Tensor {
  if (out._meta !== x._meta) return out;
  out.dispose();
  return vw.makeView(x, x.shape, x._strides, x._offset);
}

export function transpose(x: Tensor, d0: number, d1: number): Tensor {
  const a = wrapDim(d0, Math.max(x.ndim, 1));
  const b = wrapDim(d1, Math.max(x.ndim, 1));
  return viewOp(x, asView(x, vw.transpose(x, d0, d1)), "TransposeBackward0", (g) => g.transpose(a, b), { dim0: a, dim1: b });
}

export function t(x: Tensor): Tensor {
  return viewOp(x, asView(x, vw.t(x)), "TBackward0", (g) => g.t());
}

export function permute(x: Tensor, dims: number[]): Tensor {
  const out = vw.permute(x, dims);
  const nd = x.ndim; // not x itself in the closure: the formula below would share it (see attach)
  const w = dims.map((d) => wrapDim(d, nd));
  const inverse = w.map((_, i) => w.indexOf(i));
  return viewOp(x, out, "PermuteBackward0", (g) => g.permute(inverse), { dims: w });
}

export function expand(x: Tensor, shape: Shape): Tensor {
  const s = sizes(x);
  return viewOp(x, vw.expand(x, shape), "ExpandBackward0", (g) => sumTo(g, s), { self_sym_sizes: s });
}

export function unsqueeze(x: Tensor, dim: number): Tensor {
  const d = wrapDim(dim, x.ndim + 1);
  return viewOp(x, vw.unsqueeze(x, dim), "UnsqueezeBackward0", (g) => g.squeeze(d), { dim: d });
}

export function squeeze(x: Tensor, dim?: number, name?: string): Tensor {
  const s = sizes(x);
  // SqueezeBackward3 is matmul's squeeze_ of its own temporary: a tensor of its own, not a view.
  const out = name === "SqueezeBackward3" ? unview(vw.squeeze(x, dim)) : vw.squeeze(x, dim);
  if (name === "SqueezeBackward3") out._bump_version(); // ATen's squeeze_ wrote it in place
  // ATen's unsqueeze_to: the gradient unsqueezed back at each size-1 dim the squeeze removed
  const removed = dim === undefined ? s.flatMap((n, i) => (n === 1 ? [i] : [])) : s.length && s[wrapDim(dim, s.length)] === 1 ? [wrapDim(dim, s.length)] : [];
  const back = (g: Tensor) => removed.reduce((t, d) => t.unsqueeze(d), g);
  return viewOp(x, out, name ?? (dim === undefined ? "SqueezeBackward0" : "SqueezeBackward1"), (g) => (s.length ? back(g) : g.reshape(s)), {
    dim: dim === undefined ? undefined : wrapDim(dim, Math.max(x.ndim, 1)),
    self_sizes: s,
  });
}

/** Scatters g into zeros of the input's shape at the view's place (the backward of slice and select). */
function intoZeros(shape: number[], place: (z: Tensor) => Tensor, g: Tensor): Tensor {
  const z = Tensor.empty(shape).zero_();
  place(z).copy_(g);
  return z;
}

/**
 * slice_backward / select_backward: g placed in zeros. Under create_graph an op of its own
 * (SliceBackwardBackward0, SelectBackwardBackward0) whose gradient is the same view of its own gradient.
 */
function placeBack(name: string, shape: number[], place: (z: Tensor) => Tensor, g: Tensor, pick: (gg: Tensor) => Tensor): Tensor {
  if (!needsGrad(g)) return intoZeros(shape, place, g);
  const out = intoZerosNoGrad(shape, place, g);
  attach(name, [g], [out], pickFormula(pick));
  return out;
}
// Apart from placeBack, so that the node's formula shares no closure context with a tensor (see attach).
const intoZerosNoGrad = (shape: number[], place: (z: Tensor) => Tensor, g: Tensor) => no_grad(() => intoZeros(shape, place, g));
const pickFormula =
  (pick: (gg: Tensor) => Tensor): Formula =>
  (_n, [gg]) => [pick(gg!)];

export function slice(x: Tensor, dim: number, start?: number, end?: number, step = 1): Tensor {
  const out = vw.slice(x, dim, start, end, step);
  if (!needsGrad(x)) return out;
  const s = sizes(x);
  const d = wrapDim(dim, x.ndim);
  // The actual bounds, from the view's offset and length.
  const st = x._strides[d] === 0 ? 0 : (out._offset - x._offset) / x._strides[d];
  const en = Math.min(st + out.shape[d] * step, s[d]);
  return viewOp(
    x,
    out,
    "SliceBackward0",
    (g) =>
      placeBack(
        "SliceBackwardBackward0",
        s,
        (z) => vw.slice(z, d, st, en, step),
        g,
        (gg) => gg.slice(d, st, en, step),
      ),
    { dim: d, start: st, end: en, step, self_sym_sizes: s },
  );
}

export function narrow(x: Tensor, dim: number, start: number, length: number): Tensor {
  const d = wrapDim(dim, x.ndim);
  const s0 = start < 0 ? start + x.shape[d] : start;
  vw.narrow(x, dim, start, length).dispose(); // the checks and errors of narrow itself
  return slice(x, d, s0, s0 + length, 1);
}

export function select(x: Tensor, dim: number, index: number): Tensor {
  const out = vw.select(x, dim, index);
  if (!needsGrad(x)) return out;
  const s = sizes(x);
  const d = wrapDim(dim, x.ndim);
  const i = index < 0 ? index + s[d] : index;
  return viewOp(
    x,
    out,
    "SelectBackward0",
    (g) =>
      placeBack(
        "SelectBackwardBackward0",
        s,
        (z) => vw.select(z, d, i),
        g,
        (gg) => gg.select(d, i),
      ),
    { dim: d, index: i, self_sizes: s },
  );
}
