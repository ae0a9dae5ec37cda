// GradLab Lite's browser tier machinery: the site built by `gradlab lite build` (the CLI, as a teacher
// runs it), served by `gradlab lite serve`'s server on 127.0.0.1, Debian's Chromium with WebGPU switched
// on (--enable-unsafe-webgpu: SwiftShader's adapter) or left off, and helpers that drive JupyterLab in
// the page. Every request the page makes is recorded, so a test can check none leaves the origin.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { serve } from "../../kernel/cli/lite.ts";

export const REPO = join(import.meta.dirname, "..", "..");
const CHROMIUM = process.env.GRADLAB_CHROMIUM ?? "/usr/bin/chromium";
/** Where screenshots go (docs/lite.md). */
export const SHOTS = process.env.GRADLAB_SCREENSHOTS ?? join(REPO, "test-artifacts", "lite");

export interface Site {
  dir: string;
  url: string;
  /** what `gradlab lite build` printed (size and build time) */
  buildLine: string;
  close(): void;
}

/** Builds the site with the CLI into a fresh folder and serves it. */
export async function buildAndServe(): Promise<Site> {
  const dir = join(mkdtempSync(join(tmpdir(), "gradlab-lite-")), "site");
  const r = spawnSync(process.execPath, [join(REPO, "bin", "gradlab.js"), "lite", "build", "--out", dir], { encoding: "utf8", timeout: 600_000 });
  if (r.status !== 0) throw new Error(`gradlab lite build failed (${r.status}): ${r.stdout}\n${r.stderr}`);
  const server = await serve(dir, 0);
  return { dir, url: `http://127.0.0.1:${server.port}`, buildLine: r.stdout.trim().split("\n").pop() ?? "", close: server.close };
}

/** Chromium, headless, with a fresh profile; `webgpu: false` leaves WebGPU off (Linux's default). */
export async function startChromium(webgpu: boolean): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} missing: bash .ci/setup installs Debian's chromium`);
  const args = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];
  if (webgpu) args.push("--enable-unsafe-webgpu");
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args, timeout: 60_000 });
}

export interface Opened {
  page: Page;
  /** every URL the page, its Workers and the site's service worker requested */
  requests: string[];
  errors: string[];
  /** ms from navigation to a notebook with a kernel */
  openMs: number;
}

/** Opens a notebook of the site (JupyterLite's ?path=) and waits for its kernel. */
export async function openNotebook(browser: Browser, site: Site, path: string): Promise<Opened> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const requests: string[] = [];
  const errors: string[] = [];
  // the context sees the page's requests, its Workers' and the service worker's (the site's offline copy)
  page.context().on("request", (r) => void requests.push(r.url()));
  page.on("pageerror", (e) => void errors.push(e.message));
  page.on("worker", (w) => w.on("console", () => {}));
  const t0 = Date.now();
  await page.goto(`${site.url}/lab/index.html?path=${encodeURIComponent(path)}`);
  await kernelIdle(page, path);
  return { page, requests, errors, openMs: Date.now() - t0 };
}

/** Waits until the page shows a notebook whose kernel is idle (after opening or reloading it). With
 *  `path`, that notebook must be the one in front: a reload also restores the tabs of the last visit
 *  (JupyterLab's workspace, kept in the browser), and the notebook the link names must stay in front. */
export async function kernelIdle(page: Page, path?: string): Promise<void> {
  if (path) {
    await page.waitForFunction(() => (window as any).jupyterapp?.restored, null, { timeout: 120_000, polling: 200 });
    // JupyterLite opens the linked notebook once the app has started; the restored tabs of the last
    // visit come up around the same time, one of them briefly in front (measured: within 250 ms of
    // `restored`): the link's notebook must end in front without help
    await page
      .waitForFunction((p) => (window as any).jupyterapp.shell.currentWidget?.context?.path === p, path, { timeout: 60_000, polling: 200 })
      .catch(async () => {
        const front = await page.evaluate(() => (window as any).jupyterapp.shell.currentWidget?.context?.path ?? null);
        throw new Error(`the link named ${path}, but ${front} is in front after the reload`);
      });
  }
  await page.waitForFunction(
    () => {
      const w = (window as any).jupyterapp?.shell.currentWidget;
      return !!(w?.content?.model && w.sessionContext?.session?.kernel && w.sessionContext.session.kernel.status === "idle");
    },
    null,
    { timeout: 120_000, polling: 200 },
  );
}

export interface CellOut {
  source: string;
  count: number | null;
  outputs: Array<Record<string, any>>;
}

/** Runs every cell (Run All) and waits until each code cell has run and the kernel is idle; also says
 *  when the first code cell had run (ms from Run All). */
