// Elementwise ops as dispatches of kernels-wgsl/elementwise.wgsl: the strided operand description it
// reads (dims coalesced so contiguous operands cost one div per element), boxes that keep operands over
// one binding's limit splittable into windows, and an O(1) path for the common dense case. Kernels and
// params are cached or pooled so that a chain of small ops allocates little per op.

import { dtypeCode } from "../dtype.ts";
import { type Kernel, kernelOf } from "../device/pipelines.ts";
import { readyDevice } from "../device/backend.ts";
import { record } from "../device/scheduler.ts";
import { PARAM_WORDS } from "../device/encode.ts";
import { rangeOf } from "../device/verdicts.ts";
import type { Block } from "../memory/allocator.ts";
import { RuntimeError } from "../errors.ts";
import { contiguousStrides, type Tensor } from "../tensor.ts";
import { opName } from "./op-context.ts";
import {
  blockOf,
  coalesce,
  computes,
  dispatch,
  type DispatchOpts,
  type Extent,
  f32bits,
  fitsOneBinding,
  grid,
  limits,
  MAX_RANK,
  MAX_RUNS,
  plan,
  tooManyRuns,
  WG,
  WINDOW_ALIGN,
} from "./launch.ts";

/**
 * The extent of a strided operand over a row-major index space `shape` (coalesced): invocation i is
 * the element at multi-index(i); the operand reads offset + sum(idx_d * strides_d). Strides are >= 0.
 */
function stridedExtent(shape: readonly number[], strides: readonly number[], offset: number): (i0: number, i1: number) => [number, number] {
  const r = shape.length;
  return (i0, i1) => {
    if (r === 0) return [offset, offset];
    const a: number[] = new Array(r);
    const z: number[] = new Array(r);
    let x = i0;
    let y = i1 - 1;
    for (let d = r - 1; d >= 0; d--) {
      a[d] = x % shape[d];
      x = Math.floor(x / shape[d]);
      z[d] = y % shape[d];
      y = Math.floor(y / shape[d]);
    }
    let d = 0;
    let base = offset;
    while (d < r && a[d] === z[d]) {
      base += a[d] * strides[d];
      d++;
    }
    if (d === r) return [base, base];
    let hi = base + z[d] * strides[d];
    for (let e = d + 1; e < r; e++) hi += (shape[e] - 1) * strides[e];
    return [base + a[d] * strides[d], hi];
  };
}

/**
 * Records an elementwise dispatch: operand 0 is the output, the rest inputs, each given with the
 * strides it is read with over the output's shape (0 on broadcast dims).
 */
