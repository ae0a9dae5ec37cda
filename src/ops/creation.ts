// Creating tensors: from nested arrays (uploaded in order with the dispatches around them), filled,
// ranged, and random. Random draws come from a counter-based generator on the GPU (kernels-wgsl/
// random.wgsl): the state is (seed, offset), each draw advances the offset by its element count, so
// get_rng_state/set_rng_state replay a draw exactly (as checkpointing's preserve_rng_state needs).

import { checkDType, type DType } from "../dtype.ts";
import { pyTypeName } from "../pystr.ts";
import { RuntimeError, TypeError_ } from "../errors.ts";
import { upload } from "../device/scheduler.ts";
import { Tensor, type Scalar } from "../tensor.ts";
import { checkInt32, full } from "./elementwise.ts";
import { dispatch, f32bits } from "./launch.ts";
import { flatShape } from "./views.ts";
import { deviceForNewStorage } from "../memory/devices.ts";
import { checkKwargs, isFalse, isNone, isOpts, noArgs } from "../kwargs.ts";

export interface CreateOpts {
  dtype?: DType;
  requires_grad?: boolean;
  device?: string;
}

type Nested = number | boolean | Nested[];

const CREATE_KEYWORDS = ["dtype", "requires_grad", "device"];
/** PyTorch's other factory keywords: accepted at their defaults, raised otherwise. */
const CREATE_DEFAULTS = {
  layout: (v: unknown) => v === null || v === "strided",
  pin_memory: isFalse,
  memory_format: isNone,
  out: isNone,
  names: isNone,
  generator: isNone,
};
const DTYPE_NAMES: Record<string, string> = { float: "float32", int: "int32", float32: "float32", int32: "int32", bool: "bool" };

/**
 * A creation function's keywords, checked at run time (the kernel strips types): an unknown keyword, a
 * dtype that is not one of GradLab's, a device that is not where new tensors go, all raise.
 */
export function createOpts(fn: string, opts: CreateOpts | undefined, extra: readonly string[] = []): CreateOpts {
  checkKwargs(fn, opts, [...CREATE_KEYWORDS, ...extra], CREATE_DEFAULTS);
  const o: CreateOpts = { ...opts };
  if (o.dtype !== undefined && o.dtype !== null) {
    const d = o.dtype as unknown;
    if (typeof d !== "string" || !(d in DTYPE_NAMES) || DTYPE_NAMES[d] !== d) {
      throw new TypeError_(
        `${fn}(): argument 'dtype' must be torch.dtype (GradLab has torch.float32, torch.int32 and torch.bool), not ${typeof d === "string" ? JSON.stringify(d) : pyType(d)}`,
      );
    }
  } else delete o.dtype;
  if (o.device !== undefined && o.device !== null) {
    const dev = deviceForNewStorage();
    const want = String(o.device);
    const aliases = dev.simulated ? [dev.name] : [dev.name, "webgpu", "cuda", "cuda:0"];
    if (!aliases.includes(want)) {
      throw new RuntimeError(`${fn}(): GradLab creates tensors on the current device (${dev.name}); device='${want}' is not available here`);
    }
  }
  if (o.requires_grad !== undefined && typeof o.requires_grad !== "boolean") {
    throw new TypeError_(`${fn}(): argument 'requires_grad' must be bool, not ${pyType(o.requires_grad)}`);
  }
  return o;
}

function finish(t: Tensor, opts?: CreateOpts): Tensor {
  if (opts?.requires_grad) {
    if (t.dtype !== "float32") {
      t.dispose();
      throw new RuntimeError("Only Tensors of floating point and complex dtype can require gradients");
    }
    t.requires_grad = true;
  }
  return t;
}

function inferShape(data: Nested): number[] {
  const shape: number[] = [];
  let cur: Nested = data;
  while (Array.isArray(cur)) {
    shape.push(cur.length);
    cur = cur[0];
    if (cur === undefined) break;
  }
  return shape;
}

