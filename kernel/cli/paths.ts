// Where things are: this checkout, the tsx loader, Node flags the kernel needs, Jupyter's data dirs.
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { homedir } from "node:os";
import { REPO } from "../repo.ts";

export { REPO };
export const MAIN = join(REPO, "kernel", "cli", "main.ts");

export function tsxLoaderUrl(): string {
  return pathToFileURL(createRequire(join(REPO, "package.json")).resolve("tsx")).href;
}

/** The kernelspec's argv: the bundled kernel, started without tsx (see start.mjs). */
export function kernelArgv(): string[] {
  return [process.execPath, "--expose-gc", "--harmony-weak-refs-with-cleanup-some", join(REPO, "kernel", "cli", "start.mjs"), "kernel", "-f", "{connection_file}"];
}

/** The argv that starts the kernel (or any gradlab command) from TypeScript sources under tsx. */
export function nodeArgv(...args: string[]): string[] {
  return [process.execPath, "--expose-gc", "--harmony-weak-refs-with-cleanup-some", "--import", tsxLoaderUrl(), MAIN, ...args];
}

export function jupyterUserDataDir(): string {
  if (process.env.JUPYTER_DATA_DIR) return process.env.JUPYTER_DATA_DIR;
  if (process.platform === "darwin") return join(homedir(), "Library", "Jupyter");
  return join(process.env.XDG_DATA_HOME || join(homedir(), ".local", "share"), "jupyter");
}
