// gradlab run SCRIPT.ts [ARGS...]: a plain script (TypeScript or JavaScript, an ES module) in a Node of its
// own, with kernel/register.ts's hooks: its tensors are let go of where a notebook cell lets go of them
// (the same as `node --import gradlab/register SCRIPT.ts`). Its exit status is the command's.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
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
  // A TERM sent to this process is passed on. So is an INT, unless the terminal sent it: a terminal's
  // Ctrl-C goes to its whole foreground process group, the script included, and the script decides what
  // a Ctrl-C does (a second one passed on would be a second Ctrl-C).
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  const onInt = () => {
    if (!fromTerminal()) child.kill("SIGINT");
  };
  process.on("SIGTERM", forward);
  process.on("SIGINT", onInt);
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      process.off("SIGTERM", forward);
      process.off("SIGINT", onInt);
      resolve(code ?? 128 + (signal ? constants.signals[signal] : 0)); // as a shell reports a signal
    });
  });
}

/** Whether a SIGINT that just arrived is most likely a terminal's Ctrl-C: this process has a controlling
 *  terminal and its process group is that terminal's foreground group (/proc/self/stat: pgrp, tty_nr,
 *  tpgid). A `kill -INT` from elsewhere while it runs in the foreground cannot be told apart and is not
 *  passed on; where /proc cannot say (not Linux), neither is any. */
function fromTerminal(): boolean {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    // after "pid (comm) ": state ppid pgrp session tty_nr tpgid ...
    const [, , pgrp, , ttyNr, tpgid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ttyNr !== "0" && pgrp === tpgid;
  } catch {
    return true;
  }
}
