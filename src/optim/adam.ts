// torch.optim.Adam and AdamW (torch/optim/adam.py and adamw.py, single-tensor paths). AdamW decays
// the weights directly (p *= 1 - lr * weight_decay) instead of adding weight_decay * p to the gradient.

import type { Tensor } from "../tensor.ts";
import { Optimizer, checkHyper, stateTensor, type Carried, type ParamGroup, type ParamState, type ParamsArg } from "./optimizer.ts";
import { zeros_like } from "../ops/creation.ts";

export interface AdamOptions {
  lr?: number;
  betas?: [number, number];
  eps?: number;
  weight_decay?: number;
  amsgrad?: boolean;
  maximize?: boolean;
}

function checkAdam(d: Required<AdamOptions>): void {
  checkHyper(d.lr >= 0, `Invalid learning rate: ${d.lr}`);
  checkHyper(d.eps >= 0, `Invalid epsilon value: ${d.eps}`);
  checkHyper(d.betas[0] >= 0 && d.betas[0] < 1, `Invalid beta parameter at index 0: ${d.betas[0]}`);
  checkHyper(d.betas[1] >= 0 && d.betas[1] < 1, `Invalid beta parameter at index 1: ${d.betas[1]}`);
  checkHyper(d.weight_decay >= 0, `Invalid weight_decay value: ${d.weight_decay}`);
}

export class Adam extends Optimizer {
  /** Whether weight decay is decoupled (AdamW) or added to the gradient (Adam). */
  protected readonly decoupled: boolean = false;

  constructor(params: ParamsArg, opts: AdamOptions = {}, defaultDecay = 0) {
    const d: Required<AdamOptions> = { lr: 1e-3, betas: [0.9, 0.999], eps: 1e-8, weight_decay: defaultDecay, amsgrad: false, maximize: false, ...opts };
    checkAdam(d);
    super(params, d);
  }

  protected override initState(p: Tensor, state: ParamState, g: ParamGroup): void {
    if (state.step !== undefined) return;
    state.step = 0;
    state.exp_avg = stateTensor(() => zeros_like(p));
    state.exp_avg_sq = stateTensor(() => zeros_like(p));
    if (g.amsgrad) state.max_exp_avg_sq = stateTensor(() => zeros_like(p));
  }

  /**
   * torch 1.13's loop, variable for variable: `grad` and `denom` stay bound until the next parameter's
   * update binds them again (the previous `denom` lives through the next one's sqrt and division, a
   * parameter-sized tensor in the step's peak), and die when the group's function returns.
   */
  protected update(p: Tensor, gradIn: Tensor, state: ParamState, g: ParamGroup, carried: Carried): Carried {
    const [beta1, beta2] = g.betas as [number, number];
    let grad = g.maximize ? gradIn.neg() : gradIn;
    carried.grad?.dispose(); // `grad = grads[i] if not maximize else -grads[i]`
    this.initState(p, state, g);
    const expAvg: Tensor = state.exp_avg;
    const expAvgSq: Tensor = state.exp_avg_sq;
    state.step += 1;
    if (g.weight_decay !== 0) {
      if (this.decoupled) p.mul_(1 - g.lr * g.weight_decay);
      else {
        const negated = grad;
        grad = grad.add(p, { alpha: g.weight_decay });
        if (negated !== gradIn) negated.dispose(); // rebound: the -grad temporary goes
      }
    }
    // Temporaries are freed as soon as they are used, so an update holds at most two parameter-sized
    // ones at a time, as PyTorch's single-tensor Adam does (its addcmul_/addcdiv_ make none).
    expAvg.mul_(beta1).add_(grad, { alpha: 1 - beta1 });
    const sq = grad.mul(grad);
    expAvgSq.mul_(beta2).add_(sq, { alpha: 1 - beta2 });
    sq.dispose();
    const step: number = state.step;
    const bias1 = 1 - beta1 ** step;
    const bias2 = 1 - beta2 ** step;
    const stepSize = g.lr / bias1;
    const bias2Sqrt = Math.sqrt(bias2);
    let second = expAvgSq;
    if (g.amsgrad) {
      const m: Tensor = state.max_exp_avg_sq;
      m.copy_(m.maximum(expAvgSq));
      second = m;
    }
    const root = second.sqrt();
    const denom = root.div(bias2Sqrt).add_(g.eps);
    root.dispose();
    carried.denom?.dispose(); // `denom = ...` rebound
    const ratio = expAvg.div(denom);
    p.add_(ratio, { alpha: -stepSize });
    ratio.dispose();
    return { grad: grad === gradIn ? undefined : grad, denom };
  }
}

export class AdamW extends Adam {
  protected override readonly decoupled: boolean = true;
  constructor(params: ParamsArg, opts: AdamOptions = {}) {
    super(params, opts, 1e-2);
  }
}
