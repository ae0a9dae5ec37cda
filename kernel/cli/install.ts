// gradlab install [--user | --sys-prefix | --prefix DIR] [--name NAME]: writes the kernelspec.
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { KERNEL_MAIN, REPO, jupyterUserDataDir, kernelArgv } from "./paths.ts";

export async function installKernelspec(args: string[]): Promise<string> {
  let name = "gradlab";
  let base: string | null = null;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--user") base = jupyterUserDataDir();
    else if (a === "--sys-prefix") base = join(sysPrefix(), "share", "jupyter");
    else if (a === "--prefix") base = join(required(args[++i], "--prefix"), "share", "jupyter");
    else if (a.startsWith("--prefix=")) base = join(a.slice(9), "share", "jupyter");
    else if (a === "--name") name = required(args[++i], "--name");
    else throw new Error(`unknown option ${a}\nusage: gradlab install [--user | --sys-prefix | --prefix DIR] [--name NAME]`);
  }
  base ??= jupyterUserDataDir();
  const spec = JSON.parse(readFileSync(join(REPO, "kernel.json"), "utf8"));
  spec.argv = kernelArgv();
  if (!existsSync(KERNEL_MAIN)) throw new Error(`the built kernel ${KERNEL_MAIN} is missing: run npm run build`);
  const dir = join(base, "kernels", name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "kernel.json"), `${JSON.stringify(spec, null, 2)}\n`);
  // the Launcher's tile and the kernel picker's icon
  for (const logo of ["logo-32x32.png", "logo-64x64.png", "logo-svg.svg"]) copyFileSync(join(REPO, "kernel", "assets", logo), join(dir, logo));
  return dir;
}

function required(v: string | undefined, flag: string): string {
  if (!v) throw new Error(`${flag} needs a value`);
  return v;
}

/** The active Python environment's prefix, without needing Python when an env var says it. */
function sysPrefix(): string {
  if (process.env.VIRTUAL_ENV) return process.env.VIRTUAL_ENV;
  if (process.env.CONDA_PREFIX) return process.env.CONDA_PREFIX;
  for (const py of ["python3", "python"]) {
    try {
      return execFileSync(py, ["-c", "import sys; print(sys.prefix)"], { encoding: "utf8" }).trim();
    } catch {
      // try the next one
    }
  }
  return "/usr/local";
}
