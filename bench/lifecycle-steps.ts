// The PyTorch-style code bench/lifecycle.ts measures as a plain script, in a module of its own: imported as
// it is (the collector alone finds what it dropped) and again through gradlab/register's hooks
// (kernel/register.ts), which make it let go of tensors where a notebook cell would.
import type * as torch from "../src/index.ts";

/** A training step with plain const, nothing disposed. */
export function pytorchStyle(model: torch.nn.Module, opt: torch.optim.Optimizer, input: () => torch.Tensor): void {
  opt.zero_grad({ set_to_none: true });
  const x = input();
  const loss = (model(x) as torch.Tensor).pow(2).mean();
  loss.backward();
  opt.step();
}

/** Issue 20's op chain, not disposed: `y = y.add(1)`, `n` times from `x` (the caller's). */
export function addChain(x: torch.Tensor, n: number): torch.Tensor {
  let y = x;
  for (let i = 0; i < n; i++) y = y.add(1);
  return y;
}
