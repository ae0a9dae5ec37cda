// The browser tier's machinery: a Jupyter server (JupyterLab 4 + Notebook 7 from the virtual
// environment .ci/setup makes) on 127.0.0.1 with a token and the GradLab kernelspec installed in a
// fresh prefix; Debian's Chromium driven by playwright-core with a fresh profile; a PNG decoder for
// pixel checks. Every wait here is bounded.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { freePort } from "../../kernel/sockets/connection.ts";

export const REPO = join(import.meta.dirname, "..", "..");
export const VENV = process.env.GRADLAB_JUPYTER_VENV ?? "/opt/gradlab-jupyter";
const CHROMIUM = process.env.GRADLAB_CHROMIUM ?? "/usr/bin/chromium";
/** Where screenshots go (README: "Browser tier"). */
export const SHOTS = process.env.GRADLAB_SCREENSHOTS ?? join(REPO, "test-artifacts", "browser");

export async function until<T>(
  what: string,
  ms: number,
  fn: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  every = 200,
): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown = null;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${last}` : ""}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

export interface Server {
  url: string;
  token: string;
  root: string;
  log: () => string;
  stop(): Promise<void>;
}

/** A Jupyter server with JupyterLab and Notebook 7, the notebooks copied into a fresh root. */
export async function startServer(): Promise<Server> {
  const base = mkdtempSync(join(tmpdir(), "gradlab-browser-"));
  const root = join(base, "notebooks");
  // the whole folder: notebooks import helpers that sit beside them (./check.ts, solutions/)
  cpSync(join(REPO, "notebooks"), root, { recursive: true });
  const prefix = join(base, "prefix");
  const inst = spawnSync(process.execPath, [join(REPO, "bin", "gradlab.js"), "install", "--prefix", prefix], { encoding: "utf8", timeout: 180_000 });
  if (inst.status !== 0) throw new Error(`gradlab install failed: ${inst.stderr}`);
  // Settings: render every cell (no windowing), so the DOM holds every output, and no announcements.
  const settings = join(base, "settings");
  mkdirSync(join(settings, "@jupyterlab", "notebook-extension"), { recursive: true });
  writeFileSync(join(settings, "@jupyterlab", "notebook-extension", "tracker.jupyterlab-settings"), JSON.stringify({ windowingMode: "none" }));
  mkdirSync(join(settings, "@jupyterlab", "apputils-extension"), { recursive: true });
  writeFileSync(
    join(settings, "@jupyterlab", "apputils-extension", "notification.jupyterlab-settings"),
    JSON.stringify({ fetchNews: "false", checkForUpdates: false }),
  );
  const token = randomBytes(24).toString("hex");
  const port = await freePort();
  const env = {
    ...process.env,
    JUPYTER_PATH: join(prefix, "share", "jupyter"),
    JUPYTER_CONFIG_DIR: join(base, "config"),
    JUPYTER_RUNTIME_DIR: join(base, "runtime"),
    JUPYTERLAB_SETTINGS_DIR: settings,
    JUPYTERLAB_WORKSPACES_DIR: join(base, "workspaces"),
    JUPYTER_PLATFORM_DIRS: "1",
  };
  let out = "";
  const proc: ChildProcess = spawn(
    join(VENV, "bin", "jupyter-lab"),
    [
      "--no-browser",
      "--ServerApp.ip=127.0.0.1",
      `--ServerApp.port=${port}`,
      "--ServerApp.port_retries=0",
      `--IdentityProvider.token=${token}`,
      `--ServerApp.root_dir=${root}`,
      "--ServerApp.open_browser=False",
      "--LabApp.news_url=None",
      "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
      "--LabApp.extension_manager=readonly",
      ...(process.getuid?.() === 0 ? ["--allow-root"] : []),
    ],
    { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] },
  );
  proc.stdout!.on("data", (d) => (out += d));
  proc.stderr!.on("data", (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  await until(
    "the Jupyter server",
    60_000,
    async () => {
      if (proc.exitCode !== null) throw new Error(`jupyter-lab exited ${proc.exitCode}: ${out.slice(-2000)}`);
      const r = await fetch(`${url}/api/status`, { headers: { Authorization: `token ${token}` }, signal: AbortSignal.timeout(2000) });
      return r.ok;
    },
    300,
  );
  return {
    url,
    token,
    root,
    log: () => out,
    async stop() {
      if (proc.exitCode !== null) return;
      proc.kill("SIGTERM");
      await until("jupyter-lab to stop", 15_000, () => proc.exitCode !== null || proc.signalCode !== null).catch(() => proc.kill("SIGKILL"));
    },
  };
}

/** Clicks a menu item of JupyterLab's (and Notebook 7's) menu bar. */
export async function clickMenu(page: Page, menu: string, item: string) {
  await page
    .locator(".lm-MenuBar-itemLabel", { hasText: new RegExp(`^${menu}$`) })
    .first()
    .click({ timeout: 20_000 });
  await page
    .locator(".lm-Menu-itemLabel", { hasText: new RegExp(`^${item}$`) })
    .first()
    .click({ timeout: 20_000 });
}

const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

/** Debian's Chromium with a fresh profile directory. */
export async function startBrowser(): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} missing: bash .ci/setup installs Debian's chromium`);
  const profile = mkdtempSync(join(tmpdir(), "gradlab-chromium-"));
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 1000 },
    timeout: 60_000,
  });
}

