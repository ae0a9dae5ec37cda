// The op codes that the WGSL kernels switch on, declared once. A code is its name's position in its
// list; pipelines.ts puts `const U_NEG: u32 = 0u;`-style declarations in front of the shader, and the
// shader's `switch` names the constants (`case U_NEG:`), so no number is written twice and a case for
// an op that is not listed here fails to compile. test/op-table.test.ts checks that every listed code
// has its case.

import { defineShaderConstants } from "../device/pipelines.ts";

/** elementwise.wgsl `unary_op`: one input (or none: fill), scalars s0/s1. */
export const UNARY_KERNELS = [
  "neg", "abs", "exp", "log", "sqrt", "rsqrt", "relu", "gelu", "gelu_tanh", "sigmoid", "tanh", "clamp", "copy", "fill",
  "sign", "gelu_grad", "gelu_tanh_grad",
] as const;
/** elementwise.wgsl `binary_f` / `binary_i`. The fused backward kernels come last (see FUSED_FROM). */
export const BINARY_KERNELS = [
  "add", "sub", "mul", "div", "pow", "eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum",
  "gelu_backward", "gelu_tanh_backward", "threshold_backward", "sigmoid_backward", "tanh_backward",
] as const;
/** reduce.wgsl `reduce_rows`. */
export const REDUCE_KERNELS = ["sum", "max", "min", "argmax", "argmin", "var", "prod"] as const;

export type UnaryKernel = (typeof UNARY_KERNELS)[number];
export type BinaryKernel = (typeof BINARY_KERNELS)[number];
export type ReduceKernel = (typeof REDUCE_KERNELS)[number];

function codes<K extends string>(list: readonly K[]): Record<K, number> {
  return Object.fromEntries(list.map((k, i) => [k, i])) as Record<K, number>;
}
export const UNARY_CODE = codes(UNARY_KERNELS);
export const BINARY_CODE = codes(BINARY_KERNELS);
export const REDUCE_CODE = codes(REDUCE_KERNELS);
/** Binary kernels from this code on are fused backward formulas: always float, never integer math. */
export const FUSED_FROM = BINARY_CODE.gelu_backward;

/** The WGSL name of a code: U_NEG, B_THRESHOLD_BACKWARD, R_ARGMAX. */
export const wgslName = (prefix: "U" | "B" | "R", name: string) => `${prefix}_${name.toUpperCase()}`;

const constants = (prefix: "U" | "B" | "R", list: readonly string[]) => Object.fromEntries(list.map((k, i) => [wgslName(prefix, k), i]));
defineShaderConstants("elementwise", { ...constants("U", UNARY_KERNELS), ...constants("B", BINARY_KERNELS) });
defineShaderConstants("reduce", constants("R", REDUCE_KERNELS));
