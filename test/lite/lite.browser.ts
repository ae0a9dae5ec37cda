// GradLab Lite in a real browser (npm run test:lite): `gradlab lite build` makes the static site,
// it is served from 127.0.0.1, and Debian's Chromium opens JupyterLab-in-the-browser with WebGPU on
// (--enable-unsafe-webgpu: SwiftShader's adapter) and, once, off. The GradLab kernel runs in a Web
// Worker on the browser's WebGPU; nothing is installed or hosted beyond the site's files.
// Checked: the course notebooks run with Run All without an error and with the server kernel's
// exercise verdicts; cells print what the server kernel prints; figures come from the browser's adapter
// and are internally consistent; without WebGPU the first cell says which browsers and flags have it;
// no request leaves the site's origin. Screenshots land in test-artifacts/lite/ (look at them).
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { Parser } from "pickleparser";
import { textDifferences } from "./compare.ts";
import { buildAndServe, foreign, openNotebook, REPO, runAll, runNewCell, SHOTS, showFirstDisplay, startChromium, textOf, type Site } from "./harness.ts";

let site: Site;
let browser: Browser;
const allRequests: string[] = [];

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  site = await buildAndServe();
  browser = await startChromium(true);
});
afterAll(async () => {
  await browser?.close();
  site?.close();
});

/** The verdicts exercise checks print: "✓ name", "✗ name" (the values after the name come from each
 *  GPU's float arithmetic and may differ in the last digits), or "? name" where check.memory's answer
 *  differs from a figure the browser may have counted before reclaiming (notebooks/check.ts). */
const verdicts = (text: string) =>
  text
    .split("\n")
    .filter((l) => /^[✓✗?] /.test(l))
    .map((l) => l.replace(/^([✓✗?] [^:]*):.*$/, "$1"));
/** The warning the browser prints once, with the first memory figure (the server reclaims at once). */
const RECLAIM_WARNING = /^GradLabWarning: In a browser GradLab cannot reclaim[^\n]*\n/m;
/** A type checker's warning in a cell's output (TypeScript's diagnostic codes). */
const TYPE_WARNING = /\bwarning\b.*\bTS\d{4}\b/;
/** A cell that reads memory figures or a clock: what it prints may differ in the browser, which frees
 *  dropped tensors later (docs/lite.md), on another GPU at another speed. Read from its code (memory and
 *  timing calls) and its text (sizes, freed bytes, check.memory's "no verdict here"). */
