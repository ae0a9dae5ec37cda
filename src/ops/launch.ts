// Turning an op into a recorded dispatch: workgroup counts, and the strided operand description that
// kernels-wgsl/elementwise.wgsl reads (dims coalesced so contiguous operands cost one div per element).

import { dtypeCode } from "../dtype.ts";
import { enqueue } from "../device/scheduler.ts";
import type { Block } from "../memory/allocator.ts";
import { RuntimeError } from "../errors.ts";
import { checkSameDevice } from "../memory/devices.ts";
import type { Tensor } from "../tensor.ts";

const MAX_RANK = 8;
const WG = 64;
const MAX_GROUPS = 65535;

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
function computes(operands: Tensor[]): boolean {
  return !checkSameDevice(operands.map((t) => t.check().storage.device)).simulated;
}

export function dispatch(shader: string, entry: string, operands: Tensor[], params: number[] | Uint32Array, invocations: number, constants?: Record<string, number>): void {
  if (invocations === 0 || !computes(operands)) return;
  enqueue(shader, entry, operands.map(blockOf), params instanceof Uint32Array ? params : Uint32Array.from(params), grid(invocations), constants);
}

/** Records a dispatch with an explicit workgroup grid (kernels that index by workgroup_id). */
export function dispatchGrid(shader: string, entry: string, operands: Tensor[], params: number[], workgroups: [number, number, number], constants?: Record<string, number>, subgroupShader?: string): void {
  if (workgroups.some((w) => w === 0) || !computes(operands)) return;
  if (workgroups.some((w) => w > MAX_GROUPS)) throw new RuntimeError(`internal: dispatch grid [${workgroups.join(", ")}] exceeds ${MAX_GROUPS} per dimension`);
  enqueue(shader, entry, operands.map(blockOf), Uint32Array.from(params), workgroups, constants, subgroupShader);
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
  const n = out.numel();
  const c = coalesce(out.shape, [out._strides, ...inputs.map((i) => i.strides)]);
  if (c.shape.length > MAX_RANK) throw new RuntimeError(`GradLab kernels support tensors of at most ${MAX_RANK} non-trivial dims`);
  const p = new Uint32Array(52);
  p[0] = n;
  p[1] = c.shape.length;
  p[2] = f32bits(scalars[0]);
  p[3] = f32bits(scalars[1]);
  c.shape.forEach((s, d) => (p[4 + d] = s));
  const ops = [out, ...inputs.map((i) => i.t)];
  ops.forEach((t, k) => {
    p[12 + k] = t._offset;
    c.strides[k].forEach((s, d) => (p[16 + k * 8 + d] = s));
    p[48 + k] = dtypeCode[t.dtype];
  });
  dispatch("elementwise", entry, ops, p, n, constants);
}
