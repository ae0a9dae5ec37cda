// The differential tier (issue 11): random programs that test/fixtures/gen_diff.py generated and ran
// in torch 1.13 (Debian's python3-torch), replayed against GradLab by ./replay.ts: errors, memory
// changes per statement, values, every leaf's gradient, grad_fn names with next_functions, _version.
//
// Every mismatch must be explained by a known difference below (with its reason and who owns the fix);
// anything else fails the program's test. Regenerate with `/usr/bin/python3 test/fixtures/gen_diff.py`.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as torch from "../../src/index.ts";
import { replay, type Program } from "./replay.ts";
import { explain } from "./known.ts";

const fixtures = JSON.parse(
  readFileSync(new URL(`../fixtures/diff${process.env.GRADLAB_DIFF_SEED ? `-${process.env.GRADLAB_DIFF_SEED}` : ""}.json`, import.meta.url), "utf8"),
) as { torch: string; programs: Program[] };

const seen = new Map<string, number>();
let started = 0;

beforeAll(async () => {
  await torch.cuda.init();
  started = Date.now();
});
afterAll(() => {
  const list = [...seen].map(([k, n]) => `${k}: ${n}`).join(", ");
  console.log(
    `differential tier: ${fixtures.programs.length} programs in ${((Date.now() - started) / 1000).toFixed(1)} s; known differences seen: ${list || "none"}`,
  );
});

describe(`differential: ${fixtures.programs.length} random programs vs torch ${fixtures.torch}`, () => {
  it("has at least 1,000 programs", () => {
    expect(fixtures.programs.length).toBeGreaterThanOrEqual(1000);
  });
  for (const p of fixtures.programs) {
    it(`program ${p.id}`, async () => {
      const mismatches = await replay(p);
      const unexplained: string[] = [];
      for (const line of mismatches) {
        const k = explain(p, line);
        if (k) seen.set(k, (seen.get(k) ?? 0) + 1);
        else unexplained.push(line);
      }
      expect(unexplained, `program ${p.id}:\n${p.typescript}\n\nPython:\n${p.python}\n`).toEqual([]);
    });
  }
});
