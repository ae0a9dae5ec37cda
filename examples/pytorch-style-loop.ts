// A training loop written the way PyTorch code is written: plain const, nothing disposed, no scope.
// Each step's x, loss and graph are dropped by rebinding, and GradLab reclaims them before the figure
// is read, so memory_allocated() is flat from the first step, as in PyTorch. No Node flag is needed.
// Run: npx tsx examples/pytorch-style-loop.ts
import * as torch from "../src/index.ts";

const model = new torch.nn.Linear(256, 256);
for (let step = 0; step < 8; step++) {
  const x = torch.randn(128, 256, { requires_grad: true });
  const loss = (model(x) as torch.Tensor).pow(2).mean();
  loss.backward();
  console.log(step, torch.cuda.memory_allocated());
}
console.log(`reclaiming unreachable tensors synchronously: ${torch.cuda.memory.reclaims_synchronously()}`);
