// Elementwise kernels are specialised on each operand's layout (elementwise.wgsl M<k>: contiguous, one
// element, repeated over leading dims, repeated over trailing dims, strided) and dtype (D<k>). Every
// layout, alone and mixed, in float and integer math, against the same sums computed here.
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";

const range = (n: number, k = 1) => Array.from({ length: n }, (_, i) => (i + 1) * k);
/** Broadcast a + b over nested arrays, as numpy would, for the shapes used below. */
function reference(a: number[][][], b: number[][][]): number[][][] {
  const dim = (x: number, y: number) => Math.max(x, y);
  const [A0, A1, A2] = [a.length, a[0].length, a[0][0].length];
  const [B0, B1, B2] = [b.length, b[0].length, b[0][0].length];
  return Array.from({ length: dim(A0, B0) }, (_, i) =>
    Array.from({ length: dim(A1, B1) }, (_, j) => Array.from({ length: dim(A2, B2) }, (_, k) => a[i % A0][j % A1][k % A2] + b[i % B0][j % B1][k % B2])),
  );
}
const as3 = (t: torch.Tensor) => (t.dim() === 3 ? t : t.reshape([1, 1, ...t.shape].slice(-3)));

describe("elementwise layouts", () => {
  const cases: Array<[string, () => torch.Tensor, () => torch.Tensor]> = [
    ["contiguous + contiguous", () => torch.tensor(range(24)).reshape([2, 3, 4]), () => torch.tensor(range(24, 10)).reshape([2, 3, 4])],
    ["contiguous + one element", () => torch.tensor(range(24)).reshape([2, 3, 4]), () => torch.tensor([[[100]]])],
    ["contiguous + bias over rows", () => torch.tensor(range(24)).reshape([2, 3, 4]), () => torch.tensor([[range(4, 100)]])],
    ["contiguous + bias over the last two dims", () => torch.tensor(range(24)).reshape([2, 3, 4]), () => torch.tensor([range(12, 100)]).reshape([1, 3, 4])],
    ["contiguous + a value per row", () => torch.tensor(range(24)).reshape([2, 3, 4]), () => torch.tensor(range(6, 100)).reshape([2, 3, 1])],
    ["contiguous + a value per outer block", () => torch.tensor(range(24)).reshape([2, 3, 4]), () => torch.tensor([[[100]], [[200]]])],
    [
      "transposed + middle broadcast",
      () => torch.tensor(range(24)).reshape([4, 3, 2]).permute([2, 1, 0]),
      () => torch.tensor(range(8, 100)).reshape([2, 1, 4]),
    ],
    ["sliced rows + bias", () => torch.tensor(range(48)).reshape([2, 6, 4]).getitem(":, ::2"), () => torch.tensor([[range(4, 100)]])],
  ];
  for (const [name, A, B] of cases)
    it(name, async () => {
      const a = A();
      const b = B();
      const want = reference((await as3(a).tolist()) as number[][][], (await as3(b).tolist()) as number[][][]);
      expect(await as3(a.add(b)).tolist()).toEqual(want);
      expect(await as3(b.add(a)).tolist()).toEqual(want); // the layouts on the other operand
      // integer math (both inputs int32) and a mixed int32 + float32 promotion
      const ai = a.to(torch.int32);
      const bi = b.to(torch.int32);
      const sumInt = ai.add(bi);
      expect(sumInt.dtype).toBe(torch.int32);
      expect(await as3(sumInt).tolist()).toEqual(want);
      expect(await as3(ai.add(b)).tolist()).toEqual(want);
      // in place, on a contiguous copy (the output is also operand 1)
      const c = a.clone();
      c.add_(b.expand(c.shape));
      expect(await as3(c).tolist()).toEqual(want);
    });
});
