// Every exercise has a template in notebooks/ and its solution in notebooks/solutions/ (same file name).
// Both run headlessly through the kernel (`gradlab run`), as notebooks.test.ts runs the templates: each
// check from notebooks/check.ts prints one line starting with ✓ or ✗. The untouched template must fail
// at least one check; the solution must pass every check the template has, and fail none. Solutions
// live in a subfolder, so notebooks.test.ts (notebooks/*.ipynb) does not run them a second time.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const repo = new URL("../..", import.meta.url).pathname;
const solutions = readdirSync(join(repo, "notebooks", "solutions")).filter((f) => f.endsWith(".ipynb"));

interface Output {
  output_type: string;
  text?: string | string[];
  name?: string;
}

function run(path: string): { checks: string[]; errors: Output[] } {
  const out = join(mkdtempSync(join(tmpdir(), "gradlab-ex-")), "out.ipynb");
  execFileSync(process.execPath, [join(repo, "bin", "gradlab.js"), "run", path, "-o", out], {
    cwd: repo,
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 240_000,
  });
  const executed = JSON.parse(readFileSync(out, "utf8"));
  const outputs: Output[] = executed.cells.flatMap((c: { outputs?: Output[] }) => c.outputs ?? []);
  const text = outputs
    .filter((o) => o.output_type === "stream")
    .map((o) => (Array.isArray(o.text) ? o.text.join("") : (o.text ?? "")))
    .join("");
  const checks = text.split("\n").filter((l) => l.startsWith("✓ ") || l.startsWith("✗ "));
  return { checks, errors: outputs.filter((o) => o.output_type === "error") };
}

describe("exercises: templates fail their checks, solutions pass them", () => {
  it("there is at least one exercise", () => expect(solutions.length).toBeGreaterThan(0));
  for (const nb of solutions) {
    it(`${nb}: the template fails, the solution passes`, () => {
      const template = join(repo, "notebooks", nb);
      expect(existsSync(template), `template notebooks/${nb}`).toBe(true);
      const t = run(template);
      const s = run(join(repo, "notebooks", "solutions", nb));
      expect(t.errors).toEqual([]);
      expect(s.errors).toEqual([]);
      expect(t.checks.length).toBeGreaterThan(0);
      expect(t.checks.filter((l) => l.startsWith("✗ ")).length, t.checks.join("\n")).toBeGreaterThan(0);
      expect(
        s.checks.filter((l) => l.startsWith("✗ ")),
        s.checks.join("\n"),
      ).toEqual([]);
      // the same checks, by name, all passing
      const name = (l: string) => l.slice(2).split(":")[0];
      expect(s.checks.map(name).sort()).toEqual(t.checks.map(name).sort());
    }, 600_000);
  }
});
