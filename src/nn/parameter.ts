// nn.Parameter: a leaf tensor that requires grad and that modules register as a parameter. It shares
// its data's storage (PyTorch's Parameter(data) is data.detach() with requires_grad set) and tags that
// storage "parameter" for the memory statistics.

import { Tensor } from "../tensor.ts";
import { owned } from "../memory/lifetime.ts";
import { keep } from "../memory/ownership.ts";

// Exported through the factory below. A named class (not a class expression) so that its type can be
// written to a .d.ts; it names itself Parameter for constructor.name and error texts.
class ParameterImpl extends Tensor {
  static {
    Object.defineProperty(ParameterImpl, "name", { value: "Parameter" });
  }
  constructor(data: Tensor | undefined, opts: { requires_grad?: boolean } = {}) {
    const src = data ?? Tensor.empty([0]);
    src.check();
    super(src.storage, src.shape, src._strides, src._offset, src.dtype, src._versionCounter);
    if (!data) src.dispose();
    // A parameter stays a parameter (storage.ts's setCategory never re-tags one).
    this.storage.category = "parameter";
    if (opts.requires_grad ?? true) this.requires_grad_(true);
    // a module or the student keeps it: a cell's function that makes a layer and returns its weight
    // hands over no ownership (memory/ownership.ts)
    keep(this);
  }

  override async repr(): Promise<string> {
    return `Parameter containing:\n${await super.repr()}`;
  }
}

/**
 * `new nn.Parameter(data, {requires_grad})`. The handle is created outside any torch.scope (owned by
 * the runtime): a parameter lives as long as the module holding it, like PyTorch's, and is freed by
 * dispose() or, as a fallback, the GC. `x instanceof nn.Parameter` works as usual.
 */
export const Parameter = function Parameter(data?: Tensor, opts?: { requires_grad?: boolean }) {
  return owned(() => new ParameterImpl(data, opts));
} as unknown as { new (data?: Tensor, opts?: { requires_grad?: boolean }): InstanceType<typeof ParameterImpl>; prototype: InstanceType<typeof ParameterImpl> };
Parameter.prototype = ParameterImpl.prototype;
export type Parameter = InstanceType<typeof ParameterImpl>;

/**
 * A parameter of `shape` for a module of the runtime to initialise (reset_parameters fills it). The
 * tensor it wraps is disposed at once: left for the collector, it was two handles per Linear that a
 * browser (which cannot collect before a figure) still counted in lifecycle_report. Runtime code making
 * its own tensors: no user code runs in between (owned: memory/lifetime.ts).
 */
export function emptyParameter(shape: number[]): Parameter {
  return owned(() => {
    const data = Tensor.empty(shape);
    const p = new Parameter(data);
    data.dispose();
    return p;
  });
}
