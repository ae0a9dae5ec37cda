// kernel/executor/modules.ts for the Worker: `gradlab` (and `torch`) is the runtime bundled with this
// Worker; a relative import (`./check.ts`, as the course's notebooks write) is read from the site's
// files beside the notebook, transpiled by esbuild-wasm and imported; `node:path` is path-browserify;
// anything else is refused with a
// reason, since there is no node_modules and the site requests nothing from other origins.
import * as runtime from "../../src/index.ts";
import * as path from "path-browserify";
import { transpileModule } from "./shims/esbuild.ts";

export async function loadTorch(): Promise<void> {}
export const loadedTorch = (): unknown => runtime;
export const torchOrThrow = (): unknown => runtime;
/** The runtime is bundled with this Worker and loaded with it: no cell has a load to wait for. */
export const mayReachRuntime = (_source: string): boolean => true;

/** The folder of files/ the kernel's notebook sits in (set by the Worker from the kernel's location). */
let filesBase = new URL("../../files/", self.location.href);
export function setNotebookDir(dir: string): void {
  filesBase = new URL(`../../files/${dir ? `${dir.replace(/\/?$/, "/")}` : ""}`, self.location.href);
}

const loaded = new Map<string, Promise<unknown>>();

export async function importForCell(spec: string, _baseDir: string): Promise<any> {
  if (spec === "gradlab") return runtime;
  if (spec === "node:path" || spec === "path") return path; // pure string functions: the same in a browser
  if (!(spec.startsWith("./") || spec.startsWith("../"))) {
    throw new Error(
      `Cannot import "${spec}" in GradLab Lite: in the browser a cell can import "gradlab" and the course's own files (./check.ts), nothing else`,
    );
  }
  const url = new URL(spec, filesBase).href;
  let p = loaded.get(url);
  if (!p) {
    p = (async () => {
      const res = await fetch(url);
      if (!res.ok) throw new Error(`Cannot import "${spec}": ${url} answered ${res.status}`);
      const js = /\.[cm]?js$/.test(url) ? await res.text() : await transpileModule(await res.text(), spec);
      const blob = URL.createObjectURL(new Blob([js], { type: "text/javascript" }));
      try {
        return await import(/* @vite-ignore */ blob);
      } finally {
        URL.revokeObjectURL(blob);
      }
    })();
    loaded.set(url, p);
  }
  return p;
}
