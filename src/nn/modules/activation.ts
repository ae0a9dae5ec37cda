// Activation modules: ReLU, GELU, Tanh, Sigmoid, Softmax.

import { Module } from "../module.ts";
import type { Tensor } from "../../tensor.ts";
import { ValueError } from "../../errors.ts";

export class ReLU extends Module {
  inplace: boolean;
  constructor(opts: { inplace?: boolean } = {}) {
    super();
    this.inplace = opts.inplace ?? false;
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

export class Tanh extends Module {
  override forward(x: Tensor): Tensor {
    return x.tanh();
  }
}

export class Sigmoid extends Module {
  override forward(x: Tensor): Tensor {
    return x.sigmoid();
  }
}

export class Softmax extends Module {
  dim: number | null;
  constructor(dim: number | null = null) {
    super();
    this.dim = dim;
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