const READS_FIGURES =
  /memory_(allocated|reserved|stats|summary|snapshot)|max_memory|bytes_freed|performance\.now|Date\.now|\d\s?(B|bytes|KiB|MiB|GiB|MB)\b|\bfreed\b|no verdict here \(run the notebook on a GradLab server|no file system in the browser/;

/** Course notebooks to run (GRADLAB_LITE_NOTEBOOKS=01,09 picks some by number; default: all). */
const COURSE = readdirSync(join(REPO, "notebooks"))
  .filter((f) => /^\d\d_.*\.ipynb$/.test(f))
  .filter((f) => !process.env.GRADLAB_LITE_NOTEBOOKS || process.env.GRADLAB_LITE_NOTEBOOKS.split(",").some((n) => f.startsWith(n)));

describe("GradLab Lite", () => {
  it("builds a site from npm packages alone, and serves the course from it", async () => {
    expect(site.buildLine).toMatch(/^GradLab Lite site in .*: [\d.]+ MiB, built in/);
    const res = await fetch(`${site.url}/api/contents/all.json`);
    const names = ((await res.json()) as { content: { name: string }[] }).content.map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining(["01_dynamic_graph.ipynb", "check.ts", "solutions"]));
    expect((await fetch(`${site.url}/nothing-here`)).status).toBe(404);
  });

  it("runs the smoke notebook as the server kernel does: values, streams, live display updates", async () => {
    const { page, requests, errors } = await openNotebook(browser, site, "smoke.ipynb");
    const { cells } = await runAll(page);
    allRequests.push(...requests);
    await page.screenshot({ path: join(SHOTS, "smoke.png"), fullPage: true });
    expect(errors).toEqual([]);
    expect(textOf(cells[0].outputs)).toBe("hypot 5\n");
    expect(textOf(cells[1].outputs)).toBe("42\n");
    // display_id: the display is updated in place (by cell 3, then from cell 4 through its handle)
    const html = cells[2].outputs.find((o) => o.output_type === "display_data")?.data?.["text/html"];
    expect(html).toBe("<b>third</b>");
    expect(textOf(cells[2].outputs)).toContain("'a/b'");
    expect(textOf(cells[3].outputs)).toBe("'updated'\n");
    await page.close();
  });

  it("puts tensors on the browser's own adapter, with exact and consistent memory figures", async () => {
    const { page, requests } = await openNotebook(browser, site, "smoke.ipynb");
    allRequests.push(...requests);
    const out = await runNewCell(
      page,
      [
        "const props = await torch.cuda.get_device_properties();",
        "const before = torch.cuda.memory_allocated();",
        "const big = torch.ones(1024, 1024);",
        "const total = big.sum();",
        "const s = await total.item();",
        "const during = torch.cuda.memory_allocated() - before;",
        "big.dispose();",
        "total.dispose();",
        "console.log(JSON.stringify({ name: props.name, arch: props.architecture, binding: props.limits.maxStorageBufferBindingSize, s, during, after: torch.cuda.memory_allocated() - before, sync: torch.cuda.memory_stats()['reclaim.synchronous'] }));",
      ].join("\n"),
    );
    const r = JSON.parse(textOf(out).trim().split("\n").pop()!);
    expect(r.s).toBe(1024 * 1024);
    // float32: 4 MiB, and the scalar's 512-byte block (PyTorch's rounding); disposed, both go back (a
    // temporary no variable names would stay counted here until the browser collects it)
    expect(r.during).toBe(4 * 1024 * 1024 + 512);
    expect(r.after).toBe(0);
    expect(r.sync).toBe(0); // a browser cannot reclaim synchronously, and says so
    expect(r.arch).toBe("swiftshader"); // the adapter Chromium gives here, read from the adapter
    expect(r.binding).toBeGreaterThan(0);
    console.log(`adapter: ${r.name} (${r.arch}), maxStorageBufferBindingSize ${r.binding}`);
    // check.memory: an answer that equals the browser's figure gets its ✓; one below it no ✗, since the
    // figure may still count a tensor the browser has not freed; one above it is wrong here too (✗), as is
    // one that differs from an exact figure or is below a figure of freed bytes
    const checked = await runNewCell(
      page,
      [
        'import { check } from "./check.ts";',
        "const b2 = torch.cuda.memory_allocated();",
        "const kept = torch.ones(256, 1024);",
        'check.memory("a 1 MiB tensor", 2 ** 20, torch.cuda.memory_allocated() - b2);',
        'check.memory("a wrong answer", 0, torch.cuda.memory_allocated() - b2, "count kept", { reveal: false });',
        'check.memory("too much", 3 * 2 ** 20, torch.cuda.memory_allocated() - b2);',
        'check.memory("from shapes", 0, kept.numel() * kept.element_size(), undefined, { figure: "exact" });',
        'check.memory("freed", 0, 2 ** 20, undefined, { figure: "freed" });',
        'check.memory("more freed", 3 * 2 ** 20, 2 ** 20, undefined, { figure: "freed" });',
      ].join("\n"),
    );
    expect(textOf(checked)).toBe(
      [
        "✓ a 1 MiB tensor",
        "? a wrong answer: got 0 B, not this browser's count, which may still include tensors PyTorch has freed: no verdict here (run the notebook on a GradLab server for one)",
        "  hint · 提示: count kept",
        "✗ too much: got 3.00 MiB, expected 1.00 MiB",
        "✗ from shapes: got 0 B, expected 1.00 MiB",
        "✗ freed: got 0 B, expected 1.00 MiB",
        "? more freed: got 3.00 MiB, expected 1.00 MiB by this browser's count, which may miss bytes PyTorch has freed: no verdict here (run the notebook on a GradLab server for one)",
        "",
      ].join("\n"),
    );
    // a PyTorch error in PyTorch's words, mapped to the cell's line
    const err = await runNewCell(page, "const a = torch.ones(2, 3);\na.matmul(torch.ones(2, 3));");
    const e = err.find((o) => o.output_type === "error")!;
    expect(e.evalue).toBe("mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
    const tb = e.traceback.join("\n").replace(/\x1b\[[0-9;]*m/g, "");
    expect(tb).toContain("Cell [3], line 2:\n    1 const a = torch.ones(2, 3);\n--> 2 a.matmul(torch.ones(2, 3));");
    // completion and inspection from live values, as the server kernel's live part gives them
    const asked = await page.evaluate(async () => {
      const k = (window as any).jupyterapp.shell.currentWidget.sessionContext.session.kernel;
      const c = await k.requestComplete({ code: "torch.cu", cursor_pos: 8 });
      const i = await k.requestInspect({ code: "props", cursor_pos: 5, detail_level: 0 });
      return { matches: c.content.matches as string[], start: c.content.cursor_start, found: i.content.found, text: i.content.data?.["text/plain"] as string };
    });
    expect(asked.matches).toContain("cuda");
    expect(asked.start).toBe(6);
    expect(asked.found).toBe(true);
    expect(asked.text).toContain("swiftshader");
    await page.screenshot({ path: join(SHOTS, "adapter.png"), fullPage: true });
    // interrupt: a cell waiting in a loop stops with KeyboardInterrupt, and the kernel stays usable
    const looping = runNewCell(page, "let turns = 0;\nwhile (true) { turns++; await new Promise((r) => setTimeout(r, 10)); }");
    await page.waitForFunction(() => (window as any).jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === "busy");
    await page.waitForTimeout(500);
    await page.evaluate(() => (window as any).jupyterapp.shell.currentWidget.sessionContext.session.kernel.interrupt());
    expect((await looping).find((o) => o.output_type === "error")?.ename).toBe("KeyboardInterrupt");
    expect(textOf(await runNewCell(page, "turns > 0"))).toBe("true\n");
    // restart: a fresh Worker, so no variable and no tensor survives
    await page.evaluate(() => (window as any).jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart());
    const fresh = await runNewCell(page, "console.log(typeof props, torch.cuda.memory_allocated())");
    expect(textOf(fresh)).toBe("undefined 0\n");
    await page.close();
  });

  it("writes torch.cuda.memory._dump_snapshot's pickle into the file browser, as memory_viz reads it", async () => {
    const { page, requests } = await openNotebook(browser, site, "smoke.ipynb");
    allRequests.push(...requests);
    const pageErrors: string[] = [];
    page.on("console", (m) => void (m.type() === "error" && pageErrors.push(m.text())));
    const out = await runNewCell(
      page,
      [
        "const dumped = torch.cuda.simulate({ total_memory: 2 ** 30 }, () => {",
        "  torch.cuda.memory._record_memory_history();",
        "  const a = torch.ones(1024, 1024);",
        "  const b = a.mul(2);",
        '  torch.cuda.memory._dump_snapshot("two.pickle");',
        '  torch.cuda.memory._dump_snapshot("no-such-folder/two.pickle");',
        "  const segments = torch.cuda.memory_snapshot();",
        "  torch.cuda.memory._record_memory_history(null);",
        "  torch.del(a, b);",
        "  return segments;",
        "});",
        "console.log(JSON.stringify(dumped));",
        'try { torch.cuda.memory._dump_snapshot("../../outside.pickle"); } catch (e) { console.log(String(e)); }',
        // names that are folders ("" and "." are the notebook's own): refused, as the server's open() fails
        'for (const p of ["", ".", "solutions/.."]) { try { torch.cuda.memory._dump_snapshot(p); } catch (e) { console.log(String(e)); } }',
        'torch.cuda.memory._dump_snapshot("snap 100%.pickle");',
      ].join("\n"),
    );
    const [segmentsJson, ...refused] = textOf(out).replace(RECLAIM_WARNING, "").trim().split("\n");
    expect(refused).toEqual(
      ["../../outside.pickle", "", ".", "solutions/.."].map((p) => expect.stringContaining(`Cannot write "${p}": name a file in the course's folder`)),
    );
    // the page saves the file after the statement: the drive (what the file browser lists) has it soon
    let base64: string | null = null;
    // (no time limit of its own: the page saves when it gets to it, which a loaded machine delays; the test's
    // time-out ends a save that never comes)
    while (base64 === null) {
      base64 = await page.evaluate(async () => {
        try {
          const m = await (window as any).jupyterapp.serviceManager.contents.get("two.pickle", { content: true, format: "base64" });
          return m.content as string;
        } catch {
          return null;
        }
      });
      if (base64 === null) await page.waitForTimeout(100);
    }
    const bytes = Buffer.from(base64!, "base64");
    // PyTorch's pickle, as the server kernel writes it: an independent unpickler reads the same segments
    // the cell printed, and the Python reader of test/fixtures (memory_viz's checks) counts 8 MiB allocated
    expect((new Parser().parse(bytes) as { segments: unknown }).segments).toEqual(JSON.parse(segmentsJson));
    const summary = JSON.parse(execFileSync("python3", [join(REPO, "test", "fixtures", "check_snapshot.py"), "-"], { input: bytes, encoding: "utf8" }));
    expect(summary.allocated).toBe(8 * 2 ** 20);
    // a folder that does not exist: as open() in Python, no file; the page says why (its notification
    // and the console: the cell had moved on when the drive answered)
    while (!pageErrors.some((e) => e.includes("no-such-folder"))) await page.waitForTimeout(100);
    // a name JupyterLite would decode as a URI is saved as written; the course's folders stay folders
    const root = await page.evaluate(async () =>
      ((await (window as any).jupyterapp.serviceManager.contents.get("", { content: true })).content as Array<{ name: string; type: string }>).map(
        (c) => `${c.name} ${c.type}`,
      ),
    );
    expect(root).toEqual(expect.arrayContaining(["snap 100%.pickle file", "solutions directory", "two.pickle file"]));
    expect(pageErrors.join("\n")).toMatch(/GradLab could not save no-such-folder\/two\.pickle: .*Directory does not exist/);
    await page.close();
  });

  it("completes, inspects and type-checks with the server kernel's language service: Tab after `torch.` and `x.`, Shift+Tab on torch.ones, a type warning", async () => {
    const { page, requests, errors, openMs } = await openNotebook(browser, site, "smoke.ipynb");
    allRequests.push(...requests);
    // the first answer only TypeScript can give: `q` is declared in the cell being edited, which has not
    // run, so no live value has it (the server kernel waits for its service on such a request too)
    const first = await page.evaluate(async () => {
      const k = (window as any).jupyterapp.shell.currentWidget.sessionContext.session.kernel;
      const t0 = performance.now();
      const code = "const q = torch.zeros(2);\nq.";
      const r = await k.requestComplete({ code, cursor_pos: code.length });
      return {
        ms: performance.now() - t0,
        matches: r.content.matches as string[],
        types: r.content.metadata._jupyter_types_experimental as { text: string; type: string }[],
      };
    });
    console.log(
      `first completion from the language service: ${Math.round(first.ms)} ms after the kernel was idle, ${Math.round(openMs + first.ms)} ms after opening the link`,
    );
    expect(first.matches).toEqual(expect.arrayContaining(["backward", "matmul", "sum", "grad"]));
    expect(first.types.find((t) => t.text === "backward")?.type).toBe("method"); // TypeScript's kind, not "value"
    expect(requests.some((u) => u.endsWith("/gradlab/dist/typings.json"))).toBe(true);

    // what a student does: Tab in a cell after `torch.`, in JupyterLab's completer
    await runNewCell(page, "const x = torch.ones(2, 3);");
    await typeInNewCell(page, "torch.");
    await page.keyboard.press("Tab");
    expect(await completerItems(page, "zeros")).toEqual(expect.arrayContaining(["ones", "zeros", "matmul", "cuda"]));
    await page.screenshot({ path: join(SHOTS, "complete-torch.png") });
    await page.keyboard.press("Escape");
    // `x.` for the tensor the cell before declared: the tensor's methods, with their kinds
    await typeInNewCell(page, "x.");
    await page.keyboard.press("Tab");
    expect(await completerItems(page, "backward")).toEqual(expect.arrayContaining(["backward", "matmul", "sum", "grad", "shape"]));
    await page.screenshot({ path: join(SHOTS, "complete-tensor.png") });
    await page.keyboard.press("Escape");
    // Shift+Tab on torch.ones: its signature in JupyterLab's tooltip
    await typeInNewCell(page, "torch.ones");
    await page.keyboard.press("Shift+Tab");
    const tooltip = page.locator(".jp-Tooltip");
    await tooltip.waitFor({ state: "visible", timeout: 60_000 });
    const tip = (await tooltip.textContent()) ?? "";
    await page.screenshot({ path: join(SHOTS, "inspect-ones.png") });
    expect(tip).toContain("const ones: (...args: ShapeArgs) => Tensor");
    // a wrong name a student might type: no completer error, nothing offered, the kernel still answers
    const wrong = await page.evaluate(async () => {
      const k = (window as any).jupyterapp.shell.currentWidget.sessionContext.session.kernel;
      return (await k.requestComplete({ code: "torch.onez(", cursor_pos: 99 })).content;
    });
    expect(wrong.status).toBe("ok");
    // a type error: the cell runs, and the language Worker's warning prints under it, as the server's
    // (published when the check is done; the cell waits 3 s, far longer than a check of one line takes
    // once the service is loaded, 30-140 ms above, so the warning lands before the cell ends)
    const typed = textOf(await runNewCell(page, 'const typo: number = "three";\nawait new Promise((r) => setTimeout(r, 3000));\nconsole.log("ran", typo);'));
    expect(typed).toMatch(/warning\x1b\[0m TS2322 \(Cell \[\d+\], line 1:7\): Type 'string' is not assignable to type 'number'/);
    expect(typed).toContain("ran three");
    expect(errors).toEqual([]);
    await page.close();
  });

  it.each(COURSE)("%s: Run All with no error, the server kernel's exercise verdicts and its text", async (nb) => {
    const { page, requests, errors, openMs } = await openNotebook(browser, site, nb);
    const { cells, firstOutputMs, ms } = await runAll(page);
    allRequests.push(...requests);
    console.log(`${nb}: opened in ${openMs} ms, first cell ran ${firstOutputMs} ms after Run All, all cells in ${ms} ms`);
    // graphs and plots are drawn by the browser (JupyterLab's SVG and Vega renderers): the screenshot
    // shows the first one
    const shown = await showFirstDisplay(page);
    if (nb.startsWith("00_")) expect(shown).toBe("vega");
    if (nb.startsWith("02_")) expect(shown).toBe("svg");
    await page.screenshot({ path: join(SHOTS, nb.replace(/\.ipynb$/, ".png")) });
    expect(errors).toEqual([]);
    const failed = cells.flatMap((c) => c.outputs.filter((o) => o.output_type === "error").map((o) => `${o.ename}: ${o.evalue}`));
    expect(failed).toEqual([]);
    // The server kernel's verdicts for the untouched notebook, from the executed copy `gradlab run`
    // writes: an unsolved exercise prints ✗ in both.
    const browserTexts = cells.map((c) => textOf(c.outputs));
    const serverTexts = serverText(nb);
    const browserVerdicts = verdicts(browserTexts.join(""));
    const server = verdicts(serverTexts.join(""));
    expect(server.length).toBeGreaterThan(0);
    // every course check.memory is judged in the browser as on the server: its figure is exact there (00, 06,
    // 09: measured in a synchronous stretch whose tensors are all freed without a collection), freed bytes
    // (05) or a count from shapes (10), so the templates' unsolved answers get the server's ✗, not "?"
    expect(browserVerdicts).toEqual(server);
    // the whole text, numbers up to float rounding (compare.ts): what differs is written down, and only
    // cells that read memory figures or clocks may differ (docs/lite.md says why)
    const differences = textDifferences(
      serverTexts,
      browserTexts.map((t) => t.replace(RECLAIM_WARNING, "")),
    );
    // (a type warning is never the figure's: the browser's checker once lacked a Worker's globals, and
    // "Cannot find name 'console'" passed as a difference of cells that read memory figures)
    const inherent = (d: { cell: number; text: string }) =>
      d.cell >= 0 && !TYPE_WARNING.test(d.text) && [serverTexts[d.cell], browserTexts[d.cell], cells[d.cell].source].some((t) => READS_FIGURES.test(t));
    mkdirSync(join(SHOTS, "differences"), { recursive: true });
    const listing = differences.map((d) => `${inherent(d) ? "(memory figure or clock) " : ""}${d.text}\n`).join("");
    writeFileSync(join(SHOTS, "differences", nb.replace(/\.ipynb$/, ".txt")), listing);
    console.log(
      `${nb}: ${differences.length} lines differ from the server kernel's, ${differences.filter(inherent).length} of them in cells that read memory figures or clocks`,
    );
    expect(differences.filter((d) => !inherent(d)).map((d) => d.text)).toEqual([]);
    await page.close();
  });

  // The solutions of exercises that check.memory checks: the right answer gets its ✓ in the browser too,
  // as on the server (the exercises tier: every check of a solution passes there)
  const SOLVED: Array<[string, string]> = [
    ["00_overview.ipynb", "bytes kept after forward"],
    ["05_engine.ipynb", "bytes freed by releases"],
    ["06_memory_lifecycle.ipynb", "your predicted peak at batch 4096"],
    ["09_checkpointing.ipynb", "your prediction of the activations after forward"],
    ["10_hooks.ipynb", "activation bytes reported by the hooks"],
  ];
  it.each(SOLVED.filter(([nb]) => COURSE.includes(nb)))("solutions/%s: every check passes, '%s' (check.memory) included", async (nb, memoryCheck) => {
    const { page, requests, errors } = await openNotebook(browser, site, `solutions/${nb}`);
    const { cells } = await runAll(page);
    allRequests.push(...requests);
    expect(errors).toEqual([]);
    const all = verdicts(cells.map((c) => textOf(c.outputs)).join(""));
    expect(all).toContain(`✓ ${memoryCheck}`);
    expect(all.filter((v) => !v.startsWith("✓ "))).toEqual([]);
    await page.close();
  });

  it("without WebGPU, says so in the first cell's output, and plain TypeScript still runs", async () => {
    const plain = await startChromium(false);
    try {
      const { page } = await openNotebook(plain, site, "smoke.ipynb");
      const { cells } = await runAll(page);
      await page.screenshot({ path: join(SHOTS, "no-webgpu.png"), fullPage: true });
      const first = textOf(cells[0].outputs);
      expect(first).toContain("GradLab needs WebGPU");
      expect(first).toMatch(/Chrome and Edge 113\+/);
      expect(first).toContain("--enable-unsafe-webgpu");
      expect(first).toContain("hypot 5");
      const out = await runNewCell(page, "torch.ones(2)");
      expect(out.find((o) => o.output_type === "error")?.evalue).toContain("no WebGPU adapter");
    } finally {
      await plain.close();
    }
  });

  it("requests nothing from any other origin", () => {
    expect(allRequests.length).toBeGreaterThan(50);
    expect(allRequests.some((u) => u.endsWith("/files/check.ts"))).toBe(true); // the Worker's own fetches are seen too
    expect(foreign(site, allRequests)).toEqual([]);
  });
});

/** The text the server kernel prints for each code cell of the notebook: `gradlab run` over the protocol, on a copy of
 *  the course (the notebook imports ./check.ts beside it). */
function serverText(nb: string): string[] {
  serverCopy ??= (() => {
    const dir = join(mkdtempSync(join(tmpdir(), "gradlab-lite-server-")), "notebooks");
    cpSync(join(REPO, "notebooks"), dir, { recursive: true });
    return dir;
  })();
  const out = join(serverCopy, `executed-${nb}`);
  const r = spawnSync(process.execPath, [join(REPO, "bin", "gradlab.js"), "run", join(serverCopy, nb), "-o", out], { encoding: "utf8", timeout: 300_000 });
  if (r.status !== 0) throw new Error(`gradlab run ${nb} failed: ${r.stderr}`);
  const cells = JSON.parse(readFileSync(out, "utf8")).cells as Array<{ cell_type: string; outputs?: Array<Record<string, any>> }>;
  return cells.filter((c) => c.cell_type === "code").map((c) => textOf(c.outputs ?? []));
}
let serverCopy: string | undefined;

/** Appends an empty code cell to the open notebook and types `text` into its editor, as a student does. */
async function typeInNewCell(page: Page, text: string): Promise<void> {
  const index = await page.evaluate(() => {
    const w = (window as any).jupyterapp.shell.currentWidget;
    const n = w.content.model.cells.length;
    w.content.model.sharedModel.insertCell(n, { cell_type: "code", source: "" });
    w.content.activeCellIndex = n;
    return n;
  });
  const editor = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".cm-content");
  await editor.scrollIntoViewIfNeeded();
  await editor.click();
  await page.keyboard.type(text);
}

/** The names JupyterLab's completer shows, once it shows `expected` (it renders its list in chunks). */
async function completerItems(page: Page, expected: string): Promise<string[]> {
  await page.waitForFunction((name) => [...document.querySelectorAll(".jp-Completer-item .jp-Completer-match")].some((e) => e.textContent === name), expected, {
    timeout: 60_000,
    polling: 100,
  });
  return page.$$eval(".jp-Completer-item .jp-Completer-match", (els) => els.map((e) => e.textContent ?? ""));
}
