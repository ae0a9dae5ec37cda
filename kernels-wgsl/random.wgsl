// Counter-based random numbers (Philox4x32-10, as cuRAND and PyTorch's CUDA generator use): element i
// of a draw gets the counter (offset + i), so a (seed, offset) pair reproduces a draw exactly, which
// dropout under activation checkpointing relies on. Output (operand 0) is contiguous.
// Params: [0] numel, [1] seed lo, [2] seed hi, [3] offset, [4] a (f32), [5] b (f32), [6] out offset.
// Dropout: operand 1 = x (contiguous, offset [7]), operand 2 = mask out (bool), a = p, b = 1/(1-p).

override DIST: u32 = 0u;  // 0 uniform [a, b), 1 normal(mean a, std b), 2 integers in [a, b), 3 dropout

fn mulhilo(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu; let a1 = a >> 16u;
  let b0 = b & 0xffffu; let b1 = b >> 16u;
  let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0; let p11 = a1 * b1;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
  return vec2<u32>(hi, a * b);
}

fn philox(ctr_in: vec4<u32>, key_in: vec2<u32>) -> vec4<u32> {
  var c = ctr_in;
  var k = key_in;
  for (var i = 0u; i < 10u; i++) {
    let p0 = mulhilo(0xD2511F53u, c.x);
    let p1 = mulhilo(0xCD9E8D57u, c.z);
    c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
    k += vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}

fn unit(x: u32) -> f32 { return f32(x >> 8u) * (1.0 / 16777216.0); }

@compute @workgroup_size(64)
fn draw(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = linear_id(g, nwg, 64u);
  if (i >= P[0]) { return; }
  let bits = philox(vec4<u32>(P[3] + i, 0u, 0u, 0u), vec2<u32>(P[1], P[2]));
  let a = pf(4u);
  let b = pf(5u);
  let o = P[6] + i;
  switch DIST {
    case 0u: { stf(S0, o, a + (b - a) * unit(bits.x)); }
    case 1u: {
      let u1 = max(unit(bits.x), 1.0 / 16777216.0);
      stf(S0, o, a + b * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * unit(bits.y)));
    }
    case 2u: { st(S0, o, bitcast<u32>(i32(a) + i32(bits.x % u32(b - a)))); }
    default: {
      let keep = unit(bits.x) >= a;
      st(S2, i, select(0u, 1u, keep));
      stf(S0, o, select(0.0, ldf(S1, P[7] + i) * b, keep));
    }
  }
}
