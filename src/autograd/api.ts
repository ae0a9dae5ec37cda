// torch.autograd: backward(), grad(), anomaly detection, the engine trace, and torch.autograd.graph.

import { checkKwargs, isOpts } from "../kwargs.ts";
import { RuntimeError } from "../errors.ts";
import { Tensor } from "../tensor.ts";
import { readBlock } from "../device/scheduler.ts";
import { upload } from "../device/scheduler.ts";
import { contiguousOf } from "../ops/views.ts";
import { run_backward, setTracer, type TraceEvent } from "./engine.ts";
import { isAnomalyEnabled, setAnomaly, type Grads } from "./node.ts";
import { saved_tensors_hooks, withHooks } from "./saved-hooks.ts";
import { within, type Guard } from "./guard.ts";
import { platform } from "../platform/current.ts";

export { Function, FunctionCtx } from "./function.ts";
export { gradcheck, GradcheckError } from "./gradcheck.ts";
export { Node, AccumulateGrad, SavedVariable } from "./node.ts";
export type { TraceEvent, Guard };

const list = <T>(x: T | T[]): T[] => (Array.isArray(x) ? x : [x]);

/** torch.autograd.backward(tensors, grad_tensors, {retain_graph, create_graph, inputs}). */
export function backward(
  tensors: Tensor | Tensor[],
  grad_tensors?: Tensor | Array<Tensor | null> | null,
  opts?: { retain_graph?: boolean; create_graph?: boolean; inputs?: Tensor[] },
): void {
  if (isOpts(grad_tensors)) {
    opts = grad_tensors as typeof opts;
    grad_tensors = (opts as { grad_tensors?: Tensor | Array<Tensor | null> | null }).grad_tensors ?? null;
  }
  checkKwargs("backward", opts, ["grad_tensors", "retain_graph", "create_graph", "inputs"]);
  const ts = list(tensors);
  const gs = grad_tensors ? list(grad_tensors) : ts.map(() => null);
  run_backward(ts, gs, {
    retain_graph: opts?.retain_graph ?? opts?.create_graph ?? false,
    create_graph: opts?.create_graph ?? false,
    inputs: opts?.inputs,
    accumulate: true,
  });
}

/** torch.autograd.grad(outputs, inputs, {grad_outputs, retain_graph, create_graph, allow_unused}). */
export function grad(
  outputs: Tensor | Tensor[],
  inputs: Tensor | Tensor[],
  opts?: { grad_outputs?: Tensor | Array<Tensor | null>; retain_graph?: boolean; create_graph?: boolean; allow_unused?: boolean },
): Grads {
  checkKwargs("grad", opts, ["grad_outputs", "retain_graph", "create_graph", "allow_unused"], {
    only_inputs: (v) => v === true,
    is_grads_batched: (v) => v === false,
  });
  const outs = list(outputs);
  const ins = list(inputs);
  const gs = opts?.grad_outputs ? list(opts.grad_outputs) : outs.map(() => null);
  return run_backward(outs, gs, {
    retain_graph: opts?.retain_graph ?? opts?.create_graph ?? false,
    create_graph: opts?.create_graph ?? false,
    inputs: ins,
    accumulate: false,
    allow_unused: opts?.allow_unused ?? false,
  });
}

const ANOMALY_WARNING = "Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled for debugging.";

export function set_detect_anomaly(on: boolean): void {
  if (on && !isAnomalyEnabled()) platform.warn(ANOMALY_WARNING, "UserWarning");
  setAnomaly(on);
}
export const is_anomaly_enabled = isAnomalyEnabled;

/** detect_anomaly(() => ...) or `using _ = torch.autograd.detect_anomaly()`. */
export function detect_anomaly<T>(fn: () => T): T;
export function detect_anomaly(): Guard;
export function detect_anomaly<T>(fn?: () => T): T | Guard {
  const prev = isAnomalyEnabled();
  set_detect_anomaly(true);
  return within(() => setAnomaly(prev), fn);
}

/**
 * Runs fn (typically one `loss.backward()`) and returns the engine's steps: the entry check, dependency
 * counts, each node taken from the ready queue, its apply, the saved tensors it released and the bytes
 * that freed, and the gradients passed on.
 */
export function trace(fn: () => void): TraceEvent[] {
  const events: TraceEvent[] = [];
  // an outer tracer (a stepper recording the same pass) keeps seeing the events
  const outer = setTracer((e, nodes) => {
    events.push(e);
    outer?.(e, nodes);
  });
  try {
    fn();
  } finally {
    setTracer(outer);
  }
  return events;
}

/**
 * torch.autograd.graph.save_on_cpu: saved tensors leave the device. Packing starts a copy to host memory
 * and frees the device copy once it has arrived (await torch.webgpu.synchronize() to see it go);
 * unpacking in backward uploads the host copy again, or uses the device copy if it is still there.
 */
function save_on_cpu<T>(fn: () => T): T;
function save_on_cpu(): Guard;
function save_on_cpu<T>(fn?: () => T): T | Guard {
  type Packed = { t: Tensor | null; host: ArrayBuffer | null; shape: number[]; dtype: Tensor["dtype"] };
  const pack = (t: Tensor): Packed => {
    const c = contiguousOf(t);
    const p: Packed = { t: c, host: null, shape: [...t.shape], dtype: t.dtype };
    if (c.numel() === 0) return p; // nothing to move: an empty tensor holds no memory
    void readBlock(c.storage.liveBlock(), c._offset * 4, c.numel() * 4).then((buf) => {
      p.host = buf;
      p.t?.dispose();
      p.t = null;
    });
    return p;
  };
  const unpack = (v: unknown): Tensor => {
    const p = v as Packed;
    if (p.t) return p.t._alias();
    if (!p.host) throw new RuntimeError("save_on_cpu: the saved tensor is neither on the device nor on the host");
    const t = Tensor.empty(p.shape, p.dtype);
    upload(t.storage.liveBlock(), new Uint8Array(p.host));
    return t;
  };
  return withHooks({ pack, unpack, release: (v) => (v as Packed).t?.dispose(), keepsNoHandle: true }, fn);
}

export const graph = { saved_tensors_hooks, save_on_cpu };