export function elementwise(
  entry: "unary" | "binary" | "where3",
  constants: Record<string, number>,
  out: Tensor,
  inputs: Array<{ t: Tensor; strides: number[] }>,
  scalars: [number, number] = [0, 0],
): void {
  if (denseElementwise(entry, constants, out, inputs, scalars)) return;
  const c = coalesce(out.shape, [out._strides, ...inputs.map((i) => i.strides)]);
  if (c.shape.length > MAX_RANK) throw new RuntimeError(`GradLab kernels support tensors of at most ${MAX_RANK} non-trivial dims`);
  const ops = [out, ...inputs.map((i) => i.t)];
  if (out.numel() === 0 || !computes(ops)) return;
  const sizes = ops.map((t) => blockOf(t).size);
  const binding = limits().binding;
  const boxes: Array<{ shape: number[]; offsets: number[] }> = [];
  splitBoxes(
    c.shape,
    c.strides,
    ops.map((t) => t._offset),
    sizes,
    binding,
    boxes,
  );
  if (boxes.length > MAX_RUNS) throw tooManyRuns(opName() ?? entry, boxes.length, binding);
  for (const box of boxes) {
    let n = 1;
    for (const d of box.shape) n *= d;
    const p = paramsWords();
    p[0] = n;
    p[1] = box.shape.length;
    p[2] = f32bits(scalars[0]);
    p[3] = f32bits(scalars[1]);
    for (let d = 0; d < box.shape.length; d++) p[4 + d] = box.shape[d];
    // The pipeline is specialised on each operand's dtype and layout (elementwise.wgsl: D<k>, M<k>).
    let sig = 0;
    let strided = false;
    let vec4 = n % 4 === 0;
    for (let k = 0; k < ops.length; k++) {
      const code = dtypeCode[ops[k].dtype];
      const strides = c.strides[k];
      p[12 + k] = box.offsets[k];
      for (let d = 0; d < strides.length; d++) p[16 + k * 8 + d] = strides[d];
      p[48 + k] = code;
      const mode = layoutMode(box.shape, strides);
      p[52 + k] = layoutDivisor;
      if (mode === 0) strided = true;
      if (!vec4Layout(k, mode, box.offsets[k], layoutDivisor)) vec4 = false;
      sig = sig * 64 + code * 8 + mode;
    }
    const single = boxes.length === 1 && fitsOneBinding(ops);
    if (vec4 && !strided) {
      // Four consecutive elements per step (elementwise.wgsl *_v4), VEC4_STEPS steps N apart per
      // invocation where each operand's accesses over the whole box fit one binding (then the windowed
      // plan is one run: every invocation in it, so N is the whole grid), else one step per invocation.
      // Windows end on a whole vec4 (hi | 3): a one-element operand is read through its vec4. The
      // extents are worked out only where an operand needs windows (a bias add per op allocates none).
      let variant = n >= VEC4_MIN && single ? VEC4 : VEC4_ONE;
      let opts: DispatchOpts | undefined;
      if (!single) {
        const ext = ops.map((_, j) => stridedExtent(box.shape, c.strides[j], box.offsets[j]));
        const whole = ext.map((e) => {
          const [lo, hi] = e(0, n);
          return [lo, hi | 3] as [number, number];
        });
        if (n >= VEC4_MIN && oneWindowEach(ops, whole, binding)) {
          variant = VEC4;
          opts = { extent: (k) => whole[k] };
        } else
          opts = {
            extent: (k, j0, j1) => {
              const [lo, hi] = ext[k](4 * j0, 4 * j1);
              return [lo, hi | 3];
            },
          };
      }
      const kernel = elementwiseKernel(entry, constants, ops, box.shape, c.strides, sig * VARIANTS + variant);
      // VEC4: every invocation launched is counted (a windowed run turns away those past its count, and
      // here invocation j also does elements of j + N, j + 2N, ...; N the whole grid).
      const g = grid(Math.ceil(n / (4 * VEC4_STEPS)));
      const invocations = variant === VEC4 ? g[0] * g[1] * WG : Math.ceil(n / 4);
      dispatch("elementwise", kernel.entry, ops, p, invocations, kernel.constants as Record<string, number>, opts, kernel);
      continue;
    }
    // Several elements per invocation where no operand needs windows (those runs map invocation i to
    // element i): the lanes of a CPU adapter such as lavapipe then share each invocation's fixed cost.
    if (n >= 4096 && single) {
      // On a CPU adapter, an operand read through general strides (a transpose) is walked in runs
      // along rows (elementwise.wgsl RUN): one division per run, neighbouring lanes on neighbouring rows.
      if (strided && cpuAdapter()) {
        const n1 = box.shape[box.shape.length - 1];
        const kernel = elementwiseKernel(entry, constants, ops, box.shape, c.strides, sig * VARIANTS + RUNS);
        dispatch("elementwise", entry, ops, p, (n / n1) * Math.ceil(n1 / RUN_LENGTH), kernel.constants as Record<string, number>, undefined, kernel);
        continue;
      }
      const kernel = elementwiseKernel(entry, constants, ops, box.shape, c.strides, sig * VARIANTS + FOUR);
      dispatch("elementwise", entry, ops, p, Math.ceil(n / 4), kernel.constants as Record<string, number>, undefined, kernel);
      continue;
    }
    const kernel = elementwiseKernel(entry, constants, ops, box.shape, c.strides, sig * VARIANTS + ONE);
    // Built only if an operand needs windows (see plan).
    let ext: Array<(i0: number, i1: number) => [number, number]> | null = null;
    const extent: Extent = (k, i0, i1) => (ext ??= ops.map((_, j) => stridedExtent(box.shape, c.strides[j], box.offsets[j])))[k](i0, i1);
    dispatch("elementwise", entry, ops, p, n, kernel.constants as Record<string, number>, { extent }, kernel);
  }
}

