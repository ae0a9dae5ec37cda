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

// softmax's and log_softmax's input gradients (PyTorch's _softmax_backward_data, one allocation), rows
// as softmax's. Operands: 0 dx, 1 g, 2 y (the saved result). Params: [0] rows, [1] n, [2] inner,
// [3] g offset, [4] y offset. softmax: dx = y * (g - sum(g * y)); log_softmax: dx = g - exp(y) * sum(g).
@compute @workgroup_size(64)
fn softmax_backward(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let r = linear_id(g, nwg, 64u);
  if (r >= P[0]) { return; }
  let n = P[1];
  let inner = P[2];
  let base = (r / inner) * n * inner + (r % inner);
  var s = 0.0;
  for (var j = 0u; j < n; j++) {
    let gv = ldf(S1, P[3] + base + j * inner);
    s += select(gv * ldf(S2, P[4] + base + j * inner), gv, LOG == 1u);
  }
  for (var j = 0u; j < n; j++) {
    let gv = ldf(S1, P[3] + base + j * inner);
    let y = ldf(S2, P[4] + base + j * inner);
    stf(S0, base + j * inner, select(y * (gv - s), gv - exp(y) * s, LOG == 1u));
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

// layer_norm's input gradient, as PyTorch's fused native_layer_norm_backward (one allocation: dx),
// one invocation per row of contiguous g and x. Operands: 0 dx, 1 g, 2 x, 3 weight, 4 mean [rows],
// 5 rstd [rows]. Params: [0] rows, [1] n, [2] g offset, [3] x offset, [4] has weight, [5] w offset,
// [6] mean offset, [7] rstd offset. dx = rstd * (gw - (sum(gw) + xhat * sum(gw * xhat)) / n), gw = g * w.
@compute @workgroup_size(64)
fn layer_norm_backward(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let r = linear_id(g, nwg, 64u);
  if (r >= P[0]) { return; }
  let n = P[1];
  let gb = P[2] + r * n;
  let xb = P[3] + r * n;
  let mean = ldf(S4, P[6] + r);
  let rstd = ldf(S5, P[7] + r);
  var a = 0.0;
  var b = 0.0;
  for (var j = 0u; j < n; j++) {
    var gw = ldf(S1, gb + j);
    if (P[4] == 1u) { gw *= ldf(S3, P[5] + j); }
    a += gw * (ldf(S2, xb + j) - mean) * rstd;
    b += gw;
  }
  let inv = 1.0 / f32(n);
  for (var j = 0u; j < n; j++) {
    var gw = ldf(S1, gb + j);
    if (P[4] == 1u) { gw *= ldf(S3, P[5] + j); }
    let xhat = (ldf(S2, xb + j) - mean) * rstd;
    stf(S0, r * n + j, rstd * (gw - inv * (b + xhat * a)));
  }
}

// layer_norm's weight and bias gradients (the same op's other outputs), one invocation per column j:
// dw[j] = sum_r g[r, j] * xhat[r, j], db[j] = sum_r g[r, j]. Operands: 0 dw, 1 db, 2 g, 3 x, 4 mean, 5 rstd.
// Params: [0] n (columns), [1] rows, [2] g offset, [3] x offset, [4] mean offset, [5] rstd offset.
@compute @workgroup_size(64)
fn layer_norm_backward_params(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let j = linear_id(g, nwg, 64u);
  let n = P[0];
  if (j >= n) { return; }
  var dw = 0.0;
  var db = 0.0;
  for (var r = 0u; r < P[1]; r++) {
    let gv = ldf(S2, P[2] + r * n + j);
    dw += gv * (ldf(S3, P[3] + r * n + j) - ldf(S4, P[4] + r)) * ldf(S5, P[5] + r);
    db += gv;
  }
  stf(S0, j, dw);
  stf(S1, j, db);
}
