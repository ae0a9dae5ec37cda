// torch.optim.SGD with momentum, dampening, weight decay and Nesterov (torch/optim/sgd.py).

import type { Tensor } from "../tensor.ts";
import { Optimizer, checkHyper, stateTensor, type ParamGroup, type ParamState, type ParamsArg } from "./optimizer.ts";

export interface SGDOptions {
  lr?: number;
  momentum?: number;
  dampening?: number;
  weight_decay?: number;
  nesterov?: boolean;
  maximize?: boolean;
}

export class SGD extends Optimizer {
  constructor(params: ParamsArg, opts: SGDOptions = {}) {
    const d = { lr: 1e-3, momentum: 0, dampening: 0, weight_decay: 0, nesterov: false, maximize: false, ...opts };
    checkHyper(d.lr >= 0, `Invalid learning rate: ${d.lr}`);
    checkHyper(d.momentum >= 0, `Invalid momentum value: ${d.momentum}`);
    checkHyper(d.weight_decay >= 0, `Invalid weight_decay value: ${d.weight_decay}`);
    checkHyper(!d.nesterov || (d.momentum > 0 && d.dampening === 0), "Nesterov momentum requires a momentum and zero dampening");
    super(params, d);
  }

  protected update(p: Tensor, grad: Tensor, state: ParamState, g: ParamGroup): void {
    let d_p = g.maximize ? grad.neg() : grad;
    if (g.weight_decay !== 0) d_p = d_p.add(p, { alpha: g.weight_decay });
    if (g.momentum !== 0) {
      let buf: Tensor | undefined = state.momentum_buffer;
      if (!buf) {
        const src = d_p;
        buf = state.momentum_buffer = stateTensor(() => src.clone());
      } else buf.mul_(g.momentum).add_(d_p, { alpha: 1 - g.dampening });
      d_p = g.nesterov ? d_p.add(buf, { alpha: g.momentum }) : buf;
    }
    p.add_(d_p, { alpha: -g.lr });
  }
}
