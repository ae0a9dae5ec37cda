// The tensor handle: shape, strides and offset over a refcounted Storage, plus the version counter it
// shares with its views. Math lives in src/ops; the methods here are thin, PyTorch-named entry points.

import { ELEMENT_SIZE, type DType } from "./dtype.ts";
import { RuntimeError } from "./errors.ts";
import { asSize, formatTensor } from "./format.ts";
import { noteHandleRelease, track, untrack } from "./memory/lifetime.ts";
import { Storage, VersionCounter, type HandleInfo, type Role } from "./memory/storage.ts";
import { AutogradMeta } from "./autograd/meta.ts";
import type { AccumulateGrad, Node } from "./autograd/node.ts";
import * as ag from "./autograd/tensor-autograd.ts";
import { readBlock } from "./device/scheduler.ts";
import * as ew from "./ops/elementwise.ts";
import * as red from "./ops/reduce.ts";
import * as vw from "./ops/views.ts";
import * as idx from "./ops/indexing.ts";
import * as pw from "./autograd/functions/pointwise.ts";
import * as rd from "./autograd/functions/reductions.ts";
import * as al from "./autograd/functions/linalg.ts";
import * as sh from "./autograd/functions/shape.ts";
import { instrument } from "./ops/op-context.ts";

export type Shape = readonly number[];
export type Scalar = number | boolean;
export type TensorOrScalar = Tensor | Scalar;
export type DimArg = number | number[] | undefined;
export interface ReduceOpts { dim?: number | number[]; keepdim?: boolean }

export function contiguousStrides(shape: Shape): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= Math.max(shape[i], 1);
  }
  return s;
}

export const numelOf = (shape: Shape) => shape.reduce((a, b) => a * b, 1);

/**
 * One handle's hold on its storage and autograd identity, released once by dispose() or, for a handle
 * that became unreachable, by its finaliser. It is the finaliser's held value, so it must never point
 * back at the handle (a class with no closures, so nothing captures the handle by accident).
 */
class HandleRecord implements HandleInfo {
  role: Role | null = null;
  constructor(
    readonly storage: Storage,
    readonly meta: AutogradMeta,
    readonly shape: readonly number[],
    readonly dtype: DType,
    readonly baseShape: readonly number[] | null,
  ) {
    storage.retain();
    storage.handles.add(this);
    meta.handles++;
  }
  release(): void {
    noteHandleRelease();
    this.storage.handles.delete(this);
    this.storage.release();
    if (--this.meta.handles === 0) this.meta.drop();
  }
}

export class Tensor {
  readonly storage: Storage;
  readonly shape: number[];
  readonly _strides: number[];
  readonly _offset: number;
  readonly dtype: DType;
  readonly _versionCounter: VersionCounter;
  /** The tensor this one is a view of (PyTorch's `._base`), or null. */
  readonly _base: Tensor | null;
  /** Autograd identity, shared by handles that are the same tensor (see autograd/meta.ts). */
  readonly _meta: AutogradMeta;
  private readonly _rec: HandleRecord;
  private _disposed = false;

  constructor(storage: Storage, shape: Shape, strides: Shape, offset: number, dtype: DType, version?: VersionCounter, base?: Tensor | null, meta?: AutogradMeta) {
    this.storage = storage;
    this.shape = asSize([...shape]); // prints as torch.Size([2, 3]), stays a plain number[]
    this._strides = [...strides];
    this._offset = offset;
    this.dtype = dtype;
    this._versionCounter = version ?? new VersionCounter();
    this._base = base ?? null;
    this._meta = meta ?? ag.newMeta();
    if (base && !meta) ag.trackView(this);
    this._rec = new HandleRecord(storage, this._meta, this.shape, dtype, this._base?.shape ?? null);
    track(this, this._rec);
  }

  /** A fresh, uninitialised, contiguous tensor (torch.empty). */
  static empty(shape: Shape, dtype: DType = "float32"): Tensor {
    const n = numelOf(shape);
    return new Tensor(new Storage(n * ELEMENT_SIZE), shape, contiguousStrides(shape), 0, dtype);
  }

