// GradLab's dtypes. Every element is 4 bytes on the device: WGSL storage has no 8- or 16-bit types,
// so bool is stored as a u32 (PyTorch uses 1 byte); memory statistics count what the GPU really holds.
export type DType = "float32" | "int32" | "bool";

export const float32: DType = "float32";
export const int32: DType = "int32";
export const bool: DType = "bool";
export const float = float32;
export const int = int32;

export const ELEMENT_SIZE = 4;

/** dtype codes shared with kernels-wgsl/prelude.wgsl */
export const dtypeCode: Record<DType, number> = { float32: 0, int32: 1, bool: 2 };

const rank: Record<DType, number> = { bool: 0, int32: 1, float32: 2 };

export function promoteTypes(a: DType, b: DType): DType {
  return rank[a] >= rank[b] ? a : b;
}

/** The dtype a JS scalar takes part in type promotion as (PyTorch: int vs float Python scalars). */
export function scalarType(v: number | boolean): DType {
  if (typeof v === "boolean") return "bool";
  return Number.isInteger(v) ? "int32" : "float32";
}

/** Result dtype of tensor ⊕ scalar: a scalar only lifts the category (bool < int < float), as in PyTorch. */
export function promoteWithScalar(t: DType, s: number | boolean): DType {
  return promoteTypes(t, scalarType(s));
}

export function checkDType(d: unknown, what = "dtype"): DType {
  if (d === "float32" || d === "int32" || d === "bool") return d;
  throw new TypeError(`${what} must be torch.float32, torch.int32 or torch.bool, not ${JSON.stringify(d)}`);
}
