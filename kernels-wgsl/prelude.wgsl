// Shared by every GradLab kernel (prepended at load time).
//
// Group 0 holds the dispatch's parameters as raw u32 words (one pre-made bind group per params slot:
// on lavapipe a dynamic offset made every dispatch ~3x slower). Group 1, bindings 1..6, is device memory.
// Many tensors share one buffer (the caching allocator carves segments into blocks), and WebGPU
// forbids a writable binding that overlaps another binding of the same buffer, so the host binds each
// segment once, whole (a segment larger than one binding may be: a tile of it, or each operand's own
// range; device/encode.ts, bindingOf), and tells the kernel where each operand's block starts: the
// override constant S<k> of operand k is its binding (S & 7) and k itself (S >> 3), and P[58 + k] is the
// element of that binding where the operand's element 0 lies. A bind group then names segments only, so
// a loop whose tensors land at new offsets each step finds its bind groups made (Dawn frees a dropped
// group's descriptor set only when the event loop turns), and no binding takes a dynamic offset
// (lavapipe copies a descriptor set, mapping and unmapping a page, on every setBindGroup with dynamic
// offsets). Every storage binding is read_write: a read-only binding may not share a buffer with a
// writable one in the same dispatch.
@group(0) @binding(0) var<storage, read> P: array<u32>;
@group(1) @binding(1) var<storage, read_write> B1: array<u32>;
@group(1) @binding(2) var<storage, read_write> B2: array<u32>;
@group(1) @binding(3) var<storage, read_write> B3: array<u32>;
@group(1) @binding(4) var<storage, read_write> B4: array<u32>;
@group(1) @binding(5) var<storage, read_write> B5: array<u32>;
@group(1) @binding(6) var<storage, read_write> B6: array<u32>;

override S0: u32 = 1u;
override S1: u32 = 10u;
override S2: u32 = 19u;
override S3: u32 = 28u;
override S4: u32 = 37u;
override S5: u32 = 46u;

/// Where element k of the operand whose constant is s lies in its binding (u32 arithmetic wraps, so a
/// binding that starts inside the block, a window, has a "negative" start).
fn at(s: u32, k: u32) -> u32 { return k + P[58u + (s >> 3u)]; }

// Windowed dispatches (tensors larger than one binding may be, maxStorageBufferBindingSize): the host
// binds a window of each large block and splits the dispatch into runs of invocations whose accesses
// fit their windows. Then P[56] = invocations in this run, P[57] = the first one (and P[58 + k] puts
// operand k's element 0 before its window's start). WINDOWED = 0 folds linear_id's part away.
override WINDOWED: u32 = 0u;

// dtype codes, as the host sends them
const F32: u32 = 0u;
const I32: u32 = 1u;
const BOOL: u32 = 2u;

fn ld(s: u32, k: u32) -> u32 {
  let i = at(s, k);
  switch s & 7u {
    case 1u: { return B1[i]; }
    case 2u: { return B2[i]; }
    case 3u: { return B3[i]; }
    case 4u: { return B4[i]; }
    case 5u: { return B5[i]; }
    default: { return B6[i]; }
  }
}

fn st(s: u32, k: u32, v: u32) {
  let i = at(s, k);
  switch s & 7u {
    case 1u: { B1[i] = v; }
    case 2u: { B2[i] = v; }
    case 3u: { B3[i] = v; }
    case 4u: { B4[i] = v; }
    case 5u: { B5[i] = v; }
    default: { B6[i] = v; }
  }
}

fn ldf(slot: u32, i: u32) -> f32 { return bitcast<f32>(ld(slot, i)); }
fn stf(slot: u32, i: u32, v: f32) { st(slot, i, bitcast<u32>(v)); }

/// A value of dtype `dt` as f32 (ints and bools are converted, floats reinterpreted).
fn as_f32(bits: u32, dt: u32) -> f32 {
  if (dt == F32) { return bitcast<f32>(bits); }
  if (dt == I32) { return f32(bitcast<i32>(bits)); }
  return select(0.0, 1.0, bits != 0u);
}

/// An f32 value stored as dtype `dt` (float->int truncates toward zero, as PyTorch's casts do).
fn from_f32(v: f32, dt: u32) -> u32 {
  if (dt == F32) { return bitcast<u32>(v); }
  if (dt == I32) { return bitcast<u32>(i32(v)); }
  return select(0u, 1u, v != 0.0);
}

fn pf(i: u32) -> f32 { return bitcast<f32>(P[i]); }

/// NaN test on the bits: compilers may fold `x != x` to false under fast-math assumptions.
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }

/// The invocation's linear index for a 2-D grid of 1-D workgroups of size `wg`
/// (more than 65535 workgroups spill into y). In a windowed run, invocations past the run get
/// 0xffffffff, which every kernel's bounds check (`>= P[0]`, a count below 2^32) turns away.
fn linear_id(gid: vec3<u32>, nwg: vec3<u32>, wg: u32) -> u32 {
  let id = gid.x + gid.y * nwg.x * wg;
  if (WINDOWED == 0u) { return id; }
  if (id >= P[56]) { return 0xffffffffu; }
  return id + P[57];
}