export async function runAll(page: Page, timeoutMs = 600_000): Promise<{ cells: CellOut[]; firstOutputMs: number; ms: number }> {
  const t0 = Date.now();
  // not awaited in the page: the command's promise settles only once every cell has run
  await page.evaluate(() => void (window as any).jupyterapp.commands.execute("notebook:run-all-cells"));
  let firstOutputMs = -1;
  for (;;) {
    const state = await page.evaluate(() => {
      const w = (window as any).jupyterapp.shell.currentWidget;
      const nb = w.content.model;
      let pending = 0;
      let first: boolean | null = null;
      for (let i = 0; i < nb.cells.length; i++) {
        const c = nb.cells.get(i);
        if (c.type !== "code" || !c.sharedModel.getSource().trim()) continue;
        first ??= c.outputs.length > 0 || c.executionCount != null;
        if (c.executionCount == null) pending++;
      }
      return { first, done: pending === 0 && w.sessionContext.session.kernel.status === "idle" };
    });
    if (firstOutputMs < 0 && state.first !== false) firstOutputMs = Date.now() - t0;
    if (state.done) break;
    if (Date.now() - t0 > timeoutMs) throw new Error(`Run All did not finish in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { cells: await cellsOf(page), firstOutputMs, ms: Date.now() - t0 };
}

/** The notebook's code cells with their outputs, as nbformat JSON. */
function cellsOf(page: Page): Promise<CellOut[]> {
  return page.evaluate(() => {
    const nb = (window as any).jupyterapp.shell.currentWidget.content.model;
    const out: CellOut[] = [];
    for (let i = 0; i < nb.cells.length; i++) {
      const c = nb.cells.get(i);
      if (c.type === "code") out.push({ source: c.sharedModel.getSource(), count: c.executionCount, outputs: c.outputs.toJSON() });
    }
    return out;
  });
}

/** Appends a code cell to the open notebook and starts it, without waiting for it (JupyterLab's
 *  notebook:run-cell settles only when the cell ends, never for a cell that hangs). Returns its index. */
export async function startNewCell(page: Page, source: string): Promise<number> {
  return page.evaluate((src) => {
    const w = (window as any).jupyterapp.shell.currentWidget;
    const n = w.content.model.cells.length;
    w.content.model.sharedModel.insertCell(n, { cell_type: "code", source: src });
    w.content.activeCellIndex = n;
    void (window as any).jupyterapp.commands.execute("notebook:run-cell");
    return n;
  }, source);
}

/** Appends a code cell to the open notebook, runs it alone, and returns its outputs; a cell that has not
 *  run within the time fails the test with a screenshot (cell-timeout.png) instead of hanging the tier. */
export async function runNewCell(page: Page, source: string, timeoutMs = 120_000): Promise<Array<Record<string, any>>> {
  const index = await startNewCell(page, source);
  try {
    await page.waitForFunction(
      (i) => {
        const w = (window as any).jupyterapp.shell.currentWidget;
        return w.content.model.cells.get(i).executionCount != null && w.sessionContext.session.kernel.status === "idle";
      },
      index,
      { timeout: timeoutMs, polling: 200 },
    );
  } catch (e) {
    await page.screenshot({ path: join(SHOTS, "cell-timeout.png") });
    throw e;
  }
  return page.evaluate((i) => (window as any).jupyterapp.shell.currentWidget.content.model.cells.get(i).outputs.toJSON(), index);
}

/** A cell's text: its streams, results' text/plain and errors, in order. */
export function textOf(outputs: Array<Record<string, any>>): string {
  const t = (v: unknown) => (Array.isArray(v) ? v.join("") : String(v ?? ""));
  return outputs
    .map((o) =>
      o.output_type === "stream"
        ? t(o.text)
        : o.output_type === "error"
          ? `${o.ename}: ${o.evalue}\n`
          : o.data?.["text/plain"] !== undefined
            ? `${t(o.data["text/plain"])}\n`
            : "",
    )
    .join("");
}

/** Requests that left the site's origin (blob: and data: URLs stay in the page). */
export const foreign = (site: Site, requests: string[]) => requests.filter((u) => !u.startsWith(site.url) && !/^(blob|data):/.test(u));

/** Scrolls to the first cell whose output is a graph (SVG) or a Vega-Lite plot and waits until the
 *  browser has drawn it; returns which, or null when the notebook shows neither. */
export async function showFirstDisplay(page: Page): Promise<"svg" | "vega" | null> {
  const found = await page.evaluate(async () => {
    const w = (window as any).jupyterapp.shell.currentWidget;
    const nb = w.content.model;
    for (let i = 0; i < nb.cells.length; i++) {
      const c = nb.cells.get(i);
      if (c.type !== "code") continue;
      const outs = c.outputs.toJSON() as Array<{ data?: Record<string, unknown> }>;
      const kind = outs.some((o) => o.data?.["application/vnd.vegalite.v5+json"]) ? "vega" : outs.some((o) => o.data?.["image/svg+xml"]) ? "svg" : null;
      if (!kind) continue;
      w.content.activeCellIndex = i;
      await w.content.scrollToItem(i, "start");
      return { kind, i };
    }
    return null;
  });
  if (!found) return null;
  const selector = found.kind === "vega" ? ".jp-RenderedVegaCommon5 svg, .jp-RenderedVegaCommon5 canvas" : ".jp-RenderedSVG img, .jp-RenderedSVG svg";
  await page.waitForFunction((sel) => [...document.querySelectorAll(sel)].some((e) => e.getBoundingClientRect().height > 20), selector, { timeout: 60_000 });
  await page.waitForTimeout(500); // the last frame of the drawing
  return found.kind as "svg" | "vega";
}
