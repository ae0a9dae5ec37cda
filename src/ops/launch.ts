// Turning an op into a recorded dispatch: workgroup counts, checks against the adapter's limits, and
// windowed runs for blocks larger than one binding (elementwise ops: ops/elementwise-launch.ts).

import { enqueue, record } from "../device/scheduler.ts";
import { PARAM_WORDS, type SubgroupVariant } from "../device/encode.ts";
import type { Kernel } from "../device/pipelines.ts";
import { rangeOf, type Range } from "../device/verdicts.ts";
import { bindingLimit, readyDevice } from "../device/backend.ts";
import type { Block } from "../memory/allocator.ts";
import { RuntimeError } from "../errors.ts";
import { checkSameDevice } from "../memory/devices.ts";
import { formatBytes } from "../memory/format-bytes.ts";
import type { Tensor } from "../tensor.ts";
import { opName } from "./op-context.ts";

export const MAX_RANK = 8;
export const WG = 64;
export const MAX_GROUPS = 65535;

/** A 2-D grid of 1-D workgroups covering n invocations (kernels use prelude's linear_id). */
export function grid(n: number): [number, number, number] {
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

export function blockOf(t: Tensor): Block {
  const b = t.check().storage.liveBlock();
  return b;
}

/** Operands must share a device; on a simulated device nothing is computed (returns false). */
export function computes(operands: Tensor[]): boolean {
  return !checkSameDevice(operands.map((t) => t.check().storage.device)).simulated;
}

/**
 * The elements operand k touches for invocations [i0, i1): an inclusive [lo, hi] range of element
 * offsets from the start of its block. A bound is enough (a window may be larger than what is read).
 */
export type Extent = (k: number, i0: number, i1: number) => [number, number];
export interface DispatchOpts {
  /** How invocations map to elements: lets a dispatch over a block larger than one binding run in windows. */
  extent?: Extent;
  /** Operands the kernel writes (default [0]): what becomes invalid if WebGPU rejects the dispatch. */
  writes?: number[];
}

export function limits(): { binding: number; buffer: number | null } {
  return { binding: bindingLimit(), buffer: readyDevice()?.facts.limits.maxBufferSize ?? null };
}

export const WINDOW_ALIGN = 256; // bytes: the largest minStorageBufferOffsetAlignment WebGPU allows
/**
 * The most windowed dispatches one op may record. Each window is a new bind group; Dawn frees them only
 * when the event loop turns, and lavapipe crashed the process (SIGSEGV in vkCreateDescriptorPool) after
 * some 40,000 in one synchronous job. An op over the limit raises before recording anything.
 */
export const MAX_RUNS = 4096;
export function tooManyRuns(op: string, runs: number, binding: number): RuntimeError {
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
export function plan(op: string, blocks: Block[], n: number, opts: DispatchOpts | undefined): Run[] | null {
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
      return { segment: b.segment, offset: b.offset + a, size, block: b.offset };
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
  __proto__: null as never,
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

/** Shaders with window extents declared in DEFAULTS (the lookup builds a key only for these). */
const WITH_DEFAULTS = new Set(Object.keys(DEFAULTS).map((k) => k.slice(0, k.indexOf("."))));

export function dispatch(
  shader: string,
  entry: string,
  operands: Tensor[],
  params: number[] | Uint32Array,
  invocations: number,
  constants?: Record<string, number>,
  opts?: DispatchOpts,
  /** shader, entry and constants interned, for a caller that dispatches the same kernel often. */
  kernel?: Kernel,
): void {
  if (invocations === 0 || !computes(operands)) return;
  const blocks = operands.map(blockOf);
  const p = params instanceof Uint32Array ? params : Uint32Array.from(params);
  const label = opName() ?? entry;
  if (!opts && WITH_DEFAULTS.has(shader)) opts = DEFAULTS[`${shader}.${entry}`]?.(p);
  const runs = plan(label, blocks, invocations, opts);
  if (!runs) {
    if (kernel)
      record({
        kind: "dispatch",
        shader,
        entry,
        constants,
        kernel,
        buffers: blocks.map(rangeOf),
        params: p,
        workgroups: grid(invocations),
        label,
        writes: opts?.writes,
      });
    else if (opts?.writes)
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
  subgroup?: SubgroupVariant,
): void {
  if (workgroups.some((w) => w === 0) || !computes(operands)) return;
  const over = workgroups.some((w) => w > MAX_GROUPS) ? workgroups : subgroup?.workgroups.some((w) => w > MAX_GROUPS) ? subgroup.workgroups : null;
  if (over) throw new RuntimeError(`internal: dispatch grid [${over.join(", ")}] exceeds ${MAX_GROUPS} per dimension`);
  const blocks = operands.map(blockOf);
  const label = opName() ?? entry;
  plan(label, blocks, 1, undefined);
  enqueue(shader, entry, blocks, Uint32Array.from(params), workgroups, constants, subgroup, label);
}

/** The most bytes one binding may cover now. */
export const maxBindingBytes = () => limits().binding;

/** Whether every operand fits one binding (else only kernels with an extent can run on it). */
export function fitsOneBinding(operands: Tensor[]): boolean {
  const lim = limits().binding;
  return operands.every((t) => blockOf(t).size <= lim);
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
