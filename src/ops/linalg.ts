// matmul / mm / bmm / addmm with PyTorch's shape rules and error texts (LinearAlgebra.cpp).
// Operands are read through their strides, so transposed weights (x @ w.t()) need no copy.

import { pyTypeName } from "../pystr.ts";
import { RuntimeError, TypeError_ } from "../errors.ts";
import { Tensor, contiguousStrides, numelOf } from "../tensor.ts";
import { accumulateInto, addInto, binary, broadcastShapes } from "./elementwise.ts";
import { coalesce, computes, dispatch, dispatchGrid, fitsOneBinding, MAX_GROUPS, maxBindingBytes } from "./launch.ts";
import { tiledPrefix } from "./matmul-tiles.ts";
import { contiguousOf, expand, narrow, unsqueeze, view } from "./views.ts";

const typeName = { float32: "Float", int32: "Int", bool: "Bool" } as const;

/** PyTorch's argument check for a Tensor operand (torch 1.13's words). */
export function checkTensorArg(op: string, name: string, position: number, v: unknown): asserts v is Tensor {
  if (v instanceof Tensor) return;
  throw new TypeError_(`${op}(): argument '${name}' (position ${position}) must be Tensor, not ${pyTypeName(v)}`);
}

function checkFloat(op: string, ...ts: Tensor[]): void {
  ts.forEach((t, i) => checkTensorArg(op, i === 0 ? "input" : op === "mm" || op === "bmm" ? "mat2" : "other", i + 1, t));
  for (const t of ts) {
    t.check();
    if (t.dtype !== "float32") throw new RuntimeError(`"${op}_webgpu" not implemented for '${typeName[t.dtype]}'`);
  }
}

/** One batch stride for the leading dims of t, or null when they do not coalesce. */
function batchStride(t: Tensor): number | null {
  const lead = t.ndim - 2;
  if (lead === 0) return 0;
  const c = coalesce(t.shape.slice(0, lead), [t._strides.slice(0, lead)]);
  if (c.shape.length === 0) return 0;
  return c.shape.length === 1 ? c.strides[0][0] : null;
}

/** The longest K one dispatch of the register-blocked kernels runs (a multiple of 4: the slices keep A's
 *  and B's vec4 alignment). Measured on lavapipe (docs/performance.md, Matmul round 3): at K = 4096 slices
 *  of 1,024 ran 1.6x (A @ B) and 1.9x (g.t() @ x, a Linear's weight gradient) as fast as one dispatch;
 *  512 and 256 were no faster. */
const K_SLICE = 1024;

