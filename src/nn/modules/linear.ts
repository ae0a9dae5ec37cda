// nn.Linear and nn.Identity, with PyTorch's default initialisation.

import { Module } from "../module.ts";
import { emptyParameter, type Parameter } from "../parameter.ts";
import type { Tensor } from "../../tensor.ts";
import { RuntimeError } from "../../errors.ts";
import { owned } from "../../memory/lifetime.ts";
import * as F from "../functional.ts";
import * as init from "../init.ts";
import { createOpts } from "../../ops/creation.ts";

/** A module's factory keywords (device, dtype) checked as a creation function's; float32 parameters only. */
export function factoryKwargs(fn: string, opts: object, others: readonly string[]): void {
  const { dtype } = createOpts(fn, opts, others);
  if (dtype && dtype !== "float32") throw new RuntimeError(`${fn}(): GradLab's parameters are float32, not dtype=${dtype}`);
}

export class Identity extends Module {
  override forward(x: Tensor): Tensor {
    return x;
  }
}

export class Linear extends Module {
  in_features: number;
  out_features: number;
  weight: Parameter;
  bias: Parameter | null;

  constructor(in_features: number, out_features: number, opts: { bias?: boolean; device?: string; dtype?: "float32" } = {}) {
    super();
    factoryKwargs("Linear.__init__", opts, ["bias"]);
    this.in_features = in_features;
    this.out_features = out_features;
    // Runtime code making its own tensors: no user code runs in between, so the allocator need not look
    // for garbage at each of them (memory/lifetime.ts, reclaimBeforeGrowth).
    this.weight = emptyParameter([out_features, in_features]);
    this.bias = null;
    if (opts.bias ?? true) this.bias = emptyParameter([out_features]);
    else this.register_parameter("bias", null);
    owned(() => this.reset_parameters());
  }

  /**
   * kaiming_uniform_(a=√5) gives U(-1/√fan_in, 1/√fan_in) for the weight; the bias uses the same
   * bound (PyTorch keeps this for backward compatibility, see pytorch#57109).
   */
  reset_parameters(): void {
    init.kaiming_uniform_(this.weight, { a: Math.sqrt(5) });
    if (this.bias) {
      const [fanIn] = init._calculate_fan_in_and_fan_out(this.weight);
      const bound = fanIn > 0 ? 1 / Math.sqrt(fanIn) : 0;
      init.uniform_(this.bias, -bound, bound);
    }
  }

  override forward(x: Tensor): Tensor {
    return F.linear(x, this.weight, this.bias);
  }
  override extra_repr(): string {
    return `in_features=${this.in_features}, out_features=${this.out_features}, bias=${this.bias ? "True" : "False"}`;
  }
}
