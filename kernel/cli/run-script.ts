// gradlab run SCRIPT.ts [ARGS...]: a plain script (TypeScript or JavaScript, an ES module) in a Node of its
// own, with kernel/register.ts's hooks: its tensors are let go of where a notebook cell lets go of them
// (the same as `node --import gradlab/register SCRIPT.ts`). Its exit status is the command's.
import { spawn } from "node:child_process";
import { constants } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { FROM_SOURCE, REPO } from "../repo.ts";

/** What `gradlab run` runs as a script rather than as a notebook. */
export const SCRIPT = /\.m?[jt]s$/;

export function runScript(script: string, args: string[]): Promise<number> {
  const register = pathToFileURL(join(REPO, FROM_SOURCE ? "kernel/register.ts" : "dist/kernel/register.js")).href;
  // from sources (a checkout's tests), the hooks and register.ts are TypeScript themselves: tsx loads them
  const tsx = FROM_SOURCE ? ["--import", import.meta.resolve("tsx")] : [];
  // the runtime can switch these on itself; given at start-up they also cover code run before it loads
  const argv = [...tsx, "--expose-gc", "--harmony-weak-refs-with-cleanup-some", "--import", register, script, ...args];
  const child = spawn(process.execPath, argv, { stdio: "inherit" });
  // a terminal's Ctrl-C reaches the script too (same process group); a TERM sent to this process is passed on
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  process.on("SIGTERM", forward);
  process.on("SIGINT", () => {}); // the script decides what Ctrl-C does
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      process.off("SIGTERM", forward);
      resolve(code ?? 128 + (signal ? constants.signals[signal] : 0)); // as a shell reports a signal
    });
  });
}
