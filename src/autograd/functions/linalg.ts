// Differentiable matrix products, composed the way ATen's matmul composes them, so the graph a learner
// draws has PyTorch's nodes: DotBackward0, MvBackward0, MmBackward0, BmmBackward0, AddmmBackward0,
// UnsafeViewBackward0 around folded batch dims.

import * as la from "../../ops/linalg.ts";
import { checkTensorArg } from "../../ops/linalg.ts";
import { broadcastShapes } from "../../ops/elementwise.ts";
import { RuntimeError } from "../../errors.ts";
import { type Tensor, numelOf } from "../../tensor.ts";
import { attach, needsGrad, sumTo } from "../record.ts";
import type { FormulaNode, Grads } from "../node.ts";
import * as sh from "./shape.ts";
import { mulScalar } from "./pointwise.ts";
import { asOp } from "../../ops/op-context.ts";

/** A 2-D tensor laid out column by column (the transpose of a contiguous one, as w.t() in a Linear). */
const columnMajor = (t: Tensor) => t._strides[0] === 1 && t._strides[1] === t.shape[0] && t.shape[0] !== 1;

/**
 * The gradients of mat1 @ mat2, each made in its operand's layout, as ATen's mm_mat1_backward and
 * mm_mat2_backward do: for mat2 = w.t(), (g.t() @ mat1).t() has w's layout once TBackward0 transposes
 * it, so AccumulateGrad keeps it instead of copying a weight-sized gradient.
 */
function mmGrads(n: FormulaNode, g: Tensor, mat1: string, mat2: string, alpha: number): [Tensor | null, Tensor | null] {
  const { colMajor1, colMajor2 } = n.consts as { colMajor1: boolean; colMajor2: boolean };
  const scale = (t: Tensor) => mulScalar(t, alpha); // none for 1 (a multiplication by 1 would be a full copy)
  const i = n.next_functions.length === 3 ? 1 : 0;
  const g1 = n.needs(i) ? scale(colMajor1 ? n.unpack(mat2).mm(g.t()).t() : g.mm(n.unpack(mat2).t())) : null;
  const g2 = n.needs(i + 1) ? scale(colMajor2 ? g.t().mm(n.unpack(mat1)).t() : n.unpack(mat1).t().mm(g)) : null;
  return [g1, g2];
}

export function mm(a: Tensor, b: Tensor): Tensor {
  checkTensorArg("mm", "mat2", 2, b);
  const out = sh.unview(la.mm(a, b));
  if (needsGrad(a, b)) {
    attach(
      "MmBackward0",
      [a, b],
      [out],
      (n, [g]) => mmGrads(n, g!, "self", "mat2", 1),
      {
        self: a,
        mat2: b,
        self_sym_sizes: [...a.shape],
        mat2_sym_sizes: [...b.shape],
      },
      { self: [1], mat2: [0] },
    ).consts = { colMajor1: columnMajor(a), colMajor2: columnMajor(b) };
  }
  return out;
}

export function bmm(a: Tensor, b: Tensor): Tensor {
  checkTensorArg("bmm", "mat2", 2, b);
  const out = sh.unview(la.bmm(a, b));
  if (needsGrad(a, b)) {
    attach(
      "BmmBackward0",
      [a, b],
      [out],
      (n, [g]) => [n.needs(0) ? g!.bmm(n.unpack("mat2").transpose(1, 2)) : null, n.needs(1) ? n.unpack("self").transpose(1, 2).bmm(g!) : null],
      { self: a, mat2: b },
      { self: [1], mat2: [0] },
    );
  }
  return out;
}

export const addmm = asOp("addmm", function addmm(input: Tensor, m1: Tensor, m2: Tensor, opts?: { beta?: number; alpha?: number }): Tensor {
  const beta = opts?.beta ?? 1;
  const alpha = opts?.alpha ?? 1;
  const out = sh.unview(la.addmm(input, m1, m2, opts));
  if (needsGrad(input, m1, m2)) {
    attach(
      "AddmmBackward0",
      [input, m1, m2],
      [out],
      addmmFormula,
      {
        alpha,
        beta,
        mat1: m1,
        mat1_sym_sizes: [...m1.shape],
        mat2: m2,
        mat2_sym_sizes: [...m2.shape],
      },
      { mat1: [2], mat2: [1] },
    ).consts = { inShape: [...input.shape], colMajor1: columnMajor(m1), colMajor2: columnMajor(m2) };
  }
  return out;
});
function addmmFormula(n: FormulaNode, [g]: Grads): Grads {
  const beta = n.value<number>("beta");
  // The matrix gradients first: torch reduces a broadcast input's gradient (sum_to) after the node's
  // formulas ran (the engine's validate_outputs), so the bias sum comes last, as in its peaks.
  const mats = mmGrads(n, g!, "mat1", "mat2", n.value<number>("alpha"));
  const gi = n.needs(0) ? sumTo(mulScalar(g!, beta), (n.consts as { inShape: number[] }).inShape) : null;
  return [gi, ...mats];
}

function dot(a: Tensor, b: Tensor): Tensor {
  const out = sh.unview(la.matmul(a, b));
  if (needsGrad(a, b)) {
    attach(
      "DotBackward0",
      [a, b],
      [out],
      (n, [g]) => [n.needs(0) ? n.unpack("tensor").mul(g!) : null, n.needs(1) ? n.unpack("self").mul(g!) : null],
      {
        self: a,
        tensor: b,
      },
      { self: [1], tensor: [0] },
    );
  }
  return out;
}

