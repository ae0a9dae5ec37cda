// Finding and keeping a WebGPU device: the adapter comes from the platform (Dawn in Node, navigator.gpu
// in a browser Worker; src/platform/), its limits and name are read from the adapter itself.
// GRADLAB_WEBGPU_BACKEND=vulkan|opengles|auto chooses Dawn's backend (auto: a hardware adapter, else
// lavapipe, else GLES on llvmpipe through surfaceless EGL in compatibility mode).

import { RuntimeError } from "../errors.ts";
import { platform } from "../platform/current.ts";
import type { AdapterBackend } from "../platform/types.ts";

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

let current: DeviceState | null = null;
let pending: Promise<DeviceState> | null = null;
let epoch = 0;
let lastLoss: string | null = null;
const lossListeners: Array<(reason: string) => void> = [];

/** WebGPU's default limit, used until the device is known (a smaller limit only means smaller windows). */
const DEFAULT_BINDING = 128 << 20;
let bindingOverride: number | null = null;
/**
 * For tests: pretend the binding limit is `bytes` (null: the device's), so that ops run in windows and
 * the encoder binds ranges instead of whole segments on small tensors.
 */
export function _set_max_binding_size(bytes: number | null): void {
  bindingOverride = bytes;
}
/** The most bytes one storage binding may cover (maxStorageBufferBindingSize). */
export function bindingLimit(): number {
  return bindingOverride ?? current?.facts.limits.maxStorageBufferBindingSize ?? DEFAULT_BINDING;
}

/** Called when the host starts waiting on the GPU (Dawn's polling may be eager again for 1 ms). */
export const beginWait = (): void => platform.beginWait();

function backendChoice(): "vulkan" | "opengles" | "auto" {
  const v = (platform.env("GRADLAB_WEBGPU_BACKEND") ?? "auto").toLowerCase();
  if (v === "vulkan" || v === "opengles" || v === "auto") return v;
  throw new RuntimeError(`GRADLAB_WEBGPU_BACKEND must be vulkan, opengles or auto, not "${v}"`);
}

function factsOf(adapter: GPUAdapter, backend: AdapterBackend): AdapterFacts {
  const info = adapter.info;
  const limits: Record<string, number> = {};
  for (const key in adapter.limits) {
    const v = (adapter.limits as unknown as Record<string, unknown>)[key];
    if (typeof v === "number") limits[key] = v;
  }
  return {
    backend: backend === "browser" ? "other" : backend,
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
  for (const backend of platform.backends(choice)) {
    const adapter = await platform.requestAdapter(backend);
    if (!adapter) continue;
    const requiredLimits: Record<string, number> = {};
    for (const key of [
      "maxStorageBufferBindingSize",
      "maxBufferSize",
      "maxComputeWorkgroupsPerDimension",
      "maxStorageBuffersPerShaderStage",
      "maxUniformBuffersPerShaderStage",
      "maxDynamicUniformBuffersPerPipelineLayout",
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
      // Handled here: Dawn's default (Node) would also print it, natively, onto the program's stdout
      ev.preventDefault();
      const err = (ev as GPUUncapturedErrorEvent).error;
      platform.warn(`WebGPU error: ${err.message}`, "GradLabWebGPUWarning");
    });
    return state;
  }
  throw new RuntimeError(platform.noAdapterHint());
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
