// Row reductions: the input (operand 1) is viewed as [rows, len] with row r starting at
// P[4] + r * P[3] and consecutive elements P[5] apart; one invocation reduces one row into
// operand 0 at element P[6] + r. The host arranges the layout (moving reduced dims last) and splits
// very long rows into partial rows reduced again, so no kernel needs workgroup barriers (slow on llvmpipe).
// Params: [0] rows, [1] len, [2] s0 (f32: correction for var, scale for mean), [3] row stride,
// [4] input offset, [5] element stride, [6] output offset, [7] input dtype, [8] output dtype,
// [9] chunks per row (a first pass of a long-row reduction: output row r*chunks+c reduces
// elements [c*len, min((c+1)*len, total)) of row r), [10] total row length.

override OP: u32 = R_SUM;  // one of the R_* codes (ops/kernel-codes.ts)

@compute @workgroup_size(64)
fn reduce_rows(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let r = linear_id(g, n, 64u);
  if (r >= P[0]) { return; }
  let es = P[5];
  let chunk = r % P[9];
  let start = chunk * P[1];
  let len = min(P[1], P[10] - start);
  let base = P[4] + (r / P[9]) * P[3] + start * es;
  let idt = P[7];
  let odt = P[8];
  if (OP == R_SUM && idt != F32 && odt != F32) {
    var si: i32 = 0;
    for (var j = 0u; j < len; j++) {
      let b = ld(S1, base + j * es);
      si += select(bitcast<i32>(b), select(0, 1, b != 0u), idt == BOOL);
    }
    st(S0, P[6] + r, bitcast<u32>(si));
    return;
  }
  if (OP == R_VAR) {
    if (len == 0u) { st(S0, P[6] + r, 0x7fc00000u); return; }  // var of nothing is NaN, as in PyTorch
    var mean = 0.0;
    for (var j = 0u; j < len; j++) { mean += as_f32(ld(S1, base + j * es), idt); }
    mean /= f32(len);
    var ss = 0.0;
    for (var j = 0u; j < len; j++) { let d = as_f32(ld(S1, base + j * es), idt) - mean; ss += d * d; }
    stf(S0, P[6] + r, ss / (f32(len) - pf(2u)));
    return;
  }
  var acc = as_f32(ld(S1, base), idt);
  var arg = 0u;
  if (OP == R_SUM) { acc = 0.0; }
  if (OP == R_PROD) { acc = 1.0; }
  for (var j = 0u; j < len; j++) {
    let v = as_f32(ld(S1, base + j * es), idt);
    switch OP {
      case R_SUM: { acc += v; }
      case R_PROD: { acc *= v; }
      // NaN wins and sticks, as in PyTorch's max/min/argmax
      case R_MAX, R_ARGMAX: { if (!is_nan(acc) && (v > acc || is_nan(v))) { acc = v; arg = j; } }
      case R_MIN, R_ARGMIN: { if (!is_nan(acc) && (v < acc || is_nan(v))) { acc = v; arg = j; } }
      default: {}  // R_VAR returned above
    }
  }
  if (OP == R_ARGMAX || OP == R_ARGMIN) { st(S0, P[6] + r, arg); return; }
  if (OP == R_SUM) { acc *= pf(2u); }
  st(S0, P[6] + r, from_f32(acc, odt));
}
