// Strided, broadcasting elementwise kernels. Operand 0 is the output, 1..3 the inputs.
// Params (u32 words): [0] numel, [1] rank, [2] scalar s0 (f32), [3] scalar s1 (f32),
// [4..11] output shape, [12..15] element offsets of operands 0..3, [16..47] strides of operands 0..3
// (8 each; 0 for broadcast dims), [48..51] dtypes of operands 0..3.
// The host coalesces dims first, so contiguous operands have rank 1 and cost one div per element.

override OP: u32 = 0u;
override B_SCALAR: u32 = 0u;   // binary: operand b is the scalar s0
override INT_MATH: u32 = 0u;   // binary: compute in i32 (both inputs integral)
// where3's three-input kernels: 0 where(c, a, b); fused MSE kernels (one allocation each, as ATen's
// mse_stub / mse_backward_stub): 1 s0 * (x1 - x2) * x3 (mse_loss_backward: input, target, grad),
// 2 (x1 - x2)^2 (the unreduced mse_loss; operand 3 unread).
override TERNARY: u32 = 0u;

fn off(k: u32, i: u32) -> u32 {
  var rem = i;
  var o = P[12u + k];
  for (var d = P[1]; d > 0u; d--) {
    let s = P[3u + d];
    o += (rem % s) * P[15u + k * 8u + d];
    rem = rem / s;
  }
  return o;
}
fn dt(k: u32) -> u32 { return P[48u + k]; }

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
  let i = linear_id(g, n, 64u);
  if (i >= P[0]) { return; }
  if (OP == U_FILL) { st(S0, off(0u, i), from_f32(pf(2u), dt(0u))); return; }
  let bits = ld(S1, off(1u, i));
  if (OP == U_COPY && dt(0u) == dt(1u)) { st(S0, off(0u, i), bits); return; }  // exact copy
  st(S0, off(0u, i), from_f32(unary_op(as_f32(bits, dt(1u))), dt(0u)));
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
    case B_THRESHOLD_BACKWARD: { return select(0.0, a, b > 0.0); }
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
  let i = linear_id(g, n, 64u);
  if (i >= P[0]) { return; }
  let abits = ld(S1, off(1u, i));
  var bbits = P[2u];
  var bdt = F32;
  if (B_SCALAR == 0u) { bbits = ld(S2, off(2u, i)); bdt = dt(2u); }
  var r: u32;
  if (INT_MATH == 1u) {
    if (B_SCALAR == 1u) { bdt = I32; bbits = bitcast<u32>(i32(bitcast<f32>(bbits))); }
    let v = binary_i(as_i32(abits, dt(1u)), as_i32(bbits, bdt));
    if (dt(0u) == F32) { r = bitcast<u32>(f32(v)); } else if (dt(0u) == BOOL) { r = select(0u, 1u, v != 0); } else { r = bitcast<u32>(v); }
  } else {
    r = from_f32(binary_f(as_f32(abits, dt(1u)), as_f32(bbits, bdt)), dt(0u));
  }
  st(S0, off(0u, i), r);
}

@compute @workgroup_size(64)
fn where3(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = linear_id(g, n, 64u);
  if (i >= P[0]) { return; }
  if (TERNARY != 0u) {
    let d = as_f32(ld(S1, off(1u, i)), dt(1u)) - as_f32(ld(S2, off(2u, i)), dt(2u));
    var r = d * d;
    if (TERNARY == 1u) { r = pf(2u) * d * as_f32(ld(S3, off(3u, i)), dt(3u)); }
    st(S0, off(0u, i), from_f32(r, dt(0u)));
    return;
  }
  let c = ld(S1, off(1u, i));
  let a = ld(S2, off(2u, i));
  let b = ld(S3, off(3u, i));
  if (dt(2u) == dt(0u) && dt(3u) == dt(0u)) {
    st(S0, off(0u, i), select(b, a, c != 0u));
  } else {
    st(S0, off(0u, i), from_f32(select(as_f32(b, dt(3u)), as_f32(a, dt(2u)), c != 0u), dt(0u)));
  }
}
