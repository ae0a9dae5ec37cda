// gradlab: prelude prelude_vec4
// Fast matmul for the common case: B and C row-contiguous with N % 4 == 0. Shaped for llvmpipe, which
// runs invocations as SIMD lanes and makes workgroup barriers expensive: invocation x of a workgroup
// owns 4 adjacent columns (one vec4 load of B per k, contiguous across lanes), and the whole workgroup
// shares one block of TM rows, so each A element it reads is uniform (one scalar load, broadcast).
// On real GPUs the same kernel is a register-blocked, barrier-free GEMM.
// Grid: x = blocks of TM rows, y = blocks of 256 columns, z = batch. Row blocks vary fastest, so the
// workgroups that run one after another share one panel of B (K x 256 floats) while it is in cache
// (measured on lavapipe at 2048^2: 2-2.6x the GFLOP per CPU-second of the other order: docs/performance.md).
// Params: [0] M, [1] N, [2] K, [3] batch, [4] A offset, [5] A batch stride, [6] A row stride,
// [7] A col stride, [8] B offset, [9] B batch stride, [10] C offset, [11] B column stride for B_T (all in
// f32 elements). K is the slice this dispatch adds (ACC, prelude_vec4.wgsl).

override TM: u32 = 4u;
const MAX_TM: u32 = 16u;

@compute @workgroup_size(64)
fn mm(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wg: vec3<u32>) {
  let M = P[0];
  let N = P[1];
  let K = P[2];
  let n4 = N / 4u;
  let col4 = wg.y * 64u + lid.x;
  let row0 = wg.x * TM;
  let bz = wg.z;
  let aBase = P[4] + bz * P[5];
  let ars = P[6];
  let acs = P[7];
  let bBase4 = (P[8] + bz * P[9]) / 4u;
  let c4 = min(col4, n4 - 1u);
  var acc: array<vec4<f32>, MAX_TM>;
  let cBase4 = (P[10] + bz * M * N) / 4u;
  for (var r = 0u; r < TM; r++) {
    acc[r] = select(vec4<f32>(0.0), ldv(S0, cBase4 + min(row0 + r, M - 1u) * n4 + c4), ACC == 1u);
  }
  for (var k = 0u; k < K; k++) {
    let b = load_b(k, bz, bBase4, n4, c4);
    let ak = aBase + k * acs;
    for (var r = 0u; r < TM; r++) {
      acc[r] += lds(S1, ak + min(row0 + r, M - 1u) * ars) * b;
    }
  }
  if (col4 >= n4) { return; }
  for (var r = 0u; r < TM; r++) {
    if (row0 + r < M) { stv(S0, cBase4 + (row0 + r) * n4 + col4, acc[r]); }
  }
}
