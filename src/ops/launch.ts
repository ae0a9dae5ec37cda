// Turning an op into a recorded dispatch: workgroup counts, and the strided operand description that
// kernels-wgsl/elementwise.wgsl reads (dims coalesced so contiguous operands cost one div per element).

import { dtypeCode } from "../dtype.ts";
import { enqueue, record, PARAM_WORDS } from "../device/scheduler.ts";
import { rangeOf, type Range } from "../device/verdicts.ts";
import { readyDevice } from "../device/backend.ts";
import type { Block } from "../memory/allocator.ts";
import { RuntimeError } from "../errors.ts";
import { checkSameDevice } from "../memory/devices.ts";
import { formatBytes } from "../memory/format-bytes.ts";
import { contiguousStrides, type Tensor } from "../tensor.ts";
import { opName } from "./op-context.ts";

const MAX_RANK = 8;
const WG = 64;
const MAX_GROUPS = 65535;

/** A 2-D grid of 1-D workgroups covering n invocations (kernels use prelude's linear_id). */
function grid(n: number): [number, number, number] {
  const groups = Math.max(1, Math.ceil(n / WG));
  if (groups <= MAX_GROUPS) return [groups, 1, 1];
  return [MAX_GROUPS, Math.ceil(groups / MAX_GROUPS), 1];
}

const scratchF = new Float32Array(1);
const scratchU = new Uint32Array(scratchF.buffer);
/** The bits of v as an f32 (shaders read scalars from the u32 params array). */
export function f32bits(v: number): number {
  scratchF[0] = v;
  return scratchU[0];
}

function blockOf(t: Tensor): Block {
  const b = t.check().storage.liveBlock();
  return b;
}

/** Operands must share a device; on a simulated device nothing is computed (returns false). */
function computes(operands: Tensor[]): boolean {
  return !checkSameDevice(operands.map((t) => t.check().storage.device)).simulated;
}

/**
 * The elements operand k touches for invocations [i0, i1): an inclusive [lo, hi] range of element
 * offsets from the start of its block. A bound is enough (a window may be larger than what is read).
 */
type Extent = (k: number, i0: number, i1: number) => [number, number];
export interface DispatchOpts {
  /** How invocations map to elements: lets a dispatch over a block larger than one binding run in windows. */
  extent?: Extent;
  /** Operands the kernel writes (default [0]): what becomes invalid if WebGPU rejects the dispatch. */
  writes?: number[];
}

/** WebGPU's default limit, used until the device is known (a smaller limit only means smaller windows). */
const DEFAULT_BINDING = 128 << 20;
let bindingOverride: number | null = null;
/** For tests: pretend the binding limit is `bytes` (null: the device's), so windowing runs on small tensors. */
export function _set_max_binding_size(bytes: number | null): void {
  bindingOverride = bytes;
}
function limits(): { binding: number; buffer: number | null } {
  const l = readyDevice()?.facts.limits;
  const binding = bindingOverride ?? l?.maxStorageBufferBindingSize ?? DEFAULT_BINDING;
  return { binding, buffer: l?.maxBufferSize ?? null };
}

const WINDOW_ALIGN = 256; // bytes: the largest minStorageBufferOffsetAlignment WebGPU allows
/**
 * The most windowed dispatches one op may record. Each window is a new bind group; Dawn frees them only
 * when the event loop turns, and lavapipe crashed the process (SIGSEGV in vkCreateDescriptorPool) after
 * some 40,000 in one synchronous job. An op over the limit raises before recording anything.
 */
const MAX_RUNS = 4096;
function tooManyRuns(op: string, runs: number, binding: number): RuntimeError {
  return new RuntimeError(
    `${op}: this op would need ${runs} windowed dispatches to stay within this adapter's maxStorageBufferBindingSize ` +
      `(${formatBytes(binding)}) (at most ${MAX_RUNS}); use smaller tensors`,
  );
}

interface Run {
  first: number;
  count: number;
  ranges: Range[];
}

/**
 * Checks the operands against the adapter's limits before anything is recorded, and splits the
 * dispatch into runs of invocations whose accesses fit one binding per block when a block is larger
 * than maxStorageBufferBindingSize. Returns null when one plain dispatch does.
 */