/** C = A @ B for A [..., M, K], B [..., K, N] with equal leading dims; C is contiguous. */
function batchedInto(a: Tensor, b: Tensor, out: Tensor): void {
  const temps: Tensor[] = [];
  const fix = (t: Tensor) => {
    // A broadcast (stride-0) matrix is cloned first, as ATen does for cuBLAS and BLAS
    // (prepare_matrix_for_cublas): the gradient of a sum reaching mm is such a matrix.
    const m = t.ndim - 2;
    const broadcast = (t.shape[m] > 1 && t._strides[m] === 0) || (t.shape[m + 1] > 1 && t._strides[m + 1] === 0);
    if (batchStride(t) !== null && !broadcast) return t;
    const c = contiguousOf(t);
    temps.push(c);
    return c;
  };
  try {
    const A = fix(a);
    const B = fix(b);
    const M = A.shape[A.ndim - 2];
    const K = A.shape[A.ndim - 1];
    const N = B.shape[B.ndim - 1];
    const batch = numelOf(A.shape.slice(0, -2));
    if (M === 0 || N === 0 || batch === 0) return;
    if (K === 0) {
      out.zero_();
      return;
    }
    // One invocation reads 4 rows of A and 4 columns of B along all of K: when that alone is more than
    // one binding (a Gram matrix X^T X over a tall X), the contraction is split into slices of K whose
    // products are summed into out (one out-sized temporary; PyTorch's BLAS needs no windows).
    const kc = contractionSlice(A, B, M, N, K);
    if (kc < K) {
      for (let k0 = 0; k0 < K; k0 += kc) {
        const len = Math.min(kc, K - k0);
        const As = narrow(A, A.ndim - 1, k0, len);
        const Bs = narrow(B, B.ndim - 2, k0, len);
        const part = k0 === 0 ? out : Tensor.empty(out.shape);
        try {
          batchedInto(As, Bs, part);
          if (part !== out) accumulateInto(out, part);
        } finally {
          As.dispose();
          Bs.dispose();
          if (part !== out) part.dispose();
        }
      }
      return;
    }
    const bStride = batchStride(B)!;
    const rowMajorB = B._strides[B.ndim - 1] === 1 && B._strides[B.ndim - 2] === N && B._offset % 4 === 0 && bStride % 4 === 0;
    // B = w.t() of a row-major w (every Linear): read transposed in place, no copy.
    const transposedB = B._strides[B.ndim - 2] === 1 && B._strides[B.ndim - 1] === K;
    // Over the binding limit only the plain kernel can run (in windows: it indexes by invocation).
    const oneBinding = fitsOneBinding([out, A, B]);
    // Their grid has row blocks on x and the batch on z (at most 65,535 each); the plain kernel spreads
    // its invocations over x and y, for a million rows (a Linear over a grid of points) or 70,000 batches.
    const fitsGrid = Math.ceil(M / 16) <= MAX_GROUPS && batch <= MAX_GROUPS;
    if (oneBinding && fitsGrid && N % 4 === 0 && (rowMajorB || transposedB)) {
      const [aBatch, ars, acs] = [batchStride(A)!, A._strides[A.ndim - 2], A._strides[A.ndim - 1]];
      // matmul_subgroups reads A and B as vec4s where their layout allows (prelude_vec4.wgsl: A_V4, B_T = 2).
      const aligned = A._offset % 4 === 0 && aBatch % 4 === 0;
      const aV4 = acs === 1 && ars % 4 === 0 && aligned ? 1 : ars === 1 && acs % 4 === 0 && aligned ? 2 : 0;
      const bT = rowMajorB ? 0 : K % 4 === 0 && B._offset % 4 === 0 && bStride % 4 === 0 ? 2 : 1;
      // A long K runs in slices of K_SLICE, one dispatch each, the later ones adding to what C holds (ACC):
      // each workgroup then streams a panel of B of at most K_SLICE x 256 floats (1 MiB), which stays in
      // the caches for the next row block. Same bits as one dispatch (prelude_vec4.wgsl, ACC).
      // Rows in blocks of 16 (matmul_vec4) or 24 (matmul_subgroups, where the device has subgroups) on
      // x, up to 65,535 blocks; columns in blocks of 256 on y.
      const bRowStride = rowMajorB ? N : 1;
      // On llvmpipe a large product takes uniform tiles for all of K but its last K % 64 (ops/matmul-tiles.ts).
      // A batch of products with one B whose A's rows follow on from batch to batch (a Linear over a 3-D input,
      // which at::matmul folds into one mm) is one product of batch x M rows: C is contiguous.
      const rows = batch === 1 || (bStride === 0 && aBatch === M * ars) ? batch * M : 0;
      const kTiled = rows > 0 && computes([out, A, B]) ? tiledPrefix(out, A, B, rows, N, K) : 0;
      for (let k0 = kTiled; k0 < K; k0 += K_SLICE) {
        const params = [M, N, Math.min(K_SLICE, K - k0), batch, A._offset + k0 * acs, aBatch, ars, acs, B._offset + k0 * bRowStride, bStride, 0, K];
        const constants = { B_T: bT, A_V4: aV4, ACC: k0 > 0 ? 1 : 0 };
        dispatchGrid(
          "matmul_vec4",
          "mm",
          [out, A, B],
          params,
          [Math.ceil(M / 16), Math.ceil(N / 4 / 64), batch],
          { ...constants, TM: 16 },
          {
            shader: "matmul_subgroups",
            constants: { ...constants, TM: 24 },
            workgroups: [Math.ceil(M / 24), Math.ceil(N / 4 / 64), batch],
          },
        );
      }
      return;
    }
    const params = [
      M,
      N,
      K,
      batch,
      A._offset,
      batchStride(A)!,
      A._strides[A.ndim - 2],
      A._strides[A.ndim - 1],
      B._offset,
      batchStride(B)!,
      B._strides[B.ndim - 2],
      B._strides[B.ndim - 1],
      0,
    ];
    const colGroups = Math.ceil(N / 4);
    const per = colGroups * Math.ceil(M / 4);
    const [ars, acs, brs, bcs] = [params[6], params[7], params[10], params[11]];
    // What invocations [i0, i1) touch (matmul.wgsl: invocation = (batch, 4-row group, 4-column group)).
    const extent = (k: number, i0: number, i1: number): [number, number] => {
      const b0 = Math.floor(i0 / per);
      const b1 = Math.floor((i1 - 1) / per);
      const g0 = Math.floor((i0 % per) / colGroups);
      const g1 = Math.floor(((i1 - 1) % per) / colGroups);
      const rows: [number, number] = b0 === b1 ? [g0 * 4, Math.min(M - 1, g1 * 4 + 3)] : [0, M - 1];
      if (k === 0) return [b0 * M * N + rows[0] * N, b1 * M * N + (rows[1] + 1) * N - 1];
      if (k === 1) return [A._offset + b0 * params[5] + rows[0] * ars, A._offset + b1 * params[5] + rows[1] * ars + (K - 1) * acs];
      const cols: [number, number] = b0 === b1 && g0 === g1 ? [(i0 % colGroups) * 4, Math.min(N - 1, ((i1 - 1) % colGroups) * 4 + 3)] : [0, N - 1];
      return [B._offset + b0 * params[9] + cols[0] * bcs, B._offset + b1 * params[9] + cols[1] * bcs + (K - 1) * brs];
    };
    dispatch("matmul", "mm", [out, A, B], params, per * batch, undefined, { extent });
  } finally {
    for (const t of temps) t.dispose();
  }
}

