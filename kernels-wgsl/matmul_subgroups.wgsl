// gradlab: prelude prelude_vec4
enable subgroups;

// matmul_vec4.wgsl's job, for adapters with subgroups of at least 8 lanes (lavapipe: 8, the SIMD width).
// On llvmpipe (Mesa 25) every storage load whose address is not a compile-time constant becomes a
// per-lane loop with a bounds check per element (7-14 instructions per float in its code), whether or not the
// address is the same in every lane; loads, not FMAs, bound the speed, so the kernel is shaped to load
// few floats per FMA:
// - a workgroup computes 24 rows (TM) x 256 columns; lane l loads rows row0 + l, row0 + 8 + l and
//   row0 + 16 + l of A, and subgroupBroadcast hands them to all lanes, which each own 4 columns;
// - k advances by 4: one vec4 of A per row when A's rows are contiguous and aligned (A_V4 = 1; 4 rows
//   of one k per vec4 for a transposed A, A_V4 = 2), one vec4 of B per k (four vec4s along k for a
//   transposed B, B_T = 2). Inside a loop llvmpipe blends every write of a loop-carried variable with
//   the loop's lane mask and spills what does not fit the registers; writing each accumulator once per
//   4 k pays that a quarter as often. The 4 products are still added one by one in k order, as
//   matmul.wgsl adds them, so a windowed dispatch, a run in slices of K (ACC) and a whole one give the
//   same bits.
// Measured (docs/performance.md, Matmul rounds 2 and 3): 1.7x the GFLOP per CPU-second of the one-k-per-step
// kernel at 1024^2 with 16 rows; 24 rows load 7 floats per 96 products per k where 16 loaded 6 per 64, and
// were 1.12-1.2x faster than 16 on an AVX2 EPYC (16 vector registers) and no slower on an AVX-512 Xeon
// (32); 32 rows spill too much on both.
// Same params as matmul_vec4.wgsl; the host gives it its own grid (rows in blocks of TM) and picks it
// where the device has subgroups.

override TM: u32 = 24u;  // rows per workgroup; must be 24, three per broadcasting lane

/// A[row, k..k+3] for the row that starts at element aRow.
fn load_a4(aRow: u32, k: u32, acs: u32) -> vec4<f32> {
  if (A_V4 == 1u) { return ldv(S1, (aRow + k) >> 2u); }  // (A_V4 = 2 does not call this)
  return vec4<f32>(lds(S1, aRow + k * acs), lds(S1, aRow + (k + 1u) * acs), lds(S1, aRow + (k + 2u) * acs),
                   lds(S1, aRow + (k + 3u) * acs));
}

/// B[k + u, 4 c4 .. 4 c4 + 3] for u = 0..3.
fn load_b4(k: u32, bz: u32, bBase4: u32, n4: u32, c4: u32) -> array<vec4<f32>, 4> {
  if (B_T != 2u) {
    return array<vec4<f32>, 4>(load_b(k, bz, bBase4, n4, c4), load_b(k + 1u, bz, bBase4, n4, c4),
                               load_b(k + 2u, bz, bBase4, n4, c4), load_b(k + 3u, bz, bBase4, n4, c4));
  }
  // Transposed B with a column stride % 4 == 0 and an aligned base: column n's values for k..k+3 are one vec4.
  let ks = P[11];
  let c = (P[8] + bz * P[9] + c4 * 4u * ks + k) >> 2u;
  let k4 = ks >> 2u;
  let n0 = ldv(S2, c);
  let n1 = ldv(S2, c + k4);
  let n2 = ldv(S2, c + 2u * k4);
  let n3 = ldv(S2, c + 3u * k4);
  return array<vec4<f32>, 4>(vec4<f32>(n0.x, n1.x, n2.x, n3.x), vec4<f32>(n0.y, n1.y, n2.y, n3.y),
                             vec4<f32>(n0.z, n1.z, n2.z, n3.z), vec4<f32>(n0.w, n1.w, n2.w, n3.w));
}

