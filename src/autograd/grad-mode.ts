// Grad modes, as c10's GradMode and InferenceMode: whether ops record autograd nodes, and whether new
// tensors are inference tensors (no version counter bumps tracked for autograd, refused by autograd later).
// Each mode works as a callback (`torch.no_grad(() => ...)`, async allowed) and as a `using` guard
// (`using _ = torch.no_grad()`), the TypeScript spelling of Python's `with torch.no_grad():`.

import { within, type Guard } from "./guard.ts";
import { flag, noArgs } from "../kwargs.ts";

export type { Guard };

const state = { grad: true, inference: false };

export function is_grad_enabled(...args: never[]): boolean {
  noArgs("is_grad_enabled", args);
  return state.grad;
}
export function is_inference_mode_enabled(...args: never[]): boolean {
  noArgs("is_inference_mode_enabled", args);
  return state.inference;
}

/** Saves grad and inference mode; the returned function puts them back. */
export function saveGradModes(): () => void {
  const prev = { ...state };
  return () => Object.assign(state, prev);
}

/** Switches the modes; the returned function restores the previous ones. */
function switchTo(grad: boolean, inference: boolean): () => void {
  const prev = { ...state };
  state.grad = grad;
  state.inference = inference;
  return () => {
    state.grad = prev.grad;
    state.inference = prev.inference;
  };
}

type ModeFn = {
  <T>(fn: () => T): T;
  (): Guard;
};

function mode(name: string, grad: () => boolean, inference: () => boolean): ModeFn {
  return (<T>(fn?: () => T, ...rest: never[]) => {
    // a mode switched by a call that is neither form (no_grad(0), no_grad(fn, {...})) would stay switched
    if (fn !== undefined && typeof fn !== "function") noArgs(name, [fn]);
    noArgs(name, rest);
    return within(switchTo(grad(), inference()), fn);
  }) as ModeFn;
}

/** Ops inside record no autograd nodes. */
export const no_grad = mode(
  "no_grad",
  () => false,
  () => state.inference,
);
/** Re-enables recording inside a no_grad region. */
export const enable_grad = mode(
  "enable_grad",
  () => true,
  () => state.inference,
);
/** no_grad, and tensors created inside are inference tensors (cheaper: no version counter tracking). */
export const inference_mode = ((arg?: boolean | (() => unknown), fn?: () => unknown) => {
  if (typeof arg === "function") return within(switchTo(false, true), arg);
  if (arg !== undefined && typeof arg !== "boolean")
    throw new TypeError(`inference_mode(): argument 'mode' must be bool, not ${arg === null ? "NoneType" : typeof arg}`);
  const on = arg ?? true;
  // inference_mode(false, fn): fn runs with inference mode off (grad mode as it was).
  return within(switchTo(on ? false : state.grad, on), fn);
}) as ModeFn & ((mode: boolean) => Guard) & (<T>(mode: boolean, fn: () => T) => T);

/** Sets grad mode now (as a function call in PyTorch); the returned guard restores the previous mode. */
export function set_grad_enabled(enabled: boolean): Guard {
  flag("set_grad_enabled", "mode", enabled);
  return within(switchTo(enabled, state.inference)) as Guard;
}
