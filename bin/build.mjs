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
// Every build, of either kind, holds one lock and writes a new folder beside dist/, which replaces
// dist/ only when it is complete (two renames, microseconds apart): a kernel that starts or loads a
// module during a rebuild finds the old build or the new one, never a half-written or missing one,
// and two builds at once run one after the other.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const DIST = join(ROOT, "dist");
const STAMP_NAME = ".sources-stamp";
const STAMP = join(DIST, STAMP_NAME);
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

function tsc(out, extra) {
  const bin = createRequire(join(ROOT, "package.json")).resolve("typescript/bin/tsc");
  const args = [bin, "-p", join(ROOT, "tsconfig.build.json"), "--outDir", out, "--tsBuildInfoFile", join(out, ".tsbuildinfo"), ...extra];
  return spawnSync(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
}

/** What tsc does not emit: the shaders, and the package's type entry (package.json "types"). */
function copyAssets(out) {
  rmSync(join(out, "kernels-wgsl"), { recursive: true, force: true });
  cpSync(join(ROOT, "kernels-wgsl"), join(out, "kernels-wgsl"), { recursive: true });
  // The runtime's declarations name WebGPU's types (GPUDevice, GPUBuffer), which are globals from
  // @webgpu/types; the sources get them from tsconfig's "types", a user's project from this reference.
  writeFileSync(join(out, "index.d.ts"), '/// <reference types="@webgpu/types" />\nexport * from "./src/index.js";\n');
}

/** A folder beside dist/ for this process's build (removing what dead builds left behind). */
function stagingDir() {
  for (const e of readdirSync(ROOT)) {
    const m = /^dist\.(?:new|old)-(\d+)$/.exec(e);
    if (m && !alive(Number(m[1]))) rmSync(join(ROOT, e), { recursive: true, force: true });
  }
  const out = join(ROOT, `dist.new-${process.pid}`);
  rmSync(out, { recursive: true, force: true });
  return out;
}

/** Puts a finished build in place of dist/: rename the old one away, the new one in, then delete the old. */
function swapIn(out) {
  const old = join(ROOT, `dist.old-${process.pid}`);
  const had = existsSync(DIST);
  if (had) renameSync(DIST, old);
  renameSync(out, DIST);
  if (had) rmSync(old, { recursive: true, force: true });
}

/** The clean, type-checked build; returns tsc's exit status (its diagnostics go to stderr). */
export function build() {
  const release = lock();
  try {
    const stamp = fingerprint();
    const out = stagingDir();
    const r = tsc(out, []);
    process.stderr.write(r.stdout + r.stderr);
    if (r.status !== 0) {
      rmSync(out, { recursive: true, force: true });
      return r.status ?? 1; // dist/ stays as it was
    }
    copyAssets(out);
    writeFileSync(join(out, STAMP_NAME), stamp);
    swapIn(out);
    return 0;
  } finally {
    release();
  }
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
    const out = stagingDir();
    // incremental: start from a copy of the current build and its .tsbuildinfo
    if (existsSync(DIST)) cpSync(DIST, out, { recursive: true });
    const r = tsc(out, ["--noCheck"]);
    // Without type checking, tsc reports only what stops it from emitting (a syntax error, a broken
    // tsconfig); the files it could emit are written anyway, so only a missing kernel is fatal.
    if (r.status !== 0) process.stderr.write(r.stdout + r.stderr);
    copyAssets(out);
    writeFileSync(join(out, STAMP_NAME), stamp);
    swapIn(out);
  } finally {
    release();
  }
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) {
  // --if-stale: npm's prepare (npm ci, npm install), which must not fail on a type error
  if (process.argv[2] === "--if-stale") ensureBuilt();
  else process.exit(build());
}
