// Batched matmul C[b] = A[b] @ B[b] with arbitrary strides (so x @ w.t() needs no copy).
// Barrier-free on purpose: on llvmpipe workgroup barriers cost more than they save, so each invocation
// owns a 4x4 block of C (4 rows, 4 adjacent columns) and streams K once; adjacent invocations own
// adjacent column groups, so their B reads are contiguous. C is contiguous.
// Params: [0] M, [1] N, [2] K, [3] batch, [4] A offset, [5] A batch stride, [6] A row stride, [7] A col stride,
// [8] B offset, [9] B batch stride, [10] B row stride, [11] B col stride, [12] C offset.

@compute @workgroup_size(64)
fn mm(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let M = P[0];
  let N = P[1];
  let K = P[2];
  let colGroups = (N + 3u) / 4u;
  let rowGroups = (M + 3u) / 4u;
  let id = linear_id(g, nwg, 64u);
  if (id >= colGroups * rowGroups * P[3]) { return; }
  let per = colGroups * rowGroups;
  let bz = id / per;
  let rc = id % per;
  let r0 = (rc / colGroups) * 4u;
  let c0 = (rc % colGroups) * 4u;
  let aBase = P[4] + bz * P[5];
  let bBase = P[8] + bz * P[9];
  let ars = P[6];
  let acs = P[7];
  let brs = P[10];
  let bcs = P[11];
  // Clamp out-of-range rows and columns to valid addresses; their results are not stored.
  let ra = vec4<u32>(min(r0, M - 1u), min(r0 + 1u, M - 1u), min(r0 + 2u, M - 1u), min(r0 + 3u, M - 1u)) * ars + aBase;
  let cb = vec4<u32>(min(c0, N - 1u), min(c0 + 1u, N - 1u), min(c0 + 2u, N - 1u), min(c0 + 3u, N - 1u)) * bcs + bBase;
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  for (var k = 0u; k < K; k++) {
    let bo = cb + vec4<u32>(k * brs);
    let b = vec4<f32>(ldf(S2, bo.x), ldf(S2, bo.y), ldf(S2, bo.z), ldf(S2, bo.w));
    let ak = k * acs;
    acc0 += ldf(S1, ra.x + ak) * b;
    acc1 += ldf(S1, ra.y + ak) * b;
    acc2 += ldf(S1, ra.z + ak) * b;
    acc3 += ldf(S1, ra.w + ak) * b;
  }
  let cBase = P[12] + bz * M * N;
  let rows = array<vec4<f32>, 4>(acc0, acc1, acc2, acc3);
  for (var i = 0u; i < 4u; i++) {
    let r = r0 + i;
    if (r >= M) { break; }
    let v = rows[i];
    for (var j = 0u; j < 4u; j++) {
      if (c0 + j < N) { stf(S0, cBase + r * N + c0 + j, v[j]); }
    }
  }
}
