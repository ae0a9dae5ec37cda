/// <reference lib="dom" />
// torch.viz.memory_viz in JupyterLab 4 and Notebook 7 (issue 25): the three views render with Lab's own
// Vega extension; hovering an allocation's band shows the cell and line that allocated it; the segment
// view's slider redraws the allocator's state at an earlier event. Screenshots land in
// test-artifacts/browser/ (lab-memory-viz.png, notebook7-memory-viz.png).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SHOTS, startBrowser, startServer, until, type Server } from "./harness.ts";

const NB = "memory_viz_check.ipynb";
const cell = (source: string) => ({ cell_type: "code", execution_count: null, metadata: {}, outputs: [], source });
const CELLS = [
  cell(
    [
      "const snap = torch.cuda.simulate({ total_memory: 2 ** 34 }, () => {",
      "  torch.cuda.memory._record_memory_history();",
      "  const w = torch.randn(1024, 1024, { requires_grad: true });",
      "  const h = torch.randn(512, 1024).matmul(w).relu();",
      "  h.sum().backward();",
      "  torch.del(h);",
      "  const s = torch.cuda.memory._snapshot();",
      "  torch.cuda.memory._record_memory_history(null);",
      "  return s;",
      "});",
    ].join("\n"),
  ),
  cell("torch.viz.memory_viz(snap)"),
];

let server: Server;
let browser: BrowserContext;
beforeAll(async () => {
  server = await startServer();
  writeFileSync(
    join(server.root, NB),
    JSON.stringify({
      cells: CELLS,
      metadata: { kernelspec: { name: "gradlab", display_name: "GradLab (TypeScript · WebGPU)", language: "typescript" } },
      nbformat: 4,
      nbformat_minor: 5,
    }),
  );
  browser = await startBrowser();
});
afterAll(async () => {
  await browser?.close().catch(() => {});
  await server?.stop();
});

const PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)";

async function runAll(page: Page, url: string) {
  await page.goto(url, { timeout: 60_000 });
  await until(
    "the GradLab kernel to be idle",
    90_000,
    async () => {
      const name = await page
        .locator(`${PANEL} .jp-Toolbar-kernelName`)
        .first()
        .innerText()
        .catch(() => "");
      const idle = await page.locator(`${PANEL} .jp-Notebook-ExecutionIndicator[data-status="idle"]`).count();
      return name.includes("GradLab") && idle > 0 && (await page.locator(`${PANEL} .jp-CodeCell`).count()) === 2;
    },
    300,
  );
  // Run All, again if no cell started (a click made while Lab still wires the session is lost)
  await until(
    "the cells to start",
    60_000,
    async () => {
      await page.locator(".lm-MenuBar-itemLabel", { hasText: /^Run$/ }).first().click();
      await page
        .locator(".lm-Menu-itemLabel", { hasText: /^Run All Cells$/ })
        .first()
        .click();
      await page.waitForTimeout(5000);
      const prompts = await page.locator(`${PANEL} .jp-CodeCell .jp-InputPrompt`).allInnerTexts();
      return prompts.some((p) => /\[(\*|\d+)\]/.test(p));
    },
    100,
  );
  try {
    await until(
      "the plot to render",
      180_000,
      async () => (await page.locator(`${PANEL} .vega-embed canvas, ${PANEL} .vega-embed svg.marks`).count()) > 0,
      500,
    );
  } catch (e) {
    await page.screenshot({ path: join(SHOTS, "memory-viz-timeout.png"), fullPage: true });
    const outputs = await page.locator(`${PANEL} .jp-OutputArea`).allInnerTexts();
    throw new Error(`${(e as Error).message}; outputs: ${outputs.join(" | ").slice(0, 1500)}`);
  }
  await page.waitForTimeout(1500);
}

