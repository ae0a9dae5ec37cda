// Elementwise ops whose operands are contiguous, one element, a bias or a per-row value, all on
// multiples of 4 elements, run elementwise.wgsl's vec4 entry points (unary_v4, binary_v4, where3_v4):
// one vec4 per invocation below 16,384 elements and in windowed runs, 4 vec4s N apart above. Their
// results must be the very bits the scalar entry points give: sizes around each step (a multiple of
// 4 but not of 16, one vec4 past a full step), int32 and bool, where, in-place writes into views
// (aligned and not), broadcasts in both operand orders, and tensors over a (test-lowered) binding limit.
import { afterEach, describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";
import { _set_max_binding_size } from "../src/device/backend.ts";

afterEach(() => _set_max_binding_size(null));

const ints = (n: number, k = 1) => Array.from({ length: n }, (_, i) => ((i * k) % 997) - 400);
const flat = async (t: torch.Tensor) => (await t.contiguous().reshape([-1]).tolist()) as number[];
/** The same values starting one element into a fresh block: offset 1 keeps the op on the scalar path. */
const misaligned = (t: torch.Tensor) => {
  const n = t.numel();
  const base = torch.zeros([n + 1], { dtype: t.dtype });
  base.getitem("1:").copy_(t.reshape([-1]));
  return base.getitem("1:").reshape(t.shape);
};

describe("vec4 elementwise paths give the scalar paths' bits", () => {
  // 16,384 is where 4 vec4s per invocation start; 64 * 16 elements is one workgroup's step.
  const sizes = [4, 60, 1028, 16384, 16388, 16396, 16384 + 64 * 16 + 4, 65540];
  for (const n of sizes)
    it(`contiguous a + b, a * b, exp(a), int32 and comparisons at n = ${n}`, async () => {
      const av = ints(n);
      const bv = ints(n, 7);
      const a = torch.tensor(av);
      const b = torch.tensor(bv);
      expect(await flat(a.add(b, { alpha: 2 }))).toEqual(av.map((x, i) => Math.fround(x + 2 * bv[i])));
      expect(await flat(a.mul(b))).toEqual(av.map((x, i) => Math.fround(x * bv[i])));
      expect(await flat(a.exp())).toEqual(await flat(misaligned(a).exp()));
      expect(await flat(a.sub(1.5))).toEqual(av.map((x) => x - 1.5));
      const ai = a.to(torch.int32);
      const bi = b.to(torch.int32);
      const s = ai.add(bi);
      expect(s.dtype).toBe(torch.int32);
      expect(await flat(s)).toEqual(av.map((x, i) => x + bv[i]));
      const gt = a.gt(b);
      expect(gt.dtype).toBe(torch.bool);
      expect(await flat(gt)).toEqual(av.map((x, i) => x > bv[i]));
      expect(await flat(torch.where(gt, a, b))).toEqual(av.map((x, i) => Math.max(x, bv[i])));
      expect(await flat(torch.where(gt, ai, b))).toEqual(av.map((x, i) => Math.max(x, bv[i])));
      expect(await flat(a.to(torch.int32).to(torch.float32))).toEqual(av);
      expect(await flat(torch.full([n], 3.25))).toEqual(av.map(() => 3.25));
    });

  const shapes: Array<[number, number]> = [
    [300, 36], // rows a multiple of 4, under 16,384 elements
    [600, 36], // over it
    [257, 64],
    [300, 37], // rows not a multiple of 4: the scalar path
  ];
  for (const [r, c] of shapes)
    it(`broadcasts both ways over [${r}, ${c}]: bias [${c}], per-row [${r}, 1], outer product, one element`, async () => {
      const av = ints(r * c);
      const bv = ints(c, 31);
      const rv = ints(r, 13);
      const a = torch.tensor(av).reshape([r, c]);
      const bias = torch.tensor(bv);
      const row = torch.tensor(rv).reshape([r, 1]);
      const sum = av.map((x, i) => Math.fround(x + bv[i % c]));
      expect(await flat(a.add(bias))).toEqual(sum);
      expect(await flat(bias.add(a))).toEqual(sum);
      const diff = av.map((x, i) => x - rv[Math.floor(i / c)]);
      expect(await flat(a.sub(row))).toEqual(diff);
      expect(await flat(row.sub(a))).toEqual(diff.map((x) => -x + 0));
      expect(await flat(row.mul(bias.reshape([1, c])))).toEqual(av.map((_, i) => rv[Math.floor(i / c)] * bv[i % c]));
      expect(await flat(a.mul(torch.tensor(-2)))).toEqual(av.map((x) => Math.fround(-2 * x)));
      const cond = a.gt(0);
      expect(await flat(torch.where(cond, bias, row))).toEqual(av.map((x, i) => (x > 0 ? bv[i % c] : rv[Math.floor(i / c)])));
      expect(await flat(a.add(bias).exp())).toEqual(await flat(misaligned(a).add(bias).exp()));
    });

  it("in place into views: aligned and misaligned offsets, a bias into a row slice", async () => {
    const n = 20000;
    for (const start of [4, 2, 0]) {
      const base = torch.tensor(ints(n + 8));
      const before = await flat(base);
      const y = torch.tensor(ints(n, 3));
      const yv = await flat(y);
      base.getitem(`${start}:${start + n}`).add_(y);
      const want = before.map((x, i) => (i >= start && i < start + n ? x + yv[i - start] : x));
      expect(await flat(base)).toEqual(want);
    }
    const m = torch.tensor(ints(500 * 40)).reshape([500, 40]);
    const mv = await flat(m);
    const bias = torch.tensor(ints(40, 5));
    const bv = await flat(bias);
    m.getitem("100:500").mul_(bias);
    expect(await flat(m)).toEqual(mv.map((x, i) => (i >= 100 * 40 ? x * bv[i % 40] : x)));
  });

  it("over the binding limit: one vec4 per invocation in windowed runs, and whole-box windows", async () => {
    for (const binding of [4096, 96 * 1024]) {
      const n = 40000;
      const av = ints(n);
      const bv = ints(n, 7);
      const a = torch.tensor(av);
      const b = torch.tensor(bv);
      const bias = torch.tensor(ints(100, 3));
      const biv = await flat(bias);
      _set_max_binding_size(binding);
      const sum = a.add(b);
      const biased = a.reshape([400, 100]).add(bias);
      const e = a.exp();
      // in place, the two operands in one block: a's first half plus its second (one step spans 80 KB,
      // so only under the larger limit; together they span 160 KB: windowed runs, not one window)
      const x = torch.tensor(av);
      if (binding > 80000) x.getitem(":20000").add_(x.getitem("20000:"));
      _set_max_binding_size(null);
      expect(await flat(sum)).toEqual(av.map((v, i) => v + bv[i]));
      expect(await flat(biased)).toEqual(av.map((v, i) => v + biv[i % 100]));
      expect(await flat(e)).toEqual(await flat(misaligned(a).exp()));
      if (binding > 80000) expect(await flat(x)).toEqual(av.map((v, i) => (i < 20000 ? v + av[i + 20000] : v)));
    }
  });
});
