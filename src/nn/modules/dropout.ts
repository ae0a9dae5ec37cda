// nn.Dropout: zeroes elements with probability p in training mode, the identity in eval mode.

import { Module } from "../module.ts";
import type { Tensor } from "../../tensor.ts";
import { ValueError } from "../../errors.ts";
import * as F from "../functional.ts";
import { pyFloat } from "./normalization.ts";
import { checkKwargs, flag, isOpts } from "../../kwargs.ts";

export class Dropout extends Module {
  p: number;
  inplace: boolean;
  /** `new nn.Dropout(p, {inplace})`, or `new nn.Dropout({p, inplace})`. */
  constructor(p: number | { p?: number; inplace?: boolean } = 0.5, opts: { inplace?: boolean } = {}) {
    super();
    if (isOpts(p)) {
      opts = p;
      p = (opts as { p?: number }).p ?? 0.5;
    }
    checkKwargs("Dropout.__init__", opts, ["p", "inplace"]);
    if (p < 0 || p > 1) throw new ValueError(`dropout probability has to be between 0 and 1, but got ${p}`);
    this.p = p;
    this.inplace = flag("Dropout.__init__", "inplace", opts.inplace);
  }
  override forward(x: Tensor): Tensor {
    // Eval mode returns the input itself (another handle to it), as F.dropout(training=False) does.
    if (!this.training) return this.inplace ? x : x._alias();
    return F.dropout(x, this.p, true, this.inplace);
  }
  override extra_repr(): string {
    return `p=${pyFloat(this.p)}, inplace=${this.inplace ? "True" : "False"}`;
  }
}
