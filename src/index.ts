// GradLab's runtime: `import * as torch from "gradlab"`. Importing acquires the WebGPU device (≈45 ms
// on lavapipe), so that ops reach the GPU as they are issued (device/scheduler.ts), even in a script
// or a cell whose loop never awaits; without a device, commands could only queue until the first await.
// Where no adapter can be had, importing still succeeds: the first op that needs the device says why.

import { Tensor } from "./tensor.ts";
import { isOpCall } from "./api/install.ts";
import { Module } from "./nn/module.ts";
import { FunctionCtx } from "./autograd/function.ts";
import * as nnNamespace from "./nn/index.ts";
import { formatTensor } from "./format.ts";
import { pyStr } from "./pystr.ts";
import * as webgpuApi from "./api/cuda.ts";

await webgpuApi.is_available();

export { Tensor };
export * from "./dtype.ts";
export { RuntimeError, IndexError, ValueError, OutOfMemoryError } from "./errors.ts";
export {
  tensor,
  scalar_tensor,
  empty,
  zeros,
  ones,
  fullOf as full,
  empty_like,
  zeros_like,
  ones_like,
  full_like,
  rand_like,
  randn_like,
  arange,
  linspace,
  rand,
  randn,
  randint,
  manual_seed,
  initial_seed,
  get_rng_state,
  set_rng_state,
} from "./ops/creation.ts";
export { scope, gc } from "./memory/lifetime.ts";
export { _save_runtime_state } from "./runtime-state.ts";
/** What cells tell the runtime about who holds a tensor (the kernel's transform writes the calls). */
export * as _ownership from "./memory/ownership.ts";
/** The runtime's module classes (torch.nn.Linear...): their forward keeps none of its inputs. */
const runtimeModules = new WeakSet<object>(
  Object.values(nnNamespace).filter((c) => c === Module || (typeof c === "function" && c.prototype instanceof Module)),
);
/** torch.nn.functional's functions: computations whose autograd saves what it needs as an op does. */
const functionalCalls = new WeakSet<object>(Object.values(nnNamespace.functional).filter((f) => typeof f === "function"));
/**
 * keepsNoArguments(fn): whether calling fn keeps none of its arguments, as far as the runtime knows: an op,
 * a function of torch.nn.functional, a module of the runtime's own classes (its hooks are cells' code,
 * which marks what it keeps), a custom Function's `ctx.save_for_backward` (it keeps handles of its own),
 * torch.print (it reads what it prints before it returns) or the console's printing methods (a tensor's
 * text is made at once: `console.log("h", h.shape, h.mean())` in a forward must not leave h to the
 * collector at every step). For
 * memory/ownership.ts's argument policy; the kernel adds the functions and classes cells define. (An
 * object, not a function of torch's: torch's functions are PyTorch's, and each refuses unknown options.)
 */
export const _ownershipPolicy = {
  keepsNoArguments: (fn: unknown): boolean =>
    isOpCall(fn) ||
    (typeof fn === "function" && functionalCalls.has(fn)) ||
    (fn instanceof Module && runtimeModules.has(fn.constructor)) ||
    fn === FunctionCtx.prototype.save_for_backward ||
    fn === print ||
    printsOnly(fn),
};
/** One of the console's printing methods (looked up at the call: a kernel replaces them with its own). */
function printsOnly(fn: unknown): boolean {
  const c = globalThis.console;
  return fn === c.log || fn === c.info || fn === c.warn || fn === c.error || fn === c.debug || fn === c.dir || fn === c.table;
}
export * as autograd from "./autograd/api.ts";
export { no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled, is_inference_mode_enabled } from "./autograd/grad-mode.ts";
export * as nn from "./nn/index.ts";
export * as utils from "./utils/index.ts";
export * as optim from "./optim/index.ts";
export * as viz from "./viz/index.ts";
export * as widgets from "./widgets/index.ts";

export const webgpu = webgpuApi;
/** The article's code says torch.cuda; here it is the WebGPU device. */
export const cuda = webgpuApi;

/** torch.del(t): what Python's `del t` does to the last reference. */
export function del(...ts: Tensor[]): void {
  for (const t of ts) t.dispose();
}

// Functional forms of the ops (torch.add, torch.matmul, ...), from the op table; importing install.ts
// puts the same ops on Tensor as methods.
export * from "./api/functions.ts";
import "./api/install.ts";

/**
 * Python's print(): tensors in PyTorch's repr, other values as Python's str() shows them. Everything but
 * the values is read, and every read queued, before it returns its promise: it keeps none of its
 * arguments (keepsNoArguments below), so `torch.print(x.sum())` in a cell frees the sum at once.
 */
export async function print(...values: unknown[]): Promise<void> {
  const parts = await Promise.all(values.map((v) => (v instanceof Tensor ? v.repr() : pyStr(v))));
  console.log(parts.join(" "));
}
export { f, pyStr as str, pyRepr as repr } from "./pystr.ts";

export { formatTensor };
