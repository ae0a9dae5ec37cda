// The article's DeepBlock (block 29): linear2(GELU(linear1(x))) + x, shared by the benchmarks.
import * as torch from "../src/index.ts";

const { nn } = torch;

export class DeepBlock extends nn.Module {
  linear1: torch.nn.Linear;
  act = new nn.GELU();
  linear2: torch.nn.Linear;
  constructor(dim: number) {
    super();
    this.linear1 = new nn.Linear(dim, dim);
    this.linear2 = new nn.Linear(dim, dim);
  }
  override forward(x: torch.Tensor) {
    return this.linear2(this.act(this.linear1(x))).add(x);
  }
}
