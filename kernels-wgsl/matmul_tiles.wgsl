// gradlab: prelude prelude_vec4
enable subgroups;
requires unrestricted_pointer_parameters;

// matmul_subgroups.wgsl's loop over A and B repacked into tiles that lavapipe reads from uniform buffers
// (ops/matmul-tiles.ts dispatches it on llvmpipe for large products; matmul_tiles_pack.wgsl writes the
// tiles). On llvmpipe (Mesa 25) a storage load at a per-lane address is a loop over the lanes with a
// bounds branch per float; a uniform load at per-lane addresses is one branchless gather: the same loop
// ran at 37-38 GFLOP/s from uniform tiles against 20-23 from storage (docs/performance.md,
// bench/matmul-tiles.ts). A uniform binding holds at most 64 KiB and every workgroup of a dispatch sees
// the same ones, so a dispatch adds up to 6 chunks of 64 k (as many tiles as llvmpipe's 12 uniform
// bindings hold; four ran 3-8 % slower) to one tile of C (240 rows x 256 columns): 10 workgroups of 24
// rows, an even count for lavapipe's threads (11 blocks of a 256-row tile left one thread idle a twelfth
// of the time).
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
@group(2) @binding(0) var<uniform> A0: TileA;
@group(2) @binding(1) var<uniform> A1: TileA;
@group(2) @binding(2) var<uniform> A2: TileA;
@group(2) @binding(3) var<uniform> A3: TileA;
@group(2) @binding(4) var<uniform> A4: TileA;
@group(2) @binding(5) var<uniform> A5: TileA;
@group(2) @binding(6) var<uniform> B0: TileB;
@group(2) @binding(7) var<uniform> B1: TileB;
@group(2) @binding(8) var<uniform> B2: TileB;
@group(2) @binding(9) var<uniform> B3: TileB;
@group(2) @binding(10) var<uniform> B4: TileB;
@group(2) @binding(11) var<uniform> B5: TileB;

alias TileA = array<vec4<f32>, 3840>;
alias TileB = array<vec4<f32>, 4096>;

/// Adds one chunk (64 k) to the workgroup's 24 rows: lane l's rows of A start at vec4 r0, r1, r2 of tile a
/// (rows l, 8 + l, 16 + l of its 24), its 4 columns are vec4 c of each k's row of tile b. Written once for
/// the six pairs of bindings (WGSL cannot index bindings; the compiler makes one copy per pair).
fn chunk(a: ptr<uniform, TileA>, b: ptr<uniform, TileB>, r0: u32, r1: u32, r2: u32, c: u32, acc: ptr<function, array<vec4<f32>, 24>>) {
  for (var k = 0u; k < 64u; k += 4u) {
    let a0 = a[r0 + (k >> 2u)];
    let a1 = a[r1 + (k >> 2u)];
    let a2 = a[r2 + (k >> 2u)];
    let bk = array<vec4<f32>, 4>(b[k * 64u + c], b[(k + 1u) * 64u + c], b[(k + 2u) * 64u + c], b[(k + 3u) * 64u + c]);
    { let x = subgroupBroadcast(a0, 0u); acc[0] = (((acc[0] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a0, 1u); acc[1] = (((acc[1] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a0, 2u); acc[2] = (((acc[2] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a0, 3u); acc[3] = (((acc[3] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a0, 4u); acc[4] = (((acc[4] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a0, 5u); acc[5] = (((acc[5] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a0, 6u); acc[6] = (((acc[6] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a0, 7u); acc[7] = (((acc[7] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a1, 0u); acc[8] = (((acc[8] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a1, 1u); acc[9] = (((acc[9] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a1, 2u); acc[10] = (((acc[10] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a1, 3u); acc[11] = (((acc[11] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a1, 4u); acc[12] = (((acc[12] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a1, 5u); acc[13] = (((acc[13] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a1, 6u); acc[14] = (((acc[14] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a1, 7u); acc[15] = (((acc[15] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a2, 0u); acc[16] = (((acc[16] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a2, 1u); acc[17] = (((acc[17] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a2, 2u); acc[18] = (((acc[18] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a2, 3u); acc[19] = (((acc[19] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a2, 4u); acc[20] = (((acc[20] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a2, 5u); acc[21] = (((acc[21] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a2, 6u); acc[22] = (((acc[22] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
    { let x = subgroupBroadcast(a2, 7u); acc[23] = (((acc[23] + x.x * bk[0]) + x.y * bk[1]) + x.z * bk[2]) + x.w * bk[3]; }
  }
}

@compute @workgroup_size(64)
fn mm(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wg: vec3<u32>,
      @builtin(subgroup_invocation_id) lane: u32) {
  let M = P[0];
  let n4 = P[1] / 4u;
  let tr0 = wg.x * 24u;
  let row0 = P[2] + tr0;
  let col4 = P[3] / 4u + lid.x;
  let c4 = min(col4, n4 - 1u);
  let cBase4 = P[4] / 4u;
  let NCH = P[5];
  // lane l reads rows tr0 + l, tr0 + 8 + l and tr0 + 16 + l of the A tile
  let r0 = (tr0 + 0u + lane) * 16u;
  let r1 = (tr0 + 8u + lane) * 16u;
  let r2 = (tr0 + 16u + lane) * 16u;
  var acc: array<vec4<f32>, 24>;
  if (P[6] == 1u) {
    for (var i = 0u; i < 24u; i++) { acc[i] = ldv(S0, cBase4 + min(row0 + i, M - 1u) * n4 + c4); }
  }
  chunk(&A0, &B0, r0, r1, r2, lid.x, &acc);
  if (NCH > 1u) { chunk(&A1, &B1, r0, r1, r2, lid.x, &acc); }
  if (NCH > 2u) { chunk(&A2, &B2, r0, r1, r2, lid.x, &acc); }
  if (NCH > 3u) { chunk(&A3, &B3, r0, r1, r2, lid.x, &acc); }
  if (NCH > 4u) { chunk(&A4, &B4, r0, r1, r2, lid.x, &acc); }
  if (NCH > 5u) { chunk(&A5, &B5, r0, r1, r2, lid.x, &acc); }
  if (col4 >= n4) { return; }
  for (var i = 0u; i < 24u; i++) {
    if (row0 + i < M) { stv(S0, cBase4 + (row0 + i) * n4 + col4, acc[i]); }
  }
}
