// gradlab: prelude prelude_vec4
enable subgroups;

// matmul_vec4.wgsl's job, for adapters with subgroups of at least 8 lanes (lavapipe: 8, the SIMD width).
// On llvmpipe every load whose address differs per lane is a gather (scalarised: one load per lane),
// and gathers, not FMAs, bound the speed. Here lane l of a subgroup loads A[row0 + l, k] and
// A[row0 + 8 + l, k] (one gather for 8 rows each) and the others receive them by subgroupBroadcast,
// so each k costs 2 + 4 gathers for 64 FMAs (8 rows: 1 + 4 for 32; 24 or 32 rows measured slower, the
// accumulators no longer fit the registers: docs/performance.md).
// Same params and grid as matmul_vec4.wgsl with TM = 16: the host picks this file when it can.

override TM: u32 = 16u;  // rows per workgroup; must be 16, two per broadcasting lane
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
  for (var k = 0u; k < K; k++) {
    let a = lds(S1, aRow + k * acs);
    let b = load_b(k, bz, bBase4, n4, c4);
    acc0 += subgroupBroadcast(a, 0u) * b;
    acc1 += subgroupBroadcast(a, 1u) * b;
    acc2 += subgroupBroadcast(a, 2u) * b;
    acc3 += subgroupBroadcast(a, 3u) * b;
    acc4 += subgroupBroadcast(a, 4u) * b;
    acc5 += subgroupBroadcast(a, 5u) * b;
    acc6 += subgroupBroadcast(a, 6u) * b;
    acc7 += subgroupBroadcast(a, 7u) * b;
    let a8 = lds(S1, aRow8 + k * acs);
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
