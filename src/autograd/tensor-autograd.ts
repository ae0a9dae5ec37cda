// The autograd side of a Tensor handle: requires_grad, .grad, retain_grad, hooks, backward(). The handle
// (tensor.ts) sits below autograd and knows none of this: these are installed on it here, with their
// types, when autograd loads.

import { RuntimeError, TypeError_ } from "../errors.ts";
import { checkKwargs, flag, isOpts } from "../kwargs.ts";
import { Tensor, autogradHooks } from "../tensor.ts";
import { runOp } from "../ops/op-context.ts";
import { run_backward } from "./engine.ts";
import { is_grad_enabled, is_inference_mode_enabled } from "./grad-mode.ts";
import { AutogradMeta } from "./meta.ts";
import { AccumulateGrad, runtimeHook, type Node } from "./node.ts";
import { regenerateViewGradFn } from "./functions/inplace.ts";
import { owned } from "../memory/lifetime.ts";
import { setCategory } from "../memory/storage.ts";
import { platform } from "../platform/current.ts";

function newMeta(): AutogradMeta {
  const m = new AutogradMeta();
  m.inference = is_inference_mode_enabled();
  return m;
}

/**
 * A tensor's grad_fn. A view whose base (or a sibling view) was written in place since its grad_fn was
 * made gets a new one, AsStridedBackward0 from the base's current history, as PyTorch regenerates it
 * on access; otherwise its gradient would skip the write.
 */
function gradFn(t: Tensor): Node | null {
  const m = t._meta;
  if (t._base && m.viewVersion !== null && m.viewVersion !== t._versionCounter.value) {
    m.viewVersion = t._versionCounter.value;
    if (t._base.requires_grad) regenerateViewGradFn(t);
  }
  return m.grad_fn;
}

/** A new view made with grad mode on follows its base's version (views made under no_grad do not). */
function trackView(view: Tensor): void {
  if (is_grad_enabled()) view._meta.viewVersion = view._versionCounter.value;
}

function setRequiresGrad(t: Tensor, v: boolean): void {
  if (!t.is_leaf) {
    throw new RuntimeError(
      "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().",
    );
  }
  if (v && t.dtype !== "float32") throw new RuntimeError("only Tensors of floating point dtype can require gradients");
  if (v && t.is_inference()) {
    throw new RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.");
  }
  t._meta.requiresGradLeaf = v;
}

const NON_LEAF_GRAD_WARNING =
  "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more informations.";

function getGrad(t: Tensor): Tensor | null {
  const m = t._meta;
  if (!t.is_leaf && !m.retains_grad && m.grad === null) {
    platform.warn(NON_LEAF_GRAD_WARNING, "UserWarning");
  }
  return m.grad;
}

/** Assigning .grad: the tensor takes its own handle, so the caller may dispose theirs. */
function markGrad(g: Tensor, of: Tensor): void {
  g._role = { kind: "grad", of: of._meta, description: `.grad of a leaf of shape [${of.shape.join(", ")}]` };
  setCategory(g.storage, "gradient");
}

function setGrad(t: Tensor, g: Tensor | null): void {
  const m = t._meta;
  if (g) {
    if (g.ndim !== t.ndim || g.shape.some((s, i) => s !== t.shape[i])) {
      throw new RuntimeError(`assigned grad has data of a different size`);
    }
    g = owned(() => g!._alias());
    markGrad(g, t);
  }
  m.replaceGrad(g);
}

function retainGrad(t: Tensor): void {
  if (!t.requires_grad) throw new RuntimeError("can't retain_grad on Tensor that has requires_grad=False");
  if (t.is_leaf) return;
  const m = t._meta;
  if (m.retains_grad) return;
  m.retains_grad = true;
  const fn = t.grad_fn!;
  const hooks = fn.tensorPreHooks.get(m.output_nr) ?? [];
  // Runs after user hooks registered earlier, as PyTorch's retains_grad hook does; stores a copy.
  hooks.push(
    runtimeHook((g: Tensor) =>
      owned(() => {
        m.replaceGrad(m.grad ? m.grad.add(g) : g.clone());
      }),
    ),
  );
  fn.tensorPreHooks.set(m.output_nr, hooks);
}

function accumulator(t: Tensor): AccumulateGrad {
  const m = t._meta;
  if (!m.accumulator) m.accumulator = new AccumulateGrad(t);
  return m.accumulator;
}

/**
 * AccumulateGrad::apply: the first gradient is stored (its memory taken over when nothing else shares
 * it and it is contiguous, else cloned); later ones are added in place, or out of place under
 * create_graph. The caller keeps its own handle to `g`.
 */
function accumulateGrad(t: Tensor, g: Tensor): void {
  const m = t._meta;
  owned(() => {
    if (!m.grad) {
      // An empty gradient may be a view of another tensor's memory (a broadcast scalar): its clone holds none.
      const steal = g.storage.refcount === 1 && g.numel() > 0 && g.is_contiguous() && !is_grad_enabled();
      m.replaceGrad(steal ? g.detach() : g.clone());
    } else if (is_grad_enabled()) m.replaceGrad(m.grad.add(g));
    else m.grad.add_(g);
    markGrad(m.grad!, t);
  });
}

function backward(t: Tensor, gradient: Tensor | null, opts?: { retain_graph?: boolean; create_graph?: boolean; inputs?: Tensor[] }): void {
  run_backward([t], [gradient], {
    retain_graph: opts?.retain_graph ?? opts?.create_graph ?? false,
    create_graph: opts?.create_graph ?? false,
    inputs: opts?.inputs,
    accumulate: true,
  });
}

