// A module a script imports (kept.ts): a class whose forward stores an activation, as PyTorch code does.
import * as torch from "gradlab";

export interface Reading {
  step: number;
  grad: number;
  bias: number;
  h: number;
}
export class Probe extends torch.nn.Module {
  linear: torch.nn.Linear;
  h: torch.Tensor | null = null;
  constructor(n: number) {
    super();
    this.linear = new torch.nn.Linear(n, n);
    torch.nn.init.constant_(this.linear.weight, 0.5);
    torch.nn.init.zeros_(this.linear.bias!);
  }
  override forward(x: torch.Tensor): torch.Tensor {
    const h = this.linear(x) as torch.Tensor;
    this.h = h; // kept for later, as a forward hook's user would
    return h.relu();
  }
}
