#!/usr/bin/env node
// Builds dist/: the runtime (src/) and the kernel (kernel/) compiled by tsc to JavaScript + .d.ts, in
// the same layout as the sources, plus the WGSL shaders the runtime reads at run time (src/device/
// pipelines.ts finds them at ../../kernels-wgsl from its own file, so dist/kernels-wgsl).
//
//   node bin/build.mjs             npm run build, npm pack (prepack): a clean, type-checked build; fails on
//                                  any type error.
//   node bin/build.mjs --if-stale  npm ci / npm install (prepare), and bin/gradlab.js in a checkout before
//                                  every command: rebuilds only when a source changed since the last
//                                  build, without type checking (npm run typecheck is the gate for that),
//                                  so `gradlab install` / `gradlab run` never start a stale kernel.
// The kernelspec itself always runs dist/kernel/cli/main.js; nothing is built when a kernel starts.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const DIST = join(ROOT, "dist");
const STAMP = join(DIST, ".sources-stamp");
const LOCK = join(ROOT, "node_modules", ".cache", "gradlab-build.lock");
/** what the build reads: a change to any of these makes dist/ stale */
const INPUTS = ["src", "kernel", "kernels-wgsl", "tsconfig.json", "tsconfig.build.json", "package.json"];

function files(p) {
  let st;
  try {
    st = statSync(p);
  } catch {
    return [];
  }
  if (!st.isDirectory()) return [`${p}:${st.size}:${st.mtimeMs}`];
  return readdirSync(p)
    .sort()
    .flatMap((e) => files(join(p, e)));
}

/** size and mtime of every input, and the Node version (cheap: ~300 stats). */
function fingerprint() {
  return [...INPUTS.flatMap((p) => files(join(ROOT, p))), process.version].join("\n");
}

function tsc(extra) {
  const bin = createRequire(join(ROOT, "package.json")).resolve("typescript/bin/tsc");
  return spawnSync(process.execPath, [bin, "-p", join(ROOT, "tsconfig.build.json"), ...extra], { stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
}

/** What tsc does not emit: the shaders, and the package's type entry (package.json "types"). */
function copyAssets() {
  rmSync(join(DIST, "kernels-wgsl"), { recursive: true, force: true });
  cpSync(join(ROOT, "kernels-wgsl"), join(DIST, "kernels-wgsl"), { recursive: true });
  // The runtime's declarations name WebGPU's types (GPUDevice, GPUBuffer), which are globals from
  // @webgpu/types; the sources get them from tsconfig's "types", a user's project from this reference.
  writeFileSync(join(DIST, "index.d.ts"), '/// <reference types="@webgpu/types" />\nexport * from "./src/index.js";\n');
}

/** The clean, type-checked build; returns tsc's exit status (its diagnostics go to stderr). */
export function build() {
  const stamp = fingerprint();
  rmSync(DIST, { recursive: true, force: true });
  const r = tsc([]);
  process.stderr.write(r.stdout + r.stderr);
  if (r.status !== 0) return r.status ?? 1;
  copyAssets();
  writeFileSync(STAMP, stamp);
  return 0;
}

function stale() {
  try {
    return readFileSync(STAMP, "utf8") !== fingerprint();
  } catch {
    return true;
  }
}

/** Waits for another process's rebuild (a directory is the lock: mkdir is atomic); returns a release. */
function lock() {
  mkdirSync(dirname(LOCK), { recursive: true });
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(join(LOCK, "pid"), String(process.pid));
      return () => rmSync(LOCK, { recursive: true, force: true });
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
    }
    let holder = 0;
    try {
      holder = Number(readFileSync(join(LOCK, "pid"), "utf8"));
    } catch {
      // the holder has not written its pid yet
    }
    // a holder that died mid-build leaves its lock behind
    if (holder && !alive(holder)) rmSync(LOCK, { recursive: true, force: true });
    else if (Date.now() > deadline) throw new Error(`dist/ is being rebuilt by process ${holder} for over 3 minutes (lock ${LOCK})`);
    else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM";
  }
}

/** In a checkout: rebuilds dist/ if any source changed since the last build (see the header). */
export function ensureBuilt() {
  if (!stale()) return;
  const release = lock();
  try {
    if (!stale()) return; // another process rebuilt it while this one waited
    const stamp = fingerprint();
    process.stderr.write("gradlab: sources changed since the last build; rebuilding dist/ (npm run build)\n");
    const r = tsc(["--noCheck"]);
    // Without type checking, tsc reports only what stops it from emitting (a syntax error, a broken
    // tsconfig); the files it could emit are written anyway, so only a missing kernel is fatal.
    if (r.status !== 0) process.stderr.write(r.stdout + r.stderr);
    copyAssets();
    writeFileSync(STAMP, stamp);
  } finally {
    release();
  }
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) {
  // --if-stale: npm's prepare (npm ci, npm install), which must not fail on a type error
  if (process.argv[2] === "--if-stale") ensureBuilt();
  else process.exit(build());
}
