// Every course notebook, and its solution, type-checks in the kernel's language service with no
// warning: the kernel prints a cell's type errors as `warning TS…` on stderr once the service has
// loaded, which on a busy machine may be after the first cells ran, so a notebook run alone finds a
// type error only some of the time (notebook 10's `save_on_cpu(() => …).backward()` was one).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { languageService } from "../kernel/language/client.ts";

const repo = new URL("..", import.meta.url).pathname;
const dirs = ["notebooks", "notebooks/solutions"];
const notebooks = dirs.flatMap((d) =>
  readdirSync(join(repo, d))
    .filter((f) => f.endsWith(".ipynb"))
    .map((f) => join(d, f)),
);
const ls = languageService();
beforeAll(async () => {
  expect(await ls.whenLoaded(90_000)).toBe(true);
}, 100_000);
afterAll(() => ls.stop());

type Cell = { cell_type: string; source: string | string[] };
describe("course notebooks type-check", () => {
  for (const nb of notebooks) {
    it(`${nb}: no type warning in any cell`, async () => {
      const cells: Cell[] = JSON.parse(readFileSync(join(repo, nb), "utf8")).cells;
      const warnings: string[] = [];
      ls.forget();
      let n = 0;
      for (const c of cells) {
        if (c.cell_type !== "code") continue;
        n++;
        const code = Array.isArray(c.source) ? c.source.join("") : c.source;
        for (const d of (await ls.diagnostics(code)) ?? []) warnings.push(`code cell ${n}, line ${d.line}:${d.col}: TS${d.code} ${d.text}`);
        ls.cellRan(code);
      }
      expect(warnings).toEqual([]);
    }, 120_000);
  }
});