/**
 * The common case in O(1) work per operand and without the general planning's arrays: the output is
 * row-major, every input is read with the output's strides (same shape, same layout), and every block
 * fits one binding. Coalesced, such an index space is one dim of n elements (contiguous operands, M=1),
 * or no dim when n = 1 (one element, M=2): the same params and kernel the general path computes for it.
 * Returns false (nothing recorded) where the general path is needed.
 */
function denseElementwise(
  entry: "unary" | "binary" | "where3",
  constants: Record<string, number>,
  out: Tensor,
  inputs: Array<{ t: Tensor; strides: number[] }>,
  scalars: [number, number],
): boolean {
  const shape = out.shape;
  const strides = out._strides;
  let n = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    if (strides[d] !== n) return false;
    n *= shape[d];
  }
  if (n === 0) return false;
  for (const i of inputs) {
    if (i.strides.length !== strides.length) return false;
    for (let d = 0; d < strides.length; d++) if (i.strides[d] !== strides[d]) return false;
  }
  const device = out.check().storage.device;
  for (const i of inputs) if (i.t.check().storage.device !== device) return false; // the general path says which devices
  if (device.simulated) return true; // nothing is computed there
  const binding = limits().binding;
  const blocks: Block[] = [blockOf(out)];
  if (blocks[0].size > binding) return false;
  for (const i of inputs) {
    const b = blockOf(i.t);
    if (b.size > binding) return false;
    blocks.push(b);
  }
  const rank = n === 1 ? 0 : 1;
  const mode = n === 1 ? 2 : 1;
  const p = paramsWords();
  p[0] = n;
  p[1] = rank;
  p[2] = f32bits(scalars[0]);
  p[3] = f32bits(scalars[1]);
  if (rank) p[4] = n;
  let sig = 0;
  let vec4 = rank === 1 && n % 4 === 0;
  for (let k = 0; k < blocks.length; k++) {
    const t = k === 0 ? out : inputs[k - 1].t;
    const code = dtypeCode[t.dtype];
    p[12 + k] = t._offset;
    if (rank) p[16 + k * 8] = 1;
    p[48 + k] = code;
    if (t._offset % 4 !== 0) vec4 = false;
    sig = sig * 64 + code * 8 + mode;
  }
  const variant = vec4 ? (n >= VEC4_MIN ? VEC4 : VEC4_ONE) : n >= 4096 ? FOUR : ONE;
  let bySig = elementwiseKernels.get(constants);
  if (!bySig) elementwiseKernels.set(constants, (bySig = new Map()));
  let kernel = bySig.get(sig * VARIANTS + variant);
  if (!kernel) {
    const ops = [out, ...inputs.map((i) => i.t)];
    const c = coalesce(shape, [strides, ...inputs.map((i) => i.strides)]);
    kernel = elementwiseKernel(entry, constants, ops, c.shape, c.strides, sig * VARIANTS + variant);
  }
  const label = opName() ?? entry;
  const invocations = Math.ceil(n / PER_INVOCATION[variant]);
  if (plan(label, blocks, invocations, undefined)) throw new RuntimeError("internal: a dense elementwise op needs windows");
  record({
    kind: "dispatch",
    shader: "elementwise",
    entry: kernel.entry,
    constants: kernel.constants as Record<string, number>,
    kernel,
    buffers: blocks.map(rangeOf),
    params: p,
    workgroups: grid(invocations),
    label,
    // Declared now, set when the batch is encoded: the record keeps one shape (no property store grown then).
    pipeline: undefined,
    bindGroup: undefined,
  });
  return true;
}

/**
 * Params arrays are handed out as views of a shared buffer: one allocation per 256 ops instead of one
 * per op (a fresh 224-byte typed array is an off-heap allocation the collector must also track).
 */
let paramsPool = new Uint32Array(0);
let paramsUsed = 0;
function paramsWords(): Uint32Array {
  if (paramsUsed === paramsPool.length) {
    paramsPool = new Uint32Array(PARAM_WORDS * 256);
    paramsUsed = 0;
  }
  return paramsPool.subarray(paramsUsed, (paramsUsed += PARAM_WORDS));
}

