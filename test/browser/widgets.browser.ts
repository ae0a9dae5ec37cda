/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// torch.widgets and torch.viz.stepper where students see them: JupyterLab 4 and Notebook 7 render them
// with the widget manager they ship (jupyterlab_widgets), nothing of GradLab's own in the page. In
// both, notebook 05's stepper is dragged with the mouse and its drawing and memory bar must follow
// (each redraw is a round trip: the slider's update reaches the kernel, whose observer sends the new
// caption, bar and drawing). Play must walk to the last step. A widget must survive a kernel restart
// with no error on the page, and the cell run again must give a working widget.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SHOTS, clickMenu, startBrowser, startServer, until, type Server } from "./harness.ts";

let server: Server;
/** Notebooks that opened with a Select Kernel dialog (see openAndRunAll) */
const kernelDialogs: string[] = [];
let browser: BrowserContext;
const PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)";

beforeAll(async () => {
  server = await startServer();
  browser = await startBrowser();
  // A first load of the app in a fresh profile (here, on a loaded machine) once failed in a plugin's
  // settings ("Cannot read properties of undefined (reading 'schema')") and the notebook's kernel never
  // started: load JupyterLab once, untested, before the pages these tests look at.
  const warm = await browser.newPage();
  await warm.goto(`${server.url}/lab?token=${server.token}`, { timeout: 120_000 });
  await warm
    .locator(".jp-LabShell")
    .waitFor({ timeout: 120_000 })
    .catch(() => {});
  await warm.waitForTimeout(3000);
  await warm.close();
  // a notebook of one widget cell, for the restart
  const cell = (src: string) => ({ cell_type: "code", execution_count: null, id: `c${src.length}`, metadata: {}, outputs: [], source: src });
  writeFileSync(
    join(server.root, "widget_restart.ipynb"),
    JSON.stringify({
      cells: [
        cell(
          'const s = new torch.widgets.IntSlider({ max: 10, description: "n" });\n' +
            'const echo = new torch.widgets.HTML("<b class=\\"echo\\">n=0</b>");\n' +
            's.observe((c) => (echo.value = `<b class="echo">n=${c.new}</b>`), "value");\n' +
            "new torch.widgets.VBox([s, echo])",
        ),
      ],
      metadata: { kernelspec: { name: "gradlab", display_name: "GradLab (TypeScript · WebGPU)", language: "typescript" } },
      nbformat: 4,
      nbformat_minor: 5,
    }),
  );
});
afterAll(async () => {
  if (kernelDialogs.length) console.warn(`Select Kernel dialogs accepted for: ${kernelDialogs.join(", ")}`);
  await browser?.close().catch(() => {});
  await server?.stop();
});

