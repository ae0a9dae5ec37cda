// Finding and keeping a WebGPU device through Dawn (npm `webgpu`).
// Facts from DESIGN.md that shape this file:
// - the object `create()` returns must stay reachable for the life of the process, or Dawn crashes;
// - Dawn waits for GPU work by re-posting a native callback with the global `setImmediate`, which spins
//   a core that lavapipe's worker threads need; we let it spin for 1 ms, then back off to 1 ms timers;
// - GRADLAB_WEBGPU_BACKEND=vulkan|opengles|auto chooses the backend (auto: a hardware adapter, else
//   lavapipe, else GLES on llvmpipe through surfaceless EGL in compatibility mode).

import { createRequire } from "node:module";
import { closeSync, fstatSync, openSync } from "node:fs";
import { RuntimeError } from "../errors.ts";

const INSTALL_HINT =
  "No usable WebGPU adapter was found. On Debian 12 install a Vulkan driver with " +
  "`apt-get install -t bookworm-backports mesa-vulkan-drivers libvulkan1` (Mesa >= 24 from bookworm-backports; " +
  "Dawn rejects Mesa 22) or the GLES fallback with `apt-get install libegl1 libgles2 libegl-mesa0` " +
  "(then GRADLAB_WEBGPU_BACKEND=opengles). `bash .ci/setup` in the GradLab checkout does both.";

/** @public (part of the runtime's typed API) */
export interface AdapterFacts {
  backend: "vulkan" | "opengles" | "other";
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  is_fallback_adapter: boolean;
  feature_level: "core" | "compatibility";
  limits: Record<string, number>;
  features: string[];
  /** Subgroup ops usable by kernels that assume at least 8 lanes (llvmpipe: 8 = its SIMD width). */
  subgroups: boolean;
}

export interface DeviceState {
  readonly device: GPUDevice;
  readonly facts: AdapterFacts;
  /** Incremented each time a device is lost; storages from an older epoch have lost their data. */
  readonly epoch: number;
}

type DawnModule = { create(options: string[]): GPU; globals: Record<string, unknown> };
let dawn: DawnModule | null = null;
const keepAlive: GPU[] = [];
let current: DeviceState | null = null;
let pending: Promise<DeviceState> | null = null;
let epoch = 0;
let lastLoss: string | null = null;
const lossListeners: Array<(reason: string) => void> = [];

function loadDawn(): DawnModule {
  if (dawn) return dawn;
  installPollingBackoff();
  // `webgpu` ships only a CommonJS-style native addon behind an ESM entry; require keeps loading synchronous.
  const require = createRequire(import.meta.url);
  const pkgDir = require.resolve("webgpu/package.json").replace(/package\.json$/, "");
  const arch = process.platform === "darwin" ? "universal" : process.arch;
  const native = require(`${pkgDir}dist/${process.platform}-${arch}/dawn.node`) as DawnModule;
  Object.assign(globalThis, native.globals);
  dawn = native;
  return native;
}

let streakStart = 0;
let lastPoll = 0;
/** Called when the host starts waiting on the GPU: Dawn may poll eagerly again for the first 1 ms. */
export function beginWait(): void {
  lastPoll = 0;
}

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

function backendChoice(): "vulkan" | "opengles" | "auto" {
  const v = (process.env.GRADLAB_WEBGPU_BACKEND ?? "auto").toLowerCase();
  if (v === "vulkan" || v === "opengles" || v === "auto") return v;
  throw new RuntimeError(`GRADLAB_WEBGPU_BACKEND must be vulkan, opengles or auto, not "${v}"`);
}

async function tryAdapter(backend: "vulkan" | "opengles"): Promise<{ adapter: GPUAdapter; gpu: GPU } | null> {
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
  const adapter = await withoutNativeStderr(() => gpu.requestAdapter(options)).catch(() => null);
  return adapter ? { adapter, gpu } : null;
}

/**
 * Runs fn with file descriptor 2 on /dev/null. Dawn prints its own warnings ("Warning:
 * maxDynamicUniformBuffersPerPipelineLayout artificially reduced ...") with fprintf from inside
 * requestAdapter, synchronously, past process.stderr, so `gradlab run` showed them among a cell's
 * output. Linux only, and only where fd 2 can be reopened through /proc (a tty, pipe or file).
 */
