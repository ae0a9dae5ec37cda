// A cell keeps what the same code keeps in a plain script (issue 23): notebook 09's checkpointed model,
// run by the kernel (through `gradlab run`, the real runtime) and in this process without any cell
// transform. The kernel once kept one more block output (64 MiB in the notebook): the transform's
// statement arrows made the forward's `h` a context variable, which every closure the forward made
// (the `f` that checkpoint keeps until backward) kept alive.
import { afterAll, beforeAll, expect, test } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { installedKernel, run, GRADLAB, type Env } from "./helpers.ts";

const LAYERS = 4;
const ROWS = 512;
const DIM = 256;
const TENSOR = ROWS * DIM * 4;

// The notebook's code, with `keep` (a list of ops) for selective checkpointing.
const MODEL = `
const { checkpoint, create_selective_checkpoint_contexts } = torch.utils.checkpoint;
class DeepBlock extends torch.nn.Module {
  linear1: torch.nn.Linear; act = new torch.nn.GELU(); linear2: torch.nn.Linear;
  constructor(dim: number) { super(); this.linear1 = new torch.nn.Linear(dim, dim); this.linear2 = new torch.nn.Linear(dim, dim); }
  override forward(x: torch.Tensor) { return this.linear2(this.act(this.linear1(x))).add(x); }
}
type Mode = "none" | "full" | string[];
class DeepNetwork extends torch.nn.Module {
  blocks: torch.nn.ModuleList;
  constructor(layers: number, dim: number, public mode: Mode) {
    super();
    this.blocks = new torch.nn.ModuleList(Array.from({ length: layers }, () => new DeepBlock(dim)));
  }
  override forward(x: torch.Tensor) {
    let h = x;
    for (const block of this.blocks) {
      const f = (t: torch.Tensor) => block(t) as torch.Tensor;
      if (this.mode === "full" && this.training) h = checkpoint(f, h, { use_reentrant: false });
      else if (Array.isArray(this.mode) && this.training) {
        const keep = this.mode;
        h = checkpoint(f, h, { use_reentrant: false, context_fn: () => create_selective_checkpoint_contexts(keep) });
      } else h = f(h);
    }
    return h;
  }
}
function measure(mode: Mode) {
  return torch.cuda.simulate({ total_memory: 2 ** 30 }, () => {
    const model = new DeepNetwork(${LAYERS}, ${DIM}, mode);
    const x = torch.randn(${ROWS}, ${DIM}, { requires_grad: true });
    const before = torch.cuda.memory_allocated();
    const loss = (model(x) as torch.Tensor).sum();
    const acts = torch.cuda.memory_allocated() - before;
    loss.backward();
    return acts;
  });
}
`;
const MODES = `["none", "full", ["addmm"]]`;

let e: Env;
beforeAll(async () => {
  e = await installedKernel({ GRADLAB_RUNTIME: "" }); // the real runtime
});
afterAll(() => e?.cleanup());

/** The same code as a plain module of this process (no cell transform). */
async function plainFigures(): Promise<number[]> {
  const file = join(e.dir, "plain.ts");
  writeFileSync(
    file,
    `import * as torch from ${JSON.stringify(join(import.meta.dirname, "../../src/index.ts"))};\n${MODEL}\nexport const figures = (${MODES} as Mode[]).map(measure);\n`,
  );
  return ((await import(file)) as { figures: number[] }).figures;
}

test("notebook 09's checkpointed model keeps the same activations in a cell as in a plain script", async () => {
  const nbPath = join(e.dir, "ckpt.ipynb");
  const cell = (source: string) => ({ cell_type: "code", metadata: {}, execution_count: null, outputs: [], source });
  const cells = [cell(MODEL), cell(`console.log(JSON.stringify((${MODES} as Mode[]).map(measure)))`)];
  writeFileSync(nbPath, JSON.stringify({ cells, metadata: {}, nbformat: 4, nbformat_minor: 5 }));
  const out = join(e.dir, "ckpt-out.ipynb");
  const r = await run(process.execPath, [GRADLAB, "run", nbPath, "-o", out], { env: e.env, cwd: e.dir });
  expect(r.code, r.stderr).toBe(0);
  const text = JSON.parse(readFileSync(out, "utf8")).cells[1].outputs[0].text;
  const inKernel = JSON.parse(Array.isArray(text) ? text.join("") : text) as number[];
  const plain = await plainFigures();
  expect(inKernel).toEqual(plain);
  // PyTorch's story: each block saves its input, linear1's output and GELU's output (x was counted
  // before); full checkpointing keeps the blocks' inputs only. Selective keeping of addmm keeps every
  // addmm output (linear1's and linear2's) as well. The loss itself is one 512-byte block.
  const LOSS = 512;
  expect(plain[0]).toBe((3 * LAYERS - 1) * TENSOR + LOSS);
  expect(plain[1]).toBe((LAYERS - 1) * TENSOR + LOSS);
}, 120_000);
