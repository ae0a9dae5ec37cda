// GradLab Lite's language service without a browser: the files `gradlab lite build` ships (typings.json,
// collected by kernel/cli/lite.ts) are enough for kernel/language/service.ts to answer as the server
// kernel's does from Node's file system. The browser tier (test/lite) checks the same in Chromium.
import * as ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { collectTypings } from "../kernel/cli/lite.ts";
import { REPO } from "../kernel/repo.ts";
import { languageService } from "../kernel/language/client.ts";
import { notebookService, typingsFiles } from "../kernel/language/service.ts";

// the built runtime's typings, as `gradlab lite build` (the built CLI) ships them: the sources would
// bring Node's types in through src/platform/node.ts
const typings = collectTypings(join(REPO, "dist", "src", "index.js"));
const browser = notebookService(ts, typingsFiles(typings));
const server = languageService();
beforeAll(async () => {
  // loading TypeScript and compiling the runtime's types may take long on a busy machine (bounded)
  if (!(await server.whenLoaded(90_000))) throw new Error("the language service did not load in 90 s");
}, 100_000);
afterAll(() => server.stop());

type Entries = { entries: { name: string; kind: string }[] } | null;
const names = (r: Entries) => (r?.entries ?? []).map((e) => `${e.name} ${e.kind}`).sort();

describe("GradLab Lite's typings", () => {
  it("hold the runtime's typings and TypeScript's lib files, relative to the checkout, without Node's", () => {
    const paths = Object.keys(typings.files);
    expect(paths).toContain("node_modules/typescript/lib/lib.es5.d.ts");
    expect(paths).toContain("dist/src/tensor.d.ts");
    expect(paths.filter((p) => p.startsWith("/") || p.startsWith("../") || p.includes("@types/node"))).toEqual([]);
    expect(typings.files[typings.runtimeModule.replace(/\.js$/, ".d.ts")]).toBeDefined();
  });

  it("a cell that prints, times and waits gets no type warning in the browser, as on the server", async () => {
    // the browser's cells had TypeScript's language alone: every console.log warned "Cannot find name
    // 'console'" (TS2584) once the service had loaded (notebooks 06, 09 and 11 in the Lite tier)
    const cell = "const t0 = performance.now();\nawait new Promise((r) => setTimeout(r, 1));\nconsole.log('took', performance.now() - t0);";
    const diagnostics = browser.handle({ op: "diagnostics", code: cell }) as Array<{ code: number }>;
    expect(diagnostics.map((d) => d.code)).toEqual([]);
    expect(await server.diagnostics(cell)).toEqual([]);
    // and a real mistake still warns in both
    const wrong = "console.lgo('x');";
    const wrongB = (browser.handle({ op: "diagnostics", code: wrong }) as Array<{ code: number }>).map((d) => d.code);
    expect(wrongB).toHaveLength(1);
    expect(wrongB).toEqual(((await server.diagnostics(wrong)) as Array<{ code: number }>).map((d) => d.code));
  }, 60_000);

  it("complete `torch.`, a tensor's `x.` and inspect torch.ones as the server kernel's service does", async () => {
    const cell = "const x = torch.ones(2, 3);";
    browser.handle({ op: "addCell", code: cell });
    server.addCell(cell);
    const torchB = browser.handle({ op: "complete", code: "torch.", cursor: 6 }) as Entries;
    expect(names(torchB)).toEqual(expect.arrayContaining(["ones alias", "zeros alias"]));
    expect(names(torchB)).toEqual(names(await server.complete("torch.", 6)));
    const tensorB = browser.handle({ op: "complete", code: "x.", cursor: 2 }) as Entries;
    expect(names(tensorB)).toEqual(expect.arrayContaining(["backward method", "grad property"]));
    expect(names(tensorB)).toEqual(names(await server.complete("x.", 2)));
    const ones = browser.handle({ op: "inspect", code: "torch.ones", cursor: 10 });
    expect(ones).toEqual(await server.inspect("torch.ones", 10));
    expect((ones as { signature: string }).signature).toContain("const ones: (...args: ShapeArgs) => Tensor");
    // a student's misspelling: nothing to inspect, in both
    expect(browser.handle({ op: "inspect", code: "torch.onez", cursor: 10 })).toEqual(await server.inspect("torch.onez", 10));
  }, 60_000);
});