function mv(a: Tensor, v: Tensor): Tensor {
  const out = sh.unview(la.matmul(a, v));
  if (needsGrad(a, v)) {
    attach(
      "MvBackward0",
      [a, v],
      [out],
      (n, [g]) => [n.needs(0) ? g!.reshape([-1, 1]).mul(n.unpack("vec")) : null, n.needs(1) ? n.unpack("self").t().matmul(g!) : null],
      { self: a, vec: v },
      { self: [1], vec: [0] },
    );
  }
  return out;
}

/** torch.matmul, decomposed as at::matmul does (temporaries are disposed; the graph keeps what it needs). */
export function matmul(a: Tensor, b: Tensor): Tensor {
  checkTensorArg("matmul", "other", 2, b);
  a.check();
  b.check();
  if (!needsGrad(a, b)) return la.matmul(a, b);
  if (a.ndim === 0 || b.ndim === 0) return la.matmul(a, b); // raises PyTorch's error
  if (a.ndim === 1 && b.ndim === 1) return dot(a, b);
  if (a.ndim === 2 && b.ndim === 1) return mv(a, b);
  const temps: Tensor[] = [];
  const keep = <T extends Tensor>(t: T) => {
    temps.push(t);
    return t;
  };
  try {
    if (a.ndim === 1 && b.ndim === 2) {
      return sh.squeeze(keep(mm(keep(sh.unsqueeze(a, 0)), b)), 0, "SqueezeBackward3");
    }
    if (a.ndim === 2 && b.ndim === 2) return mm(a, b);
    if (a.ndim >= 3 && b.ndim <= 2) {
      // Fold a's batch dims into rows: one mm (or mv), then view the result back.
      const K = a.shape[a.ndim - 1];
      if (b.shape[0] !== K) return la.matmul(a, b);
      const rows = keep(sh.reshape(a, [-1, K]));
      const m = keep(b.ndim === 1 ? mv(rows, b) : mm(rows, b));
      const outShape = [...a.shape.slice(0, -1), ...(b.ndim === 2 ? [b.shape[1]] : [])];
      return sh.view(m, outShape, "UnsafeViewBackward0");
    }
    if (a.ndim <= 2 && b.ndim >= 3) {
      // ATen computes (b^T @ a^T)^T through the folding path above.
      if (a.shape[a.ndim - 1] !== b.shape[b.ndim - 2]) return la.matmul(a, b);
      const bT = keep(sh.transpose(b, -1, -2));
      if (a.ndim === 1) return matmul(bT, a);
      // ATen returns output.mT().contiguous(): a copy (CloneBackward0), unless the transposed product is
      // already contiguous (a has one row), when it is the transposed view itself (TransposeBackward0 of
      // UnsafeViewBackward0).
      const r = matmul(bT, keep(sh.t(a)));
      const tr = sh.transpose(r, -1, -2);
      if (tr.is_contiguous()) return tr; // r lives on as the view's base (an in-place op goes through it)
      keep(r);
      return sh.clone(keep(tr));
    }
    // Batched: broadcast the batch dims, fold them into one, bmm, and view back.
    const A = a.ndim === 1 ? keep(sh.unsqueeze(a, 0)) : a;
    const B = b.ndim === 1 ? keep(sh.unsqueeze(b, -1)) : b;
    const [M, K] = A.shape.slice(-2);
    const [K2, N] = B.shape.slice(-2);
    if (K !== K2) return la.matmul(a, b);
    const batch = broadcastShapes(A.shape.slice(0, -2), B.shape.slice(0, -2));
    const nb = numelOf(batch);
    const A3 = keep(sh.reshape(keep(sh.expand(A, [...batch, M, K])), [nb, M, K]));
    const B3 = keep(sh.reshape(keep(sh.expand(B, [...batch, K, N])), [nb, K, N]));
    const prod = keep(bmm(A3, B3));
    const shape = [...batch, ...(a.ndim > 1 ? [M] : []), ...(b.ndim > 1 ? [N] : [])];
    return sh.view(prod, shape, "UnsafeViewBackward0");
  } finally {
    for (const t of temps) t.dispose();
  }
}

export const linear = asOp("linear", function linear(x: Tensor, weight: Tensor, bias?: Tensor | null): Tensor {
  if (weight.ndim !== 2) throw new RuntimeError(`linear(): weight must be 2-D, got ${weight.ndim}-D`);
  const wt = sh.t(weight);
  try {
    if (x.ndim === 2 && bias) return addmm(bias, x, wt);
    if (x.ndim === 3 && bias && x.is_contiguous()) {
      // ATen's fused path for 3-D input: view to 2-D, addmm, view back.
      const x2 = sh.view(x, [-1, x.shape[2]]);
      const y2 = addmm(bias, x2, wt);
      x2.dispose();
      try {
        return sh.view(y2, [x.shape[0], x.shape[1], weight.shape[0]]);
      } finally {
        y2.dispose();
      }
    }
    const y = matmul(x, wt);
    if (!bias) return y;
    try {
      return y.add(bias);
    } finally {
      y.dispose();
    }
  } finally {
    wt.dispose();
  }
});
