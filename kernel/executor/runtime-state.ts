// The runtime's global state that a cell can change and that an interrupt could leave changed: grad
// and inference mode, anomaly mode, saved-tensor hooks, the scope stack and the dynamically scoped
// context values. The kernel saves it before each cell and puts it back after an interrupted one.
//
// The runtime owns this state. When it offers `torch._save_runtime_state()` (returning a function that
// restores everything it saved, releasing scope frames opened since), the kernel uses that; until
// then it saves and restores what the public API reaches: grad mode, inference mode, anomaly mode.

export type RestoreRuntimeState = () => void;

interface TorchLike {
  _save_runtime_state?: () => RestoreRuntimeState;
  is_grad_enabled?: () => boolean;
  is_inference_mode_enabled?: () => boolean;
  set_grad_enabled?: (on: boolean) => unknown;
  inference_mode?: (on: boolean) => unknown;
  autograd?: { is_anomaly_enabled?: () => boolean; set_detect_anomaly?: (on: boolean) => void };
}

export function saveRuntimeState(torch: unknown): RestoreRuntimeState | null {
  const t = torch as TorchLike | null;
  if (!t) return null;
  try {
    if (typeof t._save_runtime_state === "function") return t._save_runtime_state();
    const grad = t.is_grad_enabled?.();
    const inference = t.is_inference_mode_enabled?.();
    const anomaly = t.autograd?.is_anomaly_enabled?.();
    return () => {
      // inference_mode(on) also sets grad mode; set grad mode after it
      if (inference !== undefined && t.is_inference_mode_enabled?.() !== inference) t.inference_mode?.(inference);
      if (grad !== undefined && t.is_grad_enabled?.() !== grad) t.set_grad_enabled?.(grad);
      if (anomaly !== undefined && t.autograd?.is_anomaly_enabled?.() !== anomaly) t.autograd?.set_detect_anomaly?.(anomaly);
    };
  } catch {
    return null; // a runtime without these functions (e.g. a test double)
  }
}
