// Issue 20's op chain in a plain script, written as PyTorch code is: `y = y.add(1)`, nothing disposed.
// Prints the full collections it ran, its peak and what it leaves allocated (test/register.test.ts).
import * as torch from "gradlab";
import { reclaimStats } from "../../src/memory/lifetime.ts";

const x: torch.Tensor = torch.ones(256);
let y = x.add(0);
const runs = reclaimStats.runs;
for (let i = 0; i < 1000; i++) y = y.add(1);
const collections = reclaimStats.runs - runs;
console.log(
  JSON.stringify({
    collections,
    peak: torch.cuda.max_memory_allocated(),
    allocated: torch.cuda.memory_allocated(),
    first: ((await y.tolist()) as number[])[0],
  }),
);
