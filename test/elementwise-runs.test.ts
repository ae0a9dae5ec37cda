// On a CPU adapter (lavapipe here) an elementwise op with an operand read through general strides (a
// transpose, a permutation) runs in runs of consecutive elements along rows (elementwise.wgsl RUN,
// from 4,096 elements). Its results must be the very bits the per-element path gives: sizes that are
// not multiples of the run length, rows shorter than a run, rank 3, every kernel entry (unary, binary,
// where3), integer math, in-place writes through a strided output.
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";

/** Values with exact float32 sums, distinct per element. */
const grid = (rows: number, cols: number, k = 1) => torch.tensor(Array.from({ length: rows * cols }, (_, i) => ((i * k) % 997) - 400)).reshape([rows, cols]);
const flat = async (t: torch.Tensor) => (await t.contiguous().reshape([-1]).tolist()) as number[];

describe("elementwise runs over strided operands", () => {
  const shapes: Array<[number, number]> = [
    [70, 67], // rows not a multiple of the run length (16)
    [1500, 3], // rows shorter than one run
    [33, 4096], // many runs per row
    [4096, 17], // one run and a remainder per row
  ];
  for (const [r, c] of shapes)
    it(`a[${r}, ${c}] + b.t() (float and int32, both operand orders)`, async () => {
      const a = grid(r, c);
      const bt = grid(c, r, 7).t();
      const want = await flat(a);
      const bv = await flat(bt);
      const sum = want.map((x, i) => Math.fround(x + bv[i]));
      expect(await flat(a.add(bt))).toEqual(sum);
      expect(await flat(bt.add(a))).toEqual(sum);
      const ai = a.to(torch.int32);
      const bi = bt.to(torch.int32);
      const si = ai.add(bi);
      expect(si.dtype).toBe(torch.int32);
      expect(await flat(si)).toEqual(sum);
      // a strided output: in place into a transposed view
      const base = grid(c, r).clone();
      const view = base.t();
      const before = await flat(view);
      view.add_(a);
      const av = await flat(a);
      expect(await flat(view)).toEqual(before.map((x, i) => Math.fround(x + av[i])));
    });

  it("rank 3 permutations, unary and where3 give the per-element path's bits", async () => {
    const x = torch.randn(40, 33, 5).permute([2, 1, 0]); // [5, 33, 40], strides (1, 5, 165)
    const y = torch.randn(5, 33, 40);
    const xc = x.contiguous(); // the contiguous path
    expect(await flat(x)).toEqual(await flat(xc.clone()));
    expect(await flat(x.exp())).toEqual(await flat(xc.exp()));
    expect(await flat(x.mul(y))).toEqual(await flat(xc.mul(y)));
    expect(await flat(y.sub(x, { alpha: 3 }))).toEqual(await flat(y.sub(xc, { alpha: 3 })));
    const cond = x.gt(0);
    expect(await flat(torch.where(cond, x, y))).toEqual(await flat(torch.where(cond.contiguous(), xc, y)));
  });
});

// From 4,096 elements every invocation does 4 elements N apart (N = invocations launched); a bias (i %
// divisor) or per-row value (i / divisor) steps its remainder by N % divisor instead of dividing again.
describe("broadcast layouts stepped across an invocation's elements", () => {
  const cases: Array<[string, number[], number[]]> = [
    ["bias over rows", [300, 37], [37]],
    ["a value per row", [300, 37], [300, 1]],
    ["a value per outer block", [3, 100, 37], [3, 1, 1]],
    ["bias over the last two dims", [7, 41, 29], [41, 29]],
  ];
  const numel = (s: number[]) => s.reduce((x, y) => x * y, 1);
  for (const [name, as, bs] of cases)
    it(`${name}: ${JSON.stringify(as)} + ${JSON.stringify(bs)}`, async () => {
      const av = Array.from({ length: numel(as) }, (_, i) => (i % 1009) - 500);
      const bv = Array.from({ length: numel(bs) }, (_, i) => (i * 31) % 97);
      const a = torch.tensor(av).reshape(as);
      const b = torch.tensor(bv).reshape(bs);
      // b's element for output element i, by broadcasting b's (right-aligned) shape
      const pb = [...Array(as.length - bs.length).fill(1), ...bs];
      const want = av.map((x, i) => {
        let rem = i;
        let j = 0;
        let stride = 1;
        for (let d = as.length - 1; d >= 0; d--) {
          const idx = rem % as[d];
          rem = Math.floor(rem / as[d]);
          if (pb[d] !== 1) j += idx * stride;
          stride *= pb[d];
        }
        return x + bv[j];
      });
      expect(await flat(a.add(b))).toEqual(want);
      expect(await flat(b.add(a))).toEqual(want);
      expect(await flat(a.to(torch.int32).add(b.to(torch.int32)))).toEqual(want);
      const c = a.clone();
      c.add_(b);
      expect(await flat(c)).toEqual(want);
    });
});