function plan(op: string, blocks: Block[], n: number, opts: DispatchOpts | undefined): Run[] | null {
  const lim = limits();
  for (const b of blocks) {
    if (lim.buffer !== null && b.segment.size > lim.buffer) {
      throw new RuntimeError(
        `${op}: a tensor of ${formatBytes(b.size)} lives in a GPU buffer of ${formatBytes(b.segment.size)}, larger than this ` +
          `adapter's maxBufferSize (${formatBytes(lim.buffer)}); split the tensor into smaller ones`,
      );
    }
  }
  let any = false;
  for (const b of blocks) if (b.size > lim.binding) any = true;
  if (!any) return null;
  const big = [...new Set(blocks.filter((b) => b.size > lim.binding))];
  const extent = opts?.extent;
  if (!extent) {
    throw new RuntimeError(
      `${op}: an operand of ${formatBytes(big[0].size)} is larger than this adapter's maxStorageBufferBindingSize ` +
        `(${formatBytes(lim.binding)}, the most one kernel binding may cover), and '${op}' cannot split its work over ` +
        `several bindings; use smaller tensors (e.g. split the batch)`,
    );
  }
  const users = big.map((b) => blocks.map((x, k) => (x === b ? k : -1)).filter((k) => k >= 0));
  const windowOf = (j: number, i0: number, i1: number): [number, number] => {
    let lo = Infinity;
    let hi = -Infinity;
    for (const k of users[j]) {
      const [a, z] = extent(k, i0, i1);
      lo = Math.min(lo, a);
      hi = Math.max(hi, z);
    }
    const start = Math.floor((lo * 4) / WINDOW_ALIGN) * WINDOW_ALIGN;
    return [start, Math.min((hi + 1) * 4, big[j].size)];
  };
  const fits = (i0: number, i1: number) =>
    big.every((_, j) => {
      const [a, z] = windowOf(j, i0, i1);
      return z - a <= lim.binding;
    });
  const runs: Run[] = [];
  for (let i0 = 0; i0 < n; ) {
    if (!fits(i0, i0 + 1)) {
      throw new RuntimeError(
        `${op}: one step of this kernel reads more than this adapter's maxStorageBufferBindingSize (${formatBytes(lim.binding)}) ` +
          `of one tensor, so it cannot run in windows; use smaller tensors`,
      );
    }
    let good = 1;
    let step = 2;
    while (i0 + step <= n && fits(i0, i0 + step)) {
      good = step;
      step *= 2;
    }
    let bad = Math.min(step, n - i0 + 1);
    if (i0 + good === n) bad = good + 1;
    while (bad - good > 1) {
      const mid = Math.floor((good + bad) / 2);
      if (i0 + mid <= n && fits(i0, i0 + mid)) good = mid;
      else bad = mid;
    }
    const i1 = i0 + good;
    const ranges = blocks.map((b) => {
      const j = big.indexOf(b);
      if (j < 0) return rangeOf(b);
      const [a, z] = windowOf(j, i0, i1);
      const size = Math.ceil((z - a) / 4) * 4;
      return { segment: b.segment, offset: b.offset + a, size, block: b.offset, base: a / 4 };
    });
    runs.push({ first: i0, count: i1 - i0, ranges });
    if (runs.length > MAX_RUNS) throw tooManyRuns(op, Math.round((runs.length * n) / i1), lim.binding);
    i0 = i1;
  }
  return runs;
}

/**
 * Window extents (and written operands) of kernels whose callers live outside src/ops, declared here
 * beside the other kernels' so that their dispatches split over several bindings too.
 */