function withoutNativeStderr<T>(fn: () => T): T {
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

function factsOf(adapter: GPUAdapter, backend: "vulkan" | "opengles"): AdapterFacts {
  const info = adapter.info;
  const limits: Record<string, number> = {};
  for (const key in adapter.limits) {
    const v = (adapter.limits as unknown as Record<string, unknown>)[key];
    if (typeof v === "number") limits[key] = v;
  }
  return {
    backend,
    vendor: info.vendor,
    architecture: info.architecture,
    device: info.device,
    description: info.description,
    is_fallback_adapter: Boolean((info as { isFallbackAdapter?: boolean }).isFallbackAdapter),
    feature_level: backend === "opengles" ? "compatibility" : "core",
    limits,
    features: [...adapter.features].map(String).sort(),
    subgroups: adapter.features.has("subgroups") && ((info as { subgroupMinSize?: number }).subgroupMinSize ?? 0) >= 8,
  };
}

async function acquire(): Promise<DeviceState> {
  const choice = backendChoice();
  const order: Array<"vulkan" | "opengles"> = choice === "auto" ? ["vulkan", "opengles"] : [choice];
  for (const backend of order) {
    const found = await tryAdapter(backend);
    if (!found) continue;
    const { adapter } = found;
    const requiredLimits: Record<string, number> = {};
    for (const key of [
      "maxStorageBufferBindingSize",
      "maxBufferSize",
      "maxComputeWorkgroupsPerDimension",
      "maxStorageBuffersPerShaderStage",
      "maxComputeInvocationsPerWorkgroup",
      "maxComputeWorkgroupSizeX",
      "maxComputeWorkgroupStorageSize",
    ]) {
      const v = (adapter.limits as unknown as Record<string, number>)[key];
      if (typeof v === "number") requiredLimits[key] = v;
    }
    const facts = factsOf(adapter, backend);
    const device = await adapter.requestDevice({ requiredLimits, requiredFeatures: facts.subgroups ? ["subgroups"] : [] });
    const state: DeviceState = { device, facts, epoch };
    device.lost.then((info) => onLost(state, info));
    device.addEventListener?.("uncapturederror", (ev: Event) => {
      const err = (ev as GPUUncapturedErrorEvent).error;
      process.emitWarning(`WebGPU error: ${err.message}`, "GradLabWebGPUWarning");
    });
    return state;
  }
  throw new RuntimeError(INSTALL_HINT);
}

function onLost(state: DeviceState, info: GPUDeviceLostInfo): void {
  if (current !== state) return;
  current = null;
  epoch++;
  lastLoss = info.message || String(info.reason);
  for (const l of lossListeners) l(lastLoss);
}

/** The device if one is ready, without waiting. */
export function readyDevice(): DeviceState | null {
  return current;
}

/** The device, creating one (again, after a loss) when needed. */
export function getDevice(): Promise<DeviceState> {
  if (current) return Promise.resolve(current);
  pending ??= acquire().then(
    (s) => {
      current = s;
      pending = null;
      for (const l of readyListeners) l(s);
      return s;
    },
    (e) => {
      pending = null;
      throw e;
    },
  );
  return pending;
}

export function currentEpoch(): number {
  return epoch;
}

export function lastLossReason(): string | null {
  return lastLoss;
}

const readyListeners: Array<(s: DeviceState) => void> = [];
/** Called with each device once it is acquired (again after a loss). */
export function onDeviceReady(listener: (s: DeviceState) => void): void {
  readyListeners.push(listener);
}

export function onDeviceLost(listener: (reason: string) => void): void {
  lossListeners.push(listener);
}

/** Destroys the device as a driver reset would; the next op gets a fresh one. For tests and demos. */
export async function simulateDeviceLoss(): Promise<void> {
  const s = current;
  if (!s) return;
  s.device.destroy();
  // `lost` resolves on a later tick; make the loss visible at once.
  onLost(s, { reason: "destroyed", message: "the device was destroyed (simulated loss)" } as GPUDeviceLostInfo);
}
