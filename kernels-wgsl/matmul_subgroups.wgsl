// gradlab: prelude prelude_vec4
enable subgroups;

// matmul_vec4.wgsl's job, for adapters with subgroups of at least 8 lanes (lavapipe: 8, the SIMD width).
// On llvmpipe (Mesa 25) every storage load whose address is not a compile-time constant becomes a
// per-lane loop with a bounds check per element (7-14 instructions per float in its code), whether or not the
// address is the same in every lane; loads, not FMAs, bound the speed, so the kernel is shaped to load
// few floats per FMA:
// - lane l loads rows row0 + l and row0 + 8 + l of A, and subgroupBroadcast hands them to all lanes;
// - k advances by 4: one vec4 of A per row when A's rows are contiguous and aligned (A_V4 = 1; 4 rows
//   of one k per vec4 for a transposed A, A_V4 = 2), one vec4 of B per k (four vec4s along k for a
//   transposed B, B_T = 2). Inside a loop llvmpipe blends every write of a loop-carried variable with
//   the loop's lane mask and spills what does not fit the registers; writing each accumulator once per
//   4 k pays that a quarter as often. The 4 products are still added one by one in k order, as
//   matmul.wgsl adds them, so a windowed dispatch and a whole one give the same bits.
// Measured (docs/performance.md, Matmul round 2): 1.7x the GFLOP per CPU-second of the one-k-per-step
// kernel at 1024^2, 1.3x at 2048^2, 2.1x for a Linear's forward + backward. 24 or 32 rows were no faster.
// Same params and grid as matmul_vec4.wgsl with TM = 16: the host picks this file when it can.

