// Row-wise normalisations, one invocation per row (no barriers, see reduce.wgsl).
// softmax / log_softmax over dim d of a contiguous tensor: row r = (o, i) starts at
// o * n * inner + i and steps by inner. Params: [0] rows, [1] n, [2] inner, [3] in offset, [4] out offset.

override LOG: u32 = 0u;

@compute @workgroup_size(64)
fn softmax(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let r = linear_id(g, nwg, 64u);
  if (r >= P[0]) { return; }
  let n = P[1];
  let inner = P[2];
  let base = (r / inner) * n * inner + (r % inner);
  var m = ldf(S1, P[3] + base);
  for (var j = 0u; j < n; j++) { m = max(m, ldf(S1, P[3] + base + j * inner)); }
  var s = 0.0;
  for (var j = 0u; j < n; j++) { s += exp(ldf(S1, P[3] + base + j * inner) - m); }
  let ls = log(s);
  for (var j = 0u; j < n; j++) {
    let z = ldf(S1, P[3] + base + j * inner) - m;
    stf(S0, P[4] + base + j * inner, select(exp(z) / s, z - ls, LOG == 1u));
  }
}

// layer_norm over the last n elements of each row of a contiguous input (operand 1).
// Operands: 0 y, 1 x, 2 weight, 3 bias, 4 mean [rows], 5 rstd [rows].
// Params: [0] rows, [1] n, [2] eps (f32), [3] x offset, [4] has weight, [5] has bias, [6] w offset, [7] b offset.
@compute @workgroup_size(64)
fn layer_norm(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let r = linear_id(g, nwg, 64u);
  if (r >= P[0]) { return; }
  let n = P[1];
  let base = P[3] + r * n;
  var mean = 0.0;
  for (var j = 0u; j < n; j++) { mean += ldf(S1, base + j); }
  mean /= f32(n);
  var v = 0.0;
  for (var j = 0u; j < n; j++) { let d = ldf(S1, base + j) - mean; v += d * d; }
  let rstd = inverseSqrt(v / f32(n) + pf(2u));
  for (var j = 0u; j < n; j++) {
    var y = (ldf(S1, base + j) - mean) * rstd;
    if (P[4] == 1u) { y *= ldf(S2, P[6] + j); }
    if (P[5] == 1u) { y += ldf(S3, P[7] + j); }
    stf(S0, r * n + j, y);
  }
  stf(S4, r, mean);
  stf(S5, r, rstd);
}