function registerHook(t: Tensor, fn: (grad: Tensor) => Tensor | void): { remove(): void } {
  if (!t.requires_grad) throw new RuntimeError("cannot register a hook on a tensor that doesn't require gradient");
  let hooks = t._meta.leafPreHooks;
  if (t.grad_fn) {
    hooks = t.grad_fn.tensorPreHooks.get(t._output_nr) ?? [];
    t.grad_fn.tensorPreHooks.set(t._output_nr, hooks);
  }
  hooks.push(fn);
  return { remove: () => void hooks.splice(hooks.indexOf(fn) >>> 0, 1) };
}

function registerPostAccumulateHook(t: Tensor, fn: (t: Tensor) => void): { remove(): void } {
  if (!t.is_leaf) throw new RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors");
  if (!t.requires_grad) throw new RuntimeError("cannot register a hook on a tensor that doesn't require gradient");
  const hooks = t._meta.postAccumulateHooks;
  // The hook gets this very tensor, as PyTorch's does (`optimizers.get(p).step()` in the hook finds p),
  // not the AccumulateGrad node's handle; one of its own only where this one was disposed since.
  const call = (v: Tensor) => fn(t.disposed ? owned(() => v._alias()) : t);
  hooks.push(call);
  return { remove: () => void hooks.splice(hooks.indexOf(call) >>> 0, 1) };
}

type BackwardOpts = { gradient?: Tensor | null; retain_graph?: boolean; create_graph?: boolean; inputs?: Tensor[] };

declare module "../tensor.ts" {
  interface Tensor {
    /** Whether gradients flow to or through this tensor (settable on leaves). */
    requires_grad: boolean;
    requires_grad_(v?: boolean | { requires_grad?: boolean }): this;
    /** The node that made this tensor (null for a leaf). */
    readonly grad_fn: Node | null;
    readonly is_leaf: boolean;
    readonly _output_nr: number;
    /** The accumulated gradient of a leaf (or of a non-leaf that called retain_grad()). */
    grad: Tensor | null;
    readonly retains_grad: boolean;
    retain_grad(): void;
    is_inference(): boolean;
    /** The AccumulateGrad node of a leaf that requires grad (created on first use, then kept). */
    _accumulator(): AccumulateGrad;
    _accumulateGrad(g: Tensor): void;
    backward(gradient?: Tensor | null | BackwardOpts, opts?: BackwardOpts): void;
    register_hook(fn: (grad: Tensor) => Tensor | void): { remove(): void };
    register_post_accumulate_grad_hook(fn: (t: Tensor) => void): { remove(): void };
  }
}

autogradHooks.newMeta = newMeta;
autogradHooks.trackView = trackView;

const method = (value: (this: Tensor, ...args: never[]) => unknown): PropertyDescriptor => ({ value, writable: true, configurable: true });
Object.defineProperties(Tensor.prototype, {
  requires_grad: {
    get(this: Tensor) {
      return this._meta.requiresGradLeaf || this.grad_fn !== null;
    },
    set(this: Tensor, v: boolean) {
      setRequiresGrad(this, v);
    },
    configurable: true,
  },
  requires_grad_: method(function (this: Tensor, v: boolean | { requires_grad?: boolean } = true) {
    // PyTorch's requires_grad_(requires_grad=False) is {requires_grad: false} here; an object is never a flag
    if (isOpts(v)) {
      checkKwargs("requires_grad_", v, ["requires_grad"]);
      v = v.requires_grad ?? true;
    }
    setRequiresGrad(this, flag("requires_grad_", "requires_grad", v));
    return this;
  }),
  grad_fn: {
    get(this: Tensor) {
      return gradFn(this);
    },
    configurable: true,
  },
  is_leaf: {
    get(this: Tensor) {
      return this.grad_fn === null;
    },
    configurable: true,
  },
  _output_nr: {
    get(this: Tensor) {
      return this._meta.output_nr;
    },
    configurable: true,
  },
  grad: {
    get(this: Tensor) {
      return getGrad(this);
    },
    set(this: Tensor, g: Tensor | null) {
      setGrad(this, g);
    },
    configurable: true,
  },
  retains_grad: {
    get(this: Tensor) {
      return this._meta.retains_grad;
    },
    configurable: true,
  },
  retain_grad: method(function (this: Tensor) {
    retainGrad(this);
  }),
  is_inference: method(function (this: Tensor) {
    return this._meta.inference;
  }),
  _accumulator: method(function (this: Tensor) {
    return accumulator(this);
  }),
  _accumulateGrad: method(function (this: Tensor, g: Tensor) {
    accumulateGrad(this, g);
  }),
  backward: method(function (this: Tensor, gradient?: Tensor | null | BackwardOpts, opts?: BackwardOpts) {
    // Python's keywords as an options object: `loss.backward({retain_graph: true})`, gradient included.
    if (isOpts(gradient)) {
      if (opts !== undefined) throw new TypeError_("backward() takes an options object only as its last argument");
      opts = gradient as BackwardOpts;
      gradient = (opts as { gradient?: Tensor | null }).gradient ?? null;
    }
    checkKwargs("backward", opts, ["gradient", "retain_graph", "create_graph", "inputs"]);
    if (gradient !== undefined && gradient !== null && !(gradient instanceof Tensor)) {
      throw new TypeError_(`backward(): argument 'gradient' must be Tensor or None, not ${typeof gradient}`);
    }
    // An op context, so that what backward allocates is attributed to "backward" on this tensor's device.
    runOp("backward", this.storage.device, () => backward(this, (gradient as Tensor | null | undefined) ?? null, opts));
  }),
  register_hook: method(function (this: Tensor, fn: (grad: Tensor) => Tensor | void) {
    return registerHook(this, fn);
  }),
  register_post_accumulate_grad_hook: method(function (this: Tensor, fn: (t: Tensor) => void) {
    return registerPostAccumulateHook(this, fn);
  }),
});
