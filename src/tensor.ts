// The tensor handle: shape, strides and offset over a refcounted Storage, plus the version counter it
// shares with its views. Math lives in src/ops; the methods here are thin, PyTorch-named entry points.

import { ELEMENT_SIZE, type DType } from "./dtype.ts";
import { RuntimeError } from "./errors.ts";
import { checkKwargs, dimArg, isOpts, noArgs } from "./kwargs.ts";
import { asSize, formatTensor } from "./format.ts";
import { noteHandleRelease, RECORD, type Registration, releaseRecord, track } from "./memory/lifetime.ts";
import { nextSerial } from "./memory/ownership.ts";
import { Storage, VersionCounter, type HandleInfo, type Role } from "./memory/storage.ts";
import { AutogradMeta } from "./autograd/meta.ts";
import { readBlock } from "./device/scheduler.ts";
import { wrapDim } from "./dims.ts";

export type Shape = readonly number[];
export type Scalar = number | boolean;
export type TensorOrScalar = Tensor | Scalar;
export type DimArg = number | number[] | undefined;
export interface ReduceOpts {
  dim?: number | number[];
  keepdim?: boolean;
}

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
 * What the handle asks of autograd, which sits above it and fills these in when it loads
 * (autograd/tensor-autograd.ts, which also installs requires_grad, grad_fn, .grad and backward()).
 */
export const autogradHooks = {
  /** A new tensor's autograd identity (inference tensors under inference_mode). */
  newMeta: (): AutogradMeta => new AutogradMeta(),
  /** A new view of a base: whether its grad_fn follows the base's in-place writes. */
  trackView: (_view: Tensor): void => {},
};

/**
 * One handle's hold on its storage and autograd identity, released once by dispose() or, for a handle
 * that became unreachable, by its finaliser. It is the finaliser's held value, so it must never point
 * back at the handle (a class with no closures, so nothing captures the handle by accident).
 */
