// A large float32 product on llvmpipe through uniform tiles (kernels-wgsl/matmul_tiles.wgsl): A and B are
// packed into the device's tile scratch (device/tiles.ts), then each tile of C (240 rows x 256 columns)
// gets one dispatch per 6 chunks of 64 k, in k order. Measured on lavapipe (docs/performance.md, Matmul
// round 4): llvmpipe gathers storage loads lane by lane with a bounds branch per float, uniform loads
// without one. Same bits as matmul_subgroups.wgsl: the same sums in the same order.

import { readyDevice } from "../device/backend.ts";
import { record } from "../device/scheduler.ts";
import { TILE_BINDINGS } from "../device/pipelines.ts";
import { tileScratch } from "../device/tiles.ts";
import { rangeOf, type Range } from "../device/verdicts.ts";
import type { Tensor } from "../tensor.ts";
import { blockOf, maxBindingBytes } from "./launch.ts";
import { opName } from "./op-context.ts";

const ROWS = 240; // rows of a tile of A and of C: 10 workgroups of 24
const COLS = 256; // columns of a tile of B and of C: 64 lanes of 4
const KC = 64; // k per tile
const A_TILE = ROWS * KC * 4; // bytes (a multiple of 256, the largest uniform offset alignment)
const B_TILE = KC * COLS * 4;
const CHUNKS = TILE_BINDINGS / 2; // k chunks one dispatch adds
/** The most scratch a product may take (2048^2 takes 34 MB; a Linear's 1024 x 4096 @ 4096 x 1024 weight
 *  gradient 36 MB); larger products take the storage kernel. */
const MAX_SCRATCH = 64 << 20;

let enabled = true;
/** For tests: take the storage kernel even where tiles would be picked (their bits must be the same). */
export function _set_tiled_matmul(on: boolean): void {
  enabled = on;
}

/** Where tiles pay (measured on llvmpipe only; real GPUs read uniform buffers at per-lane addresses slowly). */
function tilesPay(M: number, N: number, K: number): boolean {
  const dev = readyDevice();
  if (!enabled || !dev?.facts.subgroups || !/llvmpipe/.test(dev.facts.description)) return false;
  const lim = dev.facts.limits;
  if (!(lim.maxUniformBuffersPerShaderStage >= TILE_BINDINGS && lim.maxDynamicUniformBuffersPerPipelineLayout >= TILE_BINDINGS)) return false;
  return M >= ROWS && N >= COLS && K >= 4 * KC;
}

/**
 * out (contiguous, M x N) = A[:, :K0] @ B[:K0, :] through uniform tiles, for the largest K0 <= K that is a
 * multiple of 64 (the rest of k is left to the caller, which adds it to out); returns K0, 0 where tiles
 * are not used. A and B are matrices (leading dims of size 1) read through their strides.
 */
export function tiledPrefix(out: Tensor, A: Tensor, B: Tensor, M: number, N: number, K: number): number {
  const K0 = K - (K % KC);
  if (N % 4 !== 0 || out._offset % 4 !== 0 || !tilesPay(M, N, K)) return 0;
  const chunks = K0 / KC;
  const rowTiles = Math.ceil(M / ROWS);
  const colTiles = Math.ceil(N / COLS);
  const bStart = rowTiles * chunks * A_TILE; // A's tiles, then B's
  const bytes = bStart + colTiles * chunks * B_TILE;
  if (bytes > MAX_SCRATCH || bytes > maxBindingBytes()) return 0;
  // A's tiles and B's, each a region the scheduler follows (if A was not computed, neither is C).
  const scratch = tileScratch(bytes, [0, bStart]);
  const label = opName() ?? "mm";
  const [ars, acs] = A._strides.slice(-2);
  const [brs, bcs] = B._strides.slice(-2);
  // A's tiles: rows x k, numbered row tile * chunks + chunk; B's: k x columns, column tile * chunks + chunk.
  pack(label, scratch[0], rangeOf(blockOf(A)), 0, [A._offset, ars, acs, M, K0, chunks], rowTiles);
  pack(label, scratch[1], rangeOf(blockOf(B)), 1, [B._offset, brs, bcs, K0, N, chunks], colTiles);
  const c = rangeOf(blockOf(out));
  for (let rt = 0; rt < rowTiles; rt++) {
    const rows = Math.min(ROWS, M - rt * ROWS);
    for (let ct = 0; ct < colTiles; ct++) {
      for (let g = 0; g < chunks; g += CHUNKS) {
        const n = Math.min(CHUNKS, chunks - g);
        const offsets = new Array<number>(TILE_BINDINGS);
        for (let i = 0; i < CHUNKS; i++) {
          // Bindings past the n this dispatch reads repeat its last tile (every binding must be valid).
          const chunk = g + Math.min(i, n - 1);
          offsets[i] = (rt * chunks + chunk) * A_TILE;
          offsets[CHUNKS + i] = bStart + (ct * chunks + chunk) * B_TILE;
        }
        record({
          kind: "dispatch",
          shader: "matmul_tiles",
          entry: "mm",
          buffers: [c],
          // The dispatches after the first of a tile of C add to what it holds.
          params: Uint32Array.of(M, N, rt * ROWS, ct * COLS, out._offset, n, g > 0 ? 1 : 0),
          workgroups: [Math.ceil(rows / 24), 1, 1],
          label,
          tiles: { ranges: scratch, offsets },
        });
      }
    }
  }
  return K0;
}

/** One matrix into its tiles: A's (side 0) or B's (side 1); kernels-wgsl/matmul_tiles_pack.wgsl names the params. */
function pack(label: string, scratch: Range, src: Range, side: 0 | 1, p: number[], panels: number): void {
  const [base, outer, inner] = p;
  const [tr, tc] = side === 0 ? [ROWS, KC] : [KC, COLS];
  record({
    kind: "dispatch",
    shader: "matmul_tiles_pack",
    entry: "pack",
    constants: { TR: tr, TC: tc, SIDE: side, VEC: inner === 1 && base % 4 === 0 && outer % 4 === 0 ? 1 : 0 },
    buffers: [scratch, src],
    params: Uint32Array.from(p),
    workgroups: [(tr * tc) / 4 / 64, p[5], panels],
    label,
  });
}
