// torch.autograd.graph.saved_tensors_hooks(pack, unpack): every tensor an op saves for backward goes
// through pack when saved and unpack when backward needs it (save_on_cpu is built on this).
import type { Tensor } from "../tensor.ts";
import { within, type Guard } from "./guard.ts";

export interface PackHooks {
  pack(t: Tensor): unknown;
  unpack(v: unknown): Tensor;
  /** Called when the saved variable is released (after its node ran, or when its graph dies). */
  release?(v: unknown): void;
  /** The runtime's own hooks (save_on_cpu): pack keeps no handle it is given, only an alias of its own.
   *  A user's pack hook may keep the very handle (pack: (t) => t), which is then never released early
   *  (memory/ownership.ts). */
  keepsNoHandle?: boolean;
}

const stack: PackHooks[] = [];

export const activeSavedTensorsHooks = (): PackHooks | undefined => stack[stack.length - 1];
/** Saves the hooks stack; the returned function drops hooks pushed since. */
export function saveHooksStack(): () => void {
  const depth = stack.length;
  return () => void stack.splice(depth);
}

/** As a `using` guard, or with a callback: `saved_tensors_hooks(pack, unpack, () => model(x))`. */
export function saved_tensors_hooks<T>(pack: PackHooks["pack"], unpack: PackHooks["unpack"], fn: () => T, release?: PackHooks["release"]): T;
export function saved_tensors_hooks(pack: PackHooks["pack"], unpack: PackHooks["unpack"], fn?: undefined, release?: PackHooks["release"]): Guard;
export function saved_tensors_hooks<T>(pack: PackHooks["pack"], unpack: PackHooks["unpack"], fn?: () => T, release?: PackHooks["release"]): Guard | T {
  return withHooks({ pack, unpack, release }, fn);
}
/** Makes `hooks` the active pack hooks while fn runs, or until the guard is disposed. */
export function withHooks<T>(hooks: PackHooks, fn?: () => T): Guard | T {
  stack.push(hooks);
  return within(() => {
    const i = stack.lastIndexOf(hooks);
    if (i >= 0) stack.splice(i, 1);
  }, fn);
}
