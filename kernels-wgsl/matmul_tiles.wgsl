// gradlab: prelude prelude_vec4
enable subgroups;

// matmul_subgroups.wgsl's loop over A and B repacked into tiles that lavapipe reads from uniform buffers
// (ops/linalg.ts picks it on llvmpipe for large products; matmul_tiles_pack.wgsl writes the tiles). On
// llvmpipe (Mesa 25) a storage load at a per-lane address is a loop over the lanes with a bounds branch per
// float; a uniform load at per-lane addresses is one branchless gather: the same loop ran at 37-38 GFLOP/s
// from uniform tiles against 20-23 from storage (docs/performance.md, bench/matmul-tiles.ts). A uniform
// binding holds at most 64 KiB and every workgroup of a dispatch sees the same ones, so a dispatch adds
// up to 6 chunks of 64 k (as many tiles as llvmpipe's 12 uniform bindings hold; four ran 3-8 % slower) to
// one tile of C (240 rows x 256 columns): 10 workgroups of 24 rows, an even count for lavapipe's threads
// (11 blocks of a 256-row tile left one thread idle a twelfth of the time).
// Tiles (group 2, each bound at a dynamic offset of the device's tile scratch buffer, device/tiles.ts):
// A's hold 240 rows x 64 k (row r's k..k+3 are vec4 r * 16 + k / 4), B's 64 k x 256 columns (k's
// columns 4 c..4 c + 3 are vec4 k * 64 + c); rows and columns past the matrix's are zeros, whose
// products land only in rows and columns never stored. Products are added in k order, 4 k per step, as
// matmul_subgroups.wgsl adds them, and a dispatch after the first of its tile of C starts from what C
// holds: the same bits.
// Params: P[0] = M, P[1] = N, P[2] = the tile's first row, P[3] = its first column, P[4] = C's offset,
// P[5] = the chunks this dispatch adds (1..6: tiles A0/B0 .., the other bindings unread), P[6] = 1 where C
// holds the earlier chunks' sum. Both are read at run time, not override constants: llvmpipe takes about 3 s to
// compile this kernel (without Mesa's shader cache), once instead of once per combination; as fast.
@group(2) @binding(0) var<uniform> A0: array<vec4<f32>, 3840>;
@group(2) @binding(1) var<uniform> A1: array<vec4<f32>, 3840>;
@group(2) @binding(2) var<uniform> A2: array<vec4<f32>, 3840>;
@group(2) @binding(3) var<uniform> A3: array<vec4<f32>, 3840>;
@group(2) @binding(4) var<uniform> A4: array<vec4<f32>, 3840>;
@group(2) @binding(5) var<uniform> A5: array<vec4<f32>, 3840>;
@group(2) @binding(6) var<uniform> B0: array<vec4<f32>, 4096>;
@group(2) @binding(7) var<uniform> B1: array<vec4<f32>, 4096>;
@group(2) @binding(8) var<uniform> B2: array<vec4<f32>, 4096>;
@group(2) @binding(9) var<uniform> B3: array<vec4<f32>, 4096>;
@group(2) @binding(10) var<uniform> B4: array<vec4<f32>, 4096>;
@group(2) @binding(11) var<uniform> B5: array<vec4<f32>, 4096>;

