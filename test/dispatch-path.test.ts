// The per-op dispatch path (docs/performance.md, "Per-op overhead"): what was made cheaper must still
// be right. Bind groups are cached by segment, offset and size and now bind only a dispatch's own
// blocks (one to four here); op frames are reused from op to op; the scheduler keeps the last write of
// each block by numbers instead of key strings.
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";

const cuda = torch.cuda;

describe("bind groups: cached, never stale", () => {
  it("a freed block reused at the same offset with another size reads and writes the new tensor", async () => {
    // Same segment, same offset: the cache's key differs only by size, and a group of the old size
    // would bind too few (or too many) bytes.
    let a = torch.ones(64);
    let b = a.add(1); // binds a's block and b's
    expect(((await b.tolist()) as number[])[63]).toBe(2);
    const at = (t: torch.Tensor) => `${t.storage.block!.segment.id}:${t.storage.block!.offset}`;
    const where = [at(a), at(b)];
    a.dispose();
    b.dispose();
    a = torch.ones(256);
    b = a.add(2);
    expect([at(a), at(b)].some((p) => where.includes(p))).toBe(true); // a block was reused
    const got = (await b.tolist()) as number[];
    expect(got.length).toBe(256);
    expect(got.every((v) => v === 3)).toBe(true);
    a.dispose();
    b.dispose();
  });

  it("after empty_cache destroys a segment's buffer, tensors in a new segment at the same offsets compute right", async () => {
    await torch.webgpu.synchronize();
    cuda.empty_cache();
    const before = cuda.memory_reserved();
    // A large-pool segment of its own (2 MiB tensors): released by empty_cache, its buffer destroyed.
    const n = 512 * 1024;
    let x = torch.ones(n);
    let y = x.mul(3);
    expect((await y.getitem("-1").item()) as number).toBe(3);
    x.dispose();
    y.dispose();
    cuda.empty_cache();
    expect(cuda.memory_reserved()).toBe(before);
    // New segments, with new ids and buffers, whose blocks sit at the same offsets and sizes: a group
    // cached for the destroyed buffer would make Dawn reject the submit (an internal error on read).
    x = torch.full([n], 2);
    y = x.mul(5);
    expect((await y.getitem("-1").item()) as number).toBe(10);
    expect((await y.sum().item()) as number).toBe(10 * n);
    x.dispose();
    y.dispose();
    cuda.empty_cache();
  });

  it("dispatches binding one to four distinct blocks each get their own blocks", async () => {
    const x = torch.arange(8).float();
    x.add_(1); // one block (in place: output and input are the same block)
    expect(await x.tolist()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const y = x.mul(x); // two
    expect(await y.tolist()).toEqual([1, 4, 9, 16, 25, 36, 49, 64]);
    const z = x.add(y); // three
    expect(await z.tolist()).toEqual([2, 6, 12, 20, 30, 42, 56, 72]);
    const c = x.gt(4);
    const w = torch.where(c, y, z); // four: out, cond, a, b
    expect(await w.tolist()).toEqual([2, 6, 12, 20, 25, 36, 49, 64]);
    const v = torch.where(c, x, x); // the same block twice: bound once
    expect(await v.tolist()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    for (const t of [x, y, z, c, w, v]) t.dispose();
  });
});

describe("op frames, reused", () => {
  it("a frame reused by the next op keeps no handle of the op before alive", () => {
    const base = cuda.memory_allocated();
    const x = torch.ones(1024);
    (() => void x.add(1).mul(2))(); // two results, dropped unused: collectable
    x.add(1).dispose();
    // Reading the figure reclaims what nothing reaches; a frame that still held the dropped handles
    // would keep 8 KiB here.
    expect(cuda.memory_allocated() - base).toBe(4096);
    x.dispose();
    expect(cuda.memory_allocated()).toBe(base);
  });

  it("an op that throws disposes what it made, and the frame it leaves is clean for the next op", () => {
    const base = cuda.memory_allocated();
    const a = torch.ones(4, 3);
    const b = torch.ones(5, 3);
    expect(() => a.add(b)).toThrow(/The size of tensor a \(4\) must match the size of tensor b \(5\)/);
    expect(() => a.mul(2).add(b)).toThrow(/must match/); // a nested op's result is disposed on the throw
    expect(() => a.matmul(b)).toThrow(/cannot be multiplied/);
    const c = a.add(b.getitem("0:4"));
    expect(cuda.memory_allocated() - base).toBe(3 * 512);
    for (const t of [a, b, c]) t.dispose();
    expect(cuda.memory_allocated()).toBe(base);
  });

  it("ops nested in a torch.scope still hand their results to the scope", () => {
    const base = cuda.memory_allocated();
    const kept = torch.scope(() => {
      const x = torch.ones(256);
      const y = x.add(1).mul(2); // the intermediate and x are the scope's to dispose
      return y;
    });
    expect(cuda.memory_allocated() - base).toBe(1024);
    kept.dispose();
    expect(cuda.memory_allocated()).toBe(base);
  });
});

describe("hooks on a tensor made without any", () => {
  it("a leaf's hooks registered before and after its first graph both run", () => {
    const w = torch.ones(3).requires_grad_();
    const seen: string[] = [];
    w.register_hook((g) => void seen.push(`pre ${g.shape}`));
    const loss = w.mul(2).sum();
    w.register_hook(() => void seen.push("pre 2"));
    w.register_post_accumulate_grad_hook(() => void seen.push("post"));
    loss.backward();
    expect(seen).toEqual(["pre 3", "pre 2", "post"]);
    for (const t of [w, loss]) t.dispose();
  });
});
