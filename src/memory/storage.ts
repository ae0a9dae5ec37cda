// Refcounted device storage. JavaScript's GC gives no timely destruction, so every holder of a storage
// (a tensor handle, a view, and later saved variables, .grad, optimizer state) takes a reference, and
// the block goes back to the caching allocator the moment the last one is dropped: memory statistics
// are exact and deterministic, as PyTorch's are under CPython's reference counting.

import { blockAddress as addressOf, type Block } from "./allocator.ts";
import { backing } from "./backing.ts";
import { deviceForNewStorage, type MemoryDevice } from "./devices.ts";
import { RuntimeError } from "../errors.ts";
import { currentCategory, type Category } from "./category.ts";
import { recordAlloc, recordFree, retag } from "./history.ts";
import { noteBytesFreed } from "./lifetime.ts";

/** Who owns a handle when the runtime does (a saved variable, a .grad, an AccumulateGrad), in words. */
export interface Role {
  kind: string;
  description: string;
  /** For a .grad: the autograd identity of the leaf it belongs to. */
  of?: unknown;
}

/** A live tensor handle as its storage sees it (for snapshots and the leak finder). */
export interface HandleInfo {
  readonly shape: readonly number[];
  readonly dtype: string;
  /** The shape of the tensor this handle is a view of, or null. */
  readonly baseShape: readonly number[] | null;
  /** The handle's autograd identity (autograd/meta.ts), opaque here. */
  readonly meta: unknown;
  role: Role | null;
}

/** Shared by a tensor and all its views, as PyTorch's VariableVersion is. */
export class VersionCounter {
  value = 0;
}

let nextStorageId = 1;
/** Every storage that holds memory now (for snapshots and the leak finder). */
export const liveStorages = new Set<Storage>();

export class Storage {
  readonly id = nextStorageId++;
  private refs = 0;
  block: Block | null;
  readonly epoch = backing.epoch();
  /** What this memory is for (memory/category.ts). */
  category: Category = currentCategory();
  readonly device: MemoryDevice = deviceForNewStorage();

  /** What is known of each tensor handle that holds this storage (records, never the handles: a
   *  dropped handle must stay collectable), in the order they were made. An array, not a Set: most
   *  storages have one or two handles, and a Set costs an allocation to make and another to shrink on
   *  delete, per op. */
  readonly handles: HandleInfo[] = [];

  private freed = false;

  constructor(readonly nbytes: number) {
    // An empty tensor takes no block, as CUDA's caching allocator gives none for 0 bytes: it moves no
    // figure, and nothing ever reads or writes it (ops dispatch nothing over no elements).
    if (nbytes === 0) {
      this.block = null;
      return;
    }
    const b = this.device.allocator.malloc(nbytes);
    this.block = b;
    liveStorages.add(this);
    recordAlloc(this, b.size, addressOf(b));
  }

  retain(): void {
    if (this.freed) throw new RuntimeError("internal: retaining a freed storage");
    this.refs++;
  }

  release(): void {
    if (--this.refs !== 0 || this.freed) return;
    this.freed = true;
    if (!this.block) return;
    recordFree(this, this.block.size, addressOf(this.block));
    noteBytesFreed(this.block.size);
    liveStorages.delete(this);
    this.device.allocator.freeBlock(this.block);
    this.block = null;
  }

  get refcount(): number {
    return this.refs;
  }

  /** Throws unless the data can still be used: not freed, and the device that held it not lost. */
  checkLive(): void {
    if (this.freed) throw new RuntimeError("internal: use of a freed storage");
    if (this.block && !this.device.simulated && this.epoch !== backing.epoch()) {
      throw new RuntimeError(
        `This tensor's data was lost with the WebGPU device (${backing.lastLossReason() ?? "device lost"}). ` +
          "Tensors created before the loss cannot be read or used; recreate them (new ops run on a fresh device).",
      );
    }
  }

  /** The live block (never asked of an empty storage: nothing is dispatched over no elements). */
  liveBlock(): Block {
    this.checkLive();
    if (!this.block) throw new RuntimeError("internal: an empty tensor has no memory block to dispatch over");
    return this.block;
  }
}

/** Re-tags memory whose role is now known; a parameter stays a parameter. */
export function setCategory(storage: Storage, category: Category): void {
  if (storage.category === "parameter") return;
  storage.category = category;
  retag(storage, { category });
}