@compute @workgroup_size(64)
fn mm(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wg: vec3<u32>,
      @builtin(subgroup_invocation_id) lane: u32) {
  let M = P[0];
  let N = P[1];
  let K = P[2];
  let n4 = N / 4u;
  let col4 = wg.y * 64u + lid.x;
  let row0 = wg.x * TM;
  let bz = wg.z;
  let acs = P[7];
  let aBase = P[4] + bz * P[5];
  // lane l reads rows row0 + l, row0 + 8 + l and row0 + 16 + l (clamped to the last row)
  let aRow0 = aBase + min(row0 + 0u + lane, M - 1u) * P[6];
  let aRow1 = aBase + min(row0 + 8u + lane, M - 1u) * P[6];
  let aRow2 = aBase + min(row0 + 16u + lane, M - 1u) * P[6];
  let bBase4 = (P[8] + bz * P[9]) / 4u;
  let c4 = min(col4, n4 - 1u);
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  var acc4 = vec4<f32>(0.0);
  var acc5 = vec4<f32>(0.0);
  var acc6 = vec4<f32>(0.0);
  var acc7 = vec4<f32>(0.0);
  var acc8 = vec4<f32>(0.0);
  var acc9 = vec4<f32>(0.0);
  var acc10 = vec4<f32>(0.0);
  var acc11 = vec4<f32>(0.0);
  var acc12 = vec4<f32>(0.0);
  var acc13 = vec4<f32>(0.0);
  var acc14 = vec4<f32>(0.0);
  var acc15 = vec4<f32>(0.0);
  var acc16 = vec4<f32>(0.0);
  var acc17 = vec4<f32>(0.0);
  var acc18 = vec4<f32>(0.0);
  var acc19 = vec4<f32>(0.0);
  var acc20 = vec4<f32>(0.0);
  var acc21 = vec4<f32>(0.0);
  var acc22 = vec4<f32>(0.0);
  var acc23 = vec4<f32>(0.0);
  let cBase4 = (P[10] + bz * M * N) / 4u;
  if (ACC == 1u) {
    acc0 = ldv(S0, cBase4 + min(row0 + 0u, M - 1u) * n4 + c4);
    acc1 = ldv(S0, cBase4 + min(row0 + 1u, M - 1u) * n4 + c4);
    acc2 = ldv(S0, cBase4 + min(row0 + 2u, M - 1u) * n4 + c4);
    acc3 = ldv(S0, cBase4 + min(row0 + 3u, M - 1u) * n4 + c4);
    acc4 = ldv(S0, cBase4 + min(row0 + 4u, M - 1u) * n4 + c4);
    acc5 = ldv(S0, cBase4 + min(row0 + 5u, M - 1u) * n4 + c4);
    acc6 = ldv(S0, cBase4 + min(row0 + 6u, M - 1u) * n4 + c4);
    acc7 = ldv(S0, cBase4 + min(row0 + 7u, M - 1u) * n4 + c4);
    acc8 = ldv(S0, cBase4 + min(row0 + 8u, M - 1u) * n4 + c4);
    acc9 = ldv(S0, cBase4 + min(row0 + 9u, M - 1u) * n4 + c4);
    acc10 = ldv(S0, cBase4 + min(row0 + 10u, M - 1u) * n4 + c4);
    acc11 = ldv(S0, cBase4 + min(row0 + 11u, M - 1u) * n4 + c4);
    acc12 = ldv(S0, cBase4 + min(row0 + 12u, M - 1u) * n4 + c4);
    acc13 = ldv(S0, cBase4 + min(row0 + 13u, M - 1u) * n4 + c4);
    acc14 = ldv(S0, cBase4 + min(row0 + 14u, M - 1u) * n4 + c4);
    acc15 = ldv(S0, cBase4 + min(row0 + 15u, M - 1u) * n4 + c4);
    acc16 = ldv(S0, cBase4 + min(row0 + 16u, M - 1u) * n4 + c4);
    acc17 = ldv(S0, cBase4 + min(row0 + 17u, M - 1u) * n4 + c4);
    acc18 = ldv(S0, cBase4 + min(row0 + 18u, M - 1u) * n4 + c4);
    acc19 = ldv(S0, cBase4 + min(row0 + 19u, M - 1u) * n4 + c4);
    acc20 = ldv(S0, cBase4 + min(row0 + 20u, M - 1u) * n4 + c4);
    acc21 = ldv(S0, cBase4 + min(row0 + 21u, M - 1u) * n4 + c4);
    acc22 = ldv(S0, cBase4 + min(row0 + 22u, M - 1u) * n4 + c4);
    acc23 = ldv(S0, cBase4 + min(row0 + 23u, M - 1u) * n4 + c4);
  }
  let K4 = K & ~3u;
  if (A_V4 == 2u) {
    // A is a transposed contiguous matrix (g.t() in a Linear's weight gradient): 4 rows of one k are one
    // vec4. The 24 rows x 4 k of a step are 24 such vec4s, numbered f = 6 u + g for rows row0 + 4 g .. + 3 at
    // k + u; lane l reads f = 8 j + l in its load j, so row 4 g + e at k + u is element e of load f / 8 of
    // lane f % 8.
    let l = lane & 7u;
    let f0 = 0u + l;
    let aCol0 = aBase + row0 + 4u * (f0 % 6u) + (f0 / 6u) * acs;
    let f1 = 8u + l;
    let aCol1 = aBase + row0 + 4u * (f1 % 6u) + (f1 / 6u) * acs;
    let f2 = 16u + l;
    let aCol2 = aBase + row0 + 4u * (f2 % 6u) + (f2 / 6u) * acs;
    for (var k = 0u; k < K4; k += 4u) {
      let v0 = ldv(S1, (aCol0 + k * acs) >> 2u);
      let v1 = ldv(S1, (aCol1 + k * acs) >> 2u);
      let v2 = ldv(S1, (aCol2 + k * acs) >> 2u);
      let b = load_b4(k, bz, bBase4, n4, c4);
      { let x = vec4<f32>(subgroupBroadcast(v0[0], 0u), subgroupBroadcast(v0[0], 6u), subgroupBroadcast(v1[0], 4u), subgroupBroadcast(v2[0], 2u)); acc0 = (((acc0 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[1], 0u), subgroupBroadcast(v0[1], 6u), subgroupBroadcast(v1[1], 4u), subgroupBroadcast(v2[1], 2u)); acc1 = (((acc1 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[2], 0u), subgroupBroadcast(v0[2], 6u), subgroupBroadcast(v1[2], 4u), subgroupBroadcast(v2[2], 2u)); acc2 = (((acc2 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[3], 0u), subgroupBroadcast(v0[3], 6u), subgroupBroadcast(v1[3], 4u), subgroupBroadcast(v2[3], 2u)); acc3 = (((acc3 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[0], 1u), subgroupBroadcast(v0[0], 7u), subgroupBroadcast(v1[0], 5u), subgroupBroadcast(v2[0], 3u)); acc4 = (((acc4 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[1], 1u), subgroupBroadcast(v0[1], 7u), subgroupBroadcast(v1[1], 5u), subgroupBroadcast(v2[1], 3u)); acc5 = (((acc5 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[2], 1u), subgroupBroadcast(v0[2], 7u), subgroupBroadcast(v1[2], 5u), subgroupBroadcast(v2[2], 3u)); acc6 = (((acc6 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[3], 1u), subgroupBroadcast(v0[3], 7u), subgroupBroadcast(v1[3], 5u), subgroupBroadcast(v2[3], 3u)); acc7 = (((acc7 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[0], 2u), subgroupBroadcast(v1[0], 0u), subgroupBroadcast(v1[0], 6u), subgroupBroadcast(v2[0], 4u)); acc8 = (((acc8 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[1], 2u), subgroupBroadcast(v1[1], 0u), subgroupBroadcast(v1[1], 6u), subgroupBroadcast(v2[1], 4u)); acc9 = (((acc9 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[2], 2u), subgroupBroadcast(v1[2], 0u), subgroupBroadcast(v1[2], 6u), subgroupBroadcast(v2[2], 4u)); acc10 = (((acc10 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[3], 2u), subgroupBroadcast(v1[3], 0u), subgroupBroadcast(v1[3], 6u), subgroupBroadcast(v2[3], 4u)); acc11 = (((acc11 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[0], 3u), subgroupBroadcast(v1[0], 1u), subgroupBroadcast(v1[0], 7u), subgroupBroadcast(v2[0], 5u)); acc12 = (((acc12 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[1], 3u), subgroupBroadcast(v1[1], 1u), subgroupBroadcast(v1[1], 7u), subgroupBroadcast(v2[1], 5u)); acc13 = (((acc13 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[2], 3u), subgroupBroadcast(v1[2], 1u), subgroupBroadcast(v1[2], 7u), subgroupBroadcast(v2[2], 5u)); acc14 = (((acc14 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[3], 3u), subgroupBroadcast(v1[3], 1u), subgroupBroadcast(v1[3], 7u), subgroupBroadcast(v2[3], 5u)); acc15 = (((acc15 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[0], 4u), subgroupBroadcast(v1[0], 2u), subgroupBroadcast(v2[0], 0u), subgroupBroadcast(v2[0], 6u)); acc16 = (((acc16 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[1], 4u), subgroupBroadcast(v1[1], 2u), subgroupBroadcast(v2[1], 0u), subgroupBroadcast(v2[1], 6u)); acc17 = (((acc17 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[2], 4u), subgroupBroadcast(v1[2], 2u), subgroupBroadcast(v2[2], 0u), subgroupBroadcast(v2[2], 6u)); acc18 = (((acc18 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[3], 4u), subgroupBroadcast(v1[3], 2u), subgroupBroadcast(v2[3], 0u), subgroupBroadcast(v2[3], 6u)); acc19 = (((acc19 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[0], 5u), subgroupBroadcast(v1[0], 3u), subgroupBroadcast(v2[0], 1u), subgroupBroadcast(v2[0], 7u)); acc20 = (((acc20 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[1], 5u), subgroupBroadcast(v1[1], 3u), subgroupBroadcast(v2[1], 1u), subgroupBroadcast(v2[1], 7u)); acc21 = (((acc21 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[2], 5u), subgroupBroadcast(v1[2], 3u), subgroupBroadcast(v2[2], 1u), subgroupBroadcast(v2[2], 7u)); acc22 = (((acc22 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[3], 5u), subgroupBroadcast(v1[3], 3u), subgroupBroadcast(v2[3], 1u), subgroupBroadcast(v2[3], 7u)); acc23 = (((acc23 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    }
  } else {
    for (var k = 0u; k < K4; k += 4u) {
      let a0 = load_a4(aRow0, k, acs);
      let a1 = load_a4(aRow1, k, acs);
      let a2 = load_a4(aRow2, k, acs);
      let b = load_b4(k, bz, bBase4, n4, c4);
      { let x = subgroupBroadcast(a0, 0u); acc0 = (((acc0 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 1u); acc1 = (((acc1 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 2u); acc2 = (((acc2 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 3u); acc3 = (((acc3 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 4u); acc4 = (((acc4 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 5u); acc5 = (((acc5 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 6u); acc6 = (((acc6 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 7u); acc7 = (((acc7 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 0u); acc8 = (((acc8 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 1u); acc9 = (((acc9 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 2u); acc10 = (((acc10 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 3u); acc11 = (((acc11 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 4u); acc12 = (((acc12 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 5u); acc13 = (((acc13 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 6u); acc14 = (((acc14 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 7u); acc15 = (((acc15 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 0u); acc16 = (((acc16 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 1u); acc17 = (((acc17 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 2u); acc18 = (((acc18 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 3u); acc19 = (((acc19 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 4u); acc20 = (((acc20 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 5u); acc21 = (((acc21 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 6u); acc22 = (((acc22 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 7u); acc23 = (((acc23 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    }
  }
  // The last K % 4 values of k, one at a time.
  for (var k = K4; k < K; k++) {
    let a0 = lds(S1, aRow0 + k * acs);
    let a1 = lds(S1, aRow1 + k * acs);
    let a2 = lds(S1, aRow2 + k * acs);
    let b = load_b(k, bz, bBase4, n4, c4);
    acc0 += subgroupBroadcast(a0, 0u) * b;
    acc1 += subgroupBroadcast(a0, 1u) * b;
    acc2 += subgroupBroadcast(a0, 2u) * b;
    acc3 += subgroupBroadcast(a0, 3u) * b;
    acc4 += subgroupBroadcast(a0, 4u) * b;
    acc5 += subgroupBroadcast(a0, 5u) * b;
    acc6 += subgroupBroadcast(a0, 6u) * b;
    acc7 += subgroupBroadcast(a0, 7u) * b;
    acc8 += subgroupBroadcast(a1, 0u) * b;
    acc9 += subgroupBroadcast(a1, 1u) * b;
    acc10 += subgroupBroadcast(a1, 2u) * b;
    acc11 += subgroupBroadcast(a1, 3u) * b;
    acc12 += subgroupBroadcast(a1, 4u) * b;
    acc13 += subgroupBroadcast(a1, 5u) * b;
    acc14 += subgroupBroadcast(a1, 6u) * b;
    acc15 += subgroupBroadcast(a1, 7u) * b;
    acc16 += subgroupBroadcast(a2, 0u) * b;
    acc17 += subgroupBroadcast(a2, 1u) * b;
    acc18 += subgroupBroadcast(a2, 2u) * b;
    acc19 += subgroupBroadcast(a2, 3u) * b;
    acc20 += subgroupBroadcast(a2, 4u) * b;
    acc21 += subgroupBroadcast(a2, 5u) * b;
    acc22 += subgroupBroadcast(a2, 6u) * b;
    acc23 += subgroupBroadcast(a2, 7u) * b;
  }
  if (col4 >= n4) { return; }
  let rows = array<vec4<f32>, 24>(acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7, acc8, acc9, acc10, acc11, acc12,
                                  acc13, acc14, acc15, acc16, acc17, acc18, acc19, acc20, acc21, acc22, acc23);
  for (var r = 0u; r < 24u; r++) {
    if (row0 + r < M) { stv(S0, cBase4 + (row0 + r) * n4 + col4, rows[r]); }
  }
}