  // ---- lifetime ----
  get disposed(): boolean {
    return this._disposed;
  }
  /** Drops this handle's reference to its storage; the memory is freed when no holder is left. */
  dispose(): void {
    if (this._disposed) return;
    this._disposed = true;
    untrack(this);
    this._rec.release();
  }
  /** Who owns this handle when the runtime does (a saved variable, a .grad, an AccumulateGrad): for snapshots. */
  get _role(): Role | null {
    return this._rec.role;
  }
  set _role(r: Role | null) {
    this._rec.role = r;
  }
  [Symbol.dispose](): void {
    this.dispose();
  }
  /** Throws if this handle was disposed; every op calls it on its inputs. */
  check(): this {
    if (this._disposed) {
      throw new RuntimeError(
        `Tensor of shape [${this.shape.join(", ")}] was disposed (by dispose(), torch.del, \`using\` or the end of a torch.scope) and can no longer be used`,
      );
    }
    this.storage.liveBlock(); // throws if the device holding the data was lost
    return this;
  }

  // ---- metadata ----
  get ndim(): number { return this.shape.length; }
  dim(): number { return this.shape.length; }
  numel(): number { return numelOf(this.shape); }
  size(dim?: number): number | number[] {
    return dim === undefined ? [...this.shape] : this.shape[vw.wrapDim(dim, this.ndim)];
  }
  stride(dim?: number): number | number[] {
    return dim === undefined ? [...this._strides] : this._strides[vw.wrapDim(dim, this.ndim)];
  }
  storage_offset(): number { return this._offset; }
  element_size(): number { return ELEMENT_SIZE; }
  get nbytes(): number { return this.numel() * ELEMENT_SIZE; }
  get itemsize(): number { return ELEMENT_SIZE; }
  get _version(): number { return this._versionCounter.value; }
  get device(): string { return this.storage.device.name; }
  get is_cuda(): boolean { return true; }
  is_contiguous(): boolean {
    const expect = contiguousStrides(this.shape);
    return this.shape.every((s, i) => s === 1 || this._strides[i] === expect[i]);
  }
  /** Marks an in-place write: the version counter shared with every view goes up by one. */
  _bump_version(): void { this._versionCounter.value++; }

  // ---- reading (async: the GPU works ahead of the host) ----
  /** The elements in row-major order, as a typed array of the tensor's dtype. */
  async data(): Promise<Float32Array | Int32Array | Uint8Array> {
    this.check();
    const dev = this.storage.device;
    if (dev.simulated) {
      throw new RuntimeError(
        `Cannot read the values of a tensor on the simulated device ${dev.name}: it has a shape, a dtype and accounted memory, but no data (nothing is computed there). Use a tensor on webgpu:0 to see values.`,
      );
    }
    const c = this.is_contiguous() ? this : this.contiguous();
    try {
      const n = c.numel();
      const raw = n === 0 ? new ArrayBuffer(0) : await readBlock(c.storage.liveBlock(), c._offset * ELEMENT_SIZE, n * ELEMENT_SIZE);
      if (this.dtype === "float32") return new Float32Array(raw);
      if (this.dtype === "int32") return new Int32Array(raw);
      return Uint8Array.from(new Uint32Array(raw), (v) => (v ? 1 : 0));
    } finally {
      if (c !== this) c.dispose();
    }
  }
  /** Nested arrays (numbers, or booleans for bool tensors); a number for a 0-dim tensor. */
  async tolist(): Promise<unknown> {
    const d = Array.from(await this.data(), (v) => (this.dtype === "bool" ? v !== 0 : v));
    if (this.ndim === 0) return d[0];
    const build = (dim: number, off: number): unknown[] => {
      const st = numelOf(this.shape.slice(dim + 1));
      return Array.from({ length: this.shape[dim] }, (_, i) => (dim === this.ndim - 1 ? d[off + i] : build(dim + 1, off + i * st)));
    };
    return build(0, 0);
  }
  async item(): Promise<number | boolean> {
    if (this.numel() !== 1) {
      throw new RuntimeError(`a Tensor with ${this.numel()} elements cannot be converted to Scalar`);
    }
    const v = (await this.data())[0];
    return this.dtype === "bool" ? v !== 0 : v;
  }
  /** PyTorch's repr, e.g. `tensor([1., 2.], requires_grad=True)`. */
  async repr(): Promise<string> {
    if (this.storage.device.simulated) {
      // As PyTorch prints meta tensors: no values, the device and the size.
      const size = `size=(${this.shape.join(", ")}${this.ndim === 1 ? "," : ""})`;
      const dtype = this.dtype === "float32" ? [] : [`dtype=torch.${this.dtype}`];
      return `tensor(..., ${[`device='${this.storage.device.name}'`, size, ...dtype, ...this._reprSuffixes()].join(", ")})`;
    }
    return formatTensor(await this.data(), this.shape, this.dtype, this._reprSuffixes());
  }
  _reprSuffixes(): string[] {
    const fn = this.grad_fn;
    if (fn) return [`grad_fn=<${fn.name()}>`];
    return this.requires_grad ? ["requires_grad=True"] : [];
  }
  toString(): string {
    return `tensor(<on webgpu: await .repr() or torch.print() to read>, shape=[${this.shape.join(", ")}], dtype=torch.${this.dtype})`;
  }
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
  /** PyTorch's repr as text/plain, and text/html: the values (1-D/2-D, summarized) with a metadata line. */
  async [Symbol.for("Jupyter.display")](): Promise<Record<string, string>> {
    const { tensorHtml } = await import("./viz/tensor-view.ts");
    const values = this.disposed || this.storage.device.simulated || this.ndim > 2 ? null : await this.data();
    // One readback for both forms unless a subclass prints itself differently (Parameter).
    const text = values && this.repr === Tensor.prototype.repr ? formatTensor(values, this.shape, this.dtype, this._reprSuffixes()) : await this.repr();
    return { "text/plain": text, "text/html": tensorHtml(this, values) };
  }

