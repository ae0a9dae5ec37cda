// The runtime's global state that a notebook cell can change and that an interrupted cell could leave
// changed: grad and inference mode, anomaly mode, the saved-tensor hooks stack, open torch.scope frames
// and the dynamically scoped context values (op device, memory category, timeline phase, autograd node).
// A kernel saves it before each cell and restores it after an interrupted one (kernel/executor/
// runtime-state.ts); the save also starts the lifecycle count that lifecycle_report() shows, so that
// report covers the current cell.

import { saveGradModes } from "./autograd/grad-mode.ts";
import { isAnomalyEnabled, setAnomaly } from "./autograd/node.ts";
import { saveHooksStack } from "./autograd/saved-hooks.ts";
import { saveScopes, takeReleases } from "./memory/lifetime.ts";
import { saveContexts } from "./memory/context.ts";

/** Saves the runtime's state; the returned function restores all of it (closing scopes opened since). */
export function _save_runtime_state(): () => void {
  const restores = [saveGradModes(), saveHooksStack(), saveScopes(), saveContexts()];
  const anomaly = isAnomalyEnabled();
  takeReleases();
  return () => {
    for (const r of restores) r();
    setAnomaly(anomaly);
  };
}
