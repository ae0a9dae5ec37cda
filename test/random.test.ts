// Random ops: GradLab's generator cannot reproduce PyTorch's stream, so these test its own contract:
// seeding is reproducible, seeds differ, and the distributions have the right support and moments.

import { describe, it, expect } from "vitest";
import * as torch from "../src/index.ts";
import type { Tensor } from "../src/index.ts";

const F = torch.nn.functional;

async function arr(t: Tensor): Promise<number[]> {
  return Array.from(await t.data(), Number);
}

function stats(v: number[]): { mean: number; std: number } {
  const mean = v.reduce((a, b) => a + b, 0) / v.length;
  const varr = v.reduce((a, b) => a + (b - mean) ** 2, 0) / (v.length - 1);
  return { mean, std: Math.sqrt(varr) };
}

describe("manual_seed reproducibility", () => {
  for (const [name, draw] of [
    ["rand", () => torch.rand(4, 5)],
    ["randn", () => torch.randn([3, 7])],
    ["randint", () => torch.randint(-5, 5, [6, 3])],
  ] as Array<[string, () => Tensor]>) {
    it(`${name}: same seed gives identical draws`, async () => {
      torch.manual_seed(1234);
      const a = await arr(draw());
      const a2 = await arr(draw()); // the stream advances: a second draw differs from the first
      torch.manual_seed(1234);
      const b = await arr(draw());
      const b2 = await arr(draw());
      expect(b).toEqual(a);
      expect(b2).toEqual(a2);
      expect(a2).not.toEqual(a);
    });

    it(`${name}: different seeds give different draws`, async () => {
      torch.manual_seed(1);
      const a = await arr(draw());
      torch.manual_seed(2);
      const b = await arr(draw());
      expect(b).not.toEqual(a);
    });
  }

  it("rand / randn / randint have the requested shape and dtype", () => {
    expect(torch.rand(2, 3).shape).toEqual([2, 3]);
    expect(torch.rand(2, 3).dtype).toBe("float32");
    expect(torch.randn([4]).shape).toEqual([4]);
    expect(torch.randn([4]).dtype).toBe("float32");
    expect(torch.randint(10, [2, 2]).shape).toEqual([2, 2]);
    expect(torch.randint(10, [2, 2]).dtype).toBe("int32");
  });

  it("get_rng_state / set_rng_state replay a draw", async () => {
    torch.manual_seed(99);
    torch.rand(10);
    const state = torch.get_rng_state();
    const a = await arr(torch.randn(50));
    torch.rand(3);
    torch.set_rng_state(state);
    const b = await arr(torch.randn(50));
    expect(b).toEqual(a);
  });
});

describe("distributions", () => {
  it("rand is in [0, 1) with mean ~0.5", async () => {
    torch.manual_seed(7);
    const v = await arr(torch.rand(100_000));
    expect(v.every((x) => x >= 0 && x < 1)).toBe(true);
    const { mean, std } = stats(v);
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.01);
    expect(Math.abs(std - Math.sqrt(1 / 12))).toBeLessThan(0.01);
  });

  it("randn has mean ~0 and std ~1 over 100k samples", async () => {
    torch.manual_seed(8);
    const v = await arr(torch.randn(100_000));
    expect(v.every(Number.isFinite)).toBe(true);
    const { mean, std } = stats(v);
    expect(Math.abs(mean)).toBeLessThan(0.02);
    expect(Math.abs(std - 1)).toBeLessThan(0.02);
  });

  it("randint(high) is within [0, high) and hits every value", async () => {
    torch.manual_seed(9);
    const v = await arr(torch.randint(6, [10_000]));
    expect(v.every((x) => Number.isInteger(x) && x >= 0 && x < 6)).toBe(true);
    expect(new Set(v).size).toBe(6);
  });

  it("randint(low, high) is within [low, high) and roughly uniform", async () => {
    torch.manual_seed(10);
    const v = await arr(torch.randint(-3, 4, [70_000]));
    expect(v.every((x) => Number.isInteger(x) && x >= -3 && x < 4)).toBe(true);
    const counts = new Map<number, number>();
    for (const x of v) counts.set(x, (counts.get(x) ?? 0) + 1);
    expect([...counts.keys()].sort((a, b) => a - b)).toEqual([-3, -2, -1, 0, 1, 2, 3]);
    for (const c of counts.values()) expect(Math.abs(c - 10_000)).toBeLessThan(500);
  });
});

describe("dropout", () => {
  it("dropout(x, 0.5, true) zeroes about half and scales the rest by 2", async () => {
    torch.manual_seed(11);
    const n = 100_000;
    const x = torch.linspace(0.5, 1.5, n);
    const xv = await arr(x);
    const y = await arr(F.dropout(x, 0.5, true));
    let zeros = 0;
    let badScale = 0;
    for (let i = 0; i < n; i++) {
      if (y[i] === 0) zeros++;
      else if (Math.abs(y[i] - 2 * xv[i]) > 1e-6 * Math.abs(xv[i])) badScale++;
    }
    expect(Math.abs(zeros / n - 0.5)).toBeLessThan(0.01);
    expect(badScale).toBe(0);
  });

  it("dropout with p = 0.2 keeps ~80% scaled by 1.25", async () => {
    torch.manual_seed(12);
    const y = await arr(F.dropout(torch.ones(50_000), 0.2, true));
    const kept = y.filter((v) => v !== 0);
    expect(Math.abs(kept.length / y.length - 0.8)).toBeLessThan(0.01);
    expect(kept.every((v) => Math.abs(v - 1.25) < 1e-6)).toBe(true);
  });

  it("dropout is reproducible under the same seed and differs across seeds", async () => {
    const x = torch.ones(2_000);
    torch.manual_seed(5);
    const a = await arr(F.dropout(x, 0.5, true));
    torch.manual_seed(5);
    const b = await arr(F.dropout(x, 0.5, true));
    torch.manual_seed(6);
    const c = await arr(F.dropout(x, 0.5, true));
    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
  });

  it("dropout on a non-contiguous input keeps the input's layout semantics", async () => {
    torch.manual_seed(13);
    const base = torch.tensor([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    const xt = base.t();
    const xv = await arr(xt);
    const y = F.dropout(xt, 0.5, true);
    expect(y.shape).toEqual([3, 2]);
    const yv = await arr(y);
    for (let i = 0; i < yv.length; i++) expect(yv[i] === 0 || yv[i] === 2 * xv[i]).toBe(true);
  });

  it("dropout in eval mode (training=false) is the identity; p=1 zeroes everything", async () => {
    const x = torch.tensor([1.5, -2, 3]);
    expect(await arr(F.dropout(x, 0.5, false))).toEqual([1.5, -2, 3]);
    expect(await arr(F.dropout(x, 1, true))).toEqual([0, -0, 0]); // x * 0, signs kept as torch keeps them
  });
});