/** The longest slice of K over which one matmul invocation reads at most one binding of A and of B (K if all of it). */
function contractionSlice(A: Tensor, B: Tensor, M: number, N: number, K: number): number {
  if (fitsOneBinding([A, B])) return K;
  // Room for a window's start being aligned down (launch.ts aligns to 256 bytes).
  const room = Math.floor((maxBindingBytes() - 512) / 4);
  const [ars, acs] = [A._strides[A.ndim - 2], A._strides[A.ndim - 1]];
  const [brs, bcs] = [B._strides[B.ndim - 2], B._strides[B.ndim - 1]];
  const spanA = (k: number) => (Math.min(M, 4) - 1) * ars + (k - 1) * acs + 1;
  const spanB = (k: number) => (k - 1) * brs + (Math.min(N, 4) - 1) * bcs + 1;
  let k = K;
  while (k > 1 && ((!fitsOneBinding([A]) && spanA(k) > room) || (!fitsOneBinding([B]) && spanB(k) > room))) k = Math.ceil(k / 2);
  // Once split, slices of at most 64 Ki: one invocation's float32 sum over millions of terms drifts
  // (1e-3 relative over 4 Mi), the sum of slice sums stays near PyTorch's blocked BLAS.
  return k < K ? Math.min(k, 1 << 16) : K;
}

