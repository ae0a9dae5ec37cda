// The runtime in a browser Web Worker: the browser's own WebGPU (navigator.gpu), the WGSL of
// kernels-wgsl/ inlined by the bundler (bin/lite/bundle.mjs defines __GRADLAB_WGSL__), and no way to
// collect garbage on demand: browsers expose neither gc() nor FinalizationRegistry.cleanupSome, so
// tensors dropped without dispose() are released when the browser's collector gets to them, later, and
// memory_stats()["reclaim.synchronous"] is 0. Measured in Chromium 156: --js-flags=--expose-gc gives
// Workers a gc(), but its V8 no longer has cleanupSome (--harmony-weak-refs-with-cleanup-some is gone)
// nor the %FinalizeOptimization intrinsic, so finalisers still wait for a later task: `await
// torch.gc()` then collects (gc() and a few turns of the event loop), and figures read in the same job
// do not see it.
import type { AdapterBackend, EngineHooks, Platform } from "./types.ts";

declare const __GRADLAB_WGSL__: Record<string, string>;

/** Base64 of bytes (btoa takes one char per byte; spread in chunks that fit the argument limit). */
export function base64OfBytes(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** Where files the runtime writes go (torch.cuda.memory._dump_snapshot): a Worker has no file system,
 *  but GradLab Lite's page keeps the student's files (JupyterLite's drive) and installs a sink that
 *  hands them over. Without one, writing a file throws. */
let fileSink: ((path: string, bytes: Uint8Array) => void) | null = null;
export function setFileSink(sink: (path: string, bytes: Uint8Array) => void): void {
  fileSink = sink;
}

const NO_WEBGPU =
  "This browser gives GradLab no WebGPU adapter. WebGPU is on by default in Chrome and Edge 113+ " +
  "(Windows, macOS, ChromeOS; Android 121+), in Safari 26 (macOS Tahoe, iOS 26) and in Firefox 141+ on " +
  "Windows; Chrome on Linux needs chrome://flags/#enable-unsafe-webgpu (or --enable-unsafe-webgpu " +
  "--enable-features=Vulkan). Check chrome://gpu, and that the page comes from https:// or localhost.";

function engineHooks(): EngineHooks {
  const gc = (globalThis as { gc?: () => void }).gc;
  const cleanupSome = (FinalizationRegistry.prototype as { cleanupSome?: unknown }).cleanupSome;
  return {
    gc: typeof gc === "function" ? gc : null,
    Registry: FinalizationRegistry,
    synchronous: typeof gc === "function" && typeof cleanupSome === "function",
    finishCompiles: () => {},
    unavailable:
      "In a browser GradLab cannot reclaim unreachable tensors synchronously (browsers offer no gc() or FinalizationRegistry.cleanupSome): memory figures include tensors you no longer reference until the browser collects them. Dispose tensors (using, dispose(), torch.scope) before reading figures.",
  };
}

async function requestAdapter(backend: AdapterBackend): Promise<GPUAdapter | null> {
  const gpu = (globalThis.navigator as Navigator | undefined)?.gpu;
  if (backend !== "browser" || !gpu) return null;
  return gpu.requestAdapter({ powerPreference: "high-performance" }).catch(() => null);
}

export const platform: Platform = {
  name: "browser",
  env: () => undefined,
  warn: (message, type) => console.warn(`${type}: ${message}`),
  // navigator.deviceMemory is rounded and capped at 8 (GiB); it is what the browser tells
  hostMemory: () => {
    const gib = (globalThis.navigator as { deviceMemory?: number } | undefined)?.deviceMemory;
    return typeof gib === "number" && gib > 0 ? gib * 2 ** 30 : null;
  },
  shaderText: (name) => {
    const text = __GRADLAB_WGSL__[name];
    if (text === undefined) throw new Error(`internal: no shader ${name}.wgsl in this bundle`);
    return text;
  },
  engineHooks,
  backends: () => ["browser"],
  requestAdapter,
  noAdapterHint: () => NO_WEBGPU,
  beginWait: () => {},
  base64: (text) => base64OfBytes(new TextEncoder().encode(text)),
  writeFile: (path, data) => {
    if (!fileSink) throw new Error("there is no file system in the browser: use torch.cuda.memory._snapshot() and display it instead");
    fileSink(path, typeof data === "function" ? data() : typeof data === "string" ? new TextEncoder().encode(data) : data);
  },
  requireSync: () => null,
  fileExists: () => false,
};
