// Issue 11, item 1: tensors larger than one binding (lavapipe: maxStorageBufferBindingSize = 128 MiB)
// compute correctly (dispatches split into windowed runs), ops that cannot split raise a clear error
// before anything is recorded, and a dispatch Dawn rejects never poisons the rest of its batch.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";
import { dispatch } from "../src/ops/launch.ts";
import { _set_max_binding_size } from "../src/device/backend.ts";
import { pendingCommands } from "../src/device/scheduler.ts";
import { invalidBlocks } from "../src/device/verdicts.ts";

beforeAll(async () => {
  await torch.cuda.init();
});
afterEach(() => _set_max_binding_size(null));

describe("tensors over the binding limit", () => {
  it("torch.ones([2 ** 26]).sum() is 2 ** 26, and the other ops of the batch are untouched", async () => {
    const p = await torch.cuda.get_device_properties();
    expect(2 ** 26 * 4).toBeGreaterThan(p.limits.maxStorageBufferBindingSize); // the case needs windows here
    const before = torch.cuda.memory_allocated();
    const x = torch.ones([2 ** 26]);
    const s = x.sum();
    const y = torch.tensor([1, 2, 3]).mul(2);
    const m = x.mul(3).mean();
    const tail = x.getitem("-3:").add(1);
    expect(await s.item()).toBe(2 ** 26);
    expect(await y.tolist()).toEqual([2, 4, 6]);
    expect(await m.item()).toBe(3);
    expect(await tail.tolist()).toEqual([2, 2, 2]);
    for (const t of [x, s, y, m, tail]) t.dispose();
    expect(torch.cuda.memory_allocated()).toBe(before);
  });

  it("windowed runs give exactly what one dispatch gives (elementwise, views, reductions, softmax, matmul, random)", async () => {
    const a = torch.randn(37, 53);
    const b = torch.randn(53, 29);
    const m1 = torch.randn(100, 20);
    const m2 = torch.randn(20, 12);
    const emb = torch.randn(40, 30); // 4.7 KiB: read in row passes
    const idx = torch.tensor(
      [
        [3, 39, 0, 3],
        [17, 17, 22, 5],
      ],
      { dtype: "int32" },
    );
    const idxScale = torch.randn(2, 4, 30);
    const logits = torch.randn(20, 60); // 4.7 KiB
    const target = torch.randint(0, 60, [20]);
    const run = async () => {
      torch.manual_seed(7);
      return [
        await m1.matmul(m2).tolist(),
        await m1.matmul(m2.t().contiguous().t()).tolist(),
        await m1.view(5, 20, 20).matmul(m2).tolist(),
        await a.t().contiguous().sum(0).tolist(),
        await a.sum(0).tolist(),
        await a.softmax(1).tolist(),
        await a.log_softmax(-1).tolist(),
        await a.softmax(0).tolist(),
        await a.view(37, 53, 1).expand(37, 53, 2).log_softmax(1).tolist(),
        await a.getitem(":, :29").add(b.getitem(":37")).tolist(),
        await a.var(1).tolist(),
        await a.max(0).indices.tolist(),
        await a.argmin(1).tolist(),
        await torch.randn(3000).tolist(),
        await a.t().mul(a.t()).tolist(),
        await a.t().contiguous().tolist(),
        await torch.where(a.gt(0), a, b.getitem(":37, :1")).tolist(),
        await torch.nn.functional.layer_norm(a, [53], torch.ones(53).mul(2), torch.ones(53)).tolist(),
        await torch.nn.functional.layer_norm(a.t().contiguous(), [37]).tolist(),
        await torch.nn.functional.embedding(idx, emb).tolist(),
        await (async () => {
          const w = emb.clone().requires_grad_();
          torch.nn.functional.embedding(idx, w).mul(idxScale).sum().backward();
          return w.grad!.tolist();
        })(),
        await torch.nn.functional.cross_entropy(logits, target).tolist(),
        await (async () => {
          const l = logits.clone().requires_grad_();
          torch.nn.functional.cross_entropy(l, target).backward();
          return l.grad!.tolist();
        })(),
      ];
    };
    const whole = await run();
    _set_max_binding_size(4096); // every operand above 4 KiB now runs in windows
    const windowed = await run();
    _set_max_binding_size(null);
    expect(windowed).toEqual(whole);
    // A whole-tensor sum runs in chunks when windowed: the same value up to float rounding.
    const total = await a.sum().item();
    _set_max_binding_size(4096);
    expect(await a.sum().item()).toBeCloseTo(total as number, 3);
  });

  it("an op that cannot split its work raises a clear error naming the limit before recording anything", async () => {
    const x = torch.randn(64, 64); // 16 KiB
    const ok = torch.tensor([1, 2]).add(1); // recorded in the same batch
    const wide = torch.randn(2, 2048);
    const one = torch.tensor([1], { dtype: "int32" });
    _set_max_binding_size(4096);
    const before = torch.cuda.memory_allocated();
    expect(() => torch.nn.functional.embedding(one, wide)).toThrow(/a row of 2048 elements is larger than this adapter's maxStorageBufferBindingSize/);
    expect(torch.cuda.memory_allocated()).toBe(before);
    _set_max_binding_size(null);
    expect(await ok.tolist()).toEqual([2, 3]);
    expect(await x.var().item()).toBeGreaterThan(0);
  });

  it("a tensor over maxBufferSize is refused with the limit named, and memory is where it was", async () => {
    const p = await torch.cuda.get_device_properties();
    const n = Math.ceil((p.limits.maxBufferSize + 1) / 4);
    if (n * 4 > torch.cuda.get_memory_capacity()) return; // the device could not hold it anyway
    const before = torch.cuda.memory_allocated();
    expect(() => torch.ones([n])).toThrow(/larger than this adapter's maxBufferSize/);
    expect(torch.cuda.memory_allocated()).toBe(before);
    torch.cuda.empty_cache();
    expect(await torch.tensor([5]).mul(2).tolist()).toEqual([10]);
  });
});

describe("Dawn validation errors", () => {
  it("a rejected dispatch fails only the tensors computed from it, with the op's name and Dawn's message", async () => {
    const good1 = torch.tensor([1, 2, 3]).mul(10);
    const bad = torch.empty([4]);
    // A kernel entry point that does not exist: Dawn rejects the pipeline (a GradLab bug, simulated).
    dispatch("elementwise", "no_such_entry_point", [bad], [4], 4);
    const derived = bad.add(1); // computed from the rejected result
    const good2 = good1.add(1);
    await expect(bad.tolist()).rejects.toThrow(/WebGPU rejected the kernel of op 'no_such_entry_point' \(elementwise\.no_such_entry_point\)/);
    await expect(derived.tolist()).rejects.toThrow(/no_such_entry_point.*doesn't exist in the shader module.*This tensor was not computed/s);
    expect(await good1.tolist()).toEqual([10, 20, 30]);
    expect(await good2.tolist()).toEqual([11, 21, 31]);
    // Rewriting the block with a valid op makes it valid again.
    bad.fill_(2);
    expect(await bad.tolist()).toEqual([2, 2, 2, 2]);
    derived.copy_(bad);
    expect(await derived.tolist()).toEqual([2, 2, 2, 2]);
    for (const t of [good1, bad, derived, good2]) t.dispose();
    expect(invalidBlocks()).toBe(0);
    expect(await torch.ones([3]).sum().item()).toBe(3);
  });
});

describe("a loop that never awaits", () => {
  it("submits its work as it goes: the host holds fewer than 512 commands, whatever the loop's length", async () => {
    let most = 0;
    let y = torch.zeros([256]);
    for (let i = 0; i < 5000; i++) {
      const next = y.add(2);
      y.dispose();
      y = next;
      most = Math.max(most, pendingCommands());
    }
    expect(most).toBeLessThan(512);
    expect(await y.sum().item()).toBe(256 * 10_000);
    y.dispose();
  });

  it("a kernel Dawn rejects fails only what is computed from it, though its verdict comes after many batches", async () => {
    const bad = torch.empty([4]);
    // A kernel entry point that does not exist (a GradLab bug, simulated); the loop below never lets
    // Dawn's verdict on it arrive, and submits ~1,500 commands after it in three batches.
    dispatch("elementwise", "no_such_entry_point", [bad], [4], 4);
    let derived = bad.add(0);
    let good = torch.ones([4]);
    for (let i = 0; i < 750; i++) {
      const d = derived.add(1);
      const g = good.add(1);
      derived.dispose();
      good.dispose();
      derived = d;
      good = g;
    }
    const reads = Promise.allSettled([bad.tolist(), derived.tolist(), good.tolist()]);
    const [b, d, g] = await reads;
    expect(b.status === "rejected" && String(b.reason)).toMatch(/WebGPU rejected the kernel of op 'no_such_entry_point' \(elementwise\.no_such_entry_point\)/);
    expect(d.status === "rejected" && String(d.reason)).toMatch(/no_such_entry_point.*This tensor was not computed/s);
    expect(g.status === "fulfilled" && g.value).toEqual([751, 751, 751, 751]);
    // The next use of the same kernel is judged again (and rejected again); rewriting a block heals it.
    bad.fill_(3);
    derived.copy_(bad);
    expect(await derived.tolist()).toEqual([3, 3, 3, 3]);
    for (const t of [bad, derived, good]) t.dispose();
    expect(invalidBlocks()).toBe(0);
  });
});
