// GradLab Lite as a student uses it between two visits (npm run test:lite): an edited notebook is kept
// in the browser's storage across a reload, File → Download saves the edited notebook, Help → Clear
// Browser Data resets the course to the teacher's notebooks, and once the site has been loaded it opens
// and runs with the server gone; a cell imports the student's own files (a module they made, their
// edited check.ts) from the browser's storage; an interrupt stops a loop that never awaits and input()
// asks the student once the page is cross-origin isolated (its second load), and both say what is
// missing before. Driven through JupyterLab's menus and keyboard in Debian's Chromium, as
// lite.browser.ts does; screenshots in test-artifacts/lite/student-*.png.
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { serve } from "../../kernel/cli/lite.ts";
import { buildAndServe, foreign, kernelIdle, openNotebook, REPO, runNewCell, SHOTS, startNewCell, startChromium, textOf, type Site } from "./harness.ts";

let site: Site;
let browser: Browser;

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  site = await buildAndServe();
  browser = await startChromium(true);
});
afterAll(async () => {
  await browser?.close();
  site?.close();
});

const NB = "00_overview.ipynb";
const EDIT = "// my own note, kept by the browser\n";

/** The sources of the open notebook's cells, as its model holds them. */
const sources = (page: Page): Promise<string[]> =>
  page.evaluate(() => {
    const nb = (window as any).jupyterapp.shell.currentWidget.content.model;
    return Array.from({ length: nb.cells.length }, (_, i) => nb.cells.get(i).sharedModel.getSource() as string);
  });

/** Clicks a top menu (File, Help, ...) and then one of its items, by their labels. */
async function menu(page: Page, top: string, item: string): Promise<void> {
  await page.locator(".lm-MenuBar-itemLabel", { hasText: new RegExp(`^${top}$`) }).click();
  await page.locator(".lm-Menu-itemLabel", { hasText: new RegExp(`^${item}$`) }).click();
}

/** The input box of the last cell (the one running). */
const stdinBox = (page: Page) => page.locator(".jp-Notebook .jp-Cell").last().locator(".jp-Stdin-input");

/** The first code cell's index in the teacher's notebook. */
const firstCode = () =>
  (JSON.parse(readFileSync(join(REPO, "notebooks", NB), "utf8")).cells as { cell_type: string }[]).findIndex((c) => c.cell_type === "code");

/** How many entries the course's top folder has (what the file browser lists). */
const courseEntries = () => (JSON.parse(readFileSync(join(site.dir, "api", "contents", "all.json"), "utf8")).content as unknown[]).length;

