// Issue 11, items 11 and 12: bad arguments get clear errors in PyTorch's words (torch 1.13, Debian's
// python3-torch), every error leaves memory where it was, and the runtime stays usable afterwards.
// Empty tensors: var() of nothing is NaN.
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";

/** Runs f, expecting `name: message`, and checks that memory_allocated did not move. */
function raises(f: () => unknown, name: string, message: string | RegExp): void {
  const before = torch.cuda.memory_allocated();
  let err: Error | null = null;
  try {
    f();
  } catch (e) {
    err = e as Error;
  }
  expect(err, "expected an error").toBeInstanceOf(Error);
  expect(err!.name).toBe(name);
  if (typeof message === "string") expect(err!.message).toBe(message);
  else expect(err!.message).toMatch(message);
  expect(torch.cuda.memory_allocated()).toBe(before);
}

describe("argument errors (item 12)", () => {
  it("indexing: undefined, floats, 0-dim tensors", async () => {
    const x = torch.tensor([1, 2, 3]);
    const s = torch.tensor(5);
    raises(() => x.getitem(undefined as unknown as string), "TypeError", 'index must be a string such as "0, 1:3, ..., None" or an integer, not undefined');
    raises(() => x.getitem(1.5), "IndexError", /only integers, slices .* are valid indices \(got float\)/);
    raises(
      () => s.getitem(0),
      "IndexError",
      "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number",
    );
    raises(() => s.getitem("0"), "IndexError", /^invalid index of a 0-dim tensor/);
    raises(() => s.getitem(":"), "IndexError", "slice() cannot be applied to a 0-dim tensor.");
    raises(() => s.setitem("0", 1), "IndexError", /^invalid index of a 0-dim tensor/);
    raises(() => s.narrow(0, 0, 1), "RuntimeError", "narrow() cannot be applied to a 0-dim tensor.");
    raises(() => x.setitem("0", "a" as unknown as number), "TypeError", "can't assign a str to a torch.FloatTensor");
    expect(await s.getitem("...").item()).toBe(5); // still fine, as in PyTorch
    expect(await s.getitem("None").tolist()).toEqual([5]);
  });

  it("creation: sizes that are not tuples of ints", async () => {
    raises(() => torch.randn("3" as unknown as number), "TypeError", "randn(): argument 'size' (position 1) must be tuple of ints, not str");
    raises(() => torch.zeros([2.5]), "TypeError", "zeros(): argument 'size' (position 1) must be tuple of SymInts, not list");
    raises(() => torch.zeros([NaN]), "TypeError", "zeros(): argument 'size' (position 1) must be tuple of SymInts, not list");
    raises(() => torch.ones(undefined as unknown as number), "TypeError", "ones(): argument 'size' (position 1) must be tuple of SymInts, not NoneType");
    raises(() => torch.ones([-1]), "RuntimeError", "Trying to create tensor with negative dimension -1: [-1]");
    raises(() => torch.full([2], "a" as unknown as number), "TypeError", "full(): argument 'fill_value' (position 2) must be Number, not str");
    expect(await torch.zeros(2, 3).sum().item()).toBe(0);
    expect(torch.ones().shape).toEqual([]);
  });

  it("int32: out-of-range values are refused, not wrapped", async () => {
    raises(() => torch.tensor([2 ** 31], { dtype: "int32" }), "RuntimeError", "value cannot be converted to type int32 without overflow");
    raises(() => torch.tensor([-(2 ** 31) - 1], { dtype: "int32" }), "RuntimeError", "value cannot be converted to type int32 without overflow");
    raises(() => torch.full([2], 2 ** 31, { dtype: "int32" }), "RuntimeError", "value cannot be converted to type int without overflow");
    const z = torch.zeros(2, { dtype: "int32" });
    raises(() => z.fill_(2 ** 40), "RuntimeError", "value cannot be converted to type int without overflow");
    expect(z._version).toBe(0);
    expect(await torch.tensor([2 ** 31 - 1, -(2 ** 31)], { dtype: "int32" }).tolist()).toEqual([2 ** 31 - 1, -(2 ** 31)]);
  });

  it("int32 and bool sums and products are integer tensors, as torch's int64 ones (GradLab's integer dtype is int32); mean of an integer tensor raises", async () => {
    const t = torch.tensor(
      [
        [1, 2],
        [3, 4],
      ],
      { dtype: "int32" },
    );
    // torch 1.13: tensor(10), tensor([4, 6]), tensor(24), tensor(2) (int64, printed without a dtype)
    expect(await t.sum().repr()).toBe("tensor(10, dtype=torch.int32)");
    expect(await t.sum(0).repr()).toBe("tensor([4, 6], dtype=torch.int32)");
    expect(await t.prod().repr()).toBe("tensor(24, dtype=torch.int32)");
    const b = torch.tensor([true, false, true]).sum();
    expect(b.dtype).toBe("int32");
    expect(await b.item()).toBe(2);
    expect(await torch.tensor([true, false]).prod().item()).toBe(0);
    // {dtype} chooses the arithmetic, as in PyTorch: float32 sums and means of integers
    expect(await t.sum({ dtype: "float32" } as never).repr()).toBe("tensor(10.)");
    expect(await t.mean({ dtype: "float32" } as never).repr()).toBe("tensor(2.5000)");
    raises(() => t.mean(), "RuntimeError", "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Int");
    raises(
      () => t.mean(0, { dtype: "int32" } as never),
      "RuntimeError",
      "mean(): could not infer output dtype. Optional dtype must be either a floating point or complex dtype. Got: Int",
    );
    const bools = torch.tensor([true]);
    raises(() => bools.mean(), "RuntimeError", "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Bool");
    raises(() => t.std(), "RuntimeError", "std and var only support floating point and complex dtypes");
    // long rows take the two-pass path, exact
    const long = torch.ones([10000], { dtype: "int32" }).mul(30000);
    expect(await long.sum().item()).toBe(3e8);
    // past 2^31 - 1 int32 wraps around, as torch.sum(x, dtype=torch.int32) does (int64 would not)
    expect(
      await torch
        .tensor([2 ** 31 - 1, 1], { dtype: "int32" })
        .sum()
        .item(),
    ).toBe(-(2 ** 31));
  });

  it("clamp with a non-number bound", async () => {
    const x = torch.tensor([1, 5]);
    raises(() => x.clamp("a" as unknown as number), "TypeError", /^clamp\(\) received an invalid combination of arguments - got \(str\), but expected one of/);
    raises(() => x.clamp({ min: "a" } as unknown as number), "TypeError", /got \(min=str, max=NoneType\)/);
    raises(() => x.clamp_(0, "b" as unknown as number), "TypeError", /got \(int, str\)/);
    expect(x._version).toBe(0);
    expect(await x.clamp(2, 4).tolist()).toEqual([2, 4]);
  });

  it("matmul, mm and bmm shape errors in torch 1.13's words", () => {
    const made = new Map<string, torch.Tensor>();
    const o = (...s: number[]) => made.get(s.join()) ?? made.set(s.join(), torch.ones(s)).get(s.join())!;
    // operands are made once, outside the measured calls
    for (const s of [[2, 3], [4], [2, 2, 3], [3], [2, 4, 5], [4, 5], [3, 3, 5], [2, 3, 4], [2, 5, 6], [3, 4, 6], [3, 4]]) o(...s);
    raises(() => o(2, 3).matmul(o(4)), "RuntimeError", "size mismatch, got 2, 2x3,4");
    raises(() => o(2, 2, 3).matmul(o(4)), "RuntimeError", "size mismatch, got 4, 4x3,4");
    raises(() => o(3).matmul(o(2, 4, 5)), "RuntimeError", "size mismatch, got 10, 10x4,3");
    raises(() => o(2, 3).matmul(o(2, 4, 5)), "RuntimeError", "mat1 and mat2 shapes cannot be multiplied (10x4 and 3x2)");
    raises(() => o(3).matmul(o(4, 5)), "RuntimeError", "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)");
    raises(() => o(2, 2, 3).matmul(o(4, 5)), "RuntimeError", "mat1 and mat2 shapes cannot be multiplied (4x3 and 4x5)");
    raises(() => o(2, 2, 3).matmul(o(2, 4, 5)), "RuntimeError", "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4].");
    raises(
      () => o(2, 2, 3).transpose(1, 2).matmul(o(4, 5)),
      "RuntimeError",
      "Expected size for first two dimensions of batch2 tensor to be: [2, 2] but got: [2, 4].",
    );
    raises(() => o(2, 2, 3).matmul(o(3, 3, 5)), "RuntimeError", "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0");
    raises(
      () => o(3).matmul(o(4)),
      "RuntimeError",
      "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got 3 and 4 elements respectively",
    );
    raises(() => o(2, 3, 4).bmm(o(2, 5, 6)), "RuntimeError", "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5].");
    raises(() => o(2, 3, 4).bmm(o(3, 4, 6)), "RuntimeError", "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4].");
    raises(() => o(3, 4).bmm(o(3, 4, 6)), "RuntimeError", "batch1 must be a 3D tensor");
    raises(() => o(3).mm(o(3, 4)), "RuntimeError", "self must be a matrix");
  });

  it("reductions of empty tensors: argmax raises as torch does, var/std are NaN", async () => {
    const e = torch.empty(0);
    const e03 = torch.empty(0, 3);
    raises(() => e.argmax(), "IndexError", "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
    raises(() => e.argmin(), "IndexError", "argmin(): Expected reduction dim to be specified for input.numel() == 0.");
    raises(() => e03.argmax(0), "IndexError", "argmax(): Expected reduction dim 0 to have non-zero size.");
    raises(
      () => e.max(),
      "RuntimeError",
      "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.",
    );
    expect(await e.var().item()).toBeNaN();
    expect(await e.std().item()).toBeNaN();
    expect(await e.mean().item()).toBeNaN();
    expect(await e.sum().item()).toBe(0);
    expect(await torch.empty(0, 2).var(0).tolist()).toEqual([NaN, NaN]);
    expect(await torch.empty(0, 3).argmax(1).tolist()).toEqual([]);
  });

  it("setitem accepts a value with leading size-1 dims, as torch does, and gradients flow to it", async () => {
    const y = torch.zeros(2, 3);
    y.setitem("0", torch.ones(1, 3));
    y.setitem("1, 1:", torch.full([1, 1, 2], 5));
    expect(await y.tolist()).toEqual([
      [1, 1, 1],
      [0, 5, 5],
    ]);
    const v = torch.tensor([[1, 2, 3]], { requires_grad: true });
    const z = torch.zeros(2, 3);
    z.setitem("1", v.mul(2));
    z.sum().backward();
    expect(await v.grad!.tolist()).toEqual([[2, 2, 2]]);
    const two = torch.ones(2, 3);
    raises(() => y.setitem("0", two), "RuntimeError", "output with shape [3] doesn't match the broadcast shape [2, 3]");
  });
});

describe("empty tensors (item 11, the ops side)", () => {
  it("kernels treat an empty tensor as contiguous: softmax and reductions of an empty view copy nothing", async () => {
    const e = torch.zeros(0, 3);
    const v = e.t(); // [3, 0], strides [1, 3]
    // softmax reads a contiguous input: for an empty one, no temporary copy (only the output's block,
    // which the storage layer still gives an empty tensor: item 11, runtime side).
    const before = torch.cuda.memory_allocated();
    torch.cuda.reset_peak_memory_stats();
    const s = v.softmax(1);
    expect(torch.cuda.max_memory_allocated() - before).toBe(torch.cuda.memory_allocated() - before);
    expect(s.shape).toEqual([3, 0]);
    expect(await v.sum(1).tolist()).toEqual([0, 0, 0]);
    expect(await v.var(1).tolist()).toEqual([NaN, NaN, NaN]);
  });
});

describe("x[...] (item 10, the indexing side)", () => {
  it("is a new view with AliasBackward0, as in torch 1.13; x[...] = v writes x itself", async () => {
    const x = torch.ones([2, 3], { requires_grad: true });
    const y = x.getitem("...");
    expect(y.grad_fn?.name()).toBe("AliasBackward0");
    expect(x.is_leaf).toBe(true);
    y.sum().backward();
    expect(await x.grad!.tolist()).toEqual([
      [1, 1, 1],
      [1, 1, 1],
    ]);
    const s = torch.tensor(2, { requires_grad: true });
    expect(s.getitem("...").grad_fn?.name()).toBe("AliasBackward0");
    expect(s.getitem("None").grad_fn?.name()).toBe("UnsqueezeBackward0");
    const w = torch.zeros(3);
    w.setitem("...", 5);
    expect(await w.tolist()).toEqual([5, 5, 5]);
    expect(w._version).toBe(1);
  });
});
