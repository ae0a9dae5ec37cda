// The second-order differential tier (issue 21): programs that test/fixtures/gen_diff2.py generated
// and ran in torch 1.13 (Debian's python3-torch) — Hessian-vector products, gradient penalties and
// double backward through grad_outputs, one single-op Hessian-vector product per differentiable op
// and random chains — replayed against GradLab by ./replay.ts: errors, values, requires_grad,
// is_leaf, grad_fn (the name only for first-order gradients), _version, every leaf's .grad.
// No known differences: every mismatch fails. Regenerate with `/usr/bin/python3 test/fixtures/gen_diff2.py`.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as torch from "../../src/index.ts";
import { replay, type Program } from "./replay.ts";

const fixtures = JSON.parse(
  readFileSync(new URL(`../fixtures/diff2${process.env.GRADLAB_DIFF_SEED ? `-${process.env.GRADLAB_DIFF_SEED}` : ""}.json`, import.meta.url), "utf8"),
) as { torch: string; programs: Program[] };
const singles = fixtures.programs.filter((p) => p.single);
let matched = 0;

beforeAll(async () => {
  await torch.cuda.init();
});
afterAll(() => {
  console.log(`second-order tier: ${matched} of ${singles.length} single-op Hessian-vector products match torch ${fixtures.torch}`);
});

describe(`second-order differential: ${fixtures.programs.length} programs vs torch ${fixtures.torch}`, () => {
  it("has a single-op Hessian-vector product for each op, at least 390 random programs, and issue 21's cases", () => {
    expect(singles.length).toBeGreaterThanOrEqual(90);
    expect(fixtures.programs.filter((p) => !p.single && !p.issue).length).toBeGreaterThanOrEqual(390);
    // and the nine second-order reports of issue 21, as written there
    expect(fixtures.programs.filter((p) => p.issue === 21).length).toBe(9);
  });
  for (const p of fixtures.programs) {
    it(`program ${p.id}${p.single ? ` (${p.ops?.[0]} alone)` : ` (${p.ops?.join(", ")})`}`, async () => {
      const mismatches = await replay(p, { memory: false, scaledTolerance: true });
      if (p.single && mismatches.length === 0) matched++;
      expect(mismatches, `program ${p.id}:\n${p.typescript}\n\nPython:\n${p.python}\n`).toEqual([]);
    });
  }
});
