// Activation checkpointing (full, selective, sequential) and the article's labs MemoryProbeModel (hooks)
// and benchmark_checkpointing, on nn modules.
import { describe, expect, it } from "vitest";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as torch from "../src/index.ts";

const { nn } = torch;
const { checkpoint, checkpoint_sequential, create_selective_checkpoint_contexts, CheckpointPolicy } = torch.utils.checkpoint;
const MiB = 2 ** 20;

class DeepBlock extends nn.Module {
  linear1: torch.nn.Linear;
  act: torch.nn.GELU;
  drop: torch.nn.Dropout;
  linear2: torch.nn.Linear;
  constructor(dim: number, p = 0) {
    super();
    this.linear1 = new nn.Linear(dim, dim);
    this.act = new nn.GELU();
    this.drop = new nn.Dropout(p);
    this.linear2 = new nn.Linear(dim, dim);
  }
  override forward(x: torch.Tensor): torch.Tensor {
    return this.linear2(this.drop(this.act(this.linear1(x)))).add(x);
  }
}

type Mode = "none" | "full" | "selective";
class DeepNetwork extends nn.Module {
  blocks: torch.nn.ModuleList;
  constructor(
    layers: number,
    dim: number,
    public mode: Mode = "none",
    p = 0,
    public keep: string[] = ["addmm", "mm"],
  ) {
    super();
    this.blocks = new nn.ModuleList(Array.from({ length: layers }, () => new DeepBlock(dim, p)));
  }
  override forward(x: torch.Tensor): torch.Tensor {
    let h = x;
    for (const block of this.blocks) {
      const f = (t: torch.Tensor) => block(t) as torch.Tensor;
      if (this.mode === "none" || !this.training) h = f(h);
      else if (this.mode === "full") h = checkpoint(f, h, { use_reentrant: false });
      else h = checkpoint(f, h, { use_reentrant: false, context_fn: () => create_selective_checkpoint_contexts(this.keep) });
    }
    return h;
  }
}

async function gradsOf(model: torch.nn.Module): Promise<number[][]> {
  const out: number[][] = [];
  for (const p of model.parameters()) out.push((await p.grad!.reshape(-1).tolist()) as number[]);
  return out;
}

