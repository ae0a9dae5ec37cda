// Every tutorial notebook runs headlessly through the kernel, as a user's `gradlab run` would; a cell
// that raises fails the build.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const repo = new URL("..", import.meta.url).pathname;
const notebooks = readdirSync(join(repo, "notebooks")).filter((f) => f.endsWith(".ipynb") && f !== "smoke.ipynb");

describe("tutorial notebooks", () => {
  it("there is at least one", () => expect(notebooks.length).toBeGreaterThan(0));
  for (const nb of notebooks) {
    it(`${nb} runs without an error`, () => {
      const out = join(mkdtempSync(join(tmpdir(), "gradlab-nb-")), nb);
      execFileSync(process.execPath, [join(repo, "bin", "gradlab.js"), "run", join(repo, "notebooks", nb), "-o", out], {
        cwd: repo,
        stdio: ["ignore", "pipe", "pipe"],
        timeout: 240_000,
      });
      const executed = JSON.parse(readFileSync(out, "utf8"));
      const outputs = executed.cells.flatMap((c: { outputs?: Array<{ output_type: string }> }) => c.outputs ?? []);
      expect(outputs.filter((o: { output_type: string }) => o.output_type === "error")).toEqual([]);
      expect(outputs.length).toBeGreaterThan(0);
    }, 300_000);
  }
});

// A solution is its template with the exercises solved: the same cells in the same order, and the same
// explanations. Without this, a fix to a template's prose silently misses the solution students get later.
describe("solutions match their templates", () => {
  type Cell = { cell_type: string; source: string | string[] };
  const read = (p: string): Cell[] => JSON.parse(readFileSync(p, "utf8")).cells;
  const text = (c: Cell) => (Array.isArray(c.source) ? c.source.join("") : c.source);
  const solutions = readdirSync(join(repo, "notebooks", "solutions")).filter((f) => f.endsWith(".ipynb"));
  for (const nb of solutions) {
    it(`${nb}: same cell kinds and the same markdown as notebooks/${nb}`, () => {
      const t = read(join(repo, "notebooks", nb));
      const s = read(join(repo, "notebooks", "solutions", nb));
      expect(s.map((c) => c.cell_type)).toEqual(t.map((c) => c.cell_type));
      expect(s.filter((c) => c.cell_type === "markdown").map(text)).toEqual(t.filter((c) => c.cell_type === "markdown").map(text));
      // at least one code cell differs: the solved exercise
      expect(s.some((c, i) => c.cell_type === "code" && text(c) !== text(t[i]))).toBe(true);
    });
  }
});
