// Every public tensor op runs inside an op context: its outputs are allocated on its input's device,
// the memory timeline learns which op allocated what (the outermost op names nested work: the copy
// inside a matmul is "matmul"), and if it throws, what it allocated is released at once.

import { opFrame } from "../memory/lifetime.ts";
import { withOpDevice, type MemoryDevice } from "../memory/devices.ts";
import { setOpNameSource } from "../memory/history.ts";

let currentOp: string | null = null;
export const opName = () => currentOp;
setOpNameSource(opName);

export function runOp<T>(name: string, device: MemoryDevice | null, fn: () => T): T {
  if (currentOp !== null) return fn(); // nested: the outer op already set the context
  currentOp = name;
  try {
    return withOpDevice(device, () => opFrame(fn));
  } finally {
    currentOp = null;
  }
}

/** Wraps the named methods of a class so each call runs as an op on `this`'s device. */
export function instrument(proto: object, names: string[], deviceOf: (self: unknown) => MemoryDevice): void {
  const p = proto as Record<string, unknown>;
  for (const name of names) {
    const desc = Object.getOwnPropertyDescriptor(proto, name);
    if (!desc) throw new Error(`internal: no method ${name} to instrument`);
    if (typeof desc.value === "function") {
      const orig = desc.value as (...a: unknown[]) => unknown;
      p[name] = function (this: unknown, ...args: unknown[]) {
        return runOp(name, deviceOf(this), () => orig.apply(this, args));
      };
    } else if (desc.get) {
      const get = desc.get;
      Object.defineProperty(proto, name, { ...desc, get(this: unknown) { return runOp(name, deviceOf(this), () => get.call(this)); } });
    }
  }
}

/** A function made an op: runs in an op context on the device of its first tensor argument. */
export function asOp<A extends unknown[], R>(name: string, fn: (...args: A) => R): (...args: A) => R {
  return (...args: A) => {
    const t = args.find((a) => a !== null && typeof a === "object" && "storage" in (a as object)) as { storage: { device: MemoryDevice } } | undefined;
    return runOp(name, t?.storage.device ?? null, () => fn(...args));
  };
}
