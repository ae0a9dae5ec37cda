// Strided, broadcasting elementwise kernels. Operand 0 is the output, 1..3 the inputs.
// Params (u32 words): [0] numel, [1] rank, [2] scalar s0 (f32), [3] scalar s1 (f32),
// [4..11] output shape, [12..15] element offsets of operands 0..3, [16..47] strides of operands 0..3
// (8 each; 0 for broadcast dims), [48..51] dtypes of operands 0..3 (also the constants D0..D3),
// [52..55] the divisor of layouts 3 and 4.
// The host coalesces dims first and specialises each pipeline on what it knows when it records the
// op: the operands' dtypes (D0..D3) and layouts (M0..M3), so the per-element path has no run-time
// dtype branch, and contiguous or single-element operands no index arithmetic at all. A strided
// operand needs the element's multi-index: it is computed once per element (one division per dim),
// not once per operand, or once per run of elements on CPU adapters (RUN). A broadcast operand (layouts
// 3 and 4) divides once per invocation and then steps its remainder (Step). (Integer division is not
// vectorised on CPU backends such as lavapipe: every lane pays for it.)

override OP: u32 = 0u;
override B_SCALAR: u32 = 0u;   // binary: operand b is the scalar s0
override INT_MATH: u32 = 0u;   // binary: compute in i32 (both inputs integral)
override D0: u32 = 0u;
override D1: u32 = 0u;
override D2: u32 = 0u;
override D3: u32 = 0u;
// Operand layouts: 0 strided (the general path), 1 contiguous in the output's element order
// (offset + i), 2 one element for all (every stride 0), 3 repeated over leading dims (a bias over
// rows: offset + i % P[52 + k]), 4 repeated over trailing dims (a per-row value: offset + i / P[52 + k]).
override M0: u32 = 0u;
override M1: u32 = 0u;
override M2: u32 = 0u;
override M3: u32 = 0u;
// Elements per invocation: invocation i does i, i + N, i + 2N, ... (N invocations launched), so that
// neighbouring invocations still touch neighbouring elements and the per-invocation cost is shared.
// 1 in windowed runs, whose plan maps invocation i to element i.
override EPT: u32 = 1u;
// RUN = 1 (CPU adapters such as lavapipe, with a strided operand): invocation t does a run of up to
// EPT consecutive elements of one row of the innermost (coalesced) dim, and neighbouring invocations
// take the same run of neighbouring rows. The multi-index is divided out once per run, then each
// element adds the innermost strides. Neighbouring lanes thus read neighbouring addresses of a
// transposed operand (one page, one cache line) while each lane streams its own row of the others.
// Measured on lavapipe (docs/performance.md): the per-element walk (one division per dim, not
// vectorised) and a page per element of a transposed operand were what the strided path paid for.
override RUN: u32 = 0u;
// where3's three-input kernels: 0 where(c, a, b); fused MSE kernels (one allocation each, as ATen's
// mse_stub / mse_backward_stub): 1 s0 * (x1 - x2) * x3 (mse_loss_backward: input, target, grad),
// 2 (x1 - x2)^2 (the unreduced mse_loss; operand 3 unread).
override TERNARY: u32 = 0u;

const L_STRIDED: u32 = 0u;
const L_CONTIGUOUS: u32 = 1u;
const L_ONE: u32 = 2u;
const L_INNER: u32 = 3u;
const L_OUTER: u32 = 4u;
fn mode(k: u32) -> u32 { return array<u32, 4>(M0, M1, M2, M3)[k]; }
fn dt(k: u32) -> u32 { return array<u32, 4>(D0, D1, D2, D3)[k]; }

/// Offsets of every operand for element i, sharing one walk over the dims (strided operands only).
fn strided(i: u32) -> vec4<u32> {
  if (M0 != L_STRIDED && M1 != L_STRIDED && M2 != L_STRIDED && M3 != L_STRIDED) { return vec4<u32>(P[12], P[13], P[14], P[15]); }
  return walk(i);
}
/// Every operand's offset for element i through its strides (whatever its layout mode).
fn walk(i: u32) -> vec4<u32> {
  var o = vec4<u32>(P[12], P[13], P[14], P[15]);
  var rem = i;
  for (var d = P[1]; d > 0u; d--) {
    let s = P[3u + d];
    let q = rem / s;
    o += (rem - q * s) * vec4<u32>(P[15u + d], P[23u + d], P[31u + d], P[39u + d]);
    rem = q;
  }
  return o;
}
fn off(o: vec4<u32>, k: u32, i: u32) -> u32 { return o[k]; }  // offsets come precomputed (Step, runs)

