// A training loop written the way PyTorch code is written: plain const, nothing disposed, no scope.
// Each step's x, loss and graph are dropped by rebinding, and GradLab reclaims them before the figure
// is read, so memory_allocated() is flat from the first step. Run with gradlab/register (as here), the
// script frees tensors where a notebook cell does, and the figure is PyTorch's: 788,992 bytes.
// Run: node bin/gradlab.js run examples/pytorch-style-loop.ts   (elsewhere: npx gradlab run SCRIPT.ts,
// or node --import gradlab/register SCRIPT.ts)
import * as torch from "gradlab";

const model = new torch.nn.Linear(256, 256);
for (let step = 0; step < 8; step++) {
  const x = torch.randn(128, 256, { requires_grad: true });
  const loss = (model(x) as torch.Tensor).pow(2).mean();
  loss.backward();
  console.log(step, torch.cuda.memory_allocated());
}
console.log(`reclaiming unreachable tensors synchronously: ${torch.cuda.memory.reclaims_synchronously()}`);