class HandleRecord implements HandleInfo {
  role: Role | null = null;
  /** Released: the handle is disposed (by dispose(), its scope's end, or its finaliser). */
  released = false;
  /** What the cell transform knows of who holds the handle (memory/ownership.ts). */
  own: 0 | 1 | 2 = 0;
  taken = false;
  named = 0;
  stored = false;
  lent = 0;
  kept = false;
  letGo = false;
  readonly serial = nextSerial();
  /** The finaliser's registration (memory/lifetime.ts), while the handle is tracked. */
  registration: Registration | null = null;
  constructor(
    readonly storage: Storage,
    readonly meta: AutogradMeta,
    readonly shape: readonly number[],
    readonly dtype: DType,
    readonly baseShape: readonly number[] | null,
  ) {
    storage.retain();
    storage.handles.push(this);
    meta.handles++;
  }
  release(): void {
    if (this.released) return;
    this.released = true;
    noteHandleRelease();
    // Removed in place, keeping the order (splice would allocate the array of what it removes).
    const handles = this.storage.handles;
    const i = handles.indexOf(this);
    if (i >= 0) {
      for (let j = i; j < handles.length - 1; j++) handles[j] = handles[j + 1];
      handles.length--;
    }
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
  /** The tensor this one is a view of (PyTorch's `._base`), or null (also once this handle is disposed). */
  _base: Tensor | null;
  /** Autograd identity, shared by handles that are the same tensor (see autograd/meta.ts). */
  readonly _meta: AutogradMeta;
  private readonly _rec: HandleRecord;

  constructor(
    storage: Storage,
    shape: Shape,
    strides: Shape,
    offset: number,
    dtype: DType,
    version?: VersionCounter,
    base?: Tensor | null,
    meta?: AutogradMeta,
  ) {
    this.storage = storage;
    this.shape = asSize([...shape]); // prints as torch.Size([2, 3]), stays a plain number[]
    this._strides = [...strides];
    this._offset = offset;
    this.dtype = dtype;
    this._versionCounter = version ?? new VersionCounter();
    this._base = base ?? null;
    this._meta = meta ?? autogradHooks.newMeta();
    if (base && !meta) autogradHooks.trackView(this);
    this._rec = new HandleRecord(storage, this._meta, this.shape, dtype, this._base?.shape ?? null);
    track(this, this._rec);
  }

  /** A fresh, uninitialised tensor (torch.empty), contiguous unless dense `strides` are given (torch.empty_strided). */
  static empty(shape: Shape, dtype: DType = "float32", strides?: Shape): Tensor {
    const n = numelOf(shape);
    return new Tensor(new Storage(n * ELEMENT_SIZE), shape, strides ?? contiguousStrides(shape), 0, dtype);
  }

  // ---- lifetime ----
  get disposed(): boolean {
    return this._rec.released;
  }
  /** The record scopes hold instead of the handle (memory/lifetime.ts): a dropped handle stays collectable. */
  get [RECORD](): HandleRecord {
    return this._rec;
  }
  /** Drops this handle's reference to its storage; the memory is freed when no holder is left. */
  dispose(): void {
    if (this._rec.released) return;
    releaseRecord(this._rec);
    // As dropping a view in Python drops its reference to the base: a base only the view held (matmul's
    // product behind its transposed result) becomes collectable even while this disposed handle is kept.
    this._base = null;
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
    if (this._rec.released) {
      throw new RuntimeError(
        this._rec.letGo
          ? // the transform (a cell's, or gradlab/register's) found no other holder: if this code reached it, the transform missed one
            `Tensor of shape [${this.shape.join(", ")}] was freed when the variable that held it was rebound or went out of scope, because GradLab's cell transform saw no other reference to it; this code still had one, which is a GradLab bug: please report it with the code (.clone() the tensor where it is kept to work around it)`
          : `Tensor of shape [${this.shape.join(", ")}] was disposed (by dispose(), torch.del, \`using\` or the end of a torch.scope) and can no longer be used`,
      );
    }
    this.storage.checkLive(); // throws if the device holding the data was lost
    return this;
  }

  // ---- metadata ----
  get ndim(): number {
    return this.shape.length;
  }
  dim(...args: never[]): number {
    noArgs("dim", args);
    return this.shape.length;
  }
  numel(...args: never[]): number {
    noArgs("numel", args);
    return numelOf(this.shape);
  }
  size(dimOrOpts?: number | { dim?: number }, ...rest: never[]): number | number[] {
    noArgs("size", rest);
    const dim = dimArg("size", dimOrOpts) as number | undefined;
    return dim === undefined ? [...this.shape] : this.shape[wrapDim(dim, this.ndim)];
  }
  stride(dimOrOpts?: number | { dim?: number }, ...rest: never[]): number | number[] {
    noArgs("stride", rest);
    const dim = dimArg("stride", dimOrOpts) as number | undefined;
    return dim === undefined ? [...this._strides] : this._strides[wrapDim(dim, this.ndim)];
  }
  storage_offset(...args: never[]): number {
    noArgs("storage_offset", args);
    return this._offset;
  }
  element_size(...args: never[]): number {
    noArgs("element_size", args);
    return ELEMENT_SIZE;
  }
  get nbytes(): number {
    return this.numel() * ELEMENT_SIZE;
  }
  get itemsize(): number {
    return ELEMENT_SIZE;
  }
  get _version(): number {
    return this._versionCounter.value;
  }
  get device(): string {
    return this.storage.device.name;
  }
  get is_cuda(): boolean {
    return true;
  }
  is_contiguous(...args: never[]): boolean {
    noArgs("is_contiguous", args);
    if (this.numel() === 0) return true; // as ATen's compute_contiguous: no element is out of place
    const expect = contiguousStrides(this.shape);
    return this.shape.every((s, i) => s === 1 || this._strides[i] === expect[i]);
  }
  /** Marks an in-place write: the version counter shared with every view goes up by one. */
  _bump_version(): void {
    this._versionCounter.value++;
  }

  // ---- reading (async: the GPU works ahead of the host) ----
  /** The elements in row-major order, as a typed array of the tensor's dtype. */
  async data(...args: never[]): Promise<Float32Array | Int32Array | Uint8Array> {
    noArgs("data", args);
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
  async tolist(...args: never[]): Promise<unknown> {
    noArgs("tolist", args);
    const d = Array.from(await this.data(), (v) => (this.dtype === "bool" ? v !== 0 : v));
    if (this.ndim === 0) return d[0];
    const build = (dim: number, off: number): unknown[] => {
      const st = numelOf(this.shape.slice(dim + 1));
      return Array.from({ length: this.shape[dim] }, (_, i) => (dim === this.ndim - 1 ? d[off + i] : build(dim + 1, off + i * st)));
    };
    return build(0, 0);
  }
  async item(...args: never[]): Promise<number | boolean> {
    noArgs("item", args);
    if (this.numel() !== 1) {
      throw new RuntimeError(`a Tensor with ${this.numel()} elements cannot be converted to Scalar`);
    }
    const v = (await this.data())[0];
    return this.dtype === "bool" ? v !== 0 : v;
  }
  /** PyTorch's repr, e.g. `tensor([1., 2.], requires_grad=True)`. */
  async repr(...args: never[]): Promise<string> {
    noArgs("repr", args);
    if (this.storage.device.simulated) {
      // As PyTorch prints meta tensors: no values, the device and the size.
      const size = `size=(${this.shape.join(", ")}${this.ndim === 1 ? "," : ""})`;
      const dtype = this.dtype === "float32" ? [] : [`dtype=torch.${this.dtype}`];
      return `tensor(..., ${[`device='${this.storage.device.name}'`, size, ...dtype, ...this._reprSuffixes()].join(", ")})`;
    }
    // grad_fn and requires_grad are read before the values arrive: a temporary (`x.mul(2).repr()` in a
    // cell) is released once repr returns its promise (memory/ownership.ts), and a released handle has
    // no autograd meta any more (its repr lost ", grad_fn=<MulBackward0>")
    const suffixes = this._reprSuffixes();
    return formatTensor(await this.data(), this.shape, this.dtype, suffixes);
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

  /**
   * Another handle to this same tensor (same storage and autograd identity). `keepBase = false` is for
   * handles the runtime keeps inside a graph (saved variables): they must not hold the base's handle,
   * which the base's own graph would then keep reachable (a view saved by its base's CopySlices).
   */
  _alias(keepBase = true): Tensor {
    return new Tensor(
      this.check().storage,
      this.shape,
      this._strides,
      this._offset,
      this.dtype,
      this._versionCounter,
      keepBase ? this._base : null,
      this._meta,
    );
  }
  /** The one device already: device and non_blocking change nothing; any other option raises. */
  cuda(...args: unknown[]): Tensor {
    const last = args[args.length - 1];
    if (isOpts(last)) checkKwargs("cuda", last, ["device", "non_blocking"], { memory_format: (v) => v === "torch.preserve_format" });
    return this._alias();
  }
  cpu(...args: unknown[]): Tensor {
    const last = args[args.length - 1];
    if (isOpts(last)) checkKwargs("cpu", last, [], { memory_format: (v) => v === "torch.preserve_format" });
    return this._alias();
  }
}