export function mm(a: Tensor, b: Tensor): Tensor {
  checkFloat("mm", a, b);
  if (a.ndim !== 2) throw new RuntimeError("self must be a matrix");
  if (b.ndim !== 2) throw new RuntimeError("mat2 must be a matrix");
  if (a.shape[1] !== b.shape[0]) {
    throw new RuntimeError(`mat1 and mat2 shapes cannot be multiplied (${a.shape[0]}x${a.shape[1]} and ${b.shape[0]}x${b.shape[1]})`);
  }
  const out = Tensor.empty([a.shape[0], b.shape[1]]);
  batchedInto(a, b, out);
  return out;
}

export function bmm(a: Tensor, b: Tensor): Tensor {
  checkFloat("bmm", a, b);
  if (a.ndim !== 3) throw new RuntimeError("batch1 must be a 3D tensor");
  if (b.ndim !== 3) throw new RuntimeError("batch2 must be a 3D tensor");
  if (b.shape[0] !== a.shape[0] || b.shape[1] !== a.shape[2]) {
    throw new RuntimeError(
      `Expected size for first two dimensions of batch2 tensor to be: [${a.shape[0]}, ${a.shape[2]}] but got: [${b.shape[0]}, ${b.shape[1]}].`,
    );
  }
  const out = Tensor.empty([a.shape[0], a.shape[1], b.shape[2]]);
  batchedInto(a, b, out);
  return out;
}

export function matmul(a: Tensor, b: Tensor): Tensor {
  checkFloat("matmul", a, b);
  if (a.ndim === 0 || b.ndim === 0) {
    throw new RuntimeError(`both arguments to matmul need to be at least 1D, but they are ${a.ndim}D and ${b.ndim}D`);
  }
  if (a.ndim === 1 && b.ndim === 1) {
    if (a.shape[0] !== b.shape[0]) {
      throw new RuntimeError(
        `inconsistent tensor size, expected tensor [${a.shape[0]}] and src [${b.shape[0]}] to have the same number of elements, but got ${a.shape[0]} and ${b.shape[0]} elements respectively`,
      );
    }
  }
  const err = matmulShapeError(a, b);
  if (err) throw new RuntimeError(err);
  // Promote 1-D operands to matrices, multiply, then drop the added dims (PyTorch's rules).
  const A = a.ndim === 1 ? unsqueeze(a, 0) : a;
  const B = b.ndim === 1 ? unsqueeze(b, -1) : b;
  const temps = [A, B].filter((t) => t !== a && t !== b);
  try {
    const M = A.shape[A.ndim - 2];
    const K = A.shape[A.ndim - 1];
    const K2 = B.shape[B.ndim - 2];
    const N = B.shape[B.ndim - 1];
    if (K !== K2) {
      const [r1, c1] = a.ndim === 1 ? [1, K] : [numelOf(A.shape.slice(0, -1)), K];
      throw new RuntimeError(`mat1 and mat2 shapes cannot be multiplied (${r1}x${c1} and ${K2}x${N})`);
    }
    const batch = broadcastShapes(A.shape.slice(0, -2), B.shape.slice(0, -2));
    const Ae = expand(A, [...batch, M, K]);
    const Be = expand(B, [...batch, K, N]);
    temps.push(Ae, Be);
    const out = Tensor.empty([...batch, M, N]);
    batchedInto(Ae, Be, out);
    const shape = [...batch, ...(a.ndim > 1 ? [M] : []), ...(b.ndim > 1 ? [N] : [])];
    if (shape.length === out.ndim) return out;
    if (a.ndim === 1 && b.ndim === 2) {
      // at::matmul squeezes its own [1, N] result in place (squeeze_): the same tensor, not a view, at version 1.
      const own = new Tensor(out.storage, shape, contiguousStrides(shape), 0, out.dtype, out._versionCounter);
      out.dispose();
      own._bump_version();
      return own;
    }
    const r = view(out, shape);
    out.dispose();
    return r;
  } finally {
    for (const t of temps) t.dispose();
  }
}