describe("checkpointing", () => {
  it("gives the gradients of the plain model, dropout included (the RNG state is replayed)", async () => {
    torch.manual_seed(0);
    const model = new DeepNetwork(3, 64, "none", 0.2);
    const x = torch.randn(32, 64, { requires_grad: true });
    const results: Record<string, { loss: number; grads: number[][]; xgrad: number[] }> = {};
    for (const mode of ["none", "full", "selective"] as Mode[]) {
      model.mode = mode;
      model.zero_grad();
      x.grad = null;
      torch.manual_seed(7); // same dropout masks for every mode
      const loss = torch.scope(() => (model(x) as torch.Tensor).pow(2).mean());
      loss.backward();
      results[mode] = { loss: (await loss.item()) as number, grads: await gradsOf(model), xgrad: (await x.grad!.reshape(-1).tolist()) as number[] };
    }
    for (const mode of ["full", "selective"]) {
      expect(results[mode].loss).toBe(results.none.loss);
      expect(results[mode].grads).toEqual(results.none.grads);
      expect(results[mode].xgrad).toEqual(results.none.xgrad);
    }
  });

  it("keeps what PyTorch keeps after forward: block inputs (full), and every output of the ops a policy saves (selective)", () => {
    // test/fixtures/gen_sac_memory.py: torch 1.13's non-reentrant checkpoint with PyTorch's caching
    // dispatch mode reproduced on it; activations held after `loss = model(x).sum()`, in (rows, dim) units.
    const fx = JSON.parse(readFileSync(join(import.meta.dirname, "fixtures", "sac-memory.json"), "utf8"));
    using _sim = torch.cuda.simulate() as torch.autograd.Guard;
    const act = fx.rows * fx.dim * 4;
    const after: Record<string, number> = {};
    for (const mode of Object.keys(fx.activations_after_forward)) {
      const keep = mode === "none" || mode === "full" ? null : mode.split("+");
      const model = new DeepNetwork(fx.layers, fx.dim, keep ? "selective" : (mode as Mode), 0, keep ?? undefined);
      const x = torch.randn(fx.rows, fx.dim, { requires_grad: true });
      const before = torch.cuda.memory_allocated();
      const loss = torch.scope(() => (model(x) as torch.Tensor).sum());
      after[mode] = (torch.cuda.memory_allocated() - before - 512) / act; // less the loss (one 512-byte block)
      loss.backward();
      torch.del(loss, x);
    }
    expect(after).toEqual(fx.activations_after_forward);
  });

  it("a policy list with an op that does not exist raises (a typo must not pass), and so does a policy answer that is no CheckpointPolicy", async () => {
    expect(() => create_selective_checkpoint_contexts(["addmm", "gleu"])).toThrow(/no op named "gleu".*torch\.ops\.aten has no attribute 'gleu'/);
    expect(() => create_selective_checkpoint_contexts(["addmm", "gleu"])).toThrow(torch.ValueError);
    const x = torch.randn(4, 8, { requires_grad: true });
    const lin = new nn.Linear(8, 8);
    const bad = () =>
      checkpoint((t: torch.Tensor) => lin(t) as torch.Tensor, x, {
        use_reentrant: false,
        context_fn: () => create_selective_checkpoint_contexts(() => "SAVE" as never),
      });
    expect(bad).toThrow(/selective checkpoint policy must return CheckpointPolicy, got SAVE/);
    // the runtime stays usable, and a boolean answer is PyTorch's older form (true: MUST_SAVE)
    const y = checkpoint((t: torch.Tensor) => lin(t) as torch.Tensor, x, {
      use_reentrant: false,
      context_fn: () => create_selective_checkpoint_contexts(() => true),
    });
    y.sum().backward();
    expect(x.grad!.shape).toEqual([4, 8]);
  });

  it("the kept outputs live until the recompute reaches their op, or until the graph is dropped", () => {
    using _sim = torch.cuda.simulate() as torch.autograd.Guard;
    const x = torch.randn(256, 256, { requires_grad: true }); // 256 KiB each
    const w = torch.randn(256, 256, { requires_grad: true });
    const base = torch.cuda.memory_allocated();
    const block = (t: torch.Tensor) => t.mm(w).sigmoid().mm(w).tanh();
    const ctx = { use_reentrant: false, context_fn: () => create_selective_checkpoint_contexts(["mm"]) };
    let out = checkpoint(block, x, ctx);
    // out, and both mm outputs (neither is saved by autograd: sigmoid and tanh save their results)
    expect(torch.cuda.memory_allocated() - base).toBe(3 * 262144);
    torch.del(out); // the graph dies without backward: the cache goes with it
    expect(torch.cuda.memory_allocated()).toBe(base);
    out = checkpoint(block, x, ctx);
    const loss = out.sum();
    torch.del(out);
    loss.backward();
    torch.del(loss);
    expect(torch.cuda.memory_allocated() - base).toBe(2 * 262144); // x.grad and w.grad only
  });

  it("every node the runtime records names an op a policy can name", () => {
    const names = new Set<string>();
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(dir, e.name));
        else if (e.name.endsWith(".ts")) for (const m of readFileSync(join(dir, e.name), "utf8").matchAll(/"([A-Z][A-Za-z]*Backward\d)"/g)) names.add(m[1]);
      }
    };
    walk(join(import.meta.dirname, "..", "src"));
    expect(names.size).toBeGreaterThan(40);
    const missing = [...names].filter((n) => !torch.utils.checkpoint.policyOps().has(torch.utils.checkpoint.opOfNode(n)));
    expect(missing).toEqual([]);
  });

  it("policies: a function with CheckpointPolicy, and checkpoint_sequential", async () => {
    torch.manual_seed(3);
    const seq = new nn.Sequential(new nn.Linear(16, 16), new nn.GELU(), new nn.Linear(16, 16), new nn.GELU(), new nn.Linear(16, 4));
    const x = torch.randn(8, 16, { requires_grad: true });
    const plain = torch.scope(() => (seq(x) as torch.Tensor).sum());
    plain.backward();
    const want = await gradsOf(seq);
    seq.zero_grad();
    const seen: string[] = [];
    const policy = (_ctx: unknown, op: string) => {
      seen.push(op);
      return op === "addmm" ? CheckpointPolicy.MUST_SAVE : CheckpointPolicy.PREFER_RECOMPUTE;
    };
    const loss = torch.scope(() =>
      checkpoint((t: torch.Tensor) => seq(t) as torch.Tensor, x, {
        use_reentrant: false,
        context_fn: () => create_selective_checkpoint_contexts(policy),
      }).sum(),
    );
    loss.backward();
    expect(await gradsOf(seq)).toEqual(want);
    expect(new Set(seen)).toEqual(new Set(["t", "addmm", "gelu"])); // PyTorch's policy sees aten.t too
    seq.zero_grad();
    const fns = [...seq.children()].map((m) => (t: torch.Tensor) => m(t) as torch.Tensor);
    const loss2 = torch.scope(() => checkpoint_sequential(fns, 2, x, { use_reentrant: false }).sum());
    loss2.backward();
    expect(await gradsOf(seq)).toEqual(want);
    expect(() => checkpoint((t: torch.Tensor) => t, x, { use_reentrant: true })).toThrow(/non-reentrant checkpoint only/);
  });

  it("the 80-layer DeepNetwork with AdamW: out of memory on 80 GiB without checkpointing, fits with it", () => {
    // 80 blocks of dim 4096 (parameters 10 GiB; AdamW state 20 GiB; grads 10 GiB), 24576 tokens.
    for (const mode of ["none", "full"] as Mode[]) {
      using _sim = torch.cuda.simulate({ total_memory: 80 * 2 ** 30 }) as torch.autograd.Guard;
      const model = new DeepNetwork(80, 4096, mode);
      const opt = new torch.optim.AdamW(model.parameters(), { lr: 1e-3 });
      const step = () => {
        opt.zero_grad({ set_to_none: true });
        const x = torch.randn(24576, 4096, { requires_grad: true });
        const loss = torch.scope(() => (model(x) as torch.Tensor).sum());
        loss.backward();
        opt.step();
        torch.del(loss, x);
      };
      if (mode === "none") expect(step).toThrow(torch.OutOfMemoryError);
      else {
        step();
        step();
        expect(torch.cuda.max_memory_allocated()).toBeLessThan(80 * 2 ** 30);
        expect(torch.cuda.max_memory_allocated()).toBeGreaterThan(60 * 2 ** 30);
      }
    }
  });
});