/** Errors the page reports: uncaught exceptions and console errors. */
function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()}`);
  });
  return errors;
}

async function openAndRunAll(page: Page, url: string, name: string) {
  // The dialog (below) has also come after the kernel was idle, and then blocked the next click on a menu
  // (Run All): Playwright accepts it before any action whenever it shows.
  await page.addLocatorHandler(page.locator(".jp-Dialog", { hasText: "Select Kernel" }), async (dialog) => {
    if (!/GradLab/.test(await dialog.innerText())) throw new Error(`a dialog asks: ${await dialog.innerText()}`);
    kernelDialogs.push(name);
    await dialog.locator(".jp-mod-accept").click();
  });
  await page.goto(url, { timeout: 60_000 });
  const idle = () => page.locator(`${PANEL} .jp-Notebook-ExecutionIndicator[data-status="idle"]`).count();
  await until(`${name}: the kernel to be idle`, 90_000, async () => {
    const dialog = page.locator(".jp-Dialog");
    if (await dialog.count()) {
      // Seen here (a venv with jupyterlab_widgets, a loaded 2-core machine): JupyterLab 4.6 asked "Select
      // Kernel", offering GradLab's, on opening a GradLab notebook; a Python notebook opened later in the
      // same browser did not ask. Cause not established (a race with the kernelspecs' loading is one
      // guess): accept it and report it, so the widgets are tested; the notebooks tier fails on any dialog.
      const text = await dialog.innerText();
      if (!/Select Kernel/.test(text) || !/GradLab/.test(text)) throw new Error(`a dialog asks: ${text}`);
      kernelDialogs.push(name);
      await dialog.locator(".jp-mod-accept").click();
    }
    return (await idle()) > 0 && (await page.locator(`${PANEL} .jp-CodeCell`).count()) > 0;
  });
  await clickMenu(page, "Run", "Run All Cells");
  const n = await page.locator(`${PANEL} .jp-CodeCell`).count();
  // Under load, Lab has ignored a Run All issued while the kernel was still connecting (every prompt
  // stayed "[ ]"): issue it once more if nothing has started after 20 s.
  const started = async () => (await page.locator(`${PANEL} .jp-CodeCell .jp-InputPrompt`).allInnerTexts()).some((p) => /\[(\*|\d+)\]/.test(p));
  if (!(await until(`${name}: a cell to start`, 20_000, started).catch(() => false))) await clickMenu(page, "Run", "Run All Cells");
  await until(
    `${name}: every cell to run`,
    240_000,
    async () => {
      const prompts = await page.locator(`${PANEL} .jp-CodeCell .jp-InputPrompt`).allInnerTexts();
      return prompts.filter((p) => /\[\d+\]/.test(p)).length === n && (await idle()) > 0;
    },
    500,
  );
}

/** What the stepper shows now: the step its drawing and caption are for, the bar's bytes and width,
 *  how many nodes are highlighted, and the slider's readout. */
async function stepperState(out: Locator) {
  return out.evaluate((o) => {
    const graph = o.querySelector(".gradlab-stepper-graph");
    const bar = o.querySelector(".gradlab-membar");
    const now = o.querySelector(".gradlab-membar-now") as HTMLElement | null;
    return {
      frame: graph?.getAttribute("data-frame") ?? null,
      caption: o.querySelector(".gradlab-step-caption")?.getAttribute("data-frame") ?? null,
      bytes: bar?.getAttribute("data-bytes") ?? null,
      barWidth: now ? Math.round(now.getBoundingClientRect().width) : -1,
      highlighted: graph ? [...graph.querySelectorAll("g.node polygon")].filter((p) => p.getAttribute("fill") === "#ffd54f").length : -1,
      nodes: graph ? graph.querySelectorAll("g.node").length : 0,
      readout: (o.querySelector(".widget-readout") as HTMLElement | null)?.innerText ?? null,
      svgWidth: Math.round((graph?.querySelector("svg") as SVGSVGElement | null)?.getBoundingClientRect().width ?? 0),
    };
  });
}

/** Drags the slider's handle to the position of `step` (of `max`) with the mouse. */
async function dragTo(page: Page, out: Locator, step: number, max: number) {
  const handle = out.locator(".widget-slider .noUi-handle").first();
  const track = out.locator(".widget-slider .noUi-base").first();
  await handle.scrollIntoViewIfNeeded();
  const h = (await handle.boundingBox())!;
  const t = (await track.boundingBox())!;
  await page.mouse.move(h.x + h.width / 2, h.y + h.height / 2);
  await page.mouse.down();
  const x = t.x + (t.width * step) / max;
  for (let i = 1; i <= 8; i++) await page.mouse.move(h.x + h.width / 2 + ((x - h.x - h.width / 2) * i) / 8, h.y + h.height / 2);
  await page.mouse.up();
}

async function checkStepper(page: Page, app: string) {
  // the widget manager's output (its data-mime-type attribute is not set on every version): the one drawing the stepper
  const out = page.locator(`${PANEL} .jp-OutputArea-output`, { has: page.locator(".jupyter-widgets .gradlab-stepper-graph") }).first();
  await until(`${app}: the stepper's widget`, 60_000, async () => (await out.count()) > 0);
  await out.scrollIntoViewIfNeeded();
  const before = await stepperState(out);
  expect(before, `${app}: the stepper before backward`).toMatchObject({ frame: "0", caption: "0", highlighted: 0, readout: "0" });
  expect(before.nodes).toBeGreaterThan(8);
  expect(before.svgWidth).toBeGreaterThan(200);
  await page.screenshot({ path: join(SHOTS, `${app}-stepper-step0.png`), clip: (await out.boundingBox())! });

  await dragTo(page, out, 3, 7);
  const moved = await until(`${app}: the drawing to follow the slider`, 30_000, async () => {
    const s = await stepperState(out);
    return s.frame !== "0" && s.frame === s.readout && s.caption === s.frame ? s : null;
  });
  expect(Number(moved.frame), `${app}: dragged to about 3/7`).toBeGreaterThanOrEqual(2);
  expect(Number(moved.frame)).toBeLessThanOrEqual(4);
  expect(moved.highlighted, `${app}: one node runs`).toBe(1);
  expect(moved.bytes, `${app}: the memory bar moved`).not.toBe(before.bytes);
  expect(moved.barWidth).not.toBe(before.barWidth);
  await page.screenshot({ path: join(SHOTS, `${app}-stepper-step${moved.frame}.png`), clip: (await out.boundingBox())! });
  return out;
}