/** How many elements an invocation runs (a kernel's number modulo VARIANTS): one, four (EPT), a run of
 *  RUN_LENGTH along a row (RUN), VEC4_STEPS vec4s (the *_v4 entry points, EPT) or one vec4. */
const ONE = 0;
const FOUR = 1;
const RUNS = 2;
const VEC4 = 3;
const VEC4_ONE = 4;
const VARIANTS = 8;
/** vec4 steps per invocation (EPT of VEC4), and the fewest elements for which VEC4 is chosen: below it
 *  one vec4 per invocation leaves more workgroups to lavapipe's threads. */
const VEC4_STEPS = 4;
const VEC4_MIN = 16384;
/** Elements per invocation of the dense path's variants. */
const PER_INVOCATION = [1, 4, 0, 4 * VEC4_STEPS, 4];

/**
 * Whether the elements each block's operands touch (ranges[k] for operand k; operands of one block, as
 * in an in-place op, together) fit one binding window as plan() aligns it: then its plan is one run.
 */
function oneWindowEach(ops: readonly Tensor[], ranges: ReadonlyArray<readonly [number, number]>, binding: number): boolean {
  const span = new Map<Block, [number, number]>();
  ops.forEach((t, k) => {
    const b = blockOf(t);
    const r = span.get(b);
    span.set(b, r ? [Math.min(r[0], ranges[k][0]), Math.max(r[1], ranges[k][1])] : [ranges[k][0], ranges[k][1]]);
  });
  for (const [b, [lo, hi]] of span) {
    const start = Math.floor((lo * 4) / WINDOW_ALIGN) * WINDOW_ALIGN;
    if (b.size > binding && Math.min((hi + 1) * 4, b.size) - start > binding) return false;
  }
  return true;
}

/**
 * Whether operand k, of layout `mode` (layoutMode) at element offset `offset`, can be read or written by
 * the vec4 entry points: the output contiguous; an input contiguous or repeated over leading dims (a
 * bias) on a multiple of 4 with a divisor that is one, one element for all, or a per-row value whose
 * rows are a multiple of 4 long (four consecutive elements share it).
 */
function vec4Layout(k: number, mode: number, offset: number, divisor: number): boolean {
  if (k === 0) return mode === 1 && offset % 4 === 0;
  if (mode === 1) return offset % 4 === 0;
  if (mode === 2) return true;
  if (mode === 3) return offset % 4 === 0 && divisor % 4 === 0;
  if (mode === 4) return divisor % 4 === 0;
  return false;
}

/** Elements per run in RUN mode (8, 16 and 32 measured on lavapipe: docs/performance.md). */
const RUN_LENGTH = 16;

/**
 * Whether the adapter runs kernels on the CPU (lavapipe/llvmpipe, SwiftShader): its invocations are SIMD
 * lanes of CPU threads, so it favours other kernel shapes than a GPU. False while no device is ready.
 */
function cpuAdapter(): boolean {
  const f = readyDevice()?.facts;
  if (!f) return false;
  if (f !== cpuFacts) {
    // asked per strided dispatch: the answer is worked out once per device
    cpuFacts = f;
    cpu = f.is_fallback_adapter || /llvmpipe|lavapipe|swiftshader/i.test(`${f.device} ${f.description} ${f.architecture} ${f.vendor}`);
  }
  return cpu;
}
let cpuFacts: object | null = null;
let cpu = false;

/**
 * The elementwise kernels, by the op's constants (interned by the caller: ops/elementwise.ts) and a
 * number that packs each operand's dtype and layout and how many elements an invocation runs.
 */
