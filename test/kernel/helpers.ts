// Shared by the kernel suites: a kernelspec installed into a temporary prefix, and runners for the
// Python drivers (Debian's /usr/bin/python3 with jupyter_client) beside these tests.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const REPO = resolve(import.meta.dirname, "../..");
export const PYTHON = process.env.GRADLAB_TEST_PYTHON ?? "/usr/bin/python3";
export const GRADLAB = join(REPO, "bin", "gradlab.js");

export interface Env {
  dir: string;
  env: NodeJS.ProcessEnv;
  cleanup(): void;
}

export function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeout?: number } = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((res) => {
    execFile(cmd, args, { env: opts.env, cwd: opts.cwd ?? REPO, timeout: opts.timeout ?? 120_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      res({ code: err ? (typeof (err as any).code === "number" ? (err as any).code : 1) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** Installs the kernelspec with `gradlab install --prefix` into a fresh directory. */
export async function installedKernel(extraEnv: NodeJS.ProcessEnv = {}): Promise<Env> {
  const dir = mkdtempSync(join(tmpdir(), "gradlab-kernel-test-"));
  const r = await run(process.execPath, [GRADLAB, "install", "--prefix", join(dir, "prefix")]);
  if (r.code !== 0) throw new Error(`gradlab install failed: ${r.stderr}`);
  const env = {
    ...process.env,
    JUPYTER_PATH: join(dir, "prefix", "share", "jupyter"),
    JUPYTER_DATA_DIR: join(dir, "data"),
    JUPYTER_RUNTIME_DIR: join(dir, "runtime"),
    GRADLAB_HISTORY_FILE: join(dir, "history.jsonl"),
    GRADLAB_RUNTIME: join(REPO, "test", "kernel", "fixtures", "fake-runtime.ts"),
    ...extraEnv,
  };
  return { dir, env, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Runs one scenario of drive.py and returns what it observed. */
export async function drive(e: Env, scenario: string, extraEnv: NodeJS.ProcessEnv = {}, timeoutMs = 120_000): Promise<any> {
  const r = await run(PYTHON, [join(REPO, "test", "kernel", "drive.py"), scenario], { env: { ...e.env, ...extraEnv }, timeout: timeoutMs });
  if (r.code !== 0) throw new Error(`drive.py ${scenario} failed (${r.code}):\n${r.stderr}\n${r.stdout}`);
  return JSON.parse(r.stdout.trim().split("\n").pop()!);
}