function flatten(data: Nested, shape: number[], depth: number, out: Array<number | boolean>): void {
  if (depth === shape.length) {
    if (typeof data !== "number" && typeof data !== "boolean") {
      throw new TypeError_(`torch.tensor: expected a number or boolean at depth ${depth}, got ${Array.isArray(data) ? "a list" : typeof data}`);
    }
    out.push(data);
    return;
  }
  if (!Array.isArray(data) || data.length !== shape[depth]) {
    throw new RuntimeError(`expected sequence of length ${shape[depth]} at dim ${depth} (got ${Array.isArray(data) ? data.length : typeof data})`);
  }
  for (const d of data) flatten(d, shape, depth + 1, out);
}

/** torch.tensor(data): numbers become float32 unless dtype says otherwise (JS has no int literals). */
export function tensor(data: Nested | Float32Array | Int32Array, opts?: CreateOpts): Tensor {
  opts = createOpts("tensor", opts);
  let values: ArrayLike<number | boolean>;
  let shape: number[];
  if (data instanceof Float32Array || data instanceof Int32Array) {
    values = data;
    shape = [data.length];
  } else {
    shape = inferShape(data);
    const flat: Array<number | boolean> = [];
    flatten(data, shape, 0, flat);
    values = flat;
  }
  const dtype = opts?.dtype
    ? checkDType(opts.dtype)
    : data instanceof Int32Array
      ? "int32"
      : values.length > 0 && typeof values[0] === "boolean"
        ? "bool"
        : "float32";
  if (dtype === "int32") for (let i = 0; i < values.length; i++) checkInt32(Number(values[i]), dtype);
  const t = Tensor.empty(shape, dtype);
  const n = values.length;
  const buf = dtype === "float32" ? new Float32Array(n) : dtype === "int32" ? new Int32Array(n) : new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const v = Number(values[i]);
    buf[i] = dtype === "bool" ? (v ? 1 : 0) : dtype === "int32" ? Math.trunc(v) : v;
  }
  if (n > 0 && !t.storage.device.simulated) upload(t.storage.liveBlock(), buf);
  return finish(t, opts);
}

export function scalar_tensor(v: Scalar, opts?: CreateOpts): Tensor {
  if (typeof v !== "number" && typeof v !== "boolean") throw new TypeError_(`scalar_tensor(): argument 's' (position 1) must be Number, not ${pyType(v)}`);
  opts = createOpts("scalar_tensor", opts);
  return finish(full([], v, opts?.dtype ?? "float32"), opts);
}

type ShapeArgs = Array<number | number[] | CreateOpts>;
/** Python's type name for a JS value; an object by its class (a torch.Tensor, a Map). */
const pyType = (v: unknown) => pyTypeName(v, (o) => (typeof o === "object" ? ((o as object).constructor?.name ?? "object") : typeof o));

/** The size argument of a creation function, checked as PyTorch's argument parser checks it (torch 1.13's words). */
function shapeAndOpts(args: ShapeArgs, op = "empty"): { shape: number[]; opts: CreateOpts } {
  args = [...args];
  const last = args[args.length - 1];
  const opts = last !== undefined && last !== null && typeof last === "object" && !Array.isArray(last) ? (args.pop() as CreateOpts) : {};
  // torch 1.13 says "tuple of ints" for rand/randn and "tuple of SymInts" for the others.
  const what = op === "rand" || op === "randn" ? "ints" : "SymInts";
  const bad = (v: unknown) => new TypeError_(`${op}(): argument 'size' (position 1) must be tuple of ${what}, not ${pyType(v)}`);
  if (args.length === 0) return { shape: [], opts: createOpts(op, opts) };
  if (args.length === 1 && !Array.isArray(args[0]) && typeof args[0] !== "number") throw bad(args[0]);
  const shape = flatShape(args as Array<number | number[]>);
  for (const s of shape) {
    if (typeof s !== "number" || !Number.isInteger(s)) throw bad(args.length === 1 && Array.isArray(args[0]) ? args[0] : s);
  }
  for (const s of shape) {
    if (s < 0) throw new RuntimeError(`Trying to create tensor with negative dimension ${s}: [${shape.join(", ")}]`);
  }
  return { shape, opts: createOpts(op, opts) };
}