/** Decodes an 8-bit, non-interlaced PNG (what Chromium's screenshots are) to RGBA. */
function decodePng(buf: Buffer): { width: number; height: number; rgba: Uint8Array } {
  let off = 8;
  let width = 0,
    height = 0,
    colorType = 0,
    depth = 0;
  const idat: Buffer[] = [];
  while (off < buf.length) {
    const len = buf.readUInt32BE(off);
    const type = buf.toString("latin1", off + 4, off + 8);
    const data = buf.subarray(off + 8, off + 8 + len);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      depth = data[8];
      colorType = data[9];
      if (depth !== 8 || data[12] !== 0) throw new Error(`PNG depth ${depth}, interlace ${data[12]}: not supported`);
    } else if (type === "IDAT") idat.push(data);
    else if (type === "IEND") break;
    off += 12 + len;
  }
  const channels = ({ 0: 1, 2: 3, 4: 2, 6: 4 } as Record<number, number>)[colorType];
  if (!channels) throw new Error(`PNG colour type ${colorType}: not supported`);
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const px = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? px[y * stride + x - channels] : 0;
      const b = y > 0 ? px[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? px[(y - 1) * stride + x - channels] : 0;
      let v = line[x];
      if (f === 1) v += a;
      else if (f === 2) v += b;
      else if (f === 3) v += (a + b) >> 1;
      else if (f === 4) {
        const p = a + b - c,
          pa = Math.abs(p - a),
          pb = Math.abs(p - b),
          pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      px[y * stride + x] = v & 255;
    }
  }
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    const s = i * channels;
    if (channels >= 3) {
      rgba[i * 4] = px[s];
      rgba[i * 4 + 1] = px[s + 1];
      rgba[i * 4 + 2] = px[s + 2];
    } else rgba[i * 4] = rgba[i * 4 + 1] = rgba[i * 4 + 2] = px[s];
    rgba[i * 4 + 3] = channels === 4 ? px[s + 3] : channels === 2 ? px[s + 1] : 255;
  }
  return { width, height, rgba };
}

/** Pixels that differ from the background (the top-left pixel): ink. */
export function inkPixels(png: Buffer): number {
  const { width, height, rgba } = decodePng(png);
  const bg = [rgba[0], rgba[1], rgba[2]];
  let n = 0;
  for (let i = 0; i < width * height; i++) {
    const d = Math.abs(rgba[i * 4] - bg[0]) + Math.abs(rgba[i * 4 + 1] - bg[1]) + Math.abs(rgba[i * 4 + 2] - bg[2]);
    if (d > 48) n++;
  }
  return n;
}
