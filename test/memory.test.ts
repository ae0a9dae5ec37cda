// The allocator's numbers, step by step. Every figure follows from PyTorch's caching-allocator rules:
// requests round up to 512 B; <= 1 MiB comes from 2 MiB small-pool segments, 1–10 MiB from 20 MiB
// segments, larger requests from segments rounded up to 2 MiB. GradLab stores 4 bytes per element.
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";

const MiB = 1 << 20;
const cuda = torch.cuda;
const alloc = () => cuda.memory_allocated();
const reserved = () => cuda.memory_reserved();

describe("caching allocator accounting", () => {
  it("follows a scripted sequence to the byte", async () => {
    cuda.empty_cache();
    const a0 = alloc();
    const r0 = reserved();

    const a = torch.zeros(1000); // 4000 B -> 4096
    expect(alloc() - a0).toBe(4096);
    expect(reserved() - r0).toBe(2 * MiB); // first small segment

    const b = torch.zeros(256, 256); // 256 KiB, same small segment
    expect(alloc() - a0).toBe(4096 + 262144);
    expect(reserved() - r0).toBe(2 * MiB);

    const s = torch.tensor(3); // 4 B -> 512
    expect(alloc() - a0).toBe(4096 + 262144 + 512);

    const c = torch.zeros(1024, 1024); // 4 MiB -> large pool, a 20 MiB segment
    expect(alloc() - a0).toBe(4096 + 262144 + 512 + 4 * MiB);
    expect(reserved() - r0).toBe(22 * MiB);

    c.dispose(); // freed, but the segment stays cached
    expect(alloc() - a0).toBe(4096 + 262144 + 512);
    expect(reserved() - r0).toBe(22 * MiB);

    const d = torch.zeros(512, 1024); // 2 MiB: served from the cached 20 MiB segment
    expect(reserved() - r0).toBe(22 * MiB);
    cuda.empty_cache(); // the large segment holds d: nothing to release there
    expect(reserved() - r0).toBe(22 * MiB);
    d.dispose();
    cuda.empty_cache();
    expect(reserved() - r0).toBe(2 * MiB);

    const big = torch.zeros(3 * 1024 * 1024); // 12 MiB -> segment rounded to 2 MiB: 12 MiB
    expect(reserved() - r0).toBe(14 * MiB);
    big.dispose();

    torch.del(a, b, s);
    expect(alloc()).toBe(a0);
    cuda.empty_cache();
    expect(reserved()).toBe(r0);
    await cuda.synchronize();
  });

  it("charges nothing for views, and frees storage only when the last view goes", () => {
    const a0 = alloc();
    const x = torch.zeros(64, 64); // 16 KiB
    const before = alloc();
    expect(before - a0).toBe(16384);
    const views = [
      x.view(-1),
      x.t(),
      x.reshape(4096),
      x.getitem("1:3, ::2"),
      x.unsqueeze(0),
      x.expand(2, 64, 64),
      x.select(0, 1),
      x.narrow(1, 2, 3),
      x.permute(1, 0),
      x.detach(),
    ];
    expect(alloc()).toBe(before);
    for (const v of views) expect(v.storage).toBe(x.storage);
    x.dispose();
    expect(alloc()).toBe(before); // the views still hold the storage
    views.slice(0, -1).forEach((v) => v.dispose());
    expect(alloc()).toBe(before);
    views[views.length - 1].dispose();
    expect(alloc()).toBe(a0);
  });

  it("an op allocates exactly its output; contiguous() of a contiguous tensor is free", () => {
    const x = torch.ones(100, 30); // 12000 B -> 12288
    const a0 = alloc();
    const y = x.add(1);
    expect(alloc() - a0).toBe(12288);
    const z = x.sum(1); // 400 B -> 512
    expect(alloc() - a0).toBe(12288 + 512);
    const c = x.contiguous();
    expect(alloc() - a0).toBe(12288 + 512);
    const tc = x.t().contiguous(); // a real copy
    expect(alloc() - a0).toBe(2 * 12288 + 512);
    torch.del(x, y, z, c, tc);
  });

  it("tracks the peak and resets it", () => {
    const a0 = alloc();
    cuda.reset_peak_memory_stats();
    expect(cuda.max_memory_allocated()).toBe(a0);
    const t = torch.zeros(1024, 256); // 1 MiB
    t.dispose();
    expect(cuda.max_memory_allocated()).toBe(a0 + MiB);
    expect(alloc()).toBe(a0);
    cuda.reset_peak_memory_stats();
    expect(cuda.max_memory_allocated()).toBe(a0);
    const stats = cuda.memory_stats();
    expect(stats["allocated_bytes.all.current"]).toBe(a0);
    expect(stats["allocated_bytes.all.peak"]).toBe(a0);
    expect(stats["reserved_bytes.all.current"]).toBe(reserved());
    expect(cuda.memory_summary()).toMatch(/Allocated memory[\s\S]*GPU reserved memory/);
  });

  it("reserved stays above allocated after frees, and splits blocks within a segment", () => {
    cuda.empty_cache();
    const a0 = alloc();
    const r0 = reserved();
    const n = (3 * MiB) / 2 / 4; // 1.5 MiB each: large pool, all eight carved from one 20 MiB segment
    const xs = Array.from({ length: 8 }, () => torch.zeros(n));
    expect(alloc() - a0).toBe(12 * MiB);
    expect(reserved() - r0).toBe(20 * MiB);
    xs.filter((_, i) => i % 2 === 0).forEach((x) => x.dispose());
    expect(alloc() - a0).toBe(6 * MiB);
    expect(reserved() - r0).toBe(20 * MiB);
    expect(cuda.memory_stats()["inactive_split_bytes.all.current"]).toBeGreaterThanOrEqual(4 * 1.5 * MiB);
    cuda.empty_cache(); // the segment still holds live blocks
    expect(reserved() - r0).toBe(20 * MiB);
    xs.forEach((x) => x.dispose());
    cuda.empty_cache();
    expect(reserved()).toBe(r0);
  });
});