export const empty = (...args: ShapeArgs) => {
  const { shape, opts } = shapeAndOpts(args, "empty");
  return finish(Tensor.empty(shape, opts.dtype ?? "float32"), opts);
};
export const zeros = (...args: ShapeArgs) => {
  const { shape, opts } = shapeAndOpts(args, "zeros");
  return finish(full(shape, 0, opts.dtype ?? "float32"), opts);
};
export const ones = (...args: ShapeArgs) => {
  const { shape, opts } = shapeAndOpts(args, "ones");
  return finish(full(shape, 1, opts.dtype ?? "float32"), opts);
};
export function fullOf(shape: number[], value: Scalar, opts?: CreateOpts): Tensor {
  shapeAndOpts([shape], "full");
  opts = createOpts("full", opts);
  if (typeof value !== "number" && typeof value !== "boolean") {
    throw new TypeError_(`full(): argument 'fill_value' (position 2) must be Number, not ${pyType(value)}`);
  }
  const dtype = opts?.dtype ?? (typeof value === "boolean" ? "bool" : "float32");
  return finish(full(flatShape([shape]), value, dtype), opts);
}

const like = (x: Tensor, opts?: CreateOpts): CreateOpts => ({ ...opts, dtype: opts?.dtype ?? x.check().dtype });
export const empty_like = (x: Tensor, opts?: CreateOpts) => empty(x.shape, like(x, opts));
export const zeros_like = (x: Tensor, opts?: CreateOpts) => zeros(x.shape, like(x, opts));
export const ones_like = (x: Tensor, opts?: CreateOpts) => ones(x.shape, like(x, opts));
export const full_like = (x: Tensor, v: Scalar, opts?: CreateOpts) => fullOf(x.shape, v, like(x, opts));
export const rand_like = (x: Tensor, opts?: CreateOpts) => rand(x.shape, like(x, opts));
export const randn_like = (x: Tensor, opts?: CreateOpts) => randn(x.shape, like(x, opts));

type RangeOpts = CreateOpts & { start?: number; end?: number; step?: number };
/**
 * torch.arange(end) / (start, end) / (start, end, step), each also a keyword ({end}, {step}); int32
 * when all arguments are integers. The options object is found wherever it stands (arange(3, {dtype})
 * once read it as `end` and gave an empty tensor).
 */
export function arange(...args: Array<number | RangeOpts | undefined>): Tensor {
  const last = args[args.length - 1];
  const kw: RangeOpts = isOpts(last) ? (args.pop() as RangeOpts) : {};
  const { start: kStart, end: kEnd, step: kStep, ...rest } = createOpts("arange", kw, ["start", "end", "step"]) as RangeOpts;
  const opts: CreateOpts = rest;
  while (args.length && args[args.length - 1] === undefined) args.pop();
  const nums = [...args];
  if (nums.length === 1 && kEnd === undefined) nums.unshift(kStart ?? 0);
  const num = (name: string, v: unknown): number => {
    if (typeof v !== "number") throw new TypeError_(`arange(): argument '${name}' must be Number, not ${pyType(v)}`);
    return v;
  };
  const start = num("start", nums[0] ?? kStart ?? 0);
  const end = num("end", nums[1] ?? kEnd);
  const step = num("step", nums[2] ?? kStep ?? 1);
  if (step === 0) throw new RuntimeError("step must be nonzero");
  if ((end - start) / step < 0) throw new RuntimeError("upper bound and larger bound inconsistent with step sign");
  const n = Math.ceil((end - start) / step);
  const dtype = opts.dtype ?? ([start, end, step].every(Number.isInteger) ? "int32" : "float32");
  const values = Array.from({ length: n }, (_, i) => start + i * step);
  return tensor(values, { ...opts, dtype });
}

export function linspace(start: number, end: number, steps: number, opts?: CreateOpts): Tensor {
  opts = createOpts("linspace", opts);
  if (!Number.isInteger(steps) || steps < 0) throw new RuntimeError("number of steps must be non-negative");
  const step = steps > 1 ? (end - start) / (steps - 1) : 0;
  // PyTorch fills the two halves from each end, so the last element is exactly `end`.
  const half = Math.floor(steps / 2);
  const values = steps === 1 ? [start] : Array.from({ length: steps }, (_, i) => (i < half ? start + i * step : end - (steps - 1 - i) * step));
  return tensor(values, { dtype: "float32", ...opts });
}

