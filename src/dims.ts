// Dimension arguments, below the tensor handle so that the handle and every op share one check.

import { IndexError } from "./errors.ts";

/** A dim in [-ndim, ndim) made non-negative; PyTorch's error otherwise (a 0-d tensor takes dims 0 and -1). */
export function wrapDim(dim: number, ndim: number): number {
  const n = Math.max(ndim, 1);
  if (!Number.isInteger(dim) || dim < -n || dim >= n) {
    throw new IndexError(`Dimension out of range (expected to be in range of [${-n}, ${n - 1}], but got ${dim})`);
  }
  return dim < 0 ? dim + n : dim;
}
