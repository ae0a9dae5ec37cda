// Row gathers and scatter-adds by int32 index (kernels-wgsl/gather.wgsl): the forward and backward
// kernels of embedding and nll_loss. Plain kernels, no autograd (autograd/functions/nn.ts records).

import { RuntimeError } from "../errors.ts";
import { Tensor, numelOf } from "../tensor.ts";
import { dispatch, fitsOneBinding, maxBindingBytes } from "./launch.ts";
import { contiguousOf } from "./views.ts";
import { full } from "./elementwise.ts";

const typeName = (t: Tensor) => (t.dtype === "bool" ? "Bool" : t.dtype === "int32" ? "Int" : "Float");

/** Row ranges [lo, hi) of a [V, D] tensor such that each fits one binding (one range when it all fits). */
function rowPasses(t: Tensor, V: number, D: number): Array<[number, number]> {
  if (fitsOneBinding([t]) || V === 0) return [[0, V]];
  const per = Math.floor((maxBindingBytes() - 512) / (4 * Math.max(D, 1)));
  if (per < 1) {
    throw new RuntimeError(
      `a row of ${D} elements is larger than this adapter's maxStorageBufferBindingSize (${maxBindingBytes()} bytes); use smaller tensors`,
    );
  }
  const out: Array<[number, number]> = [];
  for (let lo = 0; lo < V; lo += per) out.push([lo, Math.min(V, lo + per)]);
  return out;
}

function checkIndex(idx: Tensor, op: "embedding" | "nll_loss"): void {
  if (idx.check().dtype === "int32") return;
  throw new RuntimeError(
    op === "embedding"
      ? `Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.${typeName(idx)}Tensor instead (while checking arguments for embedding)`
      : `expected scalar type Long but found ${typeName(idx)}`,
  );
}

/** weight[idx] for a [V, D] weight: shape [...idx.shape, D] (index_select along dim 0). */
export function indexSelectRows(weight: Tensor, idx: Tensor): Tensor {
  checkIndex(idx, "embedding");
  if (weight.check().ndim !== 2) throw new RuntimeError("'weight' must be 2-D");
  const [V, D] = weight.shape;
  const w = contiguousOf(weight);
  const i = contiguousOf(idx);
  try {
    const out = Tensor.empty([...idx.shape, D]);
    rowPasses(w, V, D).forEach(([lo, hi], pass) => {
      const extent = (k: number, k0: number, k1: number): [number, number] =>
        k === 0
          ? [k0, k1 - 1]
          : k === 1
            ? [w._offset + lo * D, w._offset + hi * D - 1]
            : [i._offset + Math.floor(k0 / D), i._offset + Math.floor((k1 - 1) / D)];
      dispatch("gather", "index_select", [out, w, i], [out.numel(), D, w._offset, i._offset, V, lo, hi, pass === 0 ? 1 : 0], out.numel(), undefined, {
        extent,
      });
    });
    return out;
  } finally {
    w.dispose();
    i.dispose();
  }
}

/** zeros([V, D]).index_add_(0, idx.flatten(), src.reshape(-1, D)), skipping padding_idx (-1: none). */
export function indexAddRows(V: number, src: Tensor, idx: Tensor, paddingIdx = -1): Tensor {
  const D = src.shape[src.ndim - 1];
  const N = numelOf(idx.shape);
  const s = contiguousOf(src);
  const i = contiguousOf(idx);
  try {
    const out = full([V, D], 0, "float32");
    for (const [lo, hi] of rowPasses(out, V, D)) {
      const extent = (k: number, c0: number, c1: number): [number, number] =>
        k === 0
          ? [lo * D + c0, (hi - 1) * D + c1 - 1]
          : k === 1
            ? [s._offset + c0, s._offset + Math.max(N - 1, 0) * D + c1 - 1]
            : [i._offset, i._offset + Math.max(N - 1, 0)];
      dispatch("gather", "index_add", [out, s, i], [D, N, s._offset, i._offset, V, paddingIdx >>> 0, lo, hi], D, undefined, { extent });
    }
    return out;
  } finally {
    s.dispose();
    i.dispose();
  }
}

/** -logp[i, target[i]] per row of a [N, C] input, 0 where target is ignore_index. */
export function nllPick(logp: Tensor, target: Tensor, ignoreIndex: number): Tensor {
  checkIndex(target, "nll_loss");
  const [N, C] = logp.shape;
  const x = contiguousOf(logp);
  const t = contiguousOf(target);
  try {
    const out = Tensor.empty([N]);
    const extent = (k: number, i0: number, i1: number): [number, number] =>
      k === 0 ? [i0, i1 - 1] : k === 1 ? [x._offset + i0 * C, x._offset + i1 * C - 1] : [t._offset + i0, t._offset + i1 - 1];
    dispatch("gather", "nll_pick", [out, x, t], [N, C, x._offset, t._offset, ignoreIndex >>> 0], N, undefined, { extent });
    return out;
  } finally {
    x.dispose();
    t.dispose();
  }
}

/**
 * A zeroed [N, C] with -coef[i] at (i, target[i]) for rows not ignored: ATen's nll_loss_backward (one
 * allocation). `coef` is [N], or one value for every row (a 0-dim gradient of a reduced loss), divided
 * by `total` when given (reduction='mean').
 */
export function nllScatter(coef: Tensor, target: Tensor, C: number, ignoreIndex: number, N = coef.numel(), total: Tensor | null = null): Tensor {
  const k = contiguousOf(coef);
  const t = contiguousOf(target);
  const tw = total ? contiguousOf(total) : null;
  const one = k.numel() === 1 && N !== 1 ? 0 : 1;
  try {
    const out = full([N, C], 0, "float32");
    const extent = (j: number, i0: number, i1: number): [number, number] =>
      j === 0
        ? [i0 * C, i1 * C - 1]
        : j === 1
          ? one
            ? [k._offset + i0, k._offset + i1 - 1]
            : [k._offset, k._offset]
          : j === 2
            ? [t._offset + i0, t._offset + i1 - 1]
            : [tw?._offset ?? k._offset, tw?._offset ?? k._offset];
    dispatch("gather", "nll_scatter", [out, k, t, tw ?? k], [N, C, k._offset, t._offset, ignoreIndex >>> 0, one, tw ? 1 : 0, tw?._offset ?? 0], N, undefined, {
      extent,
    });
    return out;
  } finally {
    k.dispose();
    t.dispose();
    tw?.dispose();
  }
}

/**
 * nll_loss's reduced forward in one kernel: the loss (sum, or mean over the rows not ignored) and the
 * total weight, two 0-dim tensors and nothing else, as ATen's; `out` null for reduction='none' (only
 * the total). Null when logp is larger than one binding (the caller composes it then).
 */
export function nllReduce(logp: Tensor, target: Tensor, ignoreIndex: number, reduction: "none" | "mean" | "sum"): { out: Tensor | null; total: Tensor } | null {
  checkIndex(target, "nll_loss");
  if (!fitsOneBinding([logp, target])) return null;
  const [N, C] = logp.shape;
  const x = contiguousOf(logp);
  const t = contiguousOf(target);
  try {
    const total = Tensor.empty([]);
    const out = reduction === "none" ? null : Tensor.empty([]);
    dispatch(
      "gather",
      "nll_reduce",
      [total, out ?? total, x, t],
      [N, C, x._offset, t._offset, ignoreIndex >>> 0, reduction === "mean" ? 1 : 0, out ? 1 : 0],
      1,
      undefined,
      { writes: out ? [0, 1] : [0] },
    );
    return { out, total };
  } finally {
    x.dispose();
    t.dispose();
  }
}