const elementwiseKernels = new WeakMap<object, Map<number, Kernel>>();
function elementwiseKernel(
  entry: string,
  constants: Record<string, number>,
  ops: readonly Tensor[],
  shape: readonly number[],
  strides: readonly number[][],
  sig: number,
): Kernel {
  let bySig = elementwiseKernels.get(constants);
  if (!bySig) elementwiseKernels.set(constants, (bySig = new Map()));
  let kernel = bySig.get(sig);
  if (!kernel) {
    const spec: Record<string, number> = { ...constants };
    // Operand slots the entry does not use: "one element", so no walk or division is made for them.
    for (let k = ops.length; k < 4; k++) spec[`M${k}`] = 2;
    ops.forEach((t, k) => {
      spec[`D${k}`] = dtypeCode[t.dtype];
      spec[`M${k}`] = layoutMode(shape, strides[k]);
    });
    const variant = sig % VARIANTS;
    if (variant === FOUR) spec.EPT = 4;
    else if (variant === VEC4) spec.EPT = VEC4_STEPS;
    else if (variant === RUNS) {
      spec.RUN = 1;
      spec.EPT = RUN_LENGTH;
    }
    kernel = kernelOf("elementwise", variant === VEC4 || variant === VEC4_ONE ? `${entry}_v4` : entry, spec);
    bySig.set(sig, kernel);
  }
  return kernel;
}

/**
 * Splits an elementwise index space into boxes over each of which every operand larger than one
 * binding spans at most one binding, halving the dim along which some operand spans the most. A
 * strided operand (a transpose) over the limit would otherwise need one windowed run per few
 * elements: tens of thousands of bind groups for one op, which exhausted lavapipe's descriptor pools
 * inside Dawn (a segmentation fault in vkCreateDescriptorPool, issue 21).
 */
function splitBoxes(
  shape: number[],
  strides: number[][],
  offsets: number[],
  sizes: number[],
  binding: number,
  out: Array<{ shape: number[]; offsets: number[] }>,
): void {
  let worst = -1;
  let worstSpan = 0;
  for (let k = 0; k < strides.length; k++) {
    if (sizes[k] <= binding) continue;
    let span = 0;
    for (let d = 0; d < shape.length; d++) span += (shape[d] - 1) * strides[k][d];
    if ((span + 1) * 4 <= binding) continue;
    for (let d = 0; d < shape.length; d++) {
      const s = (shape[d] - 1) * strides[k][d];
      if (shape[d] > 1 && s > worstSpan) {
        worstSpan = s;
        worst = d;
      }
    }
  }
  if (worst < 0) {
    out.push({ shape, offsets });
    return;
  }
  const half = Math.floor(shape[worst] / 2);
  const a = [...shape];
  a[worst] = half;
  const b = [...shape];
  b[worst] = shape[worst] - half;
  splitBoxes(a, strides, offsets, sizes, binding, out);
  splitBoxes(
    b,
    strides,
    offsets.map((o, k) => o + half * strides[k][worst]),
    sizes,
    binding,
    out,
  );
}

/**
 * How an operand is laid out over the (coalesced) index space, as elementwise.wgsl's M<k>; the divisor
 * its layout needs is left in layoutDivisor: 1 contiguous, 2 one element, 3 repeated over leading dims
 * (i % divisor), 4 repeated over trailing dims (i / divisor), 0 anything else (the general strided walk).
 */
let layoutDivisor = 0;
function layoutMode(shape: readonly number[], strides: readonly number[]): number {
  layoutDivisor = 0;
  const r = shape.length;
  // The common cases first, without allocating: one element, or contiguous.
  let zeros = true;
  let dense = true;
  let acc = 1;
  for (let d = r - 1; d >= 0; d--) {
    if (strides[d] !== 0) zeros = false;
    if (strides[d] !== acc) dense = false;
    acc *= Math.max(shape[d], 1);
  }
  if (zeros) return 2;
  if (dense) return 1;
  const row = contiguousStrides(shape);
  // Leading dims broadcast, trailing dims contiguous among themselves: offset + i % inner.
  let j = 0;
  while (j < r && strides[j] === 0) j++;
  if (j > 0 && strides.slice(j).every((s, d) => s === row[j + d])) {
    layoutDivisor = row[j - 1];
    return 3;
  }
  // Trailing dims broadcast, leading dims contiguous among themselves: offset + i / inner.
  let k = r;
  while (k > 0 && strides[k - 1] === 0) k--;
  if (k < r) {
    const lead = contiguousStrides(shape.slice(0, k));
    if (strides.slice(0, k).every((s, d) => s === lead[d])) {
      layoutDivisor = row[k - 1];
      return 4;
    }
  }
  return 0;
}
