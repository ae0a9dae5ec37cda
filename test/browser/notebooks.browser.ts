/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// Every tutorial notebook run in JupyterLab 4 (and three in Notebook 7) in Chromium, as a student
// would: open it, keep the GradLab kernel it names, Run All, then read the DOM. Then each executed
// notebook is exported with Debian's nbconvert 6.5.3 and with nbconvert 7, and every figure must be
// visible in the exported page. Full-page screenshots land in test-artifacts/browser/.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO, SHOTS, VENV, clickMenu, inkPixels, startBrowser, startServer, until, type Server } from "./harness.ts";

const NOTEBOOKS = readdirSync(join(REPO, "notebooks"))
  .filter((f) => /^\d\d_.*\.ipynb$/.test(f))
  .sort();
const IN_NOTEBOOK7 = ["02_node_and_edge.ipynb", "05_engine.ipynb", "06_memory_lifecycle.ipynb"]; // a graph, tables, plots
/** Figures each notebook must show, by renderer (at least this many). */
const EXPECTED: Record<string, Partial<Record<Renderer, number>>> = {
  "02_node_and_edge.ipynb": { graph: 1 },
  "05_engine.ipynb": { table: 1, widget: 1 },
  "06_memory_lifecycle.ipynb": { vega: 3, widget: 1 }, // stages, timeline and memory_viz; the live plot is checked on its own
};
type Renderer = "vega" | "graph" | "svg" | "table" | "text" | "html" | "widget" | "other";
/** The notebook on screen (Lab keeps other tabs' panels in the DOM, hidden). */
const PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)";

let server: Server;
let browser: BrowserContext;
const executed = new Map<string, string>(); // notebook -> executed file on disk

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startServer();
  browser = await startBrowser();
});
afterAll(async () => {
  await browser?.close().catch(() => {});
  await server?.stop();
});

async function shoot(page: Page, name: string) {
  // Lab scrolls the notebook inside its own panel: grow the window to the notebook's height first.
  const h = await page.evaluate(() => {
    const panel = document.querySelector(".jp-NotebookPanel:not(.lm-mod-hidden)");
    if (!panel) return document.body.scrollHeight;
    // the notebook's scroller: the element whose content is taller than its box
    const tallest = Math.max(...[panel, ...panel.querySelectorAll("*")].map((e) => e.scrollHeight));
    return tallest + 200;
  });
  await page.setViewportSize({ width: 1280, height: Math.min(Math.max(h, 800), 12000) });
  await page.waitForTimeout(300);
  // Run All leaves the notebook scrolled to its last cell: show it from the top
  await page.evaluate(() => document.querySelectorAll(".jp-NotebookPanel:not(.lm-mod-hidden) *").forEach((e) => (e.scrollTop = 0)));
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true, timeout: 60_000 });
  await page.setViewportSize({ width: 1280, height: 1000 });
}

