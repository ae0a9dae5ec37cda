// Activation modules: ReLU, GELU, Tanh, Sigmoid, Softmax.

import { Module } from "../module.ts";
import type { Tensor } from "../../tensor.ts";
import { TypeError_, ValueError } from "../../errors.ts";
import { checkKwargs, flag, isOpts } from "../../kwargs.ts";

export class ReLU extends Module {
  inplace: boolean;
  /** `new nn.ReLU()`, `new nn.ReLU(true)` or `new nn.ReLU({inplace: true})`. */
  constructor(opts: { inplace?: boolean } | boolean = {}) {
    super();
    if (isOpts(opts)) checkKwargs("ReLU.__init__", opts, ["inplace"]);
    this.inplace = flag("ReLU.__init__", "inplace", isOpts(opts) ? opts.inplace : opts);
  }
  override forward(x: Tensor): Tensor {
    return this.inplace ? x.relu_() : x.relu();
  }
  override extra_repr(): string {
    return this.inplace ? "inplace=True" : "";
  }
}

export class GELU extends Module {
  approximate: "none" | "tanh";
  constructor(opts: { approximate?: "none" | "tanh" } = {}) {
    super();
    checkKwargs("GELU.__init__", opts, ["approximate"]);
    const a = opts.approximate ?? "none";
    if (a !== "none" && a !== "tanh") throw new ValueError(`approximate argument must be either none or tanh.`);
    this.approximate = a;
  }
  override forward(x: Tensor): Tensor {
    return x.gelu({ approximate: this.approximate });
  }
  override extra_repr(): string {
    return `approximate='${this.approximate}'`;
  }
}

/** Python's error for a module constructor that takes no arguments. */
function noArgs(cls: string, args: unknown[]): void {
  if (args.length > 0) throw new TypeError_(`${cls}.__init__() takes 1 positional argument but ${args.length + 1} were given`);
}

export class Tanh extends Module {
  constructor(...args: unknown[]) {
    super();
    noArgs("Tanh", args);
  }
  override forward(x: Tensor): Tensor {
    return x.tanh();
  }
}

export class Sigmoid extends Module {
  constructor(...args: unknown[]) {
    super();
    noArgs("Sigmoid", args);
  }
  override forward(x: Tensor): Tensor {
    return x.sigmoid();
  }
}

export class Softmax extends Module {
  dim: number | null;
  constructor(dim: number | null | { dim?: number | null } = null) {
    super();
    if (isOpts(dim)) checkKwargs("Softmax.__init__", dim, ["dim"]);
    this.dim = isOpts(dim) ? (dim.dim ?? null) : dim;
  }
  override forward(x: Tensor): Tensor {
    // PyTorch's implicit-dim rule (deprecated there): 0 for 0-, 1- and 3-D input, else 1.
    const d = this.dim ?? (x.ndim === 0 || x.ndim === 1 || x.ndim === 3 ? 0 : 1);
    return x.softmax(d);
  }
  override extra_repr(): string {
    return `dim=${this.dim === null ? "None" : this.dim}`;
  }
}
