// Every public tensor op runs inside an op context (the op table installs them so: api/install.ts): its outputs are allocated on its input's device,
// the memory timeline learns which op allocated what (the outermost op names nested work: the copy
// inside a matmul is "matmul"), and if it throws, what it allocated is released at once.

import { opFrame, runningUserCode } from "../memory/lifetime.ts";
import { swapOpDevice, type MemoryDevice } from "../memory/devices.ts";
import { setOpNameSource } from "../memory/history.ts";

let currentOp: string | null = null;
export const opName = () => currentOp;
setOpNameSource(opName);

export function runOp<T>(name: string, device: MemoryDevice | null, fn: () => T): T {
  return runOpCall(name, device, callThunk, fn, undefined);
}
const callThunk = <T>(fn: () => T): T => fn();

/** runOp of fn(a, b): the op's arguments passed through, not captured (no closure per op). */
export function runOpCall<A, B, T>(name: string, device: MemoryDevice | null, fn: (a: A, b: B) => T, a: A, b: B): T {
  // Nested: the outer op already set the context. An op that user code runs inside another op's work
  // (a checkpointed block's forward, recomputed in backward) still gets its frame.
  if (currentOp !== null) return runningUserCode() ? opFrame(fn, a, b) : fn(a, b);
  currentOp = name;
  const prevDevice = swapOpDevice(device);
  try {
    return opFrame(fn, a, b);
  } finally {
    swapOpDevice(prevDevice);
    currentOp = null;
  }
}

/** The device of a call's first tensor argument (where a function form of an op runs). */
export function deviceOfArgs(args: readonly unknown[]): MemoryDevice | null {
  const t = args.find((a) => a !== null && typeof a === "object" && "storage" in (a as object)) as { storage: { device: MemoryDevice } } | undefined;
  return t?.storage.device ?? null;
}

/** A function made an op: runs in an op context on the device of its first tensor argument. */
export function asOp<A extends unknown[], R>(name: string, fn: (...args: A) => R): (...args: A) => R {
  return (...args: A) => runOp(name, deviceOfArgs(args), () => fn(...args));
}
