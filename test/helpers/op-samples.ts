// One call of every op in the op table, on small inputs that require grad (non-leaf copies for the
// in-place ones): test/lifecycle.test.ts checks each frees everything it allocated, test/op-table.test.ts
// checks each records the nodes and saves its declaration names.

import * as torch from "../../src/index.ts";
import type { Tensor } from "../../src/index.ts";

const rg = { requires_grad: true } as const;

export type Make = () => { x: Tensor; y: Tensor; m: Tensor };
/** Leaves that require grad, and non-leaf copies of them (in-place ops need non-leaves). */
export const inputs: Make = () => {
  const x = torch.rand([3, 4], rg);
  const y = torch.rand([3, 4], rg);
  const m = torch.rand([4, 2], rg);
  return { x, y, m };
};

export type Case = (x: Tensor, y: Tensor, m: Tensor) => Tensor | { values: Tensor } | Tensor[];
/** One call of each differentiable op (non-leaf inputs for the in-place ones), and a few shapes of use that matter. */
export const CASES: Record<string, Case> = {
  view: (x) => x.view(12),
  reshape: (x) => x.reshape(2, 6),
  view_as: (x, y) => x.view_as(y),
  flatten: (x) => x.flatten(),
  transpose: (x) => x.transpose(0, 1),
  t: (x) => x.t(),
  permute: (x) => x.permute(1, 0),
  expand: (x) => x.unsqueeze(0).expand(2, 3, 4),
  expand_as: (x) => x.sum(0, { keepdim: true }).expand_as(x),
  unsqueeze: (x) => x.unsqueeze(1),
  squeeze: (x) => x.unsqueeze(0).squeeze(0),
  narrow: (x) => x.narrow(1, 1, 2),
  select: (x) => x.select(0, 1),
  slice: (x) => x.slice(1, 0, 3, 2),
  getitem: (x) => x.getitem("1:, ::2"),
  setitem: (x, y) => x.mul(1).setitem("0", y.getitem("1")),
  contiguous: (x) => x.t().contiguous(),
  clone: (x) => x.clone(),
  detach: (x) => x.detach().add(x),
  to: (x) => x.to("float32"),
  float: (x) => x.float(),
  add: (x, y) => x.add(y, { alpha: 2 }),
  sub: (x, y) => x.sub(y),
  rsub: (x) => x.rsub(2),
  mul: (x, y) => x.mul(y),
  div: (x, y) => x.div(y.add(1)),
  pow: (x, y) => x.pow(y),
  maximum: (x, y) => x.maximum(y),
  minimum: (x, y) => x.minimum(y),
  neg: (x) => x.neg(),
  abs: (x) => x.abs(),
  exp: (x) => x.exp(),
  log: (x) => x.add(1).log(),
  sqrt: (x) => x.add(1).sqrt(),
  rsqrt: (x) => x.add(1).rsqrt(),
  relu: (x) => x.relu(),
  sigmoid: (x) => x.sigmoid(),
  tanh: (x) => x.tanh(),
  gelu: (x) => x.gelu(),
  clamp: (x) => x.clamp(0.2, 0.8),
  where: (x, y) => x.where(x.gt(0.5), y),
  add_: (x, y) => x.mul(1).add_(y),
  sub_: (x, y) => x.mul(1).sub_(y),
  atan2: (x, y) => x.atan2(y.sub(0.5)),
  mul_: (x, y) => x.mul(1).mul_(y),
  div_: (x, y) => x.mul(1).div_(y.add(1)),
  relu_: (x) => x.mul(1).relu_(),
  clamp_: (x) => x.mul(1).clamp_(0.2, 0.8),
  zero_: (x) => x.mul(1).zero_(),
  fill_: (x) => x.mul(1).fill_(3),
  copy_: (x, y) => x.mul(1).copy_(y),
  sum: (x) => x.sum(1),
  mean: (x) => x.mean(),
  prod: (x) => x.prod(),
  "prod(dim)": (x) => x.mul(x.gt(0.5)).prod(1),
  max: (x) => x.max(1),
  min: (x) => x.min(),
  var: (x) => x.var(1),
  std: (x) => x.std(),
  softmax: (x) => x.softmax(1),
  log_softmax: (x) => x.log_softmax(-1),
  matmul: (x, _y, m) => x.matmul(m),
  mm: (x, _y, m) => x.mm(m),
  bmm: (x, y) => x.unsqueeze(0).bmm(y.t().unsqueeze(0)),
  addmm: (x, _y, m) => x.sum(1, { keepdim: true }).addmm(x, m, { beta: 0.5 }),
  T: (x) => x.T,
  mT: (x) => x.mT,
  // in place on a view of a non-leaf: CopySlices on the base
  "mul_ on a view": (x) => {
    const h = x.mul(2);
    h.getitem("0:2").mul_(2);
    return h;
  },
};

/** One call of each op declared not differentiable: its result never requires grad. */
export const NOT_DIFFERENTIABLE_CASES: Record<string, Case> = {
  eq: (x, y) => x.eq(y),
  ne: (x) => x.ne(0.5),
  lt: (x, y) => x.lt(y),
  le: (x) => x.le(0.5),
  gt: (x, y) => x.gt(y),
  ge: (x) => x.ge(0.5),
  argmax: (x) => x.argmax(1),
  argmin: (x) => x.argmin(),
  detach: (x) => x.detach(),
  int: (x) => x.int(),
  bool: (x) => x.bool(),
};