/// The offset of operand k for element i by its layout, given the strided walk w of element i.
fn by_layout(k: u32, w: vec4<u32>, i: u32) -> u32 {
  let m = mode(k);
  if (m == L_CONTIGUOUS) { return P[12u + k] + i; }
  if (m == L_ONE) { return P[12u + k]; }
  if (m == L_INNER) { return P[12u + k] + i % P[52u + k]; }
  if (m == L_OUTER) { return P[12u + k] + i / P[52u + k]; }
  return w[k];
}
/// Offsets of element i, and i % divisor for the operands of layouts 3 and 4 (a bias, a per-row value).
struct Step { o: vec4<u32>, r: vec4<u32> }
fn rem_of(k: u32, i: u32) -> u32 {
  if (mode(k) == L_INNER || mode(k) == L_OUTER) { return i % P[52u + k]; }
  return 0u;
}
fn step_start(i: u32) -> Step {
  let w = strided(i);
  return Step(vec4<u32>(by_layout(0u, w, i), by_layout(1u, w, i), by_layout(2u, w, i), by_layout(3u, w, i)),
              vec4<u32>(rem_of(0u, i), rem_of(1u, i), rem_of(2u, i), rem_of(3u, i)));
}
/// Operand k's offset and remainder for element i, from those of element i - N: layouts 3 and 4 add
/// N % divisor to the remainder and carry, instead of dividing per element (lavapipe divides lane by lane).
fn step_one(k: u32, o: u32, r: u32, i: u32, N: u32, w: vec4<u32>) -> vec2<u32> {
  let m = mode(k);
  if (m == L_CONTIGUOUS) { return vec2<u32>(o + N, 0u); }
  if (m == L_ONE) { return vec2<u32>(o, 0u); }
  if (m == L_INNER || m == L_OUTER) {
    let d = P[52u + k];
    var r2 = r + N % d;
    var carry = 0u;
    if (r2 >= d) { r2 -= d; carry = 1u; }
    if (m == L_INNER) { return vec2<u32>(P[12u + k] + r2, r2); }
    return vec2<u32>(o + N / d + carry, r2);
  }
  return vec2<u32>(w[k], 0u);
}
fn step_all(s: Step, i: u32, N: u32) -> Step {
  let w = strided(i);
  let a = step_one(0u, s.o[0], s.r[0], i, N, w);
  let b = step_one(1u, s.o[1], s.r[1], i, N, w);
  let c = step_one(2u, s.o[2], s.r[2], i, N, w);
  let d = step_one(3u, s.o[3], s.r[3], i, N, w);
  return Step(vec4<u32>(a.x, b.x, c.x, d.x), vec4<u32>(a.y, b.y, c.y, d.y));
}

fn inner_strides(d: u32) -> vec4<u32> { return vec4<u32>(P[16u + d], P[24u + d], P[32u + d], P[40u + d]); }
/// RUN mode: the first element and the length of invocation t's run (length 0 past the last run).
/// Invocation t takes row t % rows, run t / rows of that row (rows = elements / innermost size).
fn run_of(t: u32) -> vec2<u32> {
  let n1 = P[3u + P[1]];
  let rows = P[0] / n1;
  if (t >= rows * ((n1 + EPT - 1u) / EPT)) { return vec2<u32>(0u, 0u); }
  let j0 = (t / rows) * EPT;
  return vec2<u32>((t % rows) * n1 + j0, min(EPT, n1 - j0));
}

