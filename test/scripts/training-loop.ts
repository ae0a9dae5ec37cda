// The README's PyTorch-style loop (examples/pytorch-style-loop.ts) with its figures collected: each must be
// PyTorch's, with no tensor of a finished statement still counted (test/register.test.ts).
import * as torch from "gradlab";

const base = torch.cuda.memory_allocated();
const model = new torch.nn.Linear(256, 256);
const figures: number[] = [];
for (let step = 0; step < 8; step++) {
  const x = torch.randn(128, 256, { requires_grad: true });
  const loss = (model(x) as torch.Tensor).pow(2).mean();
  loss.backward();
  figures.push(torch.cuda.memory_allocated() - base);
}
console.log(JSON.stringify({ figures, peak: torch.cuda.max_memory_allocated() - base }));
