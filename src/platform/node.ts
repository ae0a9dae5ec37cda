// The runtime on Node: Dawn through npm `webgpu`, V8 flags for synchronous reclamation, shaders read
// from kernels-wgsl/, native addons loaded synchronously. Facts from DESIGN.md that shape this file:
// - the object `create()` returns must stay reachable for the life of the process, or Dawn crashes;
// - Dawn waits for GPU work by re-posting a native callback with the global `setImmediate`, which spins
//   a core that lavapipe's worker threads need; we let it spin for 1 ms, then back off to 1 ms timers;
// - a full gc() then FinalizationRegistry.prototype.cleanupSome() runs the finalisers of what became
//   unreachable inside the same job (V8 flags; see src/memory/lifetime.ts).

import { closeSync, existsSync, fstatSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import { fileURLToPath } from "node:url";
import v8 from "node:v8";
import vm from "node:vm";
import type { AdapterBackend, EngineHooks, Platform } from "./types.ts";

const INSTALL_HINT =
  "No usable WebGPU adapter was found. On Debian 12 install a Vulkan driver with " +
  "`apt-get install -t bookworm-backports mesa-vulkan-drivers libvulkan1` (Mesa >= 24 from bookworm-backports; " +
  "Dawn rejects Mesa 22) or the GLES fallback with `apt-get install libegl1 libgles2 libegl-mesa0` " +
  "(then GRADLAB_WEBGPU_BACKEND=opengles). `bash .ci/setup` in the GradLab checkout does both.";

const require = createRequire(import.meta.url);
const shaderDir = fileURLToPath(new URL("../../kernels-wgsl/", import.meta.url));

type DawnModule = { create(options: string[]): GPU; globals: Record<string, unknown> };
let dawn: DawnModule | null = null;
const keepAlive: GPU[] = [];

function loadDawn(): DawnModule {
  if (dawn) return dawn;
  installPollingBackoff();
  // `webgpu` ships only a CommonJS-style native addon behind an ESM entry; require keeps loading synchronous.
  const pkgDir = require.resolve("webgpu/package.json").replace(/package\.json$/, "");
  const arch = process.platform === "darwin" ? "universal" : process.arch;
  const native = require(`${pkgDir}dist/${process.platform}-${arch}/dawn.node`) as DawnModule;
  Object.assign(globalThis, native.globals);
  dawn = native;
  return native;
}

let streakStart = 0;
let lastPoll = 0;

function installPollingBackoff(): void {
  const original = globalThis.setImmediate;
  const patched = function (this: unknown, fn: (...a: unknown[]) => void, ...args: unknown[]) {
    if (typeof fn === "function" && Function.prototype.toString.call(fn).includes("[native code]")) {
      const now = performance.now();
      if (now - lastPoll > 5) streakStart = now;
      lastPoll = now;
      if (now - streakStart > 1) return setTimeout(fn, 1, ...args) as unknown as NodeJS.Immediate;
    }
    return original(fn, ...args);
  };
  globalThis.setImmediate = Object.assign(patched, { __promisify__: original.__promisify__ }) as typeof setImmediate;
}

async function requestAdapter(backend: AdapterBackend): Promise<GPUAdapter | null> {
  if (backend === "browser") return null;
  const { create } = loadDawn();
  if (backend === "opengles") process.env.EGL_PLATFORM ??= "surfaceless";
  let gpu: GPU;
  try {
    // Dawn suballocates buffers of up to a few MiB from heaps it pools and never gives back; every
    // small-pool segment (2 MiB) is one, so 400 MiB of small tensors stayed in the process after
    // empty_cache(). The caching allocator above already pools, as PyTorch's does over cudaMalloc, so
    // each segment is its own allocation, released when the segment is (measured: 610 -> 210 MiB RSS).
    gpu = create([`backend=${backend}`, "enable-dawn-features=disable_resource_suballocation"]);
  } catch {
    return null;
  }
  keepAlive.push(gpu);
  const options: GPURequestAdapterOptions & { featureLevel?: string } = { powerPreference: "high-performance" };
  if (backend === "opengles") options.featureLevel = "compatibility";
  return withoutNativeStderr(() => gpu.requestAdapter(options)).catch(() => null);
}

/**
 * Runs fn with file descriptor 2 on /dev/null. Dawn prints its own warnings ("Warning:
 * maxDynamicUniformBuffersPerPipelineLayout artificially reduced ...") with fprintf from inside
 * requestAdapter, synchronously, past process.stderr, so `gradlab run` showed them among a cell's
 * output. Linux only, and only where fd 2 can be reopened through /proc (a tty, pipe or file).
 */
export function withoutNativeStderr<T>(fn: () => T): T {
  let saved = -1;
  try {
    if (process.platform !== "linux" || fstatSync(2).isSocket()) return fn();
    saved = openSync("/proc/self/fd/2", "a");
  } catch {
    return fn();
  }
  const restore = () => {
    openSync(`/proc/self/fd/${saved}`, "a"); // the lowest free descriptor: 2 again
    closeSync(saved);
  };
  closeSync(2);
  const fd = openSync("/dev/null", "a"); // the lowest free descriptor: 2
  if (fd !== 2) {
    closeSync(fd);
    restore();
    return fn();
  }
  try {
    return fn();
  } finally {
    closeSync(2);
    restore();
  }
}

/**
 * The engine's collector and a FinalizationRegistry constructor that has cleanupSome. Node gives neither
 * by default; both are switched on here with V8 flags and taken from a fresh context (flags for
 * built-ins apply to contexts created after they are set), so plain Node scripts need no command-line
 * flag. `--expose-gc --harmony-weak-refs-with-cleanup-some` on the command line works too.
 */
function engineHooks(): EngineHooks {
  let gc = (globalThis as { gc?: () => void }).gc ?? null;
  let Registry: typeof FinalizationRegistry = FinalizationRegistry;
  const hasCleanupSome = (R: typeof FinalizationRegistry) => typeof (R.prototype as { cleanupSome?: unknown }).cleanupSome === "function";
  if (!gc || !hasCleanupSome(Registry)) {
    try {
      v8.setFlagsFromString("--expose-gc");
      v8.setFlagsFromString("--harmony-weak-refs-with-cleanup-some");
      const ctx = vm.createContext({});
      gc ??= vm.runInContext("gc", ctx) as () => void;
      if (!hasCleanupSome(Registry)) Registry = vm.runInContext("FinalizationRegistry", ctx) as typeof FinalizationRegistry;
    } catch {
      // fall through: reported once, on first use
    }
  }
  return {
    gc: typeof gc === "function" ? gc : null,
    Registry,
    synchronous: typeof gc === "function" && hasCleanupSome(Registry),
    finishCompiles: compileBarrier(),
    unavailable:
      "GradLab cannot reclaim unreachable tensors synchronously in this Node (no gc / FinalizationRegistry.cleanupSome): memory figures include tensors you no longer reference until they are collected. Dispose tensors (using, dispose(), torch.scope) or `await torch.gc()` before reading figures.",
  };
}

/**
 * Waits for V8's background optimising compilations and installs their code. A compile job holds
 * strong handles to the closure it compiles and to that closure's context until it is installed, so a
 * runtime closure that captured a tensor (a scope's kept set, an op's inputs) keeps it reachable while
 * its job is in flight: a collection then finds the tensor alive and a figure is 64 MiB high, at
 * random (seen in notebook 09 under load; DESIGN.md). The intrinsic is reachable only with
 * --allow-natives-syntax, which applies to code compiled while it is set: the flag is on just long
 * enough to compile the function here. V8 flushes the bytecode of a function that has not run for a
 * while and compiles it again from source on its next call, without the flag: that compile throws a
 * SyntaxError (a long-running kernel's empty_cache() failed so), and the function is then compiled
 * again with the flag on. Where the engine refuses, reclaim goes without it.
 */
function compileBarrier(): () => void {
  const withNatives = <T>(fn: () => T): T => {
    v8.setFlagsFromString("--allow-natives-syntax");
    try {
      return fn();
    } finally {
      v8.setFlagsFromString("--no-allow-natives-syntax");
    }
  };
  let finish: () => void;
  try {
    finish = withNatives(() => {
      const f = vm.runInNewContext("(function finishCompiles() { %FinalizeOptimization(); })") as () => void;
      f(); // compiled now, while the flag is set (lazy compilation later would refuse the %-call)
      return f;
    });
  } catch {
    return () => {};
  }
  return () => {
    try {
      finish();
    } catch (e) {
      // its bytecode was flushed and compiled again without the flag (the error is of the new context's
      // realm, so it is known by name)
      if ((e as Error | null)?.name !== "SyntaxError") throw e;
      withNatives(finish);
    }
  };
}

export const platform: Platform = {
  name: "node",
  env: (name) => process.env[name],
  // on stderr at once, as Python prints a warning: the kernel's output capture puts it in the cell that
  // caused it (process.emitWarning prints on a later tick, outside the capture, so a notebook never
  // showed PyTorch's UserWarnings); the browser's console.warn prints the same line
  warn: (message, type) => void process.stderr.write(`${type}: ${message}\n`),
  hostMemory: () => os.totalmem(),
  shaderText: (name) => readFileSync(`${shaderDir}${name}.wgsl`, "utf8"),
  engineHooks,
  backends: (choice) => (choice === "auto" ? ["vulkan", "opengles"] : [choice]),
  requestAdapter,
  noAdapterHint: () => INSTALL_HINT,
  /** The host starts waiting on the GPU: Dawn may poll eagerly again for the first 1 ms. */
  beginWait: () => void (lastPoll = 0),
  base64: (text) => Buffer.from(text, "utf8").toString("base64"),
  writeFile: (path, data) => writeFileSync(path, typeof data === "function" ? data() : data),
  requireSync: <T>(name: string) => require(name) as T,
  fileExists: (path) => existsSync(path),
};