describe("torch.viz.stepper", () => {
  it("JupyterLab 4: dragging the slider redraws the graph and the memory bar; Play walks to the end", async () => {
    const page = await browser.newPage();
    const errors = watchErrors(page);
    try {
      await openAndRunAll(page, `${server.url}/lab/tree/05_engine.ipynb?reset&token=${server.token}`, "05 in Lab");
      const out = await checkStepper(page, "lab");
      // Play: the front end's link moves the slider every interval; the kernel redraws each step
      await out.locator(".widget-play button").first().click();
      const end = await until("Play to reach the last step", 60_000, async () => {
        const s = await stepperState(out);
        return s.frame === "7" && s.readout === "7" ? s : null;
      });
      expect(end.highlighted).toBe(1);
      await page.screenshot({ path: join(SHOTS, "lab-stepper-step7.png"), clip: (await out.boundingBox())! });
      expect(errors.filter((e) => /widget|\bcomms?\b|model/i.test(e))).toEqual([]);
    } catch (e) {
      await page.screenshot({ path: join(SHOTS, "lab-stepper-failure.png"), fullPage: true }).catch(() => {});
      throw new Error(`${e}\npage errors: ${errors.join("\n").slice(0, 3000)}`);
    } finally {
      await page.close();
    }
  });

  it("Notebook 7: dragging the slider redraws the graph and the memory bar", async () => {
    const page = await browser.newPage();
    const errors = watchErrors(page);
    try {
      await openAndRunAll(page, `${server.url}/notebooks/05_engine.ipynb?token=${server.token}`, "05 in Notebook 7");
      await checkStepper(page, "notebook7");
      const bad = errors.filter((e) => /widget|\bcomms?\b|model/i.test(e));
      expect(bad, bad.join("\n")).toEqual([]);
    } catch (e) {
      await page.screenshot({ path: join(SHOTS, "notebook7-stepper-failure.png"), fullPage: true }).catch(() => {});
      throw new Error(`${e}\npage errors: ${errors.join("\n").slice(0, 3000)}`);
    } finally {
      await page.close();
    }
  });
});

describe("a widget and a kernel restart", () => {
  it("JupyterLab 4: the view stays, no error, and the re-run cell gives a working widget", async () => {
    const page = await browser.newPage();
    const errors = watchErrors(page);
    const out = page.locator(`${PANEL} .jp-OutputArea-output`, { has: page.locator(".jupyter-widgets .widget-slider") }).first();
    const echo = () => out.locator(".echo").innerText({ timeout: 5_000 });
    try {
      await openAndRunAll(page, `${server.url}/lab/tree/widget_restart.ipynb?reset&token=${server.token}`, "widget_restart");
      await dragTo(page, out, 6, 10);
      const first = await until("the kernel's observer to answer the drag", 30_000, async () => ((await echo()) !== "n=0" ? echo() : null));
      expect(first).toMatch(/^n=\d+$/);
      const before = errors.length;
      await clickMenu(page, "Kernel", "Restart Kernel…");
      await page.locator(".jp-Dialog .jp-mod-accept").click({ timeout: 20_000 });
      await until(
        "the restarted kernel to be idle",
        90_000,
        async () => (await page.locator(`${PANEL} .jp-Notebook-ExecutionIndicator[data-status="idle"]`).count()) > 0,
      );
      await page.waitForTimeout(2000); // what the widget manager does on restart (it asks the new kernel for widgets)
      const text = (await page.locator(PANEL).innerText()).slice(0, 20_000);
      expect(text).not.toMatch(/Error displaying widget|model not found/);
      expect(await out.locator(".widget-slider").count(), "the old view is still drawn").toBe(1);
      expect(errors.slice(before), "errors on the page after the restart").toEqual([]);
      await page.screenshot({ path: join(SHOTS, "lab-widget-after-restart.png"), fullPage: true });
      // the cell again: a new widget, answered by the new kernel
      await clickMenu(page, "Run", "Run All Cells");
      await until("the new widget", 60_000, async () => (await echo()) === "n=0");
      await dragTo(page, out, 3, 10);
      await until("the new kernel's observer to answer", 30_000, async () => (await echo()) !== "n=0");
      expect(errors.filter((e) => /widget|\bcomms?\b|model/i.test(e))).toEqual([]);
      await page.screenshot({ path: join(SHOTS, "lab-widget-rerun.png"), fullPage: true });
    } finally {
      await page.close();
    }
  });
});
