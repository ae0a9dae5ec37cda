// Notebooks from elsewhere, run by the kernel through `gradlab run` (issue 25): tslab notebooks, which
// `import * as tslab from "tslab"` and call its display API, run unchanged; and a snapshot dumped from
// cells names each allocation's cell and line, as memory_viz shows a Python file and line.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { installedKernel, run, GRADLAB, REPO, type Env } from "./helpers.ts";

type Output = { output_type: string; data?: Record<string, unknown>; text?: string | string[]; ename?: string; evalue?: string };
type Cell = { cell_type: string; outputs?: Output[]; source: string | string[] };

let e: Env;
beforeAll(async () => {
  e = await installedKernel({ GRADLAB_RUNTIME: "" }); // the real runtime
});
afterAll(() => e?.cleanup());

async function runNotebook(path: string): Promise<Cell[]> {
  const out = join(e.dir, `out-${Math.random().toString(36).slice(2)}.ipynb`);
  const r = await run(process.execPath, [GRADLAB, "run", path, "-o", out], { env: e.env, cwd: e.dir });
  expect(r.code, r.stderr + r.stdout).toBe(0);
  return (JSON.parse(readFileSync(out, "utf8")).cells as Cell[]).filter((c) => c.cell_type === "code");
}
const joined = (v: unknown) => (Array.isArray(v) ? v.join("") : v);
/** Each display's data, with multi-line strings joined as nbformat splits them. */
const shown = (c: Cell) => (c.outputs ?? []).map((o) => Object.fromEntries(Object.entries(o.data ?? {}).map(([k, v]) => [k, joined(v)])));

describe("tslab notebooks", () => {
  test("display.html / markdown / svg / png / jpeg / text / latex / javascript / raw each show one output of that type", async () => {
    const cells = await runNotebook(join(REPO, "test/kernel/fixtures/tslab/display.ipynb"));
    for (const c of cells) expect(c.outputs!.filter((o) => o.output_type === "error")).toEqual([]);
    expect(shown(cells[0])[0]["text/html"]).toBe("<h3>Squares</h3><ul><li>1² = 1</li><li>2² = 4</li><li>3² = 9</li></ul>");
    expect(shown(cells[1])[0]["text/markdown"]).toBe("| n | n³ |\n|---|----|\n| 1 | 1 |\n| 2 | 8 |\n| 3 | 27 |");
    expect(shown(cells[2])[0]["image/svg+xml"]).toMatch(/^<svg [^>]*width="70"[^>]*>(<rect [^>]+\/>){3}<\/svg>$/);
    // binary content goes out base64-encoded, byte for byte, with a text/plain that says what it is
    const png = shown(cells[3])[0];
    expect(Buffer.from(String(png["image/png"]), "base64").subarray(1, 4).toString()).toBe("PNG");
    expect(png["text/plain"]).toBe("<image/png, 70 bytes>");
    const [jpeg, text, latex, js] = shown(cells[4]);
    expect(jpeg["image/jpeg"]).toBe(Buffer.from([0xff, 0xd8, 0xff, 0xd9]).toString("base64"));
    expect(text).toEqual({ "text/plain": "plain text, as is" });
    expect(latex["text/latex"]).toBe("$e^{i\\pi} + 1 = 0$");
    expect(js["text/javascript"]).toBe("console.log('from tslab')");
    const [json, result] = cells[5].outputs!;
    expect(joined(json.data!["application/json"])).toBe('{"kernel":"tslab-compatible"}');
    expect(result.output_type).toBe("execute_result");
    expect(joined(result.data!["text/plain"])).toBe("'node: true, browser: false'");
  }, 120_000);

  test("newDisplay() keeps one output per display and overwrites it in place", async () => {
    const cells = await runNotebook(join(REPO, "test/kernel/fixtures/tslab/progress.ipynb"));
    // five progress lines and "done" went to one display: what stays is its last state
    expect(shown(cells[0])).toEqual([{ "text/html": "<b>done</b>", "text/plain": "<b>done</b>" }]);
    // two displays: the first updated, the second untouched, in the order they first appeared
    expect(shown(cells[1]).map((d) => d["text/markdown"])).toEqual(["first: **ready**", "second: *waiting*"]);
    expect(shown(cells[2])).toEqual([{ "text/plain": "running in Node" }]);
  }, 120_000);

  test("a wrong call says what tslab wants, and the cell fails as a cell does", async () => {
    const nb = join(e.dir, "wrong.ipynb");
    const cell = (source: string) => ({ cell_type: "code", metadata: {}, execution_count: null, outputs: [], source });
    writeFileSync(
      nb,
      JSON.stringify({
        cells: [cell('import * as tslab from "tslab";\ntslab.display.raw("html", "<b>x</b>");')],
        metadata: {},
        nbformat: 4,
        nbformat_minor: 5,
      }),
    );
    const out = join(e.dir, "wrong-out.ipynb");
    const r = await run(process.execPath, [GRADLAB, "run", nb, "-o", out], { env: e.env, cwd: e.dir });
    expect(r.code).not.toBe(0);
    const err = JSON.parse(readFileSync(out, "utf8")).cells[0].outputs.find((o: Output) => o.output_type === "error");
    expect(err).toMatchObject({ ename: "TypeError", evalue: 'tslab display: "html" is not a MIME type (e.g. "text/html")' });
  }, 120_000);
});

