// Loss modules: nn.MSELoss and nn.CrossEntropyLoss (int32 class targets).

import { Module } from "../module.ts";
import type { Tensor } from "../../tensor.ts";
import * as F from "../functional.ts";
import type { Reduction } from "../../autograd/functions/nn.ts";
import { checkKwargs, isNone } from "../../kwargs.ts";

const LEGACY = { size_average: isNone, reduce: isNone };

export class MSELoss extends Module {
  reduction: Reduction;
  constructor(opts: { reduction?: Reduction; size_average?: null; reduce?: null } = {}) {
    super();
    checkKwargs("MSELoss.__init__", opts, ["reduction"], LEGACY);
    this.reduction = opts.reduction ?? "mean";
  }
  override forward(input: Tensor, target: Tensor): Tensor {
    return F.mse_loss(input, target, { reduction: this.reduction });
  }
}

export class CrossEntropyLoss extends Module {
  reduction: Reduction;
  ignore_index: number;
  label_smoothing: number;
  constructor(opts: { reduction?: Reduction; ignore_index?: number; label_smoothing?: number; weight?: null; size_average?: null; reduce?: null } = {}) {
    super();
    checkKwargs("CrossEntropyLoss.__init__", opts, ["reduction", "ignore_index"], { weight: isNone, label_smoothing: (v) => v === 0, ...LEGACY });
    this.reduction = opts.reduction ?? "mean";
    this.ignore_index = opts.ignore_index ?? -100;
    this.label_smoothing = opts.label_smoothing ?? 0;
  }
  override forward(input: Tensor, target: Tensor): Tensor {
    return F.cross_entropy(input, target, { reduction: this.reduction, ignore_index: this.ignore_index, label_smoothing: this.label_smoothing });
  }
}

export class NLLLoss extends Module {
  reduction: Reduction;
  ignore_index: number;
  constructor(opts: { reduction?: Reduction; ignore_index?: number; weight?: null; size_average?: null; reduce?: null } = {}) {
    super();
    checkKwargs("NLLLoss.__init__", opts, ["reduction", "ignore_index"], { weight: isNone, ...LEGACY });
    this.reduction = opts.reduction ?? "mean";
    this.ignore_index = opts.ignore_index ?? -100;
  }
  override forward(input: Tensor, target: Tensor): Tensor {
    return F.nll_loss(input, target, { reduction: this.reduction, ignore_index: this.ignore_index });
  }
}
