// Grad modes, as c10's GradMode and InferenceMode: whether ops record autograd nodes, and whether new
// tensors are inference tensors (no version counter bumps tracked for autograd, refused by autograd later).
// Each mode works as a callback (`torch.no_grad(() => ...)`, async allowed) and as a `using` guard
// (`using _ = torch.no_grad()`), the TypeScript spelling of Python's `with torch.no_grad():`.

const state = { grad: true, inference: false };

export const is_grad_enabled = () => state.grad;
export const is_inference_mode_enabled = () => state.inference;

export interface Guard extends Disposable {
  /** Restores the previous mode (what leaving the `with` block does). */
  exit(): void;
}

function enter(grad: boolean, inference: boolean): Guard {
  const prev = { ...state };
  state.grad = grad;
  state.inference = inference;
  let done = false;
  const exit = () => {
    if (done) return;
    done = true;
    state.grad = prev.grad;
    state.inference = prev.inference;
  };
  return { exit, [Symbol.dispose]: exit };
}

function runIn<T>(grad: boolean, inference: boolean, fn: () => T): T {
  const g = enter(grad, inference);
  let result: T;
  try {
    result = fn();
  } catch (e) {
    g.exit();
    throw e;
  }
  if (result instanceof Promise) return result.finally(() => g.exit()) as T;
  g.exit();
  return result;
}

type ModeFn = {
  <T>(fn: () => T): T;
  (): Guard;
};

function mode(grad: () => boolean, inference: () => boolean): ModeFn {
  return (<T>(fn?: () => T) => (fn ? runIn(grad(), inference(), fn) : enter(grad(), inference()))) as ModeFn;
}

/** Ops inside record no autograd nodes. */
export const no_grad = mode(() => false, () => state.inference);
/** Re-enables recording inside a no_grad region. */
export const enable_grad = mode(() => true, () => state.inference);
/** no_grad, and tensors created inside are inference tensors (cheaper: no version counter tracking). */
export const inference_mode = ((arg?: boolean | (() => unknown)) => {
  if (typeof arg === "function") return runIn(false, true, arg);
  const on = arg ?? true;
  return enter(on ? false : state.grad, on);
}) as ModeFn & ((mode: boolean) => Guard);

export function set_grad_enabled(enabled: boolean): Guard {
  return enter(enabled, state.inference);
}