test("a snapshot dumped from cells names the cell and line of each allocation, and Python reads it", async () => {
  const nb = join(e.dir, "snap.ipynb");
  const cell = (source: string) => ({ cell_type: "code", metadata: {}, execution_count: null, outputs: [], source });
  const cells = [
    cell("torch.cuda.memory._record_memory_history();\nconst w = torch.randn(256, 256, { requires_grad: true });"),
    cell("function forward(x: torch.Tensor) {\n  return x.matmul(w).relu();\n}\nconst loss = forward(torch.randn(64, 256)).sum();\nloss.backward();"),
    cell(
      'torch.cuda.memory._dump_snapshot("snap.pickle");\nconsole.log(JSON.stringify(torch.cuda.memory_snapshot().map((s) => s.blocks.filter((b) => b.state === "active_allocated").map((b) => b.frames[0]))));',
    ),
  ];
  writeFileSync(nb, JSON.stringify({ cells, metadata: {}, nbformat: 4, nbformat_minor: 5 }));
  const out = await runNotebook(nb);
  const frames = JSON.parse(joined(out[2].outputs![0].text) as string).flat() as Array<{ filename: string; line: number; name: string }>;
  // w (cell 1, line 2), its gradient (cell 2, line 5: backward), the loss (cell 2, line 4)
  expect(frames).toEqual(
    expect.arrayContaining([
      { filename: "Cell [1]", line: 2, name: "<module>" },
      { filename: "Cell [2]", line: 5, name: "<module>" },
      { filename: "Cell [2]", line: 4, name: "<module>" },
    ]),
  );
  const summary = JSON.parse(execFileSync("python3", [join(REPO, "test/fixtures/check_snapshot.py"), join(e.dir, "snap.pickle")], { encoding: "utf8" }));
  expect(summary.actions.alloc).toBeGreaterThan(3);
  // the forward's matmul ran inside forward(): its trace frame names the function and its line
  const script = `import pickle,json,sys; d=pickle.load(open(sys.argv[1],'rb')); print(json.dumps([e['frames'][:2] for e in d['device_traces'][0] if e['action']=='alloc']))`;
  const allocFrames = JSON.parse(execFileSync("python3", ["-c", script, join(e.dir, "snap.pickle")], { encoding: "utf8" })) as Array<
    Array<{ filename: string; line: number; name: string }>
  >;
  expect(allocFrames).toContainEqual([
    { filename: "Cell [2]", line: 2, name: "forward" },
    { filename: "Cell [2]", line: 4, name: "<module>" },
  ]);
}, 120_000);