describe("lab MemoryProbeModel (block 28)", () => {
  class MemoryProbeModel extends nn.Module {
    fc1 = new nn.Linear(2048, 4096);
    relu = new nn.ReLU();
    fc2 = new nn.Linear(4096, 1024);
    override forward(x: torch.Tensor) {
      return this.fc2(this.relu(this.fc1(x)));
    }
  }

  it("prints what PyTorch prints", () => {
    const lines: string[] = [];
    const model = new MemoryProbeModel();
    const mb = (t: torch.Tensor) => ((t.element_size() * t.numel()) / MiB).toFixed(2);
    const shape = (t: torch.Tensor) => `[${t.shape.join(", ")}]`;
    for (const [, layer] of model.named_modules()) {
      if ([...layer.children()].length > 0) continue;
      layer.register_forward_hook((m: torch.nn.Module, _args: unknown, output: torch.Tensor) => {
        lines.push(`  [Forward Hook]  层: ${m.constructor.name.padEnd(10)} | 输出 Shape: ${shape(output).padEnd(18)} | Activation 显存: ${mb(output)} MB`);
      });
      layer.register_full_backward_hook((m: torch.nn.Module, _gi: unknown, go: Array<torch.Tensor | null>) => {
        const g = go[0];
        if (g) lines.push(`  [Backward Hook] 层: ${m.constructor.name.padEnd(10)} | 回传梯度 Shape: ${shape(g).padEnd(18)} | 梯度显存: ${mb(g)} MB`);
      });
    }
    const dummy = torch.randn(64, 2048, { requires_grad: true });
    const out = model(dummy) as torch.Tensor;
    out.sum().backward();
    expect(lines).toEqual([
      "  [Forward Hook]  层: Linear     | 输出 Shape: [64, 4096]         | Activation 显存: 1.00 MB",
      "  [Forward Hook]  层: ReLU       | 输出 Shape: [64, 4096]         | Activation 显存: 1.00 MB",
      "  [Forward Hook]  层: Linear     | 输出 Shape: [64, 1024]         | Activation 显存: 0.25 MB",
      "  [Backward Hook] 层: Linear     | 回传梯度 Shape: [64, 1024]         | 梯度显存: 0.25 MB",
      "  [Backward Hook] 层: ReLU       | 回传梯度 Shape: [64, 4096]         | 梯度显存: 1.00 MB",
      "  [Backward Hook] 层: Linear     | 回传梯度 Shape: [64, 4096]         | 梯度显存: 1.00 MB",
    ]);
  });
});
