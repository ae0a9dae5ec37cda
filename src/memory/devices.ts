// Where tensors live: the WebGPU device, or a simulated device with the same caching allocator but no
// data and no computation (in the spirit of PyTorch's "meta" device), on which the article's 80-layer,
// 80 GiB scenarios run instantly with exact accounting. Each device has its own allocator; torch.cuda's
// statistics report the current device's.

import { CachingAllocator, segmentAddress, type AllocatorHooks } from "./allocator.ts";
import { recordSegment } from "./history.ts";
import { RuntimeError } from "../errors.ts";
import { backing } from "./backing.ts";
import { formatBytes } from "./format-bytes.ts";
import { context } from "./context.ts";
import { platform } from "../platform/current.ts";

export interface MemoryDevice {
  /** As printed: "webgpu:0", or "sim:0" for a simulated device. */
  readonly name: string;
  readonly allocator: CachingAllocator;
  readonly simulated: boolean;
  /** What get_device_properties() reports as the device name for a simulated device. */
  readonly label: string;
}

/** Device capacity until set otherwise: GRADLAB_DEVICE_MEMORY (bytes), else half of this machine's RAM
 * (a software adapter's memory is host memory; WebGPU exposes no heap size for hardware ones). */
function defaultCapacity(): number {
  const env = Number(platform.env("GRADLAB_DEVICE_MEMORY"));
  if (Number.isFinite(env) && env > 0) return env;
  // a browser may not say (then 4 GiB, what a laptop's integrated GPU can usually share)
  return Math.floor((platform.hostMemory() ?? 8 * 2 ** 30) / 2);
}

/** Segments reserved and released go into the memory history (PyTorch's segment_alloc / segment_free). */
const segmentEvents =
  (device: string): AllocatorHooks["onEvent"] =>
  (ev) => {
    if (ev.segment && (ev.action === "segment_alloc" || ev.action === "segment_free")) recordSegment(device, ev.action, segmentAddress(ev.segment), ev.bytes);
  };

export const webgpu: MemoryDevice = {
  name: "webgpu:0",
  simulated: false,
  label: "",
  allocator: new CachingAllocator(defaultCapacity(), {
    releaseSegment(seg) {
      if (seg.buffer) backing.destroyBuffer(seg.buffer);
      seg.buffer = null;
    },
    onEvent: segmentEvents("webgpu:0"),
  }),
};

let current: MemoryDevice = webgpu;
const all: MemoryDevice[] = [webgpu];
/** Bytes allocated on every device (the engine's release accounting spans devices). */
export const totalAllocated = () => all.reduce((n, d) => n + d.allocator.allocated.all.current, 0);
/** Set while an op runs: its outputs go where its inputs are. */
const opDevice = context<MemoryDevice | null>(null);
let simCount = 0;

export const currentDevice = () => current;
export const deviceForNewStorage = () => opDevice.get() ?? current;
/** Sets the op's device and returns the one it replaces (runOp restores it in a finally: no closure per op). */
export const swapOpDevice = (d: MemoryDevice | null): MemoryDevice | null => opDevice.swap(d);

export function setCurrentDevice(d: MemoryDevice): () => void {
  const prev = current;
  current = d;
  return () => {
    current = prev;
  };
}

/** A new simulated device with `total_memory` bytes (default 80 GiB, the article's A100/H100). */
export function newSimulatedDevice(total_memory = 80 * 2 ** 30, label?: string): MemoryDevice {
  const name = `sim:${simCount++}`;
  const allocator = new CachingAllocator(total_memory, { releaseSegment() {}, onEvent: segmentEvents(name) });
  allocator.errorPrefix = "WebGPU (simulated)";
  const d = { name, simulated: true, allocator, label: label ?? `Simulated GPU (${formatBytes(total_memory)})` };
  all.push(d);
  return d;
}

export function checkSameDevice(devices: MemoryDevice[]): MemoryDevice {
  const first = devices[0];
  for (const d of devices) {
    if (d !== first) {
      throw new RuntimeError(`Expected all tensors to be on the same device, but found at least two devices, ${first.name} and ${d.name}!`);
    }
  }
  return first;
}
