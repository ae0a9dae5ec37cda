// gradlab: prelude prelude_vec4

// Copies a matrix (operand 1, read through its strides) into matmul_tiles.wgsl's tiles in the tile scratch
// buffer (operand 0), zeros past its edges. A tile is TR "outer" x TC "inner" elements, inner contiguous:
// A's tiles are rows x k (SIDE = 0), B's k x columns (SIDE = 1). Tiles are numbered panel * chunks +
// chunk, a panel being a tile's rows of A or columns of B and a chunk its 64 k. Workgroup (x, chunk,
// panel) writes 64 vec4s of that tile, one per invocation: no division but by these constants (a division
// by a number read at run time cost llvmpipe one scalar divide per lane: the first version took 6.7-8.0 ms
// for a 1024^2 product's operands, against 4.4 now; docs/performance.md, Matmul round 4).
// Params: P[0] = the matrix's element 0, P[1] / P[2] = outer / inner stride, P[3] / P[4] = outer / inner
// extent, P[5] = chunks. The scratch operand starts at the matrix's first tile.
override TR: u32 = 240u;
override TC: u32 = 64u;
override SIDE: u32 = 0u;
// VEC = 1: the inner stride is 1 and element 0 and the outer stride are multiples of 4 (a row-major A or B):
// whole vec4s are read where the inner extent allows.
override VEC: u32 = 0u;

@compute @workgroup_size(64)
fn pack(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wg: vec3<u32>) {
  let e = wg.x * 64u + lid.x;  // this vec4 of the tile
  let chunk = wg.y;
  let panel = wg.z;
  var outerTile = panel;
  var innerTile = chunk;
  if (SIDE == 1u) {
    outerTile = chunk;
    innerTile = panel;
  }
  let o = outerTile * TR + e / (TC / 4u);
  let ii = innerTile * TC + (e % (TC / 4u)) * 4u;
  var v = vec4<f32>(0.0);
  if (o < P[3]) {
    let src = P[0] + o * P[1] + ii * P[2];
    if (VEC == 1u && ii + 3u < P[4]) {
      v = ldv(S1, src >> 2u);
    } else {
      for (var u = 0u; u < 4u; u++) {
        if (ii + u < P[4]) { v[u] = lds(S1, src + u * P[2]); }
      }
    }
  }
  stv(S0, (panel * P[5] + chunk) * (TR * TC / 4u) + e, v);
}