const DEFAULTS: Record<string, (p: Uint32Array) => DispatchOpts> = {
  // rows.wgsl layer_norm_backward: operands dx, g, x, weight, mean, rstd; params [rows, n, g offset,
  // x offset, has weight, w offset, mean offset, rstd offset]. An absent weight binds x, unread.
  "rows.layer_norm_backward": (p) => ({
    writes: [0],
    extent: (k, r0, r1) => {
      const n = p[1];
      if (k === 3 && !p[4]) k = 2;
      if (k === 0) return [r0 * n, r1 * n - 1];
      if (k === 1) return [p[2] + r0 * n, p[2] + r1 * n - 1];
      if (k === 2) return [p[3] + r0 * n, p[3] + r1 * n - 1];
      if (k === 3) return [p[5], p[5] + Math.max(n - 1, 0)];
      return [(k === 4 ? p[6] : p[7]) + r0, (k === 4 ? p[6] : p[7]) + r1 - 1];
    },
  }),
  // rows.wgsl layer_norm: operands y, x, weight, bias, mean, rstd; params [rows, n, eps, x offset,
  // has weight, has bias, weight offset, bias offset]. An absent weight/bias binds x, unread.
  "rows.layer_norm": (p) => ({
    writes: [0, 4, 5],
    extent: (k, r0, r1) => {
      const n = p[1];
      if ((k === 2 && !p[4]) || (k === 3 && !p[5])) k = 1;
      if (k === 0) return [r0 * n, r1 * n - 1];
      if (k === 1) return [p[3] + r0 * n, p[3] + r1 * n - 1];
      if (k === 2) return [p[6], p[6] + Math.max(n - 1, 0)];
      if (k === 3) return [p[7], p[7] + Math.max(n - 1, 0)];
      return [r0, r1 - 1];
    },
  }),
};

export function dispatch(
  shader: string,
  entry: string,
  operands: Tensor[],
  params: number[] | Uint32Array,
  invocations: number,
  constants?: Record<string, number>,
  opts?: DispatchOpts,
): void {
  if (invocations === 0 || !computes(operands)) return;
  const blocks = operands.map(blockOf);
  const p = params instanceof Uint32Array ? params : Uint32Array.from(params);
  const label = opName() ?? entry;
  opts ??= DEFAULTS[`${shader}.${entry}`]?.(p);
  const runs = plan(label, blocks, invocations, opts);
  if (!runs) {
    if (opts?.writes)
      record({
        kind: "dispatch",
        shader,
        entry,
        constants,
        buffers: blocks.map(rangeOf),
        params: p,
        workgroups: grid(invocations),
        label,
        writes: opts.writes,
      });
    else enqueue(shader, entry, blocks, p, grid(invocations), constants, undefined, label);
    return;
  }
  if (p.length > PARAM_WORDS) throw new RuntimeError(`internal: ${entry} uses ${p.length} params words`);
  for (const r of runs) {
    record({
      kind: "dispatch",
      shader,
      entry,
      constants: { ...constants, WINDOWED: 1 },
      buffers: r.ranges,
      params: p,
      workgroups: grid(r.count),
      label,
      writes: opts?.writes,
      window: { first: r.first, count: r.count },
    });
  }
}

/** Records a dispatch with an explicit workgroup grid (kernels that index by workgroup_id). */
export function dispatchGrid(
  shader: string,
  entry: string,
  operands: Tensor[],
  params: number[],
  workgroups: [number, number, number],
  constants?: Record<string, number>,
  subgroupShader?: string,
): void {
  if (workgroups.some((w) => w === 0) || !computes(operands)) return;
  if (workgroups.some((w) => w > MAX_GROUPS)) throw new RuntimeError(`internal: dispatch grid [${workgroups.join(", ")}] exceeds ${MAX_GROUPS} per dimension`);
  const blocks = operands.map(blockOf);
  const label = opName() ?? entry;
  plan(label, blocks, 1, undefined);
  enqueue(shader, entry, blocks, Uint32Array.from(params), workgroups, constants, subgroupShader, label);
}

/** The most bytes one binding may cover now. */
export const maxBindingBytes = () => limits().binding;

/** Whether every operand fits one binding (else only kernels with an extent can run on it). */
export function fitsOneBinding(operands: Tensor[]): boolean {
  const lim = limits().binding;
  return operands.every((t) => blockOf(t).size <= lim);
}

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
 * Merges adjacent dims that are contiguous with each other in every operand, and drops size-1 dims.
 * Returns the coalesced shape and per-operand strides (stride 0 = broadcast).
 */
