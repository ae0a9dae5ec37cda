// Lab benchmark_checkpointing (block 29) as a benchmark: the article's DeepNetwork (DeepBlock =
// linear2(GELU(linear1(x))) + x), trained with AdamW, without checkpointing, with full checkpointing,
// and with selective checkpointing (save matmul outputs, recompute GELU). Reports, per mode:
//   - on the WebGPU device at a size this 2-core machine can run: time per step and peak memory;
//   - on a simulated device at the article's full size: peak memory and the activation memory kept
//     after forward (what checkpointing is meant to cut), measured exactly by the allocator.
// The article claims about 70% less activation memory for 2–4% more time.
// Usage: npx tsx bench/checkpointing.ts   (LAYERS, DIM, TOKENS, STEPS override the WebGPU size)
import * as torch from "../src/index.ts";
import { DeepBlock } from "./deep-block.ts";

const { nn } = torch;
const { checkpoint, create_selective_checkpoint_contexts } = torch.utils.checkpoint;
type Mode = "none" | "full" | "selective";
const MODES: Mode[] = ["none", "full", "selective"];

class DeepNetwork extends nn.Module {
  blocks: torch.nn.ModuleList;
  constructor(
    layers: number,
    dim: number,
    public mode: Mode,
  ) {
    super();
    this.blocks = new nn.ModuleList(Array.from({ length: layers }, () => new DeepBlock(dim)));
  }
  override forward(x: torch.Tensor) {
    let h = x;
    for (const block of this.blocks) {
      const f = (t: torch.Tensor) => block(t) as torch.Tensor;
      if (this.mode === "none" || !this.training) h = f(h);
      else if (this.mode === "full") h = checkpoint(f, h, { use_reentrant: false });
      else h = checkpoint(f, h, { use_reentrant: false, context_fn: () => create_selective_checkpoint_contexts(["addmm", "mm"]) });
    }
    return h;
  }
}

interface Result {
  ms: number;
  peak: number;
  activations: number;
}

async function run(mode: Mode, layers: number, dim: number, tokens: number, steps: number, simulated: boolean): Promise<Result> {
  torch.manual_seed(0);
  const model = new DeepNetwork(layers, dim, mode);
  const opt = new torch.optim.AdamW(model.parameters(), { lr: 1e-3 });
  let activations = 0;
  const step = () => {
    opt.zero_grad({ set_to_none: true });
    using x = torch.randn(tokens, dim, { requires_grad: true });
    const before = torch.cuda.memory_allocated();
    using loss = torch.scope(() => (model(x) as torch.Tensor).sum());
    activations = torch.cuda.memory_allocated() - before - 512;
    loss.backward();
    opt.step();
  };
  step(); // warm-up: optimizer state exists, pipelines compiled
  if (!simulated) await torch.webgpu.synchronize();
  torch.cuda.reset_peak_memory_stats();
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) step();
  if (!simulated) await torch.webgpu.synchronize();
  const ms = (performance.now() - t0) / steps;
  const peak = torch.cuda.max_memory_allocated();
  for (const p of model.parameters()) p.grad = null;
  opt.zero_grad();
  return { ms, peak, activations };
}

const MiBs = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
function report(title: string, results: Record<Mode, Result>, withTime: boolean) {
  console.log(`\n${title}`);
  console.log("mode        peak memory     activations after forward   activation cut   time/step   time overhead");
  const base = results.none;
  for (const m of MODES) {
    const r = results[m];
    const cut = m === "none" ? "-" : `${((1 - r.activations / base.activations) * 100).toFixed(1)}%`;
    const over = m === "none" || !withTime ? "-" : `${((r.ms / base.ms - 1) * 100).toFixed(1)}%`;
    console.log(
      `${m.padEnd(10)}  ${MiBs(r.peak).padStart(12)}   ${MiBs(r.activations).padStart(24)}   ${cut.padStart(14)}   ${withTime ? `${r.ms.toFixed(0)} ms`.padStart(9) : "-".padStart(9)}   ${over.padStart(13)}`,
    );
  }
}

const layers = Number(process.env.LAYERS ?? 8);
const dim = Number(process.env.DIM ?? 512);
const tokens = Number(process.env.TOKENS ?? 2048);
const steps = Number(process.env.STEPS ?? 3);
await torch.webgpu.init();
console.log(`device: ${await torch.webgpu.get_device_name()}`);

const real = {} as Record<Mode, Result>;
for (const m of MODES) real[m] = await run(m, layers, dim, tokens, steps, false);
report(`WebGPU: ${layers} blocks, dim ${dim}, ${tokens} tokens, AdamW, ${steps} timed steps`, real, true);

// The article's shapes: 20 blocks of dim 2048, batch 16 x seq 512 tokens (its code feeds [16, 2048]:
// seq_len is unused there, which leaves activations tiny next to the weights; both are shown).
for (const [label, toks] of [
  ["batch 16 x seq 512 = 8192 tokens", 8192],
  ["the article's code as written: x = [16, 2048]", 16],
] as const) {
  const sim = {} as Record<Mode, Result>;
  for (const m of MODES) {
    using _s = torch.cuda.simulate({ total_memory: 80 * 2 ** 30 }) as torch.autograd.Guard;
    sim[m] = await run(m, 20, 2048, toks, 1, true);
  }
  report(`Simulated 80 GiB device, full size: 20 blocks, dim 2048, ${label}`, sim, false);
}
process.exit(0);
