// nn.LayerNorm: weight ones, bias zeros, over the trailing normalized_shape.

import { Module } from "../module.ts";
import { emptyParameter, type Parameter } from "../parameter.ts";
import type { Tensor } from "../../tensor.ts";
import { owned } from "../../memory/lifetime.ts";
import * as F from "../functional.ts";
import * as init from "../init.ts";
import { factoryKwargs } from "./linear.ts";

export class LayerNorm extends Module {
  normalized_shape: number[];
  eps: number;
  elementwise_affine: boolean;
  weight: Parameter | null;
  bias: Parameter | null;

  constructor(normalized_shape: number | number[], opts: { eps?: number; elementwise_affine?: boolean; device?: string; dtype?: "float32" } = {}) {
    super();
    factoryKwargs("LayerNorm.__init__", opts, ["eps", "elementwise_affine"]);
    this.normalized_shape = typeof normalized_shape === "number" ? [normalized_shape] : [...normalized_shape];
    this.eps = opts.eps ?? 1e-5;
    this.elementwise_affine = opts.elementwise_affine ?? true;
    if (this.elementwise_affine) {
      // Runtime code making its own tensors: no user code runs in between, so the allocator need not look
      // for garbage at each of them (memory/lifetime.ts, reclaimBeforeGrowth).
      this.weight = emptyParameter(this.normalized_shape);
      this.bias = emptyParameter(this.normalized_shape);
      owned(() => {
        init.ones_(this.weight!);
        init.zeros_(this.bias!);
      });
    } else {
      this.weight = null;
      this.bias = null;
      this.register_parameter("weight", null);
      this.register_parameter("bias", null);
    }
  }

  override forward(x: Tensor): Tensor {
    return F.layer_norm(x, this.normalized_shape, this.weight, this.bias, this.eps);
  }
  override extra_repr(): string {
    const shape = `(${this.normalized_shape.join(", ")}${this.normalized_shape.length === 1 ? "," : ""})`;
    return `${shape}, eps=${pyFloat(this.eps)}, elementwise_affine=${this.elementwise_affine ? "True" : "False"}`;
  }
}

/** Python's repr of a float: 1e-05, 0.001, 1.0. */
export function pyFloat(v: number): string {
  if (Number.isInteger(v)) return v.toFixed(1);
  const abs = Math.abs(v);
  if (abs < 1e-4 || abs >= 1e16) return v.toExponential().replace(/e([+-])(\d)$/, "e$10$2");
  return String(v);
}
