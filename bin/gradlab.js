#!/usr/bin/env node
// The `gradlab` command: starts Node with --expose-gc, --harmony-weak-refs-with-cleanup-some and the tsx loader on kernel/cli/main.ts
// (the sources are TypeScript), forwarding arguments, exit status and Ctrl-C.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsx = pathToFileURL(createRequire(join(repo, "package.json")).resolve("tsx")).href;
const child = spawn(
  process.execPath,
  ["--expose-gc", "--harmony-weak-refs-with-cleanup-some", "--import", tsx, join(repo, "kernel", "cli", "main.ts"), ...process.argv.slice(2)],
  { stdio: "inherit", env: { NODE_NO_WARNINGS: "1", ...process.env } },
);
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => child.kill(sig));
}
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  }
  else process.exit(code ?? 1);
});
