// Prepended to kernels that ask for it with "// gradlab: prelude prelude_vec4" on their first line:
// the same binding layout as prelude.wgsl (group 0 params, group 1 device memory, operands S0..S2 with
// their starts in P[58 + k]), seen as vec4<f32> arrays, for kernels that move four floats per load.
@group(0) @binding(0) var<storage, read> P: array<u32>;
@group(1) @binding(1) var<storage, read_write> V1: array<vec4<f32>>;
@group(1) @binding(2) var<storage, read_write> V2: array<vec4<f32>>;
@group(1) @binding(3) var<storage, read_write> V3: array<vec4<f32>>;
@group(1) @binding(4) var<storage, read_write> V4: array<vec4<f32>>;
@group(1) @binding(5) var<storage, read_write> V5: array<vec4<f32>>;
@group(1) @binding(6) var<storage, read_write> V6: array<vec4<f32>>;

override S0: u32 = 1u;
override S1: u32 = 10u;
override S2: u32 = 19u;
/// Vec4 i of operand s in its binding. Its start is a whole number of vec4s (blocks start at multiples
/// of 512 bytes, windows at multiples of 256), and the shift keeps a window's "negative" start.
fn atv(s: u32, i: u32) -> u32 { return i + bitcast<u32>(bitcast<i32>(P[58u + (s >> 3u)]) >> 2u); }
fn ldv(s: u32, i4: u32) -> vec4<f32> {
  let i = atv(s, i4);
  switch s & 7u {
    case 1u: { return V1[i]; }
    case 2u: { return V2[i]; }
    case 3u: { return V3[i]; }
    case 4u: { return V4[i]; }
    case 5u: { return V5[i]; }
    default: { return V6[i]; }
  }
}

fn stv(s: u32, i4: u32, v: vec4<f32>) {
  let i = atv(s, i4);
  switch s & 7u {
    case 1u: { V1[i] = v; }
    case 2u: { V2[i] = v; }
    case 3u: { V3[i] = v; }
    case 4u: { V4[i] = v; }
    case 5u: { V5[i] = v; }
    default: { V6[i] = v; }
  }
}

fn lds(slot: u32, i: u32) -> f32 {
  return ldv(slot, i >> 2u)[i & 3u];
}

// B_T = 1: B is a transposed row-major matrix (x @ w.t() in Linear): element (k, n) is at
// P[8] + bz * P[9] + n * P[11] + k (P[11]: B's column stride, the whole K when the host runs K in
// slices), and no transposed copy of the weight is made. B_T = 2: the same with P[11] % 4 == 0 and that
// base a multiple of 4, so matmul_subgroups.wgsl reads 4 k of a column as one vec4 (load_b treats it as 1).
override B_T: u32 = 0u;
// A_V4 = 1: A's column stride is 1 and its offset, row and batch strides are multiples of 4, so
// matmul_subgroups.wgsl reads 4 k of a row of A as one vec4; A_V4 = 2: A's row stride is 1 and its offset,
// column and batch strides are multiples of 4 (a transposed A), read as 4 rows of one k per vec4
// (matmul_vec4.wgsl ignores it).
override A_V4: u32 = 0u;

fn load_b(k: u32, bz: u32, bBase4: u32, n4: u32, c4: u32) -> vec4<f32> {
  if (B_T == 0u) { return ldv(S2, bBase4 + k * n4 + c4); }
  let ks = P[11];
  let base = P[8] + bz * P[9] + c4 * 4u * ks + k;
  return vec4<f32>(lds(S2, base), lds(S2, base + ks), lds(S2, base + 2u * ks), lds(S2, base + 3u * ks));
}

// ACC = 1: C already holds the sum over the earlier slices of K (the host runs a long K in slices, one
// dispatch each: docs/performance.md, Matmul round 3); the accumulators start from it, so each element is
// still one sum of products in k order, the same bits as one dispatch over all of K.
override ACC: u32 = 0u;