@compute @workgroup_size(64)
fn mm(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wg: vec3<u32>,
      @builtin(subgroup_invocation_id) lane: u32) {
  let M = P[0];
  let NCH = P[5];
  let n4 = P[1] / 4u;
  let tr0 = wg.x * 24u;
  let row0 = P[2] + tr0;
  let col4 = P[3] / 4u + lid.x;
  let c4 = min(col4, n4 - 1u);
  let cBase4 = P[4] / 4u;
  // lane l reads rows tr0 + l, tr0 + 8 + l and tr0 + 16 + l of the A tile
  let r0 = (tr0 + 0u + lane) * 16u;
  let r1 = (tr0 + 8u + lane) * 16u;
  let r2 = (tr0 + 16u + lane) * 16u;
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  var acc4 = vec4<f32>(0.0);
  var acc5 = vec4<f32>(0.0);
  var acc6 = vec4<f32>(0.0);
  var acc7 = vec4<f32>(0.0);
  var acc8 = vec4<f32>(0.0);
  var acc9 = vec4<f32>(0.0);
  var acc10 = vec4<f32>(0.0);
  var acc11 = vec4<f32>(0.0);
  var acc12 = vec4<f32>(0.0);
  var acc13 = vec4<f32>(0.0);
  var acc14 = vec4<f32>(0.0);
  var acc15 = vec4<f32>(0.0);
  var acc16 = vec4<f32>(0.0);
  var acc17 = vec4<f32>(0.0);
  var acc18 = vec4<f32>(0.0);
  var acc19 = vec4<f32>(0.0);
  var acc20 = vec4<f32>(0.0);
  var acc21 = vec4<f32>(0.0);
  var acc22 = vec4<f32>(0.0);
  var acc23 = vec4<f32>(0.0);
  if (P[6] == 1u) {
    acc0 = ldv(S0, cBase4 + min(row0 + 0u, M - 1u) * n4 + c4);
    acc1 = ldv(S0, cBase4 + min(row0 + 1u, M - 1u) * n4 + c4);
    acc2 = ldv(S0, cBase4 + min(row0 + 2u, M - 1u) * n4 + c4);
    acc3 = ldv(S0, cBase4 + min(row0 + 3u, M - 1u) * n4 + c4);
    acc4 = ldv(S0, cBase4 + min(row0 + 4u, M - 1u) * n4 + c4);
    acc5 = ldv(S0, cBase4 + min(row0 + 5u, M - 1u) * n4 + c4);
    acc6 = ldv(S0, cBase4 + min(row0 + 6u, M - 1u) * n4 + c4);
    acc7 = ldv(S0, cBase4 + min(row0 + 7u, M - 1u) * n4 + c4);
    acc8 = ldv(S0, cBase4 + min(row0 + 8u, M - 1u) * n4 + c4);
    acc9 = ldv(S0, cBase4 + min(row0 + 9u, M - 1u) * n4 + c4);
    acc10 = ldv(S0, cBase4 + min(row0 + 10u, M - 1u) * n4 + c4);
    acc11 = ldv(S0, cBase4 + min(row0 + 11u, M - 1u) * n4 + c4);
    acc12 = ldv(S0, cBase4 + min(row0 + 12u, M - 1u) * n4 + c4);
    acc13 = ldv(S0, cBase4 + min(row0 + 13u, M - 1u) * n4 + c4);
    acc14 = ldv(S0, cBase4 + min(row0 + 14u, M - 1u) * n4 + c4);
    acc15 = ldv(S0, cBase4 + min(row0 + 15u, M - 1u) * n4 + c4);
    acc16 = ldv(S0, cBase4 + min(row0 + 16u, M - 1u) * n4 + c4);
    acc17 = ldv(S0, cBase4 + min(row0 + 17u, M - 1u) * n4 + c4);
    acc18 = ldv(S0, cBase4 + min(row0 + 18u, M - 1u) * n4 + c4);
    acc19 = ldv(S0, cBase4 + min(row0 + 19u, M - 1u) * n4 + c4);
    acc20 = ldv(S0, cBase4 + min(row0 + 20u, M - 1u) * n4 + c4);
    acc21 = ldv(S0, cBase4 + min(row0 + 21u, M - 1u) * n4 + c4);
    acc22 = ldv(S0, cBase4 + min(row0 + 22u, M - 1u) * n4 + c4);
    acc23 = ldv(S0, cBase4 + min(row0 + 23u, M - 1u) * n4 + c4);
  }
  for (var k = 0u; k < 64u; k += 4u) {
    let a0 = A0[r0 + (k >> 2u)];
    let a1 = A0[r1 + (k >> 2u)];
    let a2 = A0[r2 + (k >> 2u)];
    let b = array<vec4<f32>, 4>(B0[k * 64u + lid.x], B0[(k + 1u) * 64u + lid.x], B0[(k + 2u) * 64u + lid.x], B0[(k + 3u) * 64u + lid.x]);
    { let x = subgroupBroadcast(a0, 0u); acc0 = (((acc0 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a0, 1u); acc1 = (((acc1 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a0, 2u); acc2 = (((acc2 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a0, 3u); acc3 = (((acc3 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a0, 4u); acc4 = (((acc4 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a0, 5u); acc5 = (((acc5 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a0, 6u); acc6 = (((acc6 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a0, 7u); acc7 = (((acc7 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a1, 0u); acc8 = (((acc8 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a1, 1u); acc9 = (((acc9 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a1, 2u); acc10 = (((acc10 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a1, 3u); acc11 = (((acc11 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a1, 4u); acc12 = (((acc12 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a1, 5u); acc13 = (((acc13 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a1, 6u); acc14 = (((acc14 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a1, 7u); acc15 = (((acc15 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a2, 0u); acc16 = (((acc16 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a2, 1u); acc17 = (((acc17 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a2, 2u); acc18 = (((acc18 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a2, 3u); acc19 = (((acc19 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a2, 4u); acc20 = (((acc20 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a2, 5u); acc21 = (((acc21 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a2, 6u); acc22 = (((acc22 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    { let x = subgroupBroadcast(a2, 7u); acc23 = (((acc23 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
  }
  if (NCH > 1u) {
    for (var k = 0u; k < 64u; k += 4u) {
      let a0 = A1[r0 + (k >> 2u)];
      let a1 = A1[r1 + (k >> 2u)];
      let a2 = A1[r2 + (k >> 2u)];
      let b = array<vec4<f32>, 4>(B1[k * 64u + lid.x], B1[(k + 1u) * 64u + lid.x], B1[(k + 2u) * 64u + lid.x], B1[(k + 3u) * 64u + lid.x]);
      { let x = subgroupBroadcast(a0, 0u); acc0 = (((acc0 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 1u); acc1 = (((acc1 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 2u); acc2 = (((acc2 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 3u); acc3 = (((acc3 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 4u); acc4 = (((acc4 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 5u); acc5 = (((acc5 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 6u); acc6 = (((acc6 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 7u); acc7 = (((acc7 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 0u); acc8 = (((acc8 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 1u); acc9 = (((acc9 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 2u); acc10 = (((acc10 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 3u); acc11 = (((acc11 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 4u); acc12 = (((acc12 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 5u); acc13 = (((acc13 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 6u); acc14 = (((acc14 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 7u); acc15 = (((acc15 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 0u); acc16 = (((acc16 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 1u); acc17 = (((acc17 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 2u); acc18 = (((acc18 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 3u); acc19 = (((acc19 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 4u); acc20 = (((acc20 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 5u); acc21 = (((acc21 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 6u); acc22 = (((acc22 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 7u); acc23 = (((acc23 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    }
  }
  if (NCH > 2u) {
    for (var k = 0u; k < 64u; k += 4u) {
      let a0 = A2[r0 + (k >> 2u)];
      let a1 = A2[r1 + (k >> 2u)];
      let a2 = A2[r2 + (k >> 2u)];
      let b = array<vec4<f32>, 4>(B2[k * 64u + lid.x], B2[(k + 1u) * 64u + lid.x], B2[(k + 2u) * 64u + lid.x], B2[(k + 3u) * 64u + lid.x]);
      { let x = subgroupBroadcast(a0, 0u); acc0 = (((acc0 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 1u); acc1 = (((acc1 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 2u); acc2 = (((acc2 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 3u); acc3 = (((acc3 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 4u); acc4 = (((acc4 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 5u); acc5 = (((acc5 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 6u); acc6 = (((acc6 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 7u); acc7 = (((acc7 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 0u); acc8 = (((acc8 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 1u); acc9 = (((acc9 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 2u); acc10 = (((acc10 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 3u); acc11 = (((acc11 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 4u); acc12 = (((acc12 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 5u); acc13 = (((acc13 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 6u); acc14 = (((acc14 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 7u); acc15 = (((acc15 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 0u); acc16 = (((acc16 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 1u); acc17 = (((acc17 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 2u); acc18 = (((acc18 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 3u); acc19 = (((acc19 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 4u); acc20 = (((acc20 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 5u); acc21 = (((acc21 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 6u); acc22 = (((acc22 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 7u); acc23 = (((acc23 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    }
  }
  if (NCH > 3u) {
    for (var k = 0u; k < 64u; k += 4u) {
      let a0 = A3[r0 + (k >> 2u)];
      let a1 = A3[r1 + (k >> 2u)];
      let a2 = A3[r2 + (k >> 2u)];
      let b = array<vec4<f32>, 4>(B3[k * 64u + lid.x], B3[(k + 1u) * 64u + lid.x], B3[(k + 2u) * 64u + lid.x], B3[(k + 3u) * 64u + lid.x]);
      { let x = subgroupBroadcast(a0, 0u); acc0 = (((acc0 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 1u); acc1 = (((acc1 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 2u); acc2 = (((acc2 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 3u); acc3 = (((acc3 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 4u); acc4 = (((acc4 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 5u); acc5 = (((acc5 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 6u); acc6 = (((acc6 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 7u); acc7 = (((acc7 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 0u); acc8 = (((acc8 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 1u); acc9 = (((acc9 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 2u); acc10 = (((acc10 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 3u); acc11 = (((acc11 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 4u); acc12 = (((acc12 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 5u); acc13 = (((acc13 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 6u); acc14 = (((acc14 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 7u); acc15 = (((acc15 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 0u); acc16 = (((acc16 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 1u); acc17 = (((acc17 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 2u); acc18 = (((acc18 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 3u); acc19 = (((acc19 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 4u); acc20 = (((acc20 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 5u); acc21 = (((acc21 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 6u); acc22 = (((acc22 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 7u); acc23 = (((acc23 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    }
  }
  if (NCH > 4u) {
    for (var k = 0u; k < 64u; k += 4u) {
      let a0 = A4[r0 + (k >> 2u)];
      let a1 = A4[r1 + (k >> 2u)];
      let a2 = A4[r2 + (k >> 2u)];
      let b = array<vec4<f32>, 4>(B4[k * 64u + lid.x], B4[(k + 1u) * 64u + lid.x], B4[(k + 2u) * 64u + lid.x], B4[(k + 3u) * 64u + lid.x]);
      { let x = subgroupBroadcast(a0, 0u); acc0 = (((acc0 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 1u); acc1 = (((acc1 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 2u); acc2 = (((acc2 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 3u); acc3 = (((acc3 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 4u); acc4 = (((acc4 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 5u); acc5 = (((acc5 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 6u); acc6 = (((acc6 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 7u); acc7 = (((acc7 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 0u); acc8 = (((acc8 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 1u); acc9 = (((acc9 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 2u); acc10 = (((acc10 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 3u); acc11 = (((acc11 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 4u); acc12 = (((acc12 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 5u); acc13 = (((acc13 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 6u); acc14 = (((acc14 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 7u); acc15 = (((acc15 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 0u); acc16 = (((acc16 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 1u); acc17 = (((acc17 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 2u); acc18 = (((acc18 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 3u); acc19 = (((acc19 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 4u); acc20 = (((acc20 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 5u); acc21 = (((acc21 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 6u); acc22 = (((acc22 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 7u); acc23 = (((acc23 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    }
  }
  if (NCH > 5u) {
    for (var k = 0u; k < 64u; k += 4u) {
      let a0 = A5[r0 + (k >> 2u)];
      let a1 = A5[r1 + (k >> 2u)];
      let a2 = A5[r2 + (k >> 2u)];
      let b = array<vec4<f32>, 4>(B5[k * 64u + lid.x], B5[(k + 1u) * 64u + lid.x], B5[(k + 2u) * 64u + lid.x], B5[(k + 3u) * 64u + lid.x]);
      { let x = subgroupBroadcast(a0, 0u); acc0 = (((acc0 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 1u); acc1 = (((acc1 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 2u); acc2 = (((acc2 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 3u); acc3 = (((acc3 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 4u); acc4 = (((acc4 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 5u); acc5 = (((acc5 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 6u); acc6 = (((acc6 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a0, 7u); acc7 = (((acc7 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 0u); acc8 = (((acc8 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 1u); acc9 = (((acc9 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 2u); acc10 = (((acc10 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 3u); acc11 = (((acc11 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 4u); acc12 = (((acc12 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 5u); acc13 = (((acc13 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 6u); acc14 = (((acc14 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a1, 7u); acc15 = (((acc15 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 0u); acc16 = (((acc16 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 1u); acc17 = (((acc17 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 2u); acc18 = (((acc18 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 3u); acc19 = (((acc19 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 4u); acc20 = (((acc20 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 5u); acc21 = (((acc21 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 6u); acc22 = (((acc22 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
      { let x = subgroupBroadcast(a2, 7u); acc23 = (((acc23 + x.x * b[0]) + x.y * b[1]) + x.z * b[2]) + x.w * b[3]; }
    }
  }
  if (col4 >= n4) { return; }
  if (row0 + 0u < M) { stv(S0, cBase4 + (row0 + 0u) * n4 + col4, acc0); }
  if (row0 + 1u < M) { stv(S0, cBase4 + (row0 + 1u) * n4 + col4, acc1); }
  if (row0 + 2u < M) { stv(S0, cBase4 + (row0 + 2u) * n4 + col4, acc2); }
  if (row0 + 3u < M) { stv(S0, cBase4 + (row0 + 3u) * n4 + col4, acc3); }
  if (row0 + 4u < M) { stv(S0, cBase4 + (row0 + 4u) * n4 + col4, acc4); }
  if (row0 + 5u < M) { stv(S0, cBase4 + (row0 + 5u) * n4 + col4, acc5); }
  if (row0 + 6u < M) { stv(S0, cBase4 + (row0 + 6u) * n4 + col4, acc6); }
  if (row0 + 7u < M) { stv(S0, cBase4 + (row0 + 7u) * n4 + col4, acc7); }
  if (row0 + 8u < M) { stv(S0, cBase4 + (row0 + 8u) * n4 + col4, acc8); }
  if (row0 + 9u < M) { stv(S0, cBase4 + (row0 + 9u) * n4 + col4, acc9); }
  if (row0 + 10u < M) { stv(S0, cBase4 + (row0 + 10u) * n4 + col4, acc10); }
  if (row0 + 11u < M) { stv(S0, cBase4 + (row0 + 11u) * n4 + col4, acc11); }
  if (row0 + 12u < M) { stv(S0, cBase4 + (row0 + 12u) * n4 + col4, acc12); }
  if (row0 + 13u < M) { stv(S0, cBase4 + (row0 + 13u) * n4 + col4, acc13); }
  if (row0 + 14u < M) { stv(S0, cBase4 + (row0 + 14u) * n4 + col4, acc14); }
  if (row0 + 15u < M) { stv(S0, cBase4 + (row0 + 15u) * n4 + col4, acc15); }
  if (row0 + 16u < M) { stv(S0, cBase4 + (row0 + 16u) * n4 + col4, acc16); }
  if (row0 + 17u < M) { stv(S0, cBase4 + (row0 + 17u) * n4 + col4, acc17); }
  if (row0 + 18u < M) { stv(S0, cBase4 + (row0 + 18u) * n4 + col4, acc18); }
  if (row0 + 19u < M) { stv(S0, cBase4 + (row0 + 19u) * n4 + col4, acc19); }
  if (row0 + 20u < M) { stv(S0, cBase4 + (row0 + 20u) * n4 + col4, acc20); }
  if (row0 + 21u < M) { stv(S0, cBase4 + (row0 + 21u) * n4 + col4, acc21); }
  if (row0 + 22u < M) { stv(S0, cBase4 + (row0 + 22u) * n4 + col4, acc22); }
  if (row0 + 23u < M) { stv(S0, cBase4 + (row0 + 23u) * n4 + col4, acc23); }
}