fn erf_approx(x: f32) -> f32 {
  // Abramowitz & Stegun 7.1.26 refined (max abs error ~1.2e-7 in f32 range used by GELU)
  let t = 1.0 / (1.0 + 0.5 * abs(x));
  let y = 1.0 - t * exp(-x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
    t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return select(-y, y, x >= 0.0);
}

fn unary_op(x: f32) -> f32 {
  switch OP {
    case U_NEG: { return -x; }
    case U_ABS: { return abs(x); }
    case U_EXP: { return exp(x); }
    case U_LOG: { return log(x); }
    case U_SQRT: { return sqrt(x); }
    case U_RSQRT: { return inverseSqrt(x); }
    case U_RELU: { return select(x, 0.0, x < 0.0); }  // keeps NaN, as PyTorch's relu does
    case U_GELU: { return 0.5 * x * (1.0 + erf_approx(x * 0.7071067811865476)); }
    case U_GELU_TANH: { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
    case U_SIGMOID: { return 1.0 / (1.0 + exp(-x)); }
    case U_TANH: { return tanh(x); }
    case U_CLAMP: {
      // clamp: s0 = min, s1 = max; NaN bounds mean "none"; a NaN input stays NaN
      var y = x;
      if (is_nan(x)) { return x; }
      if (!is_nan(pf(2u))) { y = max(y, pf(2u)); }
      if (!is_nan(pf(3u))) { y = min(y, pf(3u)); }
      return y;
    }
    case U_COPY: { return x; }
    case U_FILL: { return pf(2u); }
    case U_SIGN: { return select(select(0.0, -1.0, x < 0.0), 1.0, x > 0.0); }  // sign (abs backward)
    case U_GELU_GRAD: {
      // d/dx gelu(x) = Phi(x) + x * phi(x)
      return 0.5 * (1.0 + erf_approx(x * 0.7071067811865476)) + x * 0.3989422804014327 * exp(-0.5 * x * x);
    }
    case U_GELU_TANH_GRAD: {
      // d/dx of the tanh approximation
      let k = 0.7978845608028654;
      let inner = k * (x + 0.044715 * x * x * x);
      let t = tanh(inner);
      return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
    }
    default: { return x; }
  }
}

@compute @workgroup_size(64)
fn unary(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i0 = linear_id(g, n, 64u);
  if (RUN == 1u) {
    let run = run_of(i0);
    var o = walk(run.x);
    for (var e = 0u; e < run.y; e++) {
      unary_at(run.x + e, o);
      o += inner_strides(P[1] - 1u);
    }
    return;
  }
  let N = n.x * n.y * 64u;
  if (i0 >= P[0]) { return; }
  var s = step_start(i0);
  for (var e = 0u; e < EPT; e++) {
    let i = i0 + e * N;
    if (i >= P[0]) { return; }
    if (e > 0u) { s = step_all(s, i, N); }
    unary_at(i, s.o);
  }
}

fn unary_at(i: u32, o: vec4<u32>) {
  if (OP == U_FILL) { st(S0, off(o, 0u, i), unary_v(0u)); return; }
  st(S0, off(o, 0u, i), unary_v(ld(S1, off(o, 1u, i))));
}
/// The output's bits for input bits `bits` (shared by the scalar and the vec4 entry points).
fn unary_v(bits: u32) -> u32 {
  if (OP == U_FILL) { return from_f32(pf(2u), dt(0u)); }
  if (OP == U_COPY && dt(0u) == dt(1u)) { return bits; }  // exact copy
  return from_f32(unary_op(as_f32(bits, dt(1u))), dt(0u));
}

fn as_i32(bits: u32, d: u32) -> i32 {
  if (d == F32) { return i32(bitcast<f32>(bits)); }
  if (d == I32) { return bitcast<i32>(bits); }
  return select(0, 1, bits != 0u);
}

fn nan2(a: f32, b: f32) -> bool { return is_nan(a) || is_nan(b); }

fn binary_f(a: f32, b: f32) -> f32 {
  switch OP {
    case B_ADD: { return a + pf(3u) * b; }
    case B_SUB: { return a - pf(3u) * b; }
    case B_MUL: { return a * b; }
    case B_DIV: { return a / b; }
    case B_POW: {
      // Small integral exponents by repeated squaring (exact, as PyTorch's integer-power paths), which
      // also gives negative bases their sign; others through pow (exp2(b * log2(a))).
      if (b == round(b) && abs(b) <= 64.0) {
        var e = u32(abs(b));
        var base = a;
        var r = 1.0;
        loop {
          if (e == 0u) { break; }
          if ((e & 1u) == 1u) { r *= base; }
          base *= base;
          e = e >> 1u;
        }
        return select(r, 1.0 / r, b < 0.0);
      }
      // pow(Tensor, Scalar) in PyTorch takes sqrt for 0.5 and rsqrt for -0.5, so a -0 base keeps its
      // sign (pow(-0., 0.5) = -0., pow(-0., -0.5) = -inf: the gradient of x.pow(0.5) at -0 is -inf).
      if (B_SCALAR == 1u && b == 0.5) { return sqrt(a); }
      if (B_SCALAR == 1u && b == -0.5) { return inverseSqrt(a); }
      // Otherwise C's pow: a zero base of either sign gives +0 for a positive exponent, +inf for a
      // negative one (exp2(b * log2(a)) is undefined at 0).
      // (+inf from a's bits: WGSL rejects an infinite constant expression)
      if (a == 0.0) { return select(bitcast<f32>((bitcast<u32>(a) & 0u) | 0x7f800000u), 0.0, b > 0.0); }
      return pow(a, b);
    }
    // IEEE comparisons, with NaN handled on the bits (every comparison with NaN is false but !=)
    case B_EQ: { return select(0.0, 1.0, !nan2(a, b) && a == b); }
    case B_NE: { return select(0.0, 1.0, nan2(a, b) || a != b); }
    case B_LT: { return select(0.0, 1.0, !nan2(a, b) && a < b); }
    case B_LE: { return select(0.0, 1.0, !nan2(a, b) && a <= b); }
    case B_GT: { return select(0.0, 1.0, !nan2(a, b) && a > b); }
    case B_GE: { return select(0.0, 1.0, !nan2(a, b) && a >= b); }
    case B_MAXIMUM: { return select(max(a, b), a + b, nan2(a, b)); }
    case B_MINIMUM: { return select(min(a, b), a + b, nan2(a, b)); }
    case B_ATAN2: { return atan2(a, b); }
    // Fused backward formulas (a = incoming gradient, b = saved input or result), one output allocation
    // each, as PyTorch's threshold_backward / gelu_backward / sigmoid_backward / tanh_backward.
    case B_GELU_BACKWARD: { return a * (0.5 * (1.0 + erf_approx(b * 0.7071067811865476)) + b * 0.3989422804014327 * exp(-0.5 * b * b)); }
    case B_GELU_TANH_BACKWARD: {
      let k = 0.7978845608028654;
      let t = tanh(k * (b + 0.044715 * b * b * b));
      return a * (0.5 * (1.0 + t) + 0.5 * b * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * b * b));
    }
    // torch: self <= threshold ? 0 : grad, so a NaN passes the gradient on
    case B_THRESHOLD_BACKWARD: { return select(a, 0.0, !is_nan(b) && b <= 0.0); }
    case B_SIGMOID_BACKWARD: { return a * b * (1.0 - b); }
    case B_TANH_BACKWARD: { return a * (1.0 - b * b); }
    default: { return a; }
  }
}

fn binary_i(a: i32, b: i32) -> i32 {
  switch OP {
    case B_ADD: { return a + i32(pf(3u)) * b; }
    case B_SUB: { return a - i32(pf(3u)) * b; }
    case B_MUL: { return a * b; }
    case B_EQ: { return select(0, 1, a == b); }
    case B_NE: { return select(0, 1, a != b); }
    case B_LT: { return select(0, 1, a < b); }
    case B_LE: { return select(0, 1, a <= b); }
    case B_GT: { return select(0, 1, a > b); }
    case B_GE: { return select(0, 1, a >= b); }
    case B_MAXIMUM: { return max(a, b); }
    case B_MINIMUM: { return min(a, b); }
    default: { return a; }
  }
}

@compute @workgroup_size(64)
fn binary(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i0 = linear_id(g, n, 64u);
  if (RUN == 1u) {
    let run = run_of(i0);
    var o = walk(run.x);
    for (var e = 0u; e < run.y; e++) {
      binary_at(run.x + e, o);
      o += inner_strides(P[1] - 1u);
    }
    return;
  }
  let N = n.x * n.y * 64u;
  if (i0 >= P[0]) { return; }
  var s = step_start(i0);
  for (var e = 0u; e < EPT; e++) {
    let i = i0 + e * N;
    if (i >= P[0]) { return; }
    if (e > 0u) { s = step_all(s, i, N); }
    binary_at(i, s.o);
  }
}

fn binary_at(i: u32, o: vec4<u32>) {
  var bbits = P[2u];
  if (B_SCALAR == 0u) { bbits = ld(S2, off(o, 2u, i)); }
  st(S0, off(o, 0u, i), binary_v(ld(S1, off(o, 1u, i)), bbits));
}
/// The output's bits for a's and b's bits (b: the scalar s0's bits when B_SCALAR).
fn binary_v(abits: u32, b: u32) -> u32 {
  var bbits = b;
  var bdt = F32;
  if (B_SCALAR == 0u) { bdt = dt(2u); }
  var r: u32;
  if (INT_MATH == 1u) {
    if (B_SCALAR == 1u) { bdt = I32; bbits = bitcast<u32>(i32(bitcast<f32>(bbits))); }
    let v = binary_i(as_i32(abits, dt(1u)), as_i32(bbits, bdt));
    if (dt(0u) == F32) { r = bitcast<u32>(f32(v)); } else if (dt(0u) == BOOL) { r = select(0u, 1u, v != 0); } else { r = bitcast<u32>(v); }
  } else {
    r = from_f32(binary_f(as_f32(abits, dt(1u)), as_f32(bbits, bdt)), dt(0u));
  }
  return r;
}

@compute @workgroup_size(64)
fn where3(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i0 = linear_id(g, n, 64u);
  if (RUN == 1u) {
    let run = run_of(i0);
    var o = walk(run.x);
    for (var e = 0u; e < run.y; e++) {
      where3_at(run.x + e, o);
      o += inner_strides(P[1] - 1u);
    }
    return;
  }
  let N = n.x * n.y * 64u;
  if (i0 >= P[0]) { return; }
  var s = step_start(i0);
  for (var e = 0u; e < EPT; e++) {
    let i = i0 + e * N;
    if (i >= P[0]) { return; }
    if (e > 0u) { s = step_all(s, i, N); }
    where3_at(i, s.o);
  }
}

fn where3_at(i: u32, o: vec4<u32>) {
  var x3 = 0u;
  if (TERNARY != 2u) { x3 = ld(S3, off(o, 3u, i)); }  // (x1 - x2)^2 reads no third input
  st(S0, off(o, 0u, i), where3_v(ld(S1, off(o, 1u, i)), ld(S2, off(o, 2u, i)), x3));
}
/// The output's bits for the three inputs' bits.
fn where3_v(x1: u32, x2: u32, x3: u32) -> u32 {
  if (TERNARY != 0u) {
    let d = as_f32(x1, dt(1u)) - as_f32(x2, dt(2u));
    var r = d * d;
    if (TERNARY == 1u) { r = pf(2u) * d * as_f32(x3, dt(3u)); }
    return from_f32(r, dt(0u));
  }
  if (dt(2u) == dt(0u) && dt(3u) == dt(0u)) { return select(x3, x2, x1 != 0u); }
  return from_f32(select(as_f32(x3, dt(3u)), as_f32(x2, dt(2u)), x1 != 0u), dt(0u));
}

// Vec4 entry points (unary_v4, binary_v4, where3_v4): the same ops, four consecutive elements per
// step, for operands that are contiguous (M = 1), one element (2), or repeated with a divisor that is a
// multiple of 4 (3, 4), every vec4-read operand starting on a multiple of 4 and P[0] a multiple of 4.
// On lavapipe a load whose address differs per lane is a gather, one lane at a time, and a vec4 load
// gathers four words per lane address where four scalar loads gather four times (docs/performance.md,
// Elementwise). The same bindings seen as vec4 words (WGSL allows the aliasing between entry points, not
// within one).
// Invocation j does elements 4j..4j+3, then 4(j + N).. (EPT steps; 1 in windowed runs).
@group(1) @binding(1) var<storage, read_write> W1: array<vec4<u32>>;
@group(1) @binding(2) var<storage, read_write> W2: array<vec4<u32>>;
@group(1) @binding(3) var<storage, read_write> W3: array<vec4<u32>>;
@group(1) @binding(4) var<storage, read_write> W4: array<vec4<u32>>;
@group(1) @binding(5) var<storage, read_write> W5: array<vec4<u32>>;
@group(1) @binding(6) var<storage, read_write> W6: array<vec4<u32>>;

fn ld4(slot: u32, k: u32) -> vec4<u32> {
  let i = at(slot, k) >> 2u;
  switch slot & 7u {
    case 1u: { return W1[i]; }
    case 2u: { return W2[i]; }
    case 3u: { return W3[i]; }
    case 4u: { return W4[i]; }
    case 5u: { return W5[i]; }
    default: { return W6[i]; }
  }
}
fn st4(slot: u32, k: u32, v: vec4<u32>) {
  let i = at(slot, k) >> 2u;
  switch slot & 7u {
    case 1u: { W1[i] = v; }
    case 2u: { W2[i] = v; }
    case 3u: { W3[i] = v; }
    case 4u: { W4[i] = v; }
    case 5u: { W5[i] = v; }
    default: { W6[i] = v; }
  }
}
/// Input k's four elements at element offset o (from step_start / step_all). An entry point may not use
/// both views of a binding, so a one-element operand is read as its vec4 and one word of it (blocks are
/// whole multiples of 512 bytes, and windows end on a vec4: the vec4 is inside the binding).
fn in4(k: u32, slot: u32, o: u32) -> vec4<u32> {
  if (mode(k) == L_ONE || mode(k) == L_OUTER) { return vec4<u32>(ld4(slot, o)[at(slot, o) & 3u]); }
  return ld4(slot, o);
}

@compute @workgroup_size(64)
fn unary_v4(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let j0 = linear_id(g, n, 64u);
  let N = n.x * n.y * 64u;
  if (j0 >= P[0] >> 2u) { return; }
  var s = step_start(j0 * 4u);
  for (var e = 0u; e < EPT; e++) {
    let j = j0 + e * N;
    if (j >= P[0] >> 2u) { return; }
    if (e > 0u) { s = step_all(s, j * 4u, N * 4u); }
    var x = vec4<u32>(0u);
    if (OP != U_FILL) { x = in4(1u, S1, s.o[1]); }
    st4(S0, s.o[0], vec4<u32>(unary_v(x.x), unary_v(x.y), unary_v(x.z), unary_v(x.w)));
  }
}

@compute @workgroup_size(64)
fn binary_v4(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let j0 = linear_id(g, n, 64u);
  let N = n.x * n.y * 64u;
  if (j0 >= P[0] >> 2u) { return; }
  var s = step_start(j0 * 4u);
  for (var e = 0u; e < EPT; e++) {
    let j = j0 + e * N;
    if (j >= P[0] >> 2u) { return; }
    if (e > 0u) { s = step_all(s, j * 4u, N * 4u); }
    let a = in4(1u, S1, s.o[1]);
    var b = vec4<u32>(P[2u]);
    if (B_SCALAR == 0u) { b = in4(2u, S2, s.o[2]); }
    st4(S0, s.o[0], vec4<u32>(binary_v(a.x, b.x), binary_v(a.y, b.y), binary_v(a.z, b.z), binary_v(a.w, b.w)));
  }
}

@compute @workgroup_size(64)
fn where3_v4(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let j0 = linear_id(g, n, 64u);
  let N = n.x * n.y * 64u;
  if (j0 >= P[0] >> 2u) { return; }
  var s = step_start(j0 * 4u);
  for (var e = 0u; e < EPT; e++) {
    let j = j0 + e * N;
    if (j >= P[0] >> 2u) { return; }
    if (e > 0u) { s = step_all(s, j * 4u, N * 4u); }
    let x1 = in4(1u, S1, s.o[1]);
    let x2 = in4(2u, S2, s.o[2]);
    var x3 = vec4<u32>(0u);
    if (TERNARY != 2u) { x3 = in4(3u, S3, s.o[3]); }
    st4(S0, s.o[0], vec4<u32>(where3_v(x1.x, x2.x, x3.x), where3_v(x1.y, x2.y, x3.y), where3_v(x1.z, x2.z, x3.z), where3_v(x1.w, x2.w, x3.w)));
  }
}
