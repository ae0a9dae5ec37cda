// gradlab: prelude prelude_vec4
enable subgroups;

// matmul_vec4.wgsl's job, for adapters with subgroups of at least 8 lanes (lavapipe: 8, the SIMD width).
// On llvmpipe every load whose address differs per lane is a gather, and gathers, not FMAs, bound the
// speed. Here lane l of a subgroup loads A[row0 + l, k] (one gather for 8 rows) and the others receive it
// by subgroupBroadcast, so each k costs 1 + 4 gathers for 32 FMAs instead of 8 + 4 for 32.
// Same params and grid as matmul_vec4.wgsl with TM = 8: the host picks this file when it can.

override TM: u32 = 8u;  // rows per workgroup; must be 8, one per broadcasting lane
@compute @workgroup_size(64)
fn mm(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wg: vec3<u32>,
      @builtin(subgroup_invocation_id) lane: u32) {
  let M = P[0];
  let N = P[1];
  let K = P[2];
  let n4 = N / 4u;
  let col4 = wg.x * 64u + lid.x;
  let row0 = wg.y * TM;
  let bz = wg.z;
  let acs = P[7];
  let aRow = P[4] + bz * P[5] + min(row0 + lane, M - 1u) * P[6];
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
  }
  if (col4 >= n4) { return; }
  let rows = array<vec4<f32>, 8>(acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7);
  let cBase4 = (P[10] + bz * M * N) / 4u;
  for (var r = 0u; r < 8u; r++) {
    if (row0 + r < M) { stv(S0, cBase4 + (row0 + r) * n4 + col4, rows[r]); }
  }
}
