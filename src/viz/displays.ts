// How runtime objects display as a cell's last expression (the `Symbol.for("Jupyter.display")` method
// that GradLab's kernel and Deno's both call). The runtime's layers sit below viz and know nothing of
// drawings: viz puts these methods on their classes when it loads, and index.ts always loads viz.

import { Tensor } from "../tensor.ts";
import { formatTensor } from "../format.ts";
import { Node } from "../autograd/node.ts";
import { Module } from "../nn/module.ts";
import { graph } from "./graph.ts";
import { tensorHtml } from "./tensor-view.ts";
import { module_summary } from "./module-summary.ts";

const DISPLAY = Symbol.for("Jupyter.display");

function install(proto: object, display: (this: never) => unknown): void {
  Object.defineProperty(proto, DISPLAY, { value: display, writable: true, configurable: true });
}

/** A tensor: PyTorch's repr as text/plain, and text/html with the values (1-D/2-D, summarized) and a metadata line. */
install(Tensor.prototype, async function (this: Tensor): Promise<Record<string, string>> {
  const values = this.disposed || this.storage.device.simulated || this.ndim > 2 ? null : await this.data();
  // One readback for both forms unless a subclass prints itself differently (Parameter).
  const text = values && this.repr === Tensor.prototype.repr ? formatTensor(values, this.shape, this.dtype, this._reprSuffixes()) : await this.repr();
  return { "text/plain": text, "text/html": tensorHtml(this, values) };
});

/** A grad_fn: torch.viz.graph(node) with saved tensors (SVG, text tree, DOT), read now: a display is a
 *  photograph of the moment it was made (backward may run right after). */
install(Node.prototype, function (this: Node) {
  return graph(this, { show_saved: true }).bundle();
});

/** A module: its repr as text/plain and torch.viz.module_summary's table (layers, parameters, bytes) as HTML. */
install(Module.prototype, async function (this: Module): Promise<Record<string, unknown>> {
  return { ...(await module_summary(this).bundle()), "text/plain": this.repr() };
});