describe("handle lifetimes", () => {
  it("torch.scope disposes temporaries and keeps what is returned", async () => {
    const a0 = alloc();
    const x = torch.ones(256); // 1 KiB
    const out = torch.scope(() => {
      const t1 = x.mul(2);
      const t2 = t1.add(1);
      return { y: t2.exp(), extra: [t1.sum()] };
    });
    expect(alloc() - a0).toBe(1024 + 1024 + 512); // x, y, and the returned sum
    expect(await out.extra[0].item()).toBe(512);
    torch.del(x, out.y, out.extra[0]);
    expect(alloc()).toBe(a0);
  });

  it("async scopes close when the promise settles, also on error", async () => {
    const a0 = alloc();
    await expect(
      torch.scope(async () => {
        torch.zeros(1000);
        await new Promise((r) => setTimeout(r, 1));
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(alloc()).toBe(a0);
  });

  it("`using` frees at the end of the block", () => {
    const a0 = alloc();
    {
      using t = torch.zeros(1000);
      expect(alloc() - a0).toBe(4096);
      expect(t.numel()).toBe(1000);
    }
    expect(alloc()).toBe(a0);
  });

  it("handles dropped without dispose are freed before the next figure is read, as CPython frees them", async () => {
    const a0 = alloc();
    (() => {
      for (let i = 0; i < 10; i++) torch.zeros(1024);
    })();
    expect(alloc()).toBe(a0);
    await torch.gc(); // still there for code that wants to collect explicitly
    expect(alloc()).toBe(a0);
  });

  it("a disposed tensor refuses to be used, naming what happened", () => {
    const t = torch.zeros(2, 3);
    t.dispose();
    expect(() => t.add(1)).toThrow(/Tensor of shape \[2, 3\] was disposed/);
    expect(() => torch.ones(3).add(t)).toThrow(/was disposed/);
    t.dispose(); // idempotent
  });
});

describe("bad input leaves memory and the device as they were", () => {
  const cases: Array<[string, () => unknown, RegExp]> = [
    [
      "broadcast",
      () => torch.ones(2, 3).add(torch.ones(2, 4)),
      /The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton dimension 1/,
    ],
    ["mm", () => torch.ones(2, 3).mm(torch.ones(2, 3)), /mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)/],
    ["matmul", () => torch.ones(5, 2, 3).matmul(torch.ones(4, 5)), /mat1 and mat2 shapes cannot be multiplied \(10x3 and 4x5\)/],
    ["dim", () => torch.ones(2, 3).sum(2), /Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)/],
    ["dtype", () => torch.ones(2, 3, { dtype: torch.int32 }).mean(), /mean\(\): could not infer output dtype/],
    ["where", () => torch.where(torch.ones(3), torch.ones(3), torch.zeros(3)), /where expected condition to be a boolean tensor/],
    ["inplace cast", () => torch.ones(3, { dtype: torch.int32 }).add_(1.5), /result type Float can't be cast to the desired output type Int/],
    ["view", () => torch.ones(4, 6).t().view(24), /view size is not compatible/],
    ["layer_norm", () => torch.nn.functional.layer_norm(torch.ones(2, 3), [4]), /Given normalized_shape=\[4\]/],
    ["index", () => torch.ones(3).getitem(5), /index 5 is out of bounds for dimension 0 with size 3/],
    ["copy_", () => torch.ones(2, 3).copy_(torch.ones(4)), /The size of tensor a \(3\) must match the size of tensor b \(4\)/],
  ];
  for (const [name, fn, msg] of cases) {
    it(name, async () => {
      await torch.gc();
      const before = alloc();
      expect(fn).toThrow(msg);
      await torch.gc();
      expect(alloc()).toBe(before);
      const ok = torch.tensor([1, 2, 3]).mul(2);
      expect(await ok.tolist()).toEqual([2, 4, 6]);
      ok.dispose();
    });
  }

  it("running out of device memory raises OutOfMemoryError and keeps the runtime usable", async () => {
    const cap = cuda.get_memory_capacity();
    cuda.empty_cache();
    const before = alloc();
    cuda.set_memory_capacity(reserved() + 40 * MiB);
    try {
      const keep = torch.zeros(1024, 1024); // 4 MiB in a 20 MiB segment
      let err: unknown;
      try {
        torch.zeros(8 * 1024, 1024); // 32 MiB: no room for a 32 MiB segment
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(torch.OutOfMemoryError);
      expect((err as Error).message).toMatch(
        /^WebGPU out of memory\. Tried to allocate 32\.00 MiB\. GPU 0 has a total capacity of [\d.]+ MiB of which [\d.]+ MiB is free\./,
      );
      expect(cuda.memory_stats().num_ooms).toBe(1);
      expect(alloc() - before).toBe(4 * MiB);
      expect(await keep.add(1).sum().item()).toBe(1024 * 1024);
      keep.dispose();
    } finally {
      cuda.set_memory_capacity(cap);
    }
  });

  it("of two free blocks of the same size, takes the one at the lower address, as PyTorch's free set is ordered", () => {
    torch.cuda.simulate({ total_memory: 2 ** 30 }, () => {
      const elems = (12 * MiB) / 4; // over 10 MiB: a segment of its own, rounded to 2 MiB
      let a: torch.Tensor | null = torch.empty(elems);
      let b: torch.Tensor | null = torch.empty(elems);
      const [first, second] = cuda.memory_snapshot().map((s) => s.address);
      expect(second).toBeGreaterThan(first);
      // freed in the other order: both segments are whole free blocks at offset 0
      b.dispose();
      b = null;
      a.dispose();
      a = null;
      const c = torch.empty(elems);
      const used = cuda.memory_snapshot().filter((s) => s.allocated_size > 0);
      expect(used.map((s) => s.address)).toEqual([first]);
      c.dispose();
    });
  });
});