  // ---- views (share storage and version counter) ----
  view(...shape: Array<number | number[]>): Tensor { return sh.view(this, vw.flatShape(shape)); }
  reshape(...shape: Array<number | number[]>): Tensor { return sh.reshape(this, vw.flatShape(shape)); }
  view_as(other: Tensor): Tensor { return sh.view(this, other.shape); }
  flatten(start = 0, end = -1): Tensor { return sh.flatten(this, start, end); }
  transpose(d0: number, d1: number): Tensor { return sh.transpose(this, d0, d1); }
  t(): Tensor { return sh.t(this); }
  get T(): Tensor { return sh.permute(this, this.shape.map((_, i) => this.ndim - 1 - i)); }
  get mT(): Tensor { return sh.transpose(this, -2, -1); }
  permute(...dims: Array<number | number[]>): Tensor { return sh.permute(this, vw.flatShape(dims)); }
  expand(...sizes: Array<number | number[]>): Tensor { return sh.expand(this, vw.flatShape(sizes)); }
  expand_as(other: Tensor): Tensor { return sh.expand(this, other.shape); }
  unsqueeze(dim: number): Tensor { return sh.unsqueeze(this, dim); }
  squeeze(dim?: number): Tensor { return sh.squeeze(this, dim); }
  narrow(dim: number, start: number, length: number): Tensor { return sh.narrow(this, dim, start, length); }
  select(dim: number, index: number): Tensor { return sh.select(this, dim, index); }
  slice(dim: number, start?: number, end?: number, step = 1): Tensor { return sh.slice(this, dim, start, end, step); }
  /** Python's `x[...]`, from a NumPy-style string: `x.getitem(":, 1:3")`, `x.getitem("0, ..., None")`. */
  getitem(index: string | number): Tensor { return idx.getitem(this, index, sh); }
  /** Python's `x[...] = value` (in place: bumps the version counter). */
  setitem(index: string | number, value: TensorOrScalar): this { idx.setitem(this, index, value, sh); return this; }
  contiguous(): Tensor { return this.check().is_contiguous() ? this._alias() : sh.clone(this); }
  clone(): Tensor { return sh.clone(this); }
  /** A new tensor sharing storage and version counter, outside the graph (requires_grad false). */
  detach(): Tensor { return vw.makeView(this, this.shape, this._strides, this._offset, false); }
  /**
   * Another handle to this same tensor (same storage and autograd identity). `keepBase = false` is for
   * handles the runtime keeps inside a graph (saved variables): they must not hold the base's handle,
   * which the base's own graph would then keep reachable (a view saved by its base's CopySlices).
   */
  _alias(keepBase = true): Tensor {
    return new Tensor(this.check().storage, this.shape, this._strides, this._offset, this.dtype, this._versionCounter, keepBase ? this._base : null, this._meta);
  }
  to(dtype: DType): Tensor { return dtype === this.dtype ? this._alias() : pw.cast(this, dtype); }
  float(): Tensor { return this.to("float32"); }
  int(): Tensor { return this.to("int32"); }
  bool(): Tensor { return this.to("bool"); }
  cuda(): Tensor { return this._alias(); }
  cpu(): Tensor { return this._alias(); }

