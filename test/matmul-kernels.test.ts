// The register-blocked matmul kernels (matmul_subgroups.wgsl: 24 rows x 4 columns per lane, row blocks
// on the grid's x; matmul_vec4.wgsl, 16 rows, where the adapter has no subgroups) against sums
// computed here in float64: sizes one above a tile (16 or 24 rows, 256 columns), N a multiple of 4 but not of
// 256, odd K, batches with broadcasting, transposed weights (x @ w.t()), addmm, and the vec4 reads of
// A and of a transposed B that matmul_subgroups makes when K or the strides are multiples of 4.
import { afterEach, describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";
import { readyDevice } from "../src/device/backend.ts";

const values = (n: number, seed: number) => Array.from({ length: n }, (_, i) => (((i * 7919 + seed * 104729) % 211) - 105) / 64);

/** C = A @ B over the last two dims, with numpy-style broadcasting of the batch dims (float64). */
function reference(a: number[], as: number[], b: number[], bs: number[]): { data: number[]; scale: number[] } {
  const [M, K] = as.slice(-2);
  const N = bs[bs.length - 1];
  const ab = as.slice(0, -2);
  const bb = bs.slice(0, -2);
  const rank = Math.max(ab.length, bb.length);
  const pad = (s: number[]) => [...Array(rank - s.length).fill(1), ...s];
  const [pa, pb] = [pad(ab), pad(bb)];
  const batch = pa.map((x, i) => Math.max(x, pb[i]));
  const total = batch.reduce((x, y) => x * y, 1);
  const data: number[] = [];
  const scale: number[] = [];
  for (let t = 0; t < total; t++) {
    let rem = t;
    let ia = 0;
    let ib = 0;
    let sa = 1;
    let sb = 1;
    for (let d = rank - 1; d >= 0; d--) {
      const idx = rem % batch[d];
      rem = Math.floor(rem / batch[d]);
      ia += (pa[d] === 1 ? 0 : idx) * sa;
      ib += (pb[d] === 1 ? 0 : idx) * sb;
      sa *= pa[d];
      sb *= pb[d];
    }
    for (let i = 0; i < M; i++)
      for (let j = 0; j < N; j++) {
        let s = 0;
        let m = 0;
        for (let k = 0; k < K; k++) {
          const p = a[ia * M * K + i * K + k] * b[ib * K * N + k * N + j];
          s += p;
          m += Math.abs(p);
        }
        data.push(s);
        scale.push(m);
      }
  }
  return { data, scale };
}

async function check(got: torch.Tensor, want: { data: number[]; scale: number[] }) {
  const g = (await got.reshape([-1]).tolist()) as number[];
  expect(g.length).toBe(want.data.length);
  let bad = -1;
  for (let i = 0; i < g.length && bad < 0; i++) if (!(Math.abs(g[i] - want.data[i]) <= 1e-5 * (want.scale[i] + 1))) bad = i;
  expect(bad, bad >= 0 ? `element ${bad}: ${g[bad]} vs ${want.data[bad]}` : "").toBe(-1);
}

const kernels = ["subgroups", "vec4 (no subgroups)"] as const;
afterEach(() => {
  const f = readyDevice()?.facts as { subgroups: boolean } | undefined;
  if (f) f.subgroups = subgroupsBefore ?? f.subgroups;
});
let subgroupsBefore: boolean | undefined;
async function useKernel(k: (typeof kernels)[number]) {
  await torch.cuda.synchronize();
  const f = readyDevice()!.facts as { subgroups: boolean };
  subgroupsBefore = f.subgroups;
  if (k !== "subgroups") f.subgroups = false;
  return k === "subgroups" && !subgroupsBefore; // nothing to test: the adapter has no subgroups
}

describe.each(kernels)("matmul kernels: %s", (kernel) => {
  const shapes: Array<[number[], number[]]> = [
    [
      [17, 9],
      [9, 260],
    ], // one row and 4 columns past a tile
    [
      [25, 9],
      [9, 4],
    ], // one row past a 24-row tile
    [
      [16, 33],
      [33, 256],
    ], // exactly one tile
    [
      [33, 1025],
      [1025, 12],
    ], // odd K, a narrow N
    [
      [1, 5],
      [5, 4],
    ],
    [
      [3, 1, 17, 7],
      [1, 4, 7, 20],
    ], // broadcast batches
    [
      [2, 40, 3],
      [2, 3, 516],
    ],
    [
      [17, 12],
      [12, 260],
    ], // K % 4 == 0: A read 4 k at a time (A_V4), no tail
    [
      [2, 40, 8],
      [2, 8, 516],
    ], // batches of A read as vec4
  ];
  for (const [as, bs] of shapes)
    it(`${JSON.stringify(as)} @ ${JSON.stringify(bs)}`, async () => {
      if (await useKernel(kernel)) return;
      const na = as.reduce((x, y) => x * y, 1);
      const nb = bs.reduce((x, y) => x * y, 1);
      const av = values(na, 1);
      const bv = values(nb, 2);
      const a = torch.tensor(av).reshape(as);
      const b = torch.tensor(bv).reshape(bs);
      await check(a.matmul(b), reference(av, as, bv, bs));
    });

  it("x @ w.t() (a transposed weight read in place), bmm and addmm", async () => {
    if (await useKernel(kernel)) return;
    const [M, K, N] = [37, 19, 264];
    const xv = values(M * K, 3);
    const wv = values(N * K, 4);
    const x = torch.tensor(xv).reshape([M, K]);
    const w = torch.tensor(wv).reshape([N, K]);
    const wt: number[] = [];
    for (let k = 0; k < K; k++) for (let n = 0; n < N; n++) wt.push(wv[n * K + k]);
    const want = reference(xv, [M, K], wt, [K, N]);
    await check(x.matmul(w.t()), want);
    await check(torch.bmm(x.unsqueeze(0), w.t().unsqueeze(0)), want);
    const bias = torch.tensor(values(N, 5));
    const bv = (await bias.tolist()) as number[];
    await check(torch.addmm(bias, x, w.t()), { data: want.data.map((v, i) => v + bv[i % N]), scale: want.scale.map((s, i) => s + Math.abs(bv[i % N])) });
  });

  it("vec4 reads of A and of a transposed B, and the strided layouts that cannot use them", async () => {
    if (await useKernel(kernel)) return;
    // A's rows 16 apart but only 13 used (A_V4 with a tail of 1 k), and the same columns from offset 1 (no A_V4).
    const [M, N] = [19, 260];
    const big = values(M * 16, 6);
    const bigA = torch.tensor(big).reshape([M, 16]);
    for (const [k0, K] of [
      [0, 13],
      [1, 13],
      [0, 16],
    ]) {
      const av: number[] = [];
      for (let i = 0; i < M; i++) for (let k = 0; k < K; k++) av.push(big[i * 16 + k0 + k]);
      const bv = values(K * N, 7);
      const a = bigA.narrow(1, k0, K);
      await check(a.matmul(torch.tensor(bv).reshape([K, N])), reference(av, [M, K], bv, [K, N]));
    }
    // x @ w.t() with K % 4 == 0 (B_T = 2: a column of B read 4 k at a time), and batched.
    const [R, K, C] = [37, 20, 264];
    const xv = values(R * K, 8);
    const wv = values(C * K, 9);
    const x = torch.tensor(xv).reshape([R, K]);
    const w = torch.tensor(wv).reshape([C, K]);
    const wt: number[] = [];
    for (let k = 0; k < K; k++) for (let n = 0; n < C; n++) wt.push(wv[n * K + k]);
    const want = reference(xv, [R, K], wt, [K, C]);
    await check(x.matmul(w.t()), want);
    const x2 = torch.tensor([...xv, ...xv]).reshape([2, R, K]);
    const w2 = torch.tensor([...wv, ...wv]).reshape([2, C, K]);
    await check(torch.bmm(x2, w2.transpose(1, 2)), { data: [...want.data, ...want.data], scale: [...want.scale, ...want.scale] });
    // A = g.t() for g [K, M] (row stride 1): column stride M % 4 == 0 reads 4 rows per vec4 (A_V4 = 2),
    // with and without a tail of k; M = 37 cannot.
    for (const [M, K2] of [
      [37, 20],
      [36, 22],
      [52, 8],
    ]) {
      const gv = values(K2 * M, 10);
      const bv = values(K2 * C, 11);
      const av: number[] = [];
      for (let m = 0; m < M; m++) for (let k = 0; k < K2; k++) av.push(gv[k * M + m]);
      const g = torch.tensor(gv).reshape([K2, M]);
      await check(g.t().matmul(torch.tensor(bv).reshape([K2, C])), reference(av, [M, K2], bv, [K2, C]));
    }
  });

  it("a K over 1,024 runs in slices that add to C: the same bits as one sum in k order (matmul.wgsl)", async () => {
    if (await useKernel(kernel)) return;
    // Each layout the register-blocked kernels read, with K past two slices (and a tail of k where the
    // layout allows one). The plain kernel computes the same product when B has a column more (N % 4 != 0):
    // its first N columns must be bit-identical.
    const [M, N] = [28, 260];
    for (const K of [2051, 2056]) {
      const av = values(M * K, 12);
      const bv = values(K * (N + 1), 13);
      const a = torch.tensor(av).reshape([M, K]);
      const aT = torch.tensor(av).reshape([M, K]).t().contiguous().t(); // row stride 1 (A_V4 = 2 when K % 4 == 0)
      const wide = torch.tensor(bv).reshape([K, N + 1]);
      const b = wide.narrow(1, 0, N).contiguous();
      const bT = b.t().contiguous().t(); // a transposed row-major B (x @ w.t(); B_T = 2 when K % 4 == 0)
      const plain = (await a.matmul(wide).narrow(1, 0, N).contiguous().reshape([-1]).tolist()) as number[];
      const bv0: number[] = [];
      for (let k = 0; k < K; k++) for (let n = 0; n < N; n++) bv0.push(bv[k * (N + 1) + n]);
      const want = reference(av, [M, K], bv0, [K, N]);
      for (const [name, got] of [
        ["A @ B", a.matmul(b)],
        ["A @ B (B transposed in memory)", a.matmul(bT)],
        ["A (transposed in memory) @ B", aT.matmul(b)],
      ] as const) {
        await check(got, want);
        const bits = (await got.reshape([-1]).tolist()) as number[];
        const first = bits.findIndex((v, i) => !Object.is(v, plain[i]));
        expect(first, `K = ${K}, ${name}: element ${first} is ${bits[first]}, the plain kernel's ${plain[first]}`).toBe(-1);
      }
    }
  });
});

it("a million rows, or 70,000 batches, run on the plain kernel's grid with the right values", async () => {
  // row blocks on x and batches on z are at most 65,535 each: past them matmul_subgroups / matmul_vec4 cannot
  // run (it threw "internal: dispatch grid [65536, 1, 1] exceeds 65535"), so the plain kernel does
  const M = 65536 * 16 + 1; // a Linear over a grid of a million points
  const w = torch.tensor([
    [1, 2, 3, 4],
    [10, 20, 30, 40],
  ]);
  const y = torch.ones([M, 2]).matmul(w);
  expect(await y.narrow(0, 0, 1).tolist()).toEqual([[11, 22, 33, 44]]);
  expect(await y.narrow(0, M - 1, 1).tolist()).toEqual([[11, 22, 33, 44]]);
  expect(await y.sub(w.sum(0)).abs().max().item()).toBe(0); // every row (a float32 sum of 1 Mi rows would round)
  const batches = 70000;
  const z = torch.bmm(torch.ones([batches, 2, 4]), torch.ones([batches, 4, 4]));
  expect(await z.narrow(0, batches - 1, 1).tolist()).toEqual([
    [
      [4, 4, 4, 4],
      [4, 4, 4, 4],
    ],
  ]);
  expect(await z.sub(4).abs().max().item()).toBe(0);
});
