// Builds never break a running or starting kernel (issue 22): two `npm run build`s at once both succeed
// (one lock for every build path), and throughout, dist/ is always a complete build: a CLI started
// at any moment loads, and the entry file and the build stamp are never missing.
import { expect, test } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";

const REPO = resolve(import.meta.dirname, "../..");
const MAIN = join(REPO, "dist", "kernel", "cli", "main.js");
const STAMP = join(REPO, "dist", ".sources-stamp");

const exitOf = (p: ReturnType<typeof spawn>) => new Promise<number | null>((r) => p.on("exit", (code) => r(code)));

test("two builds at once both succeed, and dist/ stays whole while they run", async () => {
  const builds = [0, 1].map(() => spawn(process.execPath, [join(REPO, "bin", "build.mjs")], { cwd: REPO, stdio: ["ignore", "ignore", "pipe"] }));
  const stderr = ["", ""];
  builds.forEach((b, i) => b.stderr!.on("data", (d) => (stderr[i] += d)));
  const done = Promise.all(builds.map(exitOf));
  let finished = false;
  void done.then(() => (finished = true));
  let checks = 0;
  let missing = 0;
  const cliRuns: (number | null)[] = [];
  while (!finished) {
    if (!existsSync(MAIN) || !existsSync(STAMP)) missing++;
    checks++;
    // a CLI started now loads its modules from dist/ (what a kernel starting mid-rebuild does)
    if (checks % 20 === 0) cliRuns.push(spawnSync(process.execPath, [MAIN, "help"], { cwd: REPO, encoding: "utf8" }).status);
    await new Promise((r) => setTimeout(r, 5));
  }
  expect({ codes: await done, stderr }).toEqual({ codes: [0, 0], stderr: ["", ""] });
  expect(checks).toBeGreaterThan(100); // the builds took a while: the checks overlapped them
  expect(missing).toBe(0);
  expect(cliRuns.length).toBeGreaterThan(0);
  expect(cliRuns.filter((c) => c !== 0)).toEqual([]);
  expect(spawnSync(process.execPath, [MAIN, "help"], { encoding: "utf8" }).status).toBe(0);
}, 300_000);
