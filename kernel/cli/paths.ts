// Where things are: the package, the built kernel the kernelspec starts, Jupyter's data dirs.
import { join } from "node:path";
import { homedir } from "node:os";
import { REPO } from "../repo.ts";

export { REPO };
/** The classroom hub's configuration: in a checkout only (the npm package does not ship deploy/). */
export const HUB_CONFIG = join(REPO, "deploy", "jupyterhub_config.py");
/** GradLab Lite's sources and packages (lite/): in a checkout only. */
export const LITE_DIR = join(REPO, "lite");
/** The Lite kernel's Worker entry, whose presence says `gradlab lite build` can run here. */
export const LITE_WORKER = join(LITE_DIR, "src", "worker.ts");
/** The built kernel's entry (this file's own build, whether this runs from dist/ or from sources). */
export const KERNEL_MAIN = join(REPO, "dist", "kernel", "cli", "main.js");

/**
 * The kernelspec's argv: the built kernel (`npm run build` emits dist/), with the two V8 flags that let
 * the runtime reclaim unreachable tensors synchronously (src/memory/lifetime.ts; it can switch them on
 * itself, but flags given at start-up cover code that runs before the runtime loads). No tsx: it is
 * registered only when a cell imports a TypeScript file.
 */
export function kernelArgv(): string[] {
  return [process.execPath, "--expose-gc", "--harmony-weak-refs-with-cleanup-some", KERNEL_MAIN, "kernel", "-f", "{connection_file}"];
}

export function jupyterUserDataDir(): string {
  if (process.env.JUPYTER_DATA_DIR) return process.env.JUPYTER_DATA_DIR;
  if (process.platform === "darwin") return join(homedir(), "Library", "Jupyter");
  return join(process.env.XDG_DATA_HOME || join(homedir(), ".local", "share"), "jupyter");
}
