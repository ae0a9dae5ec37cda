// What memory needs from the device that backs it. Memory sits below the device layer and imports
// nothing from it: the device implements this (device/scheduler.ts sets it when it loads).

export interface Backing {
  /** Destroys a released segment's GPU buffer once the work already queued on it has run. */
  destroyBuffer(buffer: GPUBuffer): void;
  /** The device's generation: a device loss starts a new one, and memory from an older one is gone. */
  epoch(): number;
  /** Why the last device was lost, for the error a stale tensor raises. */
  lastLossReason(): string | null;
}

/** Until a device layer is loaded, there is no GPU work to wait for and no loss to tell. */
export let backing: Backing = { destroyBuffer: (b) => b.destroy(), epoch: () => 0, lastLossReason: () => null };

export function setBacking(b: Backing): void {
  backing = b;
}