  // ---- autograd ----
  get requires_grad(): boolean { return this._meta.requiresGradLeaf || this.grad_fn !== null; }
  set requires_grad(v: boolean) { ag.setRequiresGrad(this, v); }
  requires_grad_(v = true): this { ag.setRequiresGrad(this, v); return this; }
  get grad_fn(): Node | null { return ag.gradFn(this); }
  get is_leaf(): boolean { return this.grad_fn === null; }
  get _output_nr(): number { return this._meta.output_nr; }
  get grad(): Tensor | null { return ag.getGrad(this); }
  set grad(g: Tensor | null) { ag.setGrad(this, g); }
  get retains_grad(): boolean { return this._meta.retains_grad; }
  retain_grad(): void { ag.retainGrad(this); }
  is_inference(): boolean { return this._meta.inference; }
  /** The AccumulateGrad node of a leaf that requires grad (created on first use, then kept). */
  _accumulator(): AccumulateGrad { return ag.accumulator(this); }
  _accumulateGrad(g: Tensor): void { ag.accumulateGrad(this, g); }
  backward(gradient?: Tensor | null, opts?: { retain_graph?: boolean; create_graph?: boolean; inputs?: Tensor[] }): void {
    ag.backward(this, gradient ?? null, opts);
  }
  register_hook(fn: (grad: Tensor) => Tensor | void): { remove(): void } { return ag.registerHook(this, fn); }
  register_post_accumulate_grad_hook(fn: (t: Tensor) => void): { remove(): void } { return ag.registerPostAccumulateHook(this, fn); }

  // ---- elementwise ----
  add(other: TensorOrScalar, opts?: { alpha?: number }): Tensor { return pw.binary("add", this, other, opts?.alpha); }
  sub(other: TensorOrScalar, opts?: { alpha?: number }): Tensor { return pw.binary("sub", this, other, opts?.alpha); }
  /** Python's `other - self` for a number (2 - x). */
  rsub(other: number, opts?: { alpha?: number }): Tensor { return pw.rsub(this, other, opts?.alpha); }
  mul(other: TensorOrScalar): Tensor { return pw.binary("mul", this, other); }
  div(other: TensorOrScalar): Tensor { return pw.binary("div", this, other); }
  pow(exponent: TensorOrScalar): Tensor { return pw.binary("pow", this, exponent); }
  maximum(other: Tensor): Tensor { return pw.binary("maximum", this, other); }
  minimum(other: Tensor): Tensor { return pw.binary("minimum", this, other); }
  eq(other: TensorOrScalar): Tensor { return ew.binary("eq", this, other); }
  ne(other: TensorOrScalar): Tensor { return ew.binary("ne", this, other); }
  lt(other: TensorOrScalar): Tensor { return ew.binary("lt", this, other); }
  le(other: TensorOrScalar): Tensor { return ew.binary("le", this, other); }
  gt(other: TensorOrScalar): Tensor { return ew.binary("gt", this, other); }
  ge(other: TensorOrScalar): Tensor { return ew.binary("ge", this, other); }
  neg(): Tensor { return pw.unary("neg", this); }
  abs(): Tensor { return pw.unary("abs", this); }
  exp(): Tensor { return pw.unary("exp", this); }
  log(): Tensor { return pw.unary("log", this); }
  sqrt(): Tensor { return pw.unary("sqrt", this); }
  rsqrt(): Tensor { return pw.unary("rsqrt", this); }
  relu(): Tensor { return pw.unary("relu", this); }
  sigmoid(): Tensor { return pw.unary("sigmoid", this); }
  tanh(): Tensor { return pw.unary("tanh", this); }
  gelu(opts?: { approximate?: "none" | "tanh" }): Tensor { return pw.gelu(this, opts?.approximate); }
  clamp(min?: number | null | { min?: number; max?: number }, max?: number | null): Tensor { return pw.clamp(this, min, max); }
  where(condition: Tensor, other: TensorOrScalar): Tensor { return pw.where(condition, this, other); }

