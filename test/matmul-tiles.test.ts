// Large float32 products on llvmpipe go through uniform tiles (ops/matmul-tiles.ts, matmul_tiles.wgsl):
// operands packed into a scratch buffer outside the caching allocator, one dispatch per tile of C and 6
// chunks of 64 k, the last K % 64 by the storage kernel. A user sees none of that: the bits are the
// storage kernel's for every layout it takes (any A; B row-major or a transposed row-major matrix, as the
// storage kernel's fast path) and every shape edge, PyTorch's memory figures do not move, empty_cache()
// gives the scratch back, and an operand that was not computed makes the product fail, not go stale.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";
import { readyDevice } from "../src/device/backend.ts";
import { FLUSH_AT, pendingCommands } from "../src/device/scheduler.ts";
import { tileScratchBytes } from "../src/device/tiles.ts";
import { dispatch } from "../src/ops/launch.ts";
import { _set_tiled_matmul } from "../src/ops/matmul-tiles.ts";

let llvmpipe = false;
beforeAll(async () => {
  await torch.cuda.synchronize();
  llvmpipe = /llvmpipe/.test(readyDevice()!.facts.description);
});
afterEach(() => _set_tiled_matmul(true));

const values = (n: number, seed: number) => Float32Array.from({ length: n }, (_, i) => (((i * 7919 + seed * 104729) % 211) - 105) / 64);

/** The product's bits through tiles, and through the storage kernel (checking tiles were taken). */
async function bothWays(name: string, f: () => torch.Tensor): Promise<{ tiles: Float32Array; storage: Float32Array }> {
  torch.cuda.empty_cache();
  expect(tileScratchBytes()).toBe(0);
  const t = f();
  expect(tileScratchBytes(), `${name} should have taken uniform tiles`).toBeGreaterThan(0);
  const tiles = (await t.reshape([-1]).data()) as Float32Array;
  _set_tiled_matmul(false);
  torch.cuda.empty_cache();
  const s = f();
  expect(tileScratchBytes()).toBe(0);
  const storage = (await s.reshape([-1]).data()) as Float32Array;
  _set_tiled_matmul(true);
  t.dispose();
  s.dispose();
  return { tiles, storage };
}

