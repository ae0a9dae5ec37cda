// Refcounted device storage. JavaScript's GC gives no timely destruction, so every holder of a storage
// (a tensor handle, a view, and later saved variables, .grad, optimizer state) takes a reference, and
// the block goes back to the caching allocator the moment the last one is dropped: memory statistics
// are exact and deterministic, as PyTorch's are under CPython's reference counting.

import os from "node:os";
import { CachingAllocator, type Block } from "./allocator.ts";
import { currentEpoch, lastLossReason, onDeviceLost } from "../device/backend.ts";
import { destroyBuffer, dropPending } from "../device/scheduler.ts";
import { RuntimeError } from "../errors.ts";
import { currentCategory, type Category } from "./category.ts";

/** Device capacity until set otherwise: GRADLAB_DEVICE_MEMORY (bytes), else half of this machine's RAM
 * (a software adapter's memory is host memory; WebGPU exposes no heap size for hardware ones). */
function defaultCapacity(): number {
  const env = Number(process.env.GRADLAB_DEVICE_MEMORY);
  return Number.isFinite(env) && env > 0 ? env : Math.floor(os.totalmem() / 2);
}

export const allocator = new CachingAllocator(defaultCapacity(), {
  releaseSegment(seg) {
    if (seg.buffer) destroyBuffer(seg.buffer);
    seg.buffer = null;
  },
});

onDeviceLost((reason) => {
  allocator.forgetBuffers();
  dropPending(new RuntimeError(`WebGPU device lost: ${reason}`));
});

/** Shared by a tensor and all its views, as PyTorch's VariableVersion is. */
export class VersionCounter {
  value = 0;
}

let nextStorageId = 1;

export class Storage {
  readonly id = nextStorageId++;
  private refs = 0;
  block: Block | null;
  readonly epoch = currentEpoch();
  /** What this memory is for (memory/category.ts). */
  category: Category = currentCategory();

  constructor(readonly nbytes: number) {
    this.block = allocator.malloc(Math.max(nbytes, 1));
  }

  get alive(): boolean {
    return this.block !== null;
  }

  retain(): void {
    if (!this.block) throw new RuntimeError("internal: retaining a freed storage");
    this.refs++;
  }

  release(): void {
    if (--this.refs === 0 && this.block) {
      allocator.freeBlock(this.block);
      this.block = null;
    }
  }

  get refcount(): number {
    return this.refs;
  }

  /** The live block, or a clear error when the device that held the data is gone. */
  liveBlock(): Block {
    if (!this.block) throw new RuntimeError("internal: use of a freed storage");
    if (this.epoch !== currentEpoch()) {
      throw new RuntimeError(
        `This tensor's data was lost with the WebGPU device (${lastLossReason() ?? "device lost"}). ` +
          "Tensors created before the loss cannot be read or used; recreate them (new ops run on a fresh device).",
      );
    }
    return this.block;
  }
}
