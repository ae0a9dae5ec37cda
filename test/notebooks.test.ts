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
      if (nb === "08_grad_mode.ipynb") {
        // Block 22's table: GradLab's measured row beside torch 1.13's; the one known difference is an inference
        // tensor's _version (PyTorch raises, GradLab keeps a counter). A new difference fails here.
        const text = outputs
          .filter((o: { output_type: string }) => o.output_type === "stream")
          .map((o: { text?: string | string[] }) => (Array.isArray(o.text) ? o.text.join("") : (o.text ?? "")))
          .join("");
        const rows = text.split("\n").filter((l: string) => l.includes("| torch 1.13 "));
        expect(rows.length).toBe(8);
        expect(rows.filter((l: string) => l.includes("← differs")).map((l: string) => l.split("|")[0].trim())).toEqual(["output _version"]);
      }
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

// notebooks/BLOCKS.md maps each of the article's 31 blocks to a notebook and its cells (numbered from 1): every row
// must name a notebook that exists and cells it has, so the map cannot drift from the notebooks silently.
describe("the block map", () => {
  const map = readFileSync(join(repo, "notebooks", "BLOCKS.md"), "utf8");
  const rows = map.split("\n").filter((l) => /^\| \d+ \|/.test(l));
  it("has the article's 31 blocks, in order", () => {
    expect(rows.map((r) => Number(r.split("|")[1]))).toEqual(Array.from({ length: 31 }, (_, i) => i + 1));
  });
  for (const row of rows) {
    const cols = row.split("|").map((c) => c.trim());
    it(`block ${cols[1]}: ${cols[3]} cells ${cols[4]} exist`, () => {
      const nb = cols[3].replace(/`/g, "");
      const cells = JSON.parse(readFileSync(join(repo, "notebooks", nb), "utf8")).cells as unknown[];
      const numbers = cols[4].split(/[,–]/).map((n) => Number(n.trim()));
      expect(
        numbers.every((n) => Number.isInteger(n) && n >= 1 && n <= cells.length),
        `${cols[4]} of ${cells.length}`,
      ).toBe(true);
    });
  }
});