function firstDifference(a: Float32Array, b: Float32Array): number {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  expect(x.length).toBe(y.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return i;
  return -1;
}

describe("matmul through uniform tiles (llvmpipe)", () => {
  // [M, K, N]: one row past a tile of 240 and a column tile and a half; K a multiple of 64 with a
  // part-filled last dispatch (5 chunks); K with a tail of 44 (and of 3: K % 4 != 0) for the storage kernel.
  // One test per shape and layout: on a cold shader cache each layout compiles kernels of its own.
  const shapes = [
    [241, 320, 388],
    [250, 300, 256],
    [480, 387, 260],
  ] as const;
  type Layout = (M: number, K: number, N: number) => [torch.Tensor, torch.Tensor];
  const A = (M: number, K: number) => torch.tensor(values(M * K, M)).reshape([M, K]);
  const B = (K: number, N: number) => torch.tensor(values(K * N, N)).reshape([K, N]);
  const layouts: Array<[string, Layout]> = [
    ["A @ B", (M, K, N) => [A(M, K), B(K, N)]],
    ["A^T-in-memory @ B", (M, K, N) => [A(M, K).t().contiguous().t(), B(K, N)]], // g.t() in a weight gradient
    ["A @ B^T-in-memory", (M, K, N) => [A(M, K), B(K, N).t().contiguous().t()]], // x @ w.t()
    [
      "offset A @ B",
      (M, K, N) => [
        torch
          .tensor(values(M * K + 1, 3))
          .narrow(0, 1, M * K)
          .reshape([M, K]),
        B(K, N),
      ],
    ], // element 0 off a vec4
    [
      "strided A @ B",
      (M, K, N) => [
        torch
          .tensor(values(M * (K + 2), 5))
          .reshape([M, K + 2])
          .narrow(1, 1, K),
        B(K, N),
      ],
    ],
    ["A^T-in-memory @ B^T-in-memory", (M, K, N) => [A(M, K).t().contiguous().t(), B(K, N).t().contiguous().t()]],
  ];
  it.for(shapes.flatMap((shape) => layouts.map(([name, make]) => [...shape, name, make] as const)))(
    "gives the storage kernel's bits at tile edges, with a tail of k: %i x %i @ %i, %s",
    async ([M, K, N, name, make], ctx) => {
      if (!llvmpipe) ctx.skip();
      const [x, y] = make(M, K, N);
      const { tiles, storage } = await bothWays(`${M}x${K}x${N} ${name}`, () => x.matmul(y));
      const i = firstDifference(tiles, storage);
      expect(i, `element ${i} is ${tiles[i]} through tiles, ${storage[i]} through storage`).toBe(-1);
      x.dispose();
      y.dispose();
    },
  );

  it.for(shapes)("gives the product's values (float64 sums of rows and columns at the tiles' edges): %i x %i @ %i", async ([M, K, N], ctx) => {
    if (!llvmpipe) ctx.skip();
    const av = values(M * K, M);
    const bv = values(K * N, N);
    const a = A(M, K);
    const b = B(K, N);
    const { tiles } = await bothWays(`${M}x${K}x${N} A @ B`, () => a.matmul(b));
    for (const r of [0, 239, 240, M - 1])
      for (const c of [0, 255, 256, N - 1]) {
        if (r >= M || c >= N) continue;
        let s = 0;
        let m = 0;
        for (let k = 0; k < K; k++) {
          s += av[r * K + k] * bv[k * N + c];
          m += Math.abs(av[r * K + k] * bv[k * N + c]);
        }
        expect(Math.abs(tiles[r * N + c] - s), `C[${r}, ${c}]`).toBeLessThanOrEqual(1e-5 * (m + 1));
      }
    a.dispose();
    b.dispose();
  });

  it("Linear's forward and backward (x @ w.t(), g @ w, g.t() @ x) give the storage kernel's bits", async (ctx) => {
    if (!llvmpipe) ctx.skip();
    const run = async () => {
      torch.manual_seed(0);
      const lin = new torch.nn.Linear(384, 260);
      const x = torch.randn([300, 384], { requires_grad: true });
      const y = lin.forward(x);
      y.pow(2).sum().backward();
      const out = await Promise.all([y, x.grad!, lin.weight.grad!].map(async (t) => (await t.reshape([-1]).data()) as Float32Array));
      for (const t of [y, x]) t.dispose();
      return out;
    };
    torch.cuda.empty_cache();
    const tiles = await run();
    expect(tileScratchBytes()).toBeGreaterThan(0);
    _set_tiled_matmul(false);
    const storage = await run();
    for (const [i, name] of ["y", "x.grad", "weight.grad"].entries()) expect(firstDifference(tiles[i], storage[i]), name).toBe(-1);
  });

  it("a product over a 3-D or 4-D input and one matrix (a Linear) is one product of all its rows: tiles, the same bits", async (ctx) => {
    if (!llvmpipe) ctx.skip();
    const cases: Array<[string, () => [torch.Tensor, torch.Tensor]]> = [
      ["[3, 100, 320] @ [320, 260]", () => [torch.tensor(values(3 * 100 * 320, 1)).reshape([3, 100, 320]), B(320, 260)]],
      ["[2, 3, 50, 256] @ w.t()", () => [torch.tensor(values(2 * 3 * 50 * 256, 2)).reshape([2, 3, 50, 256]), B(256, 256).t().contiguous().t()]],
      ["[2, 130, 324] @ [324, 260] with K % 64 = 4", () => [torch.tensor(values(2 * 130 * 324, 3)).reshape([2, 130, 324]), B(324, 260)]],
    ];
    for (const [name, make] of cases) {
      const [x, y] = make();
      const { tiles, storage } = await bothWays(name, () => x.matmul(y));
      expect(firstDifference(tiles, storage), name).toBe(-1);
      x.dispose();
      y.dispose();
    }
    // Batches that are not one matrix keep the storage kernel: a B per batch, A's batches not rows that
    // follow on (each transposed in memory).
    torch.cuda.empty_cache();
    const perBatch = torch.bmm(torch.ones([2, 240, 256]), torch.ones([2, 256, 256]));
    const transposed = torch
      .ones([2, 256, 240])
      .transpose(1, 2)
      .matmul(torch.ones([256, 256]));
    expect(tileScratchBytes()).toBe(0);
    expect(await perBatch.min().item()).toBe(256);
    expect(await transposed.max().item()).toBe(256);
    perBatch.dispose();
    transposed.dispose();
  });

  it("leaves PyTorch's memory figures as the storage kernel's, and empty_cache() gives the scratch back", async (ctx) => {
    if (!llvmpipe) ctx.skip();
    const figures = async () => {
      torch.cuda.empty_cache();
      torch.cuda.reset_peak_memory_stats();
      const before = torch.cuda.memory_allocated();
      const a = torch.randn([512, 512]);
      const b = torch.randn([512, 512]);
      const c = a.matmul(b).matmul(b);
      await torch.cuda.synchronize();
      const f = [torch.cuda.memory_allocated() - before, torch.cuda.max_memory_allocated() - before, torch.cuda.memory_reserved()];
      for (const t of [a, b, c]) t.dispose();
      return f;
    };
    const tiles = await figures();
    expect(tileScratchBytes()).toBeGreaterThan(0);
    torch.cuda.empty_cache();
    expect(tileScratchBytes()).toBe(0);
    _set_tiled_matmul(false);
    expect(tiles).toEqual(await figures());
    expect(tiles[0]).toBe(3 * 512 * 512 * 4);
  });

  it("an operand that was not computed fails the product; the next product is right", async (ctx) => {
    if (!llvmpipe) ctx.skip();
    const [M, K, N] = [256, 256, 256];
    const good = torch.full([M, K], 1);
    const b = torch.full([K, N], 2);
    const first = good.matmul(b); // fills the scratch with good tiles
    const bad = torch.empty([M, K]);
    // A kernel entry point that does not exist: Dawn rejects the pipeline (a GradLab bug, simulated).
    dispatch("elementwise", "no_such_entry_point", [bad], [M * K], M * K);
    const stale = bad.matmul(b); // its A tiles are never written: the first product's would be read
    const after = good.matmul(b.mul(2));
    expect(await first.max().item()).toBe(2 * K);
    await expect(stale.tolist()).rejects.toThrow(/no_such_entry_point.*This tensor was not computed/s);
    expect(await after.min().item()).toBe(4 * K);
    expect(await after.max().item()).toBe(4 * K);
    for (const t of [good, b, first, bad, stale, after]) t.dispose();
  });

  it("an operand already known not to be computed fails the product wherever a batch ends in it", async (ctx) => {
    if (!llvmpipe) ctx.skip();
    // The verdict is in before the product is recorded, so the pack is left out and its tiles marked; a
    // batch that ends right after the pack of A, or of B, must carry that mark to the tile dispatches of the
    // next batch (the end of a batch forgets marks on freed blocks: the scratch's were forgotten, and C
    // held the previous product's values, with no error).
    const [M, K, N] = [256, 256, 256];
    const ones = torch.full([M, K], 1);
    const twos = torch.full([K, N], 2);
    const bad = torch.empty([M, K]);
    dispatch("elementwise", "no_such_entry_point", [bad], [M * K], M * K);
    await torch.cuda.synchronize();
    for (const [name, product, before] of [
      ["A not computed, the batch ends after the pack of A", () => bad.matmul(twos), 1],
      ["B not computed, the batch ends after the pack of B", () => ones.matmul(bad), 2],
    ] as const) {
      expect(await ones.matmul(twos).max().item()).toBe(2 * K); // good tiles in the scratch
      const x = torch.zeros([4]);
      const filler: torch.Tensor[] = [];
      while (pendingCommands() < FLUSH_AT - before) filler.push(x.add(1));
      const stale = product();
      await expect(stale.max().item(), name).rejects.toThrow(/no_such_entry_point.*This tensor was not computed/s);
      for (const t of [x, stale, ...filler]) t.dispose();
    }
    expect(await ones.matmul(twos).min().item()).toBe(2 * K);
    for (const t of [ones, twos, bad]) t.dispose();
  });

  it("empty_cache() destroys every scratch buffer, also one first made for work recorded before it", async (ctx) => {
    if (!llvmpipe) ctx.skip();
    // Watch the device's uniform buffers (only the scratch is one) being made and destroyed.
    const device = readyDevice()!.device;
    const live = new Set<GPUBuffer>();
    const create = device.createBuffer;
    device.createBuffer = function (d: GPUBufferDescriptor) {
      const buffer = create.call(this, d);
      if (d.usage & GPUBufferUsage.UNIFORM) {
        live.add(buffer);
        const destroy = buffer.destroy;
        buffer.destroy = function () {
          live.delete(buffer);
          destroy.call(this);
        };
      }
      return buffer;
    };
    try {
      const [a, b, A, B] = [torch.randn([256, 256]), torch.randn([256, 256]), torch.randn([1024, 1024]), torch.randn([1024, 1024])];
      torch.cuda.empty_cache();
      const c1 = a.matmul(b); // recorded: its scratch has no buffer until the batch is encoded
      torch.cuda.empty_cache();
      await c1.data();
      expect(live.size, "after empty_cache() between a product and its flush").toBe(0);
      const c2 = a.matmul(b);
      const c3 = A.matmul(B); // a larger scratch: the first is released before its buffer exists
      await c3.data();
      expect(live.size, "a small then a large product in one job").toBe(1);
      torch.cuda.empty_cache();
      await torch.cuda.synchronize();
      expect(live.size, "after empty_cache()").toBe(0);
      for (const t of [a, b, A, B, c1, c2, c3]) t.dispose();
    } finally {
      device.createBuffer = create;
    }
  });
});