override TM: u32 = 16u;  // rows per workgroup; must be 16, two per broadcasting lane

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
  // Transposed B with K % 4 == 0 and an aligned base: column n's values for k..k+3 are one vec4.
  let K = P[2];
  let c = (P[8] + bz * P[9] + c4 * 4u * K + k) >> 2u;
  let k4 = K >> 2u;
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
  let aRow = P[4] + bz * P[5] + min(row0 + lane, M - 1u) * P[6];
  let aRow8 = P[4] + bz * P[5] + min(row0 + 8u + lane, M - 1u) * P[6];
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
  let K4 = K & ~3u;
  if (A_V4 == 2u) {
    // A is a transposed contiguous matrix (g.t() in a Linear's weight gradient): 4 rows of one k are one
    // vec4. Lane l loads rows row0 + 4 (l % 4) .. + 3 at k + l / 4 and at k + 2 + l / 4: 16 rows x 4 k
    // in two loads per lane; row r's 4 k come from lanes r / 4 and 4 + r / 4.
    let l = lane & 7u;
    let aCol = P[4] + bz * P[5] + row0 + 4u * (l & 3u) + (l >> 2u) * acs;
    for (var k = 0u; k < K4; k += 4u) {
      let v0 = ldv(S1, (aCol + k * acs) >> 2u);
      let v1 = ldv(S1, (aCol + (k + 2u) * acs) >> 2u);
      let b = load_b4(k, bz, bBase4, n4, c4);
      { let x = vec4<f32>(subgroupBroadcast(v0[0], 0u), subgroupBroadcast(v0[0], 4u), subgroupBroadcast(v1[0], 0u), subgroupBroadcast(v1[0], 4u)); acc0 = (((acc0 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[1], 0u), subgroupBroadcast(v0[1], 4u), subgroupBroadcast(v1[1], 0u), subgroupBroadcast(v1[1], 4u)); acc1 = (((acc1 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[2], 0u), subgroupBroadcast(v0[2], 4u), subgroupBroadcast(v1[2], 0u), subgroupBroadcast(v1[2], 4u)); acc2 = (((acc2 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[3], 0u), subgroupBroadcast(v0[3], 4u), subgroupBroadcast(v1[3], 0u), subgroupBroadcast(v1[3], 4u)); acc3 = (((acc3 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[0], 1u), subgroupBroadcast(v0[0], 5u), subgroupBroadcast(v1[0], 1u), subgroupBroadcast(v1[0], 5u)); acc4 = (((acc4 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[1], 1u), subgroupBroadcast(v0[1], 5u), subgroupBroadcast(v1[1], 1u), subgroupBroadcast(v1[1], 5u)); acc5 = (((acc5 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[2], 1u), subgroupBroadcast(v0[2], 5u), subgroupBroadcast(v1[2], 1u), subgroupBroadcast(v1[2], 5u)); acc6 = (((acc6 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[3], 1u), subgroupBroadcast(v0[3], 5u), subgroupBroadcast(v1[3], 1u), subgroupBroadcast(v1[3], 5u)); acc7 = (((acc7 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[0], 2u), subgroupBroadcast(v0[0], 6u), subgroupBroadcast(v1[0], 2u), subgroupBroadcast(v1[0], 6u)); acc8 = (((acc8 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[1], 2u), subgroupBroadcast(v0[1], 6u), subgroupBroadcast(v1[1], 2u), subgroupBroadcast(v1[1], 6u)); acc9 = (((acc9 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[2], 2u), subgroupBroadcast(v0[2], 6u), subgroupBroadcast(v1[2], 2u), subgroupBroadcast(v1[2], 6u)); acc10 = (((acc10 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[3], 2u), subgroupBroadcast(v0[3], 6u), subgroupBroadcast(v1[3], 2u), subgroupBroadcast(v1[3], 6u)); acc11 = (((acc11 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[0], 3u), subgroupBroadcast(v0[0], 7u), subgroupBroadcast(v1[0], 3u), subgroupBroadcast(v1[0], 7u)); acc12 = (((acc12 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[1], 3u), subgroupBroadcast(v0[1], 7u), subgroupBroadcast(v1[1], 3u), subgroupBroadcast(v1[1], 7u)); acc13 = (((acc13 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[2], 3u), subgroupBroadcast(v0[2], 7u), subgroupBroadcast(v1[2], 3u), subgroupBroadcast(v1[2], 7u)); acc14 = (((acc14 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = vec4<f32>(subgroupBroadcast(v0[3], 3u), subgroupBroadcast(v0[3], 7u), subgroupBroadcast(v1[3], 3u), subgroupBroadcast(v1[3], 7u)); acc15 = (((acc15 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    }
  } else {
    for (var k = 0u; k < K4; k += 4u) {
      let a = load_a4(aRow, k, acs);
      let a8 = load_a4(aRow8, k, acs);
      let b = load_b4(k, bz, bBase4, n4, c4);
      { let x = subgroupBroadcast(a, 0u); acc0 = (((acc0 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a, 1u); acc1 = (((acc1 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a, 2u); acc2 = (((acc2 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a, 3u); acc3 = (((acc3 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a, 4u); acc4 = (((acc4 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a, 5u); acc5 = (((acc5 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a, 6u); acc6 = (((acc6 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a, 7u); acc7 = (((acc7 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a8, 0u); acc8 = (((acc8 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a8, 1u); acc9 = (((acc9 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a8, 2u); acc10 = (((acc10 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a8, 3u); acc11 = (((acc11 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a8, 4u); acc12 = (((acc12 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a8, 5u); acc13 = (((acc13 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a8, 6u); acc14 = (((acc14 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a8, 7u); acc15 = (((acc15 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    }
  }
  // The last K % 4 values of k, one at a time.
  for (var k = K4; k < K; k++) {
    let a = lds(S1, aRow + k * acs);
    let a8 = lds(S1, aRow8 + k * acs);
    let b = load_b(k, bz, bBase4, n4, c4);
    acc0 += subgroupBroadcast(a, 0u) * b;
    acc1 += subgroupBroadcast(a, 1u) * b;
    acc2 += subgroupBroadcast(a, 2u) * b;
    acc3 += subgroupBroadcast(a, 3u) * b;
    acc4 += subgroupBroadcast(a, 4u) * b;
    acc5 += subgroupBroadcast(a, 5u) * b;
    acc6 += subgroupBroadcast(a, 6u) * b;
    acc7 += subgroupBroadcast(a, 7u) * b;
    acc8 += subgroupBroadcast(a8, 0u) * b;
    acc9 += subgroupBroadcast(a8, 1u) * b;
    acc10 += subgroupBroadcast(a8, 2u) * b;
    acc11 += subgroupBroadcast(a8, 3u) * b;
    acc12 += subgroupBroadcast(a8, 4u) * b;
    acc13 += subgroupBroadcast(a8, 5u) * b;
    acc14 += subgroupBroadcast(a8, 6u) * b;
    acc15 += subgroupBroadcast(a8, 7u) * b;
  }
  if (col4 >= n4) { return; }
  let rows = array<vec4<f32>, 16>(acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7, acc8, acc9, acc10, acc11, acc12, acc13, acc14,
                                  acc15);
  let cBase4 = (P[10] + bz * M * N) / 4u;
  for (var r = 0u; r < 16u; r++) {
    if (row0 + r < M) { stv(S0, cBase4 + (row0 + r) * n4 + col4, rows[r]); }
  }
}
