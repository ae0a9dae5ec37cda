// Issue 21: every windowed op along every dim of a tensor above the binding limit. `softmax(0)` of a
// 160 MiB tensor used to kill the process: its strided copy needed ~82,000 windowed dispatches, each a
// new bind group, and lavapipe crashed inside Dawn (SIGSEGV in vkCreateDescriptorPool). Elementwise ops
// now split into boxes that each span at most one binding, an op needing more than a bounded number of
// windows raises, and matmul splits its contraction dim when one step would read more than one binding.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";
import type { Tensor } from "../src/index.ts";
import { _set_max_binding_size } from "../src/device/backend.ts";

beforeAll(async () => {
  await torch.cuda.init();
});
afterEach(() => _set_max_binding_size(null));

const F = torch.nn.functional;

/** Each op along dim d, returning one tensor. */
const OPS: Record<string, (x: Tensor, d: number) => Tensor> = {
  sum: (x, d) => x.sum(d),
  mean: (x, d) => x.mean(d),
  prod: (x, d) => x.mul(0.01).add(1).prod(d),
  max: (x, d) => (x.max(d) as { values: Tensor }).values,
  min: (x, d) => (x.min(d) as { values: Tensor }).values,
  argmax: (x, d) => x.argmax(d),
  argmin: (x, d) => x.argmin(d),
  var: (x, d) => x.var(d),
  std: (x, d) => x.std(d),
  softmax: (x, d) => x.softmax(d),
  log_softmax: (x, d) => x.log_softmax(d),
  "transpose+contiguous": (x, d) => x.transpose(d, (d + 1) % 3).contiguous(),
  "copy of a strided view": (x, d) => x.select(d, 1).mul(2),
  layer_norm: (x, d) => F.layer_norm(x.transpose(d, 2), [x.shape[d]]),
};

describe("windowed ops along every dim (binding limit lowered to 4 KiB; the tensor is 135 KiB)", () => {
  for (const [name, op] of Object.entries(OPS)) {
    for (const d of [0, 1, 2]) {
      it(`${name} along dim ${d} gives what one dispatch gives`, async () => {
        torch.manual_seed(21);
        const x = torch.randn(24, 40, 36);
        const whole = (await op(x, d).tolist()) as unknown;
        _set_max_binding_size(4096);
        const windowed = (await op(x, d).tolist()) as unknown;
        _set_max_binding_size(null);
        const flat = (v: unknown): number[] => (Array.isArray(v) ? v.flatMap(flat) : [v as number]);
        const [a, b] = [flat(windowed), flat(whole)];
        expect(a.length).toBe(b.length);
        // Chunked sums may associate differently from one pass: equal up to float32 rounding.
        a.forEach((v, i) => expect(Math.abs(v - b[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(b[i]))));
      });
    }
  }
});

describe("whole-row reductions longer than one binding (var, std, argmax, argmin: partials per chunk)", () => {
  const WHOLE: Record<string, (x: Tensor) => Tensor> = {
    "var()": (x) => x.var(),
    "std()": (x) => x.std(),
    "var(1, correction 0)": (x) => x.var(1, { correction: 0 }),
    "argmax()": (x) => x.argmax(),
    "argmin()": (x) => x.argmin(),
    "argmax(1)": (x) => x.argmax(1),
    "argmin(0) of a transpose": (x) => x.t().argmin(1),
  };
  for (const [name, op] of Object.entries(WHOLE)) {
    it(`${name} gives what one dispatch gives`, async () => {
      torch.manual_seed(5);
      const x = torch.randn(3, 5000); // rows of 19.5 KiB; the limit lowered to 4 KiB
      x.getitem("1, 4321").fill_(9); // a single maximum far into a row
      x.getitem("2, 17").fill_(-9);
      const whole = await op(x).tolist();
      _set_max_binding_size(4096);
      const windowed = await op(x).tolist();
      _set_max_binding_size(null);
      const flat = (v: unknown): number[] => (Array.isArray(v) ? v.flatMap(flat) : [v as number]);
      const [a, b] = [flat(windowed), flat(whole)];
      a.forEach((v, i) => expect(Math.abs(v - b[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(b[i]))));
    });
  }
});

describe("at the real binding limit (128 MiB on lavapipe)", () => {
  it("torch.randn([40960, 1024]).softmax(0) (160 MiB) computes: every column sums to 1", async () => {
    const x = torch.randn([40960, 1024]);
    const s = x.softmax(0);
    const cols = (await s.sum(0).tolist()) as number[];
    expect(cols.length).toBe(1024);
    for (const c of cols) expect(c).toBeCloseTo(1, 4);
    // The first column against the same softmax of that column alone (one binding).
    const col = x.getitem(":, 0").contiguous().softmax(0);
    expect(await s.getitem(":, 0").contiguous().tolist()).toEqual(await col.tolist());
    for (const t of [x, s, col]) t.dispose();
  });

  it("A.t().matmul(A) for A of 4 Mi x 10 (a Gram matrix over 160 MiB) computes, close to float64", async () => {
    torch.manual_seed(3);
    const A = torch.randn([4 * 2 ** 20, 10]);
    const G = (await A.t().matmul(A).tolist()) as number[][];
    const a = await A.data();
    const ref = Array.from({ length: 10 }, () => new Float64Array(10));
    for (let r = 0; r < 4 * 2 ** 20; r++) {
      const row = r * 10;
      for (let i = 0; i < 10; i++) {
        const v = a[row + i];
        for (let j = 0; j < 10; j++) ref[i][j] += v * a[row + j];
      }
    }
    for (let i = 0; i < 10; i++) for (let j = 0; j < 10; j++) expect(Math.abs(G[i][j] - ref[i][j])).toBeLessThan(1e-4 * ref[i][i]);
    A.dispose();
  });

  it("an op that would need thousands of windows raises before recording, and the process lives on", async () => {
    const x = torch.ones([2 ** 22]); // 16 MiB
    _set_max_binding_size(1024);
    const before = torch.cuda.memory_allocated();
    expect(() => x.mul(2)).toThrow(/would need \d+ windowed dispatches .* \(at most 4096\); use smaller tensors/);
    _set_max_binding_size(null);
    await torch.gc();
    expect(torch.cuda.memory_allocated()).toBe(before);
    expect(await x.mul(2).sum().item()).toBe(2 ** 23);
  });
});