// ---- random ----
const rng = { seed: 0x2f6b_1d3an, offset: 0 };

/** torch.manual_seed(seed): resets the generator to (seed, offset 0). */
export function manual_seed(seed: number | bigint, ...rest: never[]): void {
  noArgs("manual_seed", rest);
  // Python's int(seed): a float is truncated; anything else is torch's TypeError (not a RNG left broken)
  if (typeof seed !== "bigint" && (typeof seed !== "number" || !Number.isFinite(seed))) {
    throw new TypeError_(`int() argument must be a string, a bytes-like object or a real number, not '${pyTypeName(seed)}'`);
  }
  rng.seed = BigInt.asUintN(64, BigInt(typeof seed === "number" ? Math.trunc(seed) : seed));
  rng.offset = 0;
}
export function initial_seed(...args: never[]): number {
  noArgs("initial_seed", args);
  return Number(rng.seed);
}
export function get_rng_state(...args: never[]): { seed: bigint; offset: number } {
  noArgs("get_rng_state", args);
  return { ...rng };
}
export function set_rng_state(state: { seed: bigint; offset: number }): void {
  if (state === null || typeof state !== "object" || typeof state.seed !== "bigint" || !Number.isInteger(state.offset)) {
    throw new TypeError_(`set_rng_state(): expected a state returned by get_rng_state(), but got ${pyTypeName(state)}`);
  }
  rng.seed = state.seed;
  rng.offset = state.offset;
}

/** Records a random draw into `out` (and for dropout reads x, writes mask), advancing the offset. */
export function draw(dist: number, out: Tensor, a: number, b: number, extra: Tensor[] = [], xOffset = 0): void {
  const n = out.numel();
  const seed = rng.seed;
  const params = [n, Number(seed & 0xffffffffn), Number(seed >> 32n), rng.offset >>> 0, f32bits(a), f32bits(b), out._offset, xOffset];
  rng.offset += n;
  const extent = (k: number, i0: number, i1: number): [number, number] => {
    const off = k === 0 ? out._offset : k === 1 ? xOffset : 0;
    return [off + i0, off + i1 - 1];
  };
  dispatch("random", "draw", [out, ...extra], params, n, { DIST: dist }, { extent, writes: extra.length ? [0, 2] : [0] });
}

/** rand/randn draw floats only: torch 1.13 names the kernel that has no integer version. */
function floatOnly(kernel: string, opts: CreateOpts): void {
  if (opts.dtype && opts.dtype !== "float32") throw new RuntimeError(`"${kernel}" not implemented for '${opts.dtype === "int32" ? "Int" : "Bool"}'`);
}

export function rand(...args: ShapeArgs): Tensor {
  const { shape, opts } = shapeAndOpts(args, "rand");
  floatOnly("check_uniform_bounds", opts);
  const t = Tensor.empty(shape, "float32");
  draw(0, t, 0, 1);
  return finish(t, opts);
}

export function randn(...args: ShapeArgs): Tensor {
  const { shape, opts } = shapeAndOpts(args, "randn");
  floatOnly("normal_kernel_cpu", opts);
  const t = Tensor.empty(shape, "float32");
  draw(1, t, 0, 1);
  return finish(t, opts);
}

/** torch.randint(high, size) or torch.randint(low, high, size): int32 in [low, high). */
export function randint(a: number, b: number | number[], c?: number[] | CreateOpts, d?: CreateOpts): Tensor {
  const [low, high, size, rawOpts] = Array.isArray(b) ? [0, a, b, c as CreateOpts | undefined] : [a, b, c as number[], d];
  const opts = createOpts("randint", rawOpts);
  if (opts.requires_grad) throw new RuntimeError("Only Tensors of floating point and complex dtype can require gradients");
  if (!(high > low)) throw new RuntimeError(`random_ expects 'from' to be less than 'to', but got from=${low} >= to=${high}`);
  const t = Tensor.empty(size, "int32");
  draw(2, t, low, high);
  if (!opts?.dtype || opts.dtype === "int32") return t;
  const cast = t.to(opts.dtype);
  t.dispose();
  return cast;
}
