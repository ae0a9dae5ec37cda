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
