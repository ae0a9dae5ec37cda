// kernel/executor/modules.ts for the Worker: `gradlab` (and `torch`) is the runtime bundled with this
// Worker; a relative import (`./check.ts`, as the course's notebooks write, or a file the student made)
// is read from the student's drive beside the notebook (JupyterLite's contents, asked of the page: the
// browser's copy where the student edited or created the file, the site's otherwise), transpiled by
// esbuild-wasm and imported; `node:path` is path-browserify; anything else is refused with a reason,
// since there is no node_modules and the site requests nothing from other origins.
import * as runtime from "../../src/index.ts";
import { base64OfBytes } from "../../src/platform/browser.ts";
import * as path from "path-browserify";
import { transpileModule } from "./shims/esbuild.ts";
import type { FromWorker, ToWorker } from "./protocol.ts";

export async function loadTorch(): Promise<void> {}
export const loadedTorch = (): unknown => runtime;
export const torchOrThrow = (): unknown => runtime;
/** The runtime is bundled with this Worker and loaded with it: no cell has a load to wait for. */
export const mayReachRuntime = (_source: string): boolean => true;

/** The drive folder the kernel's notebook sits in (set by the Worker from the kernel's location). */
let notebookDir = "";
export function setNotebookDir(dir: string): void {
  notebookDir = dir.replace(/^\/+|\/+$/g, "");
}

/** A path a cell names, from the drive's root: relative to the notebook's folder (as the server kernel's
 *  working directory is the notebook's), or from the root where it starts with "/"; null where it leaves
 *  the drive. */
function drivePathOf(p: string): string | null {
  const resolved = p.startsWith("/") ? path.normalize(p).replace(/^\/+/, "") : path.normalize(path.join(notebookDir, p));
  return resolved === ".." || resolved.startsWith("../") ? null : resolved;
}

/** A file the runtime writes (torch.cuda.memory._dump_snapshot): handed to the page, which saves it in
 *  the drive, where the file browser shows it and *Download* saves it (src/platform/browser.ts installs
 *  this as its file sink). The page saves it after the cell's statement returns; a failure is reported
 *  there, as a notification. */
export function writeDriveFile(p: string, bytes: Uint8Array): void {
  const drivePath = drivePathOf(p);
  const name = p.split("/").pop();
  // "", "." or "x/.." name a folder (path.normalize makes them one), where the server's open() fails
  if (drivePath === null || !name || name === "." || name === "..") {
    throw new Error(`Cannot write "${p}": name a file in the course's folder (the notebook is in "/${notebookDir}")`);
  }
  (self as unknown as Worker).postMessage({ type: "write", path: drivePath, base64: base64OfBytes(bytes) } satisfies FromWorker);
}

// Files are read by the page, which holds JupyterLite's contents (the browser's storage over the
// site's files); the Worker asks with an id and waits for the answer carrying it.
type FileAnswer = { text: string } | { error: string };
const reads = new Map<number, (a: FileAnswer) => void>();
let nextRead = 1;
function readDriveFile(drivePath: string): Promise<FileAnswer> {
  const id = nextRead++;
  const answer = new Promise<FileAnswer>((r) => reads.set(id, r));
  (self as unknown as Worker).postMessage({ type: "read", id, path: drivePath } satisfies FromWorker);
  return answer;
}
/** The page's answer to a read (worker.ts routes it here). */
export function fileRead(m: Extract<ToWorker, { type: "file" }>): void {
  reads.get(m.id)?.("text" in m ? { text: m.text } : { error: m.error });
  reads.delete(m.id);
}

// once per kernel, as Node's module cache does on the server: a restart reads edited files again
const loaded = new Map<string, Promise<unknown>>();

export async function importForCell(spec: string, _baseDir: string): Promise<any> {
  if (spec === "gradlab") return runtime;
  if (spec === "node:path" || spec === "path") return path; // pure string functions: the same in a browser
  if (!(spec.startsWith("./") || spec.startsWith("../"))) {
    throw new Error(
      `Cannot import "${spec}" in GradLab Lite: in the browser a cell can import "gradlab" and the course's own files (./check.ts), nothing else`,
    );
  }
  const drivePath = drivePathOf(spec);
  if (drivePath === null) throw new Error(`Cannot import "${spec}": it is outside the course's folder (the notebook is in "/${notebookDir}")`);
  let p = loaded.get(drivePath);
  if (!p) {
    p = (async () => {
      const file = await readDriveFile(drivePath);
      if ("error" in file) throw new Error(`Cannot import "${spec}": ${file.error}`);
      const js = /\.[cm]?js$/.test(drivePath) ? file.text : await transpileModule(file.text, spec);
      const blob = URL.createObjectURL(new Blob([js], { type: "text/javascript" }));
      try {
        return await import(/* @vite-ignore */ blob);
      } finally {
        URL.revokeObjectURL(blob);
      }
    })();
    // a failed import is not kept: the student fixes the file and runs the cell again
    p.catch(() => loaded.delete(drivePath));
    loaded.set(drivePath, p);
  }
  return p;
}
