// Issue 21: pow / sqrt / rsqrt values and gradients at signed zeros (and a few ordinary bases) equal
// torch 1.13's, sign of zero and of infinity included (test/fixtures/gen_signed_zero.py). GradLab gave
// pow(-0., 0.5) a gradient of 0 where torch gives -inf.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";

type Case = { op: string; base: string; exponent?: string; value: string; grad: string; grad_exponent?: string };
const fx = JSON.parse(readFileSync(new URL("./fixtures/signed-zero.json", import.meta.url), "utf8")) as { cases: Case[] };

/** Python's repr of a float back to a number (-0.0, inf, -inf, nan included). */
const num = (s: string) => (s === "inf" ? Infinity : s === "-inf" ? -Infinity : s === "nan" ? Number.NaN : Number(s));
/** Same number: zero's sign, infinities and NaN exactly; other values to float32 rounding. */
function same(got: number, want: number): boolean {
  if (Number.isNaN(want) || !Number.isFinite(want) || want === 0) return Object.is(got, want);
  return Math.abs(got - want) <= 1e-6 * Math.abs(want);
}
const label = (c: Case) => `${c.op}(${c.base}${c.exponent === undefined ? "" : `, ${c.exponent}`})`;

describe("pow, sqrt and rsqrt at signed zeros: torch 1.13's values and gradients", () => {
  it("every case of the fixture", async () => {
    const wrong: string[] = [];
    for (const c of fx.cases) {
      const x = torch.tensor([num(c.base)], { requires_grad: true });
      const e = c.op === "pow_tensor" ? torch.tensor([num(c.exponent!)], { requires_grad: true }) : null;
      const y = c.op === "sqrt" ? x.sqrt() : c.op === "rsqrt" ? x.rsqrt() : x.pow(e ?? num(c.exponent!));
      y.backward();
      const got: Record<string, number> = { value: ((await y.tolist()) as number[])[0], grad: ((await x.grad!.tolist()) as number[])[0] };
      if (e) got.grad_exponent = ((await e.grad!.tolist()) as number[])[0];
      for (const k of Object.keys(got)) {
        const want = num(c[k as "value"]);
        if (!same(got[k], want)) wrong.push(`${label(c)} ${k}: GradLab ${Object.is(got[k], -0) ? "-0" : got[k]}, torch ${c[k as "value"]}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