  // ---- in place (bump the version counter) ----
  add_(other: TensorOrScalar, opts?: { alpha?: number }): this { return pw.binaryInplace("add", this, other, opts?.alpha); }
  sub_(other: TensorOrScalar, opts?: { alpha?: number }): this { return pw.binaryInplace("sub", this, other, opts?.alpha); }
  mul_(other: TensorOrScalar): this { return pw.binaryInplace("mul", this, other); }
  div_(other: TensorOrScalar): this { return pw.binaryInplace("div", this, other); }
  relu_(): this { return pw.unaryInplace("relu", this); }
  clamp_(min?: number | null | { min?: number; max?: number }, max?: number | null): this { return pw.clampInplace(this, min, max); }
  zero_(): this { return pw.fillInplace(this, 0, "ZeroBackward0"); }
  fill_(value: Scalar): this { return pw.fillInplace(this, value, "FillBackward2"); }
  copy_(src: Tensor): this { return pw.copyInplace(this, src); }

  // ---- reductions ----
  sum(dim?: DimArg | ReduceOpts, opts?: ReduceOpts): Tensor { return rd.sumOrMean("sum", this, dim, opts); }
  mean(dim?: DimArg | ReduceOpts, opts?: ReduceOpts): Tensor { return rd.sumOrMean("mean", this, dim, opts); }
  prod(dim?: number, opts?: ReduceOpts): Tensor { return rd.prod(this, dim, opts); }
  max(): Tensor;
  max(dim: number, opts?: ReduceOpts): { values: Tensor; indices: Tensor };
  max(dim?: number, opts?: ReduceOpts): Tensor | { values: Tensor; indices: Tensor } { return rd.minmax("max", this, dim, opts); }
  min(): Tensor;
  min(dim: number, opts?: ReduceOpts): { values: Tensor; indices: Tensor };
  min(dim?: number, opts?: ReduceOpts): Tensor | { values: Tensor; indices: Tensor } { return rd.minmax("min", this, dim, opts); }
  argmax(dim?: number, opts?: ReduceOpts): Tensor { return red.arg("argmax", this, dim, opts); }
  argmin(dim?: number, opts?: ReduceOpts): Tensor { return red.arg("argmin", this, dim, opts); }
  var(dim?: DimArg | (ReduceOpts & { correction?: number; unbiased?: boolean }), opts?: ReduceOpts & { correction?: number; unbiased?: boolean }): Tensor {
    return rd.variance(this, dim, opts);
  }
  std(dim?: DimArg | (ReduceOpts & { correction?: number; unbiased?: boolean }), opts?: ReduceOpts & { correction?: number; unbiased?: boolean }): Tensor {
    return rd.variance(this, dim, opts, true);
  }
  softmax(dim: number): Tensor { return rd.softmax(this, dim, false); }
  log_softmax(dim: number): Tensor { return rd.softmax(this, dim, true); }

  // ---- linear algebra ----
  matmul(other: Tensor): Tensor { return al.matmul(this, other); }
  mm(other: Tensor): Tensor { return al.mm(this, other); }
  bmm(other: Tensor): Tensor { return al.bmm(this, other); }
}

// Every op method runs in an op context (ops/op-context.ts): device, op name, cleanup on error.
instrument(Tensor.prototype, [
  "view", "reshape", "view_as", "flatten", "transpose", "t", "T", "mT", "permute", "expand", "expand_as", "unsqueeze",
  "squeeze", "narrow", "select", "slice", "getitem", "setitem", "contiguous", "clone", "detach", "to", "float", "int", "bool",
  "add", "sub", "rsub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "neg", "abs", "exp",
  "log", "sqrt", "rsqrt", "relu", "sigmoid", "tanh", "gelu", "clamp", "where", "add_", "sub_", "mul_", "div_", "relu_",
  "clamp_", "zero_", "fill_", "copy_", "sum", "mean", "prod", "max", "min", "argmax", "argmin", "var", "std", "softmax",
  "log_softmax", "matmul", "mm", "bmm", "backward",
], (self) => (self as Tensor).storage.device);