describe("GradLab Lite between two visits", () => {
  it("keeps an edited notebook across a reload, downloads it with the edit, and resets the course", async () => {
    const { page, errors } = await openNotebook(browser, site, NB);
    const original = await sources(page);
    const i = firstCode();
    // a student clicks into the first code cell, types a line at its top and saves with Ctrl+S
    await page.locator(".jp-Notebook .jp-Cell").nth(i).locator(".cm-content").click();
    await page.keyboard.press("Control+Home");
    await page.keyboard.type(EDIT);
    await page.keyboard.press("Control+s");
    await page.waitForFunction(() => (window as any).jupyterapp.shell.currentWidget.context.model.dirty === false, null, { timeout: 30_000 });

    // a reload (or the next visit): the edit is there, read back from the browser's storage
    await page.reload();
    await kernelIdle(page);
    const reloaded = await sources(page);
    expect(reloaded[i]).toBe(EDIT + original[i]);
    expect(reloaded.filter((_, k) => k !== i)).toEqual(original.filter((_, k) => k !== i));
    // the file browser still lists the whole course (the site's files and the student's, merged)
    await page.locator(".jp-DirListing-item", { hasText: "check.ts" }).waitFor({ timeout: 30_000 });
    expect(await page.locator(".jp-DirListing-item").count()).toBe(courseEntries());
    await page.screenshot({ path: join(SHOTS, "student-edited.png") });

    // File → Download: the notebook file with the edit
    const [download] = await Promise.all([page.waitForEvent("download"), menu(page, "File", "Download")]);
    expect(download.suggestedFilename()).toBe(NB);
    const saved = JSON.parse(readFileSync(await download.path(), "utf8"));
    expect(saved.nbformat).toBe(4);
    const text = (s: string | string[]) => (Array.isArray(s) ? s.join("") : s);
    expect(text(saved.cells[i].source)).toBe(EDIT + original[i]);
    expect(saved.metadata.kernelspec?.name).toBe(JSON.parse(readFileSync(join(REPO, "notebooks", NB), "utf8")).metadata.kernelspec?.name);

    // Help → Clear Browser Data (what a teacher tells a student who wants the course back as it was)
    await menu(page, "Help", "Clear Browser Data");
    await page.screenshot({ path: join(SHOTS, "student-reset-dialog.png") });
    await Promise.all([page.waitForEvent("load"), page.locator(".jp-Dialog button.jp-mod-warn").click()]);
    await page.goto(`${site.url}/lab/index.html?path=${NB}`);
    await kernelIdle(page, NB);
    expect(await sources(page)).toEqual(original);
    await page.locator(".jp-DirListing-item", { hasText: "check.ts" }).waitFor({ timeout: 30_000 });
    expect(await page.locator(".jp-DirListing-item").count()).toBe(courseEntries());
    await page.screenshot({ path: join(SHOTS, "student-reset.png") });
    expect(errors).toEqual([]);
    await page.close();
  });

  it("works offline once loaded: with the server gone, a reload opens another notebook and runs it", async () => {
    // a server of its own (the same site), cut in the middle of the test
    const own = await serve(site.dir, 0);
    const here: Site = { ...site, url: `http://127.0.0.1:${own.port}`, close: own.close };
    const { page, requests, errors } = await openNotebook(browser, here, "smoke.ipynb");
    // the site's service worker has copied the site and serves this page
    await page.waitForFunction(() => navigator.serviceWorker.controller?.state === "activated", null, { timeout: 120_000, polling: 200 });
    own.close();
    await expect(fetch(`${here.url}/lab/index.html`)).rejects.toThrow(); // the server is really gone
    const before = requests.length;
    // the next visit, offline: a notebook never opened before, whose first cell imports ./check.ts
    await page.goto(`${here.url}/lab/index.html?path=01_dynamic_graph.ipynb`);
    await kernelIdle(page, "01_dynamic_graph.ipynb");
    const out = await runNewCell(
      page,
      ['import { check } from "./check.ts";', "const t = torch.ones(3).mul(2);", "console.log(await t.sum().item(), typeof check.equal);"].join("\n"),
    );
    expect(textOf(out).split("\n").at(-2)).toBe("6 function"); // after the first figure's warning (reclaim)
    await page.screenshot({ path: join(SHOTS, "student-offline.png") });
    expect(errors).toEqual([]);
    // offline, every request was answered from the site's copy in the browser: none left the origin
    expect(requests.length).toBeGreaterThan(before + 20);
    expect(foreign(here, requests)).toEqual([]);
    await page.close();
  });

  it("imports the student's files from the browser's storage: a module they made, their edited check.ts", async () => {
    const { page, errors } = await openNotebook(browser, site, "02_node_and_edge.ipynb");
    // what the editor's Save writes: a new file, and check.ts with a line the student added
    await page.evaluate(async () => {
      const contents = (window as any).jupyterapp.serviceManager.contents;
      await contents.save("mine.ts", { type: "file", format: "text", content: "export const answer: number = 6 * 7;\n" });
      const check = await contents.get("check.ts", { type: "file", format: "text", content: true });
      await contents.save("check.ts", { type: "file", format: "text", content: `${check.content}\nexport const studentNote = "edited";\n` });
    });
    const mine = textOf(await runNewCell(page, 'import { answer } from "./mine.ts";\nconsole.log(answer);'));
    expect(mine.trim().split("\n").at(-1)).toBe("42");
    const edited = textOf(await runNewCell(page, 'import { studentNote, check } from "./check.ts";\nconsole.log(studentNote, typeof check.equal);'));
    expect(edited).toContain("edited function");
    // a file that is not there: an error naming it, and the kernel goes on with what it had
    const missing = textOf(await runNewCell(page, 'import { x } from "./missing.ts";'));
    expect(missing).toContain('Cannot import "./missing.ts": there is no file missing.ts in the file browser');
    expect(textOf(await runNewCell(page, "console.log(answer + 1);")).trim()).toBe("43");
    expect(errors).toEqual([]);
    await page.close();
  });

  it("interrupts a loop that never awaits and asks input() from the second visit on; says what is missing on the first", async () => {
    // a server of its own: an origin this browser has never seen (no service worker yet)
    const own = await serve(site.dir, 0);
    const here: Site = { ...site, url: `http://127.0.0.1:${own.port}`, close: own.close };
    const { page, requests, errors } = await openNotebook(browser, here, "smoke.ipynb");
    const cellError = (outs: Array<Record<string, any>>) => outs.find((o) => o.output_type === "error");

    // the first visit: the page loaded before the site's service worker could isolate it. A cell run at
    // once (while the service worker installs and claims the page) is answered, and input() says why not
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(false);
    const refused = await runNewCell(page, 'const before = 6 * 7;\nawait input("Your name? ")');
    expect(cellError(refused)?.evalue).toContain("reload the page once");
    // an interrupt reaches a cell that awaits, as a message: the notification it raised goes away
    const note = page.locator(".jp-toastContainer .Toastify__toast", { hasText: "cannot be stopped on this page yet" });
    const waiting = runNewCell(page, 'console.log("waiting, first visit");\nawait new Promise(() => {})');
    await page.locator(".jp-OutputArea-output", { hasText: "waiting, first visit" }).waitFor({ timeout: 60_000 });
    await menu(page, "Kernel", "Interrupt Kernel");
    expect(cellError(await waiting)?.ename).toBe("KeyboardInterrupt");
    await note.waitFor({ state: "detached", timeout: 30_000 });
    // it cannot reach a loop that never awaits: JupyterLab's notification says so and restarts the kernel
    await startNewCell(page, 'console.log("spinning, first visit");\nwhile (true) {}');
    await page.locator(".jp-OutputArea-output", { hasText: "spinning, first visit" }).waitFor({ timeout: 60_000 });
    await menu(page, "Kernel", "Interrupt Kernel");
    await note.waitFor({ state: "visible", timeout: 30_000 });
    expect(await note.textContent()).toContain("reload the page once");
    await page.screenshot({ path: join(SHOTS, "student-interrupt-first-visit.png") });
    await note.getByRole("button", { name: "Restart Kernel" }).click();
    await page.locator(".jp-Dialog button.jp-mod-warn").click();
    await kernelIdle(page);
    expect(textOf(await runNewCell(page, "typeof before"))).toBe("'undefined'\n"); // a fresh kernel

    // the next load: the service worker serves the page with COOP and COEP, and the page is isolated
    await page.waitForFunction(() => navigator.serviceWorker.controller?.state === "activated", null, { timeout: 120_000, polling: 200 });
    await page.reload();
    await kernelIdle(page, "smoke.ipynb");
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);

    // a loop of tensor ops that never awaits: Kernel → Interrupt stops it, and the kernel keeps its state
    await runNewCell(page, "const kept = 42;\nconst x = torch.ones(4);");
    const looping = runNewCell(page, 'let steps = 0;\nconsole.log("looping, isolated");\nfor (;;) { x.add(1).mul(2); steps++; }');
    await page.locator(".jp-OutputArea-output", { hasText: "looping, isolated" }).waitFor({ timeout: 60_000 });
    await menu(page, "Kernel", "Interrupt Kernel");
    const stopped = cellError(await looping);
    // the server kernel's error (kernel/executor/errors.ts)
    expect([stopped?.ename, stopped?.evalue]).toEqual(["KeyboardInterrupt", "Execution interrupted"]);
    await page.screenshot({ path: join(SHOTS, "student-interrupted.png") });
    expect(textOf(await runNewCell(page, "console.log(kept, steps > 0, await x.sum().item());"))).toBe("42 true 4\n");
    expect(await page.locator(".jp-toastContainer .Toastify__toast", { hasText: "cannot be stopped on this page" }).count()).toBe(0);

    // input(): the notebook shows a box under the cell, the student types and presses Enter
    const asking = runNewCell(page, 'const name = await input("Your name? ");\nconsole.log(`hello ${name}!`);');
    const box = stdinBox(page);
    await box.waitFor({ timeout: 60_000 });
    await page.screenshot({ path: join(SHOTS, "student-input.png") });
    await box.fill("Ada Lovelace");
    await box.press("Enter");
    expect(textOf(await asking)).toContain("hello Ada Lovelace!\n");
    // a question nobody answers is interrupted like any other wait, and the kernel goes on
    const unanswered = runNewCell(page, 'const never = prompt("no answer");\n"after"');
    await stdinBox(page).waitFor({ timeout: 60_000 });
    await menu(page, "Kernel", "Interrupt Kernel");
    expect(cellError(await unanswered)?.ename).toBe("KeyboardInterrupt");
    expect(textOf(await runNewCell(page, "name"))).toBe("'Ada Lovelace'\n");
    expect(errors).toEqual([]);
    expect(foreign(here, requests)).toEqual([]);
    own.close();
    await page.close();
  });
});