/**
 * The error torch 1.13's at::matmul raises for these shapes, or null: it folds batch dims into rows
 * (mv or mm) or runs bmm over broadcast batches, and the failing inner op words the message.
 */
function matmulShapeError(a: Tensor, b: Tensor): string | null {
  const da = a.ndim;
  const db = b.ndim;
  const mvError = (rows: number, k: number, n: number) => (k === n ? null : `size mismatch, got ${rows}, ${rows}x${k},${n}`);
  const mmError = (m: number, k: number, k2: number, n: number) => (k === k2 ? null : `mat1 and mat2 shapes cannot be multiplied (${m}x${k} and ${k2}x${n})`);
  if (da === 1 && db === 1) return null; // dot: checked by the caller
  if (da === 2 && db === 1) return mvError(a.shape[0], a.shape[1], b.shape[0]);
  if (da === 1 && db === 2) return mmError(1, a.shape[0], b.shape[0], b.shape[1]);
  if (da === 2 && db === 2) return mmError(a.shape[0], a.shape[1], b.shape[0], b.shape[1]);
  // at::matmul's should_fold: a 3-D tensor whose last two dims are transposed is not folded.
  const fold = (t: Tensor, dOther: number) =>
    t.ndim >= 3 && (dOther === 1 || dOther === 2) && !(t.ndim === 3 && dOther === 2 && t._strides[2] !== 1 && t._strides[0] === t.shape[1] * t.shape[2]);
  if (fold(a, db)) {
    const k = a.shape[da - 1];
    const rows = numelOf(a.shape.slice(0, -1));
    return db === 1 ? mvError(rows, k, b.shape[0]) : mmError(rows, k, b.shape[0], b.shape[1]);
  }
  if (da <= 2 && fold(b, da)) {
    // (b^T @ a^T)^T: b^T folded into rows.
    const k2 = b.shape[db - 2];
    const rows = numelOf(b.shape.slice(0, -2)) * b.shape[db - 1];
    return da === 1 ? mvError(rows, k2, a.shape[0]) : mmError(rows, k2, a.shape[1], a.shape[0]);
  }
  const M = da === 1 ? 1 : a.shape[da - 2];
  const K = a.shape[da - 1];
  const K2 = db === 1 ? b.shape[0] : b.shape[db - 2];
  const batch = broadcastShapes(a.shape.slice(0, Math.max(da - 2, 0)), b.shape.slice(0, Math.max(db - 2, 0)));
  void M;
  if (K === K2) return null;
  const nb = numelOf(batch);
  return `Expected size for first two dimensions of batch2 tensor to be: [${nb}, ${K}] but got: [${nb}, ${K2}].`;
}

/** beta * input + alpha * (mat1 @ mat2) */
export function addmm(input: Tensor, m1: Tensor, m2: Tensor, opts?: { beta?: number; alpha?: number }): Tensor {
  const beta = opts?.beta ?? 1;
  const alpha = opts?.alpha ?? 1;
  const prod = mm(m1, m2);
  let kept = false;
  try {
    const shape = broadcastShapes(input.shape, prod.shape);
    if (beta !== 0 && input.dtype === "float32" && shape.length === prod.ndim && shape.every((s, i) => s === prod.shape[i])) {
      // As ATen's addmm: one output; the product is made in it and the input added in place.
      const scaledIn = beta === 1 ? input : binary("mul", input, beta);
      try {
        addInto(prod, scaledIn, prod, alpha);
      } finally {
        if (scaledIn !== input) scaledIn.dispose();
      }
      kept = true;
      return prod;
    }
    if (beta === 0 && alpha === 1) {
      kept = true;
      return prod;
    }
    if (beta === 0) return binary("mul", prod, alpha);
    const scaled = beta === 1 ? input : binary("mul", input, beta);
    try {
      return binary("add", scaled, prod, alpha);
    } finally {
      if (scaled !== input) scaled.dispose();
    }
  } finally {
    if (!kept) prod.dispose();
  }
}