/** Installed before Run All: records how the live plot's cell output changes while it runs. */
const WATCH_LIVE = () => {
  const w = window as unknown as { __live: { renders: number; maxOutputs: number; runningSeen: boolean } };
  w.__live = { renders: 0, maxOutputs: 0, runningSeen: false };
  const cells = [...document.querySelectorAll(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell")];
  const cell = cells.find((c) => (c.querySelector(".jp-InputArea-editor")?.textContent ?? "").includes(".show()"));
  if (!cell) return false;
  const running = () => /\*/.test(cell.querySelector(".jp-InputPrompt")?.textContent ?? "");
  new MutationObserver((records) => {
    const outputs = cell.querySelectorAll(".jp-OutputArea-child").length;
    w.__live.maxOutputs = Math.max(w.__live.maxOutputs, outputs);
    if (!running()) return;
    w.__live.runningSeen = true;
    for (const r of records) {
      for (const n of r.addedNodes) {
        if (n instanceof Element && (n.matches("canvas, svg.marks") || n.querySelector("canvas, svg.marks"))) w.__live.renders++;
      }
    }
  }).observe(cell, { subtree: true, childList: true });
  return true;
};

/** What the page shows for each output, read from the DOM. */
const READ_OUTPUTS = () => {
  const out: Array<{ cell: number; mime: string; renderer: string; ok: boolean; detail: string }> = [];
  document.querySelectorAll(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell").forEach((cell, ci) => {
    cell.querySelectorAll(".jp-OutputArea-output").forEach((o) => {
      const mime = o.getAttribute("data-mime-type") ?? "";
      let renderer = "other",
        ok = true,
        detail = "";
      // Lab's Vega extension sets no data-mime-type; its widget has its own class.
      if (mime === "application/vnd.vegalite.v5+json" || o.classList.contains("jp-RenderedVegaLite")) {
        renderer = "vega";
        const c = o.querySelector(".vega-embed canvas, .vega-embed svg") as HTMLElement | null;
        ok = !!c && c.getBoundingClientRect().width > 50 && c.getBoundingClientRect().height > 50;
        detail = c ? `${c.tagName} ${Math.round(c.getBoundingClientRect().width)}x${Math.round(c.getBoundingClientRect().height)}` : "no vega view";
      } else if (mime === "text/html" && o.querySelector("picture.gradlab-figure")) {
        renderer = "graph";
        const img = o.querySelector("picture img") as HTMLImageElement;
        ok = img.complete && img.naturalWidth > 0 && img.currentSrc.startsWith("data:image/svg+xml");
        detail = `${img.naturalWidth}x${img.naturalHeight} ${img.currentSrc.slice(0, 20)}`;
      } else if (mime === "image/svg+xml") {
        renderer = "svg";
        const img = o.querySelector("img") as HTMLImageElement | null;
        ok = !!img && img.complete && img.naturalWidth > 0;
      } else if (mime === "text/html" && o.querySelector("table")) {
        renderer = "table";
        ok = o.querySelectorAll("tr").length > 0;
      } else if (mime === "text/html") renderer = "html";
      else if (mime === "application/vnd.jupyter.widget-view+json" || o.querySelector(":scope > .jupyter-widgets, .jupyter-widgets.widget-vbox")) {
        // drawn by jupyterlab_widgets' manager (torch.viz.stepper): a live view, not its error text
        renderer = "widget";
        ok = !!o.querySelector(".jupyter-widgets .widget-slider, .jupyter-widgets .widget-html") && !/Error displaying widget/.test(o.textContent ?? "");
        detail = (o.textContent ?? "").slice(0, 200);
      } else if (/^(text\/plain|application\/vnd\.jupyter\.(stdout|stderr))$/.test(mime)) {
        renderer = "text";
        detail = mime.endsWith("stderr") ? (o.textContent ?? "") : "";
      } else if (mime === "application/vnd.jupyter.error") {
        ok = false;
        detail = o.textContent ?? "";
      } else detail = `${o.className}: ${(o.innerHTML ?? "").slice(0, 300)}`;
      out.push({ cell: ci, mime, renderer, ok, detail });
    });
  });
  return out;
};

/** Each graph's SVG drawn inline with the page's fonts: text boxes that leave their node's shape. */
const GRAPH_OVERFLOW = () => {
  const bad: string[] = [];
  let nodes = 0;
  const host = document.createElement("div");
  host.style.cssText = "position:absolute;left:0;top:0;visibility:hidden";
  document.body.appendChild(host);
  for (const src of document.querySelectorAll(".jp-NotebookPanel:not(.lm-mod-hidden) picture.gradlab-figure source")) {
    const b64 = (src.getAttribute("srcset") ?? "").split(",")[1];
    host.innerHTML = new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
    for (const g of host.querySelectorAll("g.node")) {
      const shape = g.querySelector("polygon, ellipse, path") as SVGGraphicsElement | null;
      if (!shape) continue;
      nodes++;
      const s = shape.getBBox();
      for (const t of g.querySelectorAll("text")) {
        const b = (t as SVGGraphicsElement).getBBox();
        if (b.x < s.x - 0.5 || b.x + b.width > s.x + s.width + 0.5 || b.y < s.y - 1 || b.y + b.height > s.y + s.height + 1) {
          bad.push(`"${t.textContent}" ${b.x.toFixed(1)}+${b.width.toFixed(1)} in ${s.x.toFixed(1)}+${s.width.toFixed(1)}`);
        }
      }
    }
  }
  host.remove();
  return { nodes, bad };
};

async function runNotebook(page: Page, url: string, name: string, app: "lab" | "notebook7") {
  await page.goto(url, { timeout: 60_000 });
  // The notebook names the GradLab kernel: it must start without asking.
  await until(
    `${name}: the GradLab kernel to be idle`,
    90_000,
    async () => {
      if (await page.locator(".jp-Dialog").count()) throw new Error(`a dialog asks: ${await page.locator(".jp-Dialog").innerText()}`);
      const name = await page
        .locator(`${PANEL} .jp-Toolbar-kernelName`)
        .first()
        .innerText()
        .catch(() => "");
      const idle = await page.locator(`${PANEL} .jp-Notebook-ExecutionIndicator[data-status="idle"]`).count();
      return name.includes("GradLab") && idle > 0 && (await page.locator(`${PANEL} .jp-CodeCell`).count()) > 0;
    },
    300,
  );
  expect(await page.locator(PANEL).count(), "one notebook on screen").toBe(1);
  const watching = await page.evaluate(WATCH_LIVE);
  await clickMenu(page, "Run", "Run All Cells");
  const nCells = await page.locator(`${PANEL} .jp-CodeCell`).count();
  await until(
    `${name}: every cell to run`,
    240_000,
    async () => {
      if (await page.locator(".jp-Dialog").count()) throw new Error(`a dialog asks: ${await page.locator(".jp-Dialog").innerText()}`);
      const prompts = await page.locator(`${PANEL} .jp-CodeCell .jp-InputPrompt`).allInnerTexts();
      const done = prompts.filter((p) => /\[\d+\]/.test(p)).length;
      const idle = await page.locator(`${PANEL} .jp-Notebook-ExecutionIndicator[data-status="idle"]`).count();
      return done === nCells && idle > 0;
    },
    500,
  );
  await page.waitForTimeout(1500); // last renders (Vega draws asynchronously)
  const outputs = await page.evaluate(READ_OUTPUTS);
  const overflow = await page.evaluate(GRAPH_OVERFLOW);
  const live = watching ? await page.evaluate(() => (window as unknown as { __live: unknown }).__live) : null;
  await shoot(page, `${app}-${name.replace(/\.ipynb$/, "")}`);
  return { outputs, overflow, live };
}

function checkOutputs(name: string, r: Awaited<ReturnType<typeof runNotebook>>) {
  const errors = r.outputs.filter((o) => o.mime === "application/vnd.jupyter.error");
  expect(
    errors.map((e) => e.detail.slice(0, 500)),
    `${name}: error outputs`,
  ).toEqual([]);
  const warnings = r.outputs.filter((o) => /warning TS\d+|artificially reduced|^Warning:/m.test(o.detail));
  expect(
    warnings.map((e) => e.detail.slice(0, 300)),
    `${name}: warnings in the output`,
  ).toEqual([]);
  expect(
    r.outputs.filter((o) => !o.ok).map((o) => `${o.cell} ${o.mime} ${o.renderer} ${o.detail}`),
    `${name}: outputs not drawn`,
  ).toEqual([]);
  // text/markdown is the exporters' copy of a plot: Lab must prefer the Vega view to it.
  expect(
    r.outputs.filter((o) => o.renderer === "other").map((o) => `${o.mime} ${o.detail}`),
    `${name}: unexpected renderers`,
  ).toEqual([]);
  for (const [renderer, n] of Object.entries(EXPECTED[name] ?? {})) {
    expect(r.outputs.filter((o) => o.renderer === renderer).length, `${name}: ${renderer} outputs`).toBeGreaterThanOrEqual(n!);
  }
  expect(r.overflow.bad, `${name}: graph text overflowing its node`).toEqual([]);
  if ((EXPECTED[name]?.graph ?? 0) > 0) expect(r.overflow.nodes).toBeGreaterThan(3);
}

async function save(page: Page, name: string): Promise<string> {
  const file = join(server.root, name);
  const before = statSync(file).mtimeMs;
  await page.keyboard.press("Control+s");
  await until(`${name} to be saved`, 30_000, () => {
    if (statSync(file).mtimeMs === before) return false;
    const nb = JSON.parse(readFileSync(file, "utf8"));
    return nb.cells.some((c: { outputs?: unknown[] }) => (c.outputs ?? []).length > 0);
  });
  return file;
}

/** Each app starts the notebook on a fresh kernel (Notebook 7 would otherwise join Lab's session). */
async function shutdownKernels() {
  const auth = { Authorization: `token ${server.token}` };
  const sessions = (await (await fetch(`${server.url}/api/sessions`, { headers: auth, signal: AbortSignal.timeout(10_000) })).json()) as Array<{ id: string }>;
  for (const s of sessions) await fetch(`${server.url}/api/sessions/${s.id}`, { method: "DELETE", headers: auth, signal: AbortSignal.timeout(30_000) });
}

describe("JupyterLab 4", () => {
  for (const name of NOTEBOOKS) {
    it(`runs ${name} with no error and the expected renderers`, async () => {
      const page = await browser.newPage();
      try {
        const r = await runNotebook(page, `${server.url}/lab/tree/${name}?reset&token=${server.token}`, name, "lab");
        executed.set(name, await save(page, name)); // exported below whatever this test finds
        checkOutputs(name, r);
        if (name === "06_memory_lifecycle.ipynb") {
          expect(r.live, "the live plot's cell").not.toBeNull();
          const live = r.live as { renders: number; maxOutputs: number; runningSeen: boolean };
          expect(live.maxOutputs, "the live plot stays one output area").toBe(1);
          expect(live.renders, "the live plot redraws during its loop").toBeGreaterThanOrEqual(2);
        }
      } finally {
        await page.close();
        await shutdownKernels();
      }
    });
  }
});

describe("Notebook 7", () => {
  for (const name of IN_NOTEBOOK7) {
    it(`runs ${name}`, async () => {
      const page = await browser.newPage();
      try {
        const r = await runNotebook(page, `${server.url}/notebooks/${name}?token=${server.token}`, name, "notebook7");
        checkOutputs(name, r);
      } finally {
        await page.close();
        await shutdownKernels();
      }
    });
  }
});

const EXPORTERS: Array<[string, string[]]> = [
  ["nbconvert6", ["/usr/bin/python3", "-m", "nbconvert"]],
  ["nbconvert7", [join(VENV, "bin", "jupyter-nbconvert")]],
];

describe("static exports", () => {
  // One nbconvert run per exporter for all the executed notebooks (its start-up is most of its time).
  const exported = new Map<string, { status: number | null; stderr: string; dir: string }>();
  beforeAll(() => {
    const files = NOTEBOOKS.map((n) => executed.get(n)).filter((f): f is string => !!f);
    for (const [tag, cmd] of EXPORTERS) {
      const dir = join(server.root, "..", `export-${tag}`);
      mkdirSync(dir, { recursive: true });
      const r = files.length
        ? spawnSync(cmd[0], [...cmd.slice(1), "--to", "html", "--output-dir", dir, ...files], { encoding: "utf8", timeout: 200_000 })
        : null;
      exported.set(tag, { status: r ? r.status : null, stderr: r ? `${r.stderr}${r.error ?? ""}` : "nothing to export", dir });
    }
  });
  for (const name of NOTEBOOKS) {
    for (const [tag] of EXPORTERS) {
      it(`${name} exported by ${tag} shows every figure`, async () => {
        const file = executed.get(name);
        expect(file, `${name} was not run in JupyterLab`).toBeDefined();
        const run = exported.get(tag)!;
        expect(run.status, `${tag} failed:\n${run.stderr.slice(-3000)}`).toBe(0);
        const html = join(run.dir, name.replace(/\.ipynb$/, ".html"));
        const nb = JSON.parse(readFileSync(file!, "utf8"));
        const figures = nb.cells
          .flatMap((c: { outputs?: Array<{ data?: Record<string, unknown> }> }) => c.outputs ?? [])
          .filter((o: { data?: Record<string, unknown> }) => o.data && ("image/svg+xml" in o.data || "application/vnd.vegalite.v5+json" in o.data)).length;
        const page = await browser.newPage();
        // The exported page alone: its links to CDNs (MathJax, require.js) are refused, not waited for.
        await page.route(/^https?:/, (route) => route.abort());
        try {
          await page.goto(`file://${html}`, { timeout: 60_000 });
          await page.waitForLoadState("load", { timeout: 60_000 });
          const imgs = page.locator(".jp-OutputArea-output img, .output_area img");
          const n = await imgs.count();
          let visible = 0;
          const blank: string[] = [];
          for (let i = 0; i < n; i++) {
            const img = imgs.nth(i);
            await img.scrollIntoViewIfNeeded({ timeout: 10_000 });
            const box = await img.boundingBox();
            if (!box || box.width < 20 || box.height < 20) {
              blank.push(`img ${i}: ${JSON.stringify(box)}`);
              continue;
            }
            const ink = inkPixels(await img.screenshot({ timeout: 30_000 }));
            if (ink > 200) visible++;
            else blank.push(`img ${i}: ${ink} ink pixels`);
          }
          expect(blank, `${tag} ${name}: blank figures`).toEqual([]);
          expect(visible, `${tag} ${name}: visible figures`).toBeGreaterThanOrEqual(figures);
          await page.setViewportSize({ width: 1100, height: 1000 });
          await page.screenshot({ path: join(SHOTS, `${tag}-${name.replace(/\.ipynb$/, "")}.png`), fullPage: true, timeout: 60_000 });
        } finally {
          await page.close();
        }
      });
    }
  }
});
