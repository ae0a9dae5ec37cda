// What a plain script keeps stays usable, as in PyTorch (test/register.test.ts): a gradient taken before
// zero_grad, one taken apart by a pattern, an activation a forward stores, a module from another file.
import * as torch from "gradlab";
import { Probe, type Reading } from "./probe-module.ts";

enum Step {
  First = 1,
}
const model = new Probe(8);
const opt = new torch.optim.SGD(model.parameters(), { lr: 0.1 });
const x = torch.ones(4, 8);
(model(x) as torch.Tensor).sum().backward();
const g = model.linear.weight.grad!;
const { grad } = model.linear.bias!;
opt.zero_grad();
const reading: Reading = {
  step: Step.First,
  grad: Number(await g.sum().item()),
  bias: Number(await grad!.sum().item()),
  h: Number(await model.h!.sum().item()),
};
console.log(JSON.stringify(reading));
