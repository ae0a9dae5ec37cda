// The op codes that the WGSL kernels switch on, declared once. A code is its name's position in its
// list; pipelines.ts puts `const U_NEG: u32 = 0u;`-style declarations in front of the shader, and the
// shader's `switch` names the constants (`case U_NEG:`), so no number is written twice and a case for
// an op that is not listed here fails to compile. test/op-table.test.ts checks that every listed code
// has its case.

import { defineShaderConstants } from "../device/pipelines.ts";

/**
 * elementwise.wgsl `unary_op`: one input (or none: fill), scalars s0/s1; with each kernel's result dtype:
 * the input's, or float32 even for integer inputs (ATen's "int-to-float" ops).
 */
const UNARY_RESULT = {
  neg: "input",
  abs: "input",
  exp: "float",
  log: "float",
  sqrt: "float",
  rsqrt: "float",
  relu: "input",
  gelu: "float",
  gelu_tanh: "float",
  sigmoid: "float",
  tanh: "float",
  clamp: "input",
  copy: "input",
  fill: "input",
  sign: "input",
  gelu_grad: "float",
  gelu_tanh_grad: "float",
} as const;
export const UNARY_KERNELS = Object.keys(UNARY_RESULT) as Array<keyof typeof UNARY_RESULT>;
export const floatingResult = (k: UnaryKernel) => UNARY_RESULT[k] === "float";
/**
 * elementwise.wgsl `binary_f` / `binary_i`, with each kernel's result dtype (the operands' promoted type,
 * float32, or bool) and whether integer operands are computed in i32 (`binary_i`) or through f32.
 * The fused backward kernels (one allocation, as PyTorch's threshold_backward etc.) are float-only.
 */
const BINARY_KINDS = {
  add: ["promote", "int"],
  sub: ["promote", "int"],
  mul: ["promote", "int"],
  div: ["float", "f32"],
  pow: ["promote", "f32"],
  eq: ["bool", "int"],
  ne: ["bool", "int"],
  lt: ["bool", "int"],
  le: ["bool", "int"],
  gt: ["bool", "int"],
  ge: ["bool", "int"],
  maximum: ["promote", "int"],
  minimum: ["promote", "int"],
  atan2: ["float", "f32"],
  gelu_backward: ["float", "f32"],
  gelu_tanh_backward: ["float", "f32"],
  threshold_backward: ["float", "f32"],
  sigmoid_backward: ["float", "f32"],
  tanh_backward: ["float", "f32"],
} as const;
export const BINARY_KERNELS = Object.keys(BINARY_KINDS) as Array<keyof typeof BINARY_KINDS>;
export const binaryResult = (k: BinaryKernel): "promote" | "float" | "bool" => BINARY_KINDS[k][0];
export const binaryIntMath = (k: BinaryKernel): boolean => BINARY_KINDS[k][1] === "int";
/** reduce.wgsl `reduce_rows`. */
export const REDUCE_KERNELS = ["sum", "max", "min", "argmax", "argmin", "var", "prod"] as const;

export type UnaryKernel = keyof typeof UNARY_RESULT;
export type BinaryKernel = keyof typeof BINARY_KINDS;

function codes<K extends string>(list: readonly K[]): Record<K, number> {
  return Object.fromEntries(list.map((k, i) => [k, i])) as Record<K, number>;
}
export const UNARY_CODE = codes(UNARY_KERNELS);
export const BINARY_CODE = codes(BINARY_KERNELS);
export const REDUCE_CODE = codes(REDUCE_KERNELS);

/** The WGSL name of a code: U_NEG, B_THRESHOLD_BACKWARD, R_ARGMAX. */
export const wgslName = (prefix: "U" | "B" | "R", name: string) => `${prefix}_${name.toUpperCase()}`;

const constants = (prefix: "U" | "B" | "R", list: readonly string[]) => Object.fromEntries(list.map((k, i) => [wgslName(prefix, k), i]));
defineShaderConstants("elementwise", { ...constants("U", UNARY_KERNELS), ...constants("B", BINARY_KERNELS) });
defineShaderConstants("reduce", constants("R", REDUCE_KERNELS));