/** Moves the mouse over the top view until Vega's tooltip shows an allocation; returns its text. */
async function hoverBand(page: Page): Promise<string> {
  const view = page.locator(`${PANEL} .vega-embed canvas, ${PANEL} .vega-embed svg.marks`).first();
  const box = (await view.boundingBox())!;
  for (let fy = 0.3; fy > 0.04; fy -= 0.02) {
    for (let fx = 0.25; fx < 0.7; fx += 0.05) {
      await page.mouse.move(box.x + fx * box.width, box.y + fy * box.height);
      await page.waitForTimeout(60);
      const text = await page
        .locator("#vg-tooltip-element.visible")
        .innerText({ timeout: 200 })
        .catch(() => "");
      if (text.includes("allocated at")) return text;
    }
  }
  return "";
}

async function check(page: Page, app: string) {
  const r = await page.evaluate(() => {
    const out = document.querySelector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-RenderedVegaLite");
    const c = out?.querySelector(".vega-embed canvas, .vega-embed svg.marks") as HTMLElement | null;
    const errs = document.querySelectorAll(".jp-NotebookPanel:not(.lm-mod-hidden) [data-mime-type='application/vnd.jupyter.error']").length;
    return {
      vega: !!out,
      w: c?.getBoundingClientRect().width ?? 0,
      h: c?.getBoundingClientRect().height ?? 0,
      errs,
      slider: !!out?.querySelector(".vega-bindings input[type=range]"),
    };
  });
  expect(r.errs, `${app}: error outputs`).toBe(0);
  expect(r.vega, `${app}: drawn by the Vega extension`).toBe(true);
  // fits a laptop screen's notebook column: under 1000 px wide, three views tall
  expect(r.w).toBeGreaterThan(500);
  expect(r.w).toBeLessThan(1000);
  expect(r.h).toBeGreaterThan(500);
  expect(r.slider, `${app}: the segment view's slider`).toBe(true);

  const tip = await hoverBand(page);
  expect(tip, `${app}: a band's tooltip`).toMatch(/allocated at:?\s*Cell \[\d+\]:[345] in <lambda>/);
  expect(tip).toMatch(/bytes \(exact\)/);

  // the slider: back to event 1, the segment view redraws (fewer segments/blocks drawn)
  const view = page.locator(`${PANEL} .vega-embed canvas, ${PANEL} .vega-embed svg.marks`).first();
  await page.mouse.move(0, 0);
  const before = await view.screenshot();
  await page
    .locator(`${PANEL} .vega-bindings input[type=range]`)
    .first()
    .evaluate((el: HTMLInputElement) => {
      el.value = "1";
      el.dispatchEvent(new Event("input", { bubbles: true }));
    });
  await page.waitForTimeout(800);
  const after = await view.screenshot();
  expect(Buffer.compare(before, after), `${app}: the drawing changes with the slider`).not.toBe(0);
  await page
    .locator(`${PANEL} .vega-bindings input[type=range]`)
    .first()
    .evaluate((el: HTMLInputElement) => {
      el.value = el.max;
      el.dispatchEvent(new Event("input", { bubbles: true }));
    });
  await page.waitForTimeout(500);
  await page
    .locator(`${PANEL} .jp-RenderedVegaLite`)
    .first()
    .screenshot({ path: join(SHOTS, `${app}-memory-viz.png`) });
}

describe("torch.viz.memory_viz in the browser", () => {
  it("JupyterLab: three views, the allocating cell line on hover, the slider redraws", async () => {
    const page = await browser.newPage();
    await page.setViewportSize({ width: 1280, height: 1400 });
    await runAll(page, `${server.url}/lab/tree/${NB}?reset&token=${server.token}`);
    await check(page, "lab");
    await page.close();
  });
  it("Notebook 7: the same", async () => {
    const page = await browser.newPage();
    await page.setViewportSize({ width: 1280, height: 1400 });
    await runAll(page, `${server.url}/notebooks/${NB}?token=${server.token}`);
    await check(page, "notebook7");
    await page.close();
  });
});