export function coalesce(shape: readonly number[], strides: number[][]): { shape: number[]; strides: number[][] } {
  const dims: number[] = [];
  for (let d = 0; d < shape.length; d++) if (shape[d] !== 1) dims.push(d);
  const outShape: number[] = [];
  const outStrides: number[][] = strides.map(() => []);
  for (const d of dims) {
    const last = outShape.length - 1;
    if (last >= 0 && strides.every((s, k) => outStrides[k][last] === s[d] * shape[d])) {
      outShape[last] *= shape[d];
      strides.forEach((s, k) => (outStrides[k][last] = s[d]));
    } else {
      outShape.push(shape[d]);
      strides.forEach((s, k) => outStrides[k].push(s[d]));
    }
  }
  return { shape: outShape, strides: outStrides };
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
    const n = box.shape.reduce((a, b) => a * b, 1);
    const p = new Uint32Array(56);
    p[0] = n;
    p[1] = box.shape.length;
    p[2] = f32bits(scalars[0]);
    p[3] = f32bits(scalars[1]);
    box.shape.forEach((s, d) => (p[4 + d] = s));
    // The pipeline is specialised on each operand's dtype and layout (elementwise.wgsl: D<k>, M<k>).
    const spec: Record<string, number> = { ...constants };
    // Operand slots the entry does not use: "one element", so no walk or division is made for them.
    for (let k = ops.length; k < 4; k++) spec[`M${k}`] = 2;
    ops.forEach((t, k) => {
      p[12 + k] = box.offsets[k];
      c.strides[k].forEach((s, d) => (p[16 + k * 8 + d] = s));
      p[48 + k] = dtypeCode[t.dtype];
      spec[`D${k}`] = dtypeCode[t.dtype];
      const [mode, divisor] = layoutOf(box.shape, c.strides[k]);
      spec[`M${k}`] = mode;
      p[52 + k] = divisor;
    });
    // Several elements per invocation where no operand needs windows (those runs map invocation i to
    // element i): the lanes of a CPU adapter such as lavapipe then share each invocation's fixed cost.
    if (n >= 4096 && boxes.length === 1 && fitsOneBinding(ops)) {
      // On a CPU adapter, an operand read through general strides (a transpose) is walked in runs
      // along rows (elementwise.wgsl RUN): one division per run, neighbouring lanes on neighbouring rows.
      if (cpuAdapter() && ops.some((_, k) => spec[`M${k}`] === 0)) {
        const n1 = box.shape[box.shape.length - 1];
        spec.RUN = 1;
        spec.EPT = RUN_LENGTH;
        dispatch("elementwise", entry, ops, p, (n / n1) * Math.ceil(n1 / RUN_LENGTH), spec);
        continue;
      }
      spec.EPT = 4;
      dispatch("elementwise", entry, ops, p, Math.ceil(n / 4), spec);
      continue;
    }
    // Built only if an operand needs windows (see plan).
    let ext: Array<(i0: number, i1: number) => [number, number]> | null = null;
    const extent: Extent = (k, i0, i1) => (ext ??= ops.map((_, j) => stridedExtent(box.shape, c.strides[j], box.offsets[j])))[k](i0, i1);
    dispatch("elementwise", entry, ops, p, n, spec, { extent });
  }
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
  return f.is_fallback_adapter || /llvmpipe|lavapipe|swiftshader/i.test(`${f.device} ${f.description} ${f.architecture} ${f.vendor}`);
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
 * How an operand is laid out over the (coalesced) index space, as elementwise.wgsl's M<k> and the
 * divisor its layout needs: 1 contiguous, 2 one element, 3 repeated over leading dims (i % divisor),
 * 4 repeated over trailing dims (i / divisor), 0 anything else (the general strided walk).
 */
function layoutOf(shape: readonly number[], strides: readonly number[]): [number, number] {
  if (strides.every((s) => s === 0)) return [2, 0];
  const r = shape.length;
  const row = contiguousStrides(shape);
  if (strides.every((s, d) => s === row[d])) return [1, 0];
  // Leading dims broadcast, trailing dims contiguous among themselves: offset + i % inner.
  let j = 0;
  while (j < r && strides[j] === 0) j++;
  if (j > 0 && strides.slice(j).every((s, d) => s === row[j + d])) return [3, row[j - 1]];
  // Trailing dims broadcast, leading dims contiguous among themselves: offset + i / inner.
  let k = r;
  while (k > 0 && strides[k - 1] === 0) k--;
  if (k < r) {
    const lead = contiguousStrides(shape.slice(0, k));
    if (strides.slice(0, k).every((s, d) => s === lead[d])) return [4, row[k - 1]];
  }
  return [0, 0];
}
