// torch.autograd.gradcheck: correct gradients pass, a wrong backward raises PyTorch's GradcheckError
// with both Jacobians (torch 1.13's text for the same Function: see the comment below), options are
// checked, and memory returns to where it was.
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";

class Square extends torch.autograd.Function {
  static override forward(ctx: torch.autograd.FunctionCtx, v: torch.Tensor) {
    ctx.save_for_backward(v);
    return v.mul(v);
  }
  static override backward(ctx: torch.autograd.FunctionCtx, g: torch.Tensor) {
    const v = ctx.saved_tensors[0]!;
    return g.mul(v).mul(2);
  }
}
/** The wrong answer a student writes: ignores grad_output. */
class BadSquare extends torch.autograd.Function {
  static override forward(ctx: torch.autograd.FunctionCtx, v: torch.Tensor) {
    ctx.save_for_backward(v);
    return v.mul(v);
  }
  static override backward(ctx: torch.autograd.FunctionCtx, _g: torch.Tensor) {
    const v = ctx.saved_tensors[0]!;
    return v.mul(2);
  }
}

describe("torch.autograd.gradcheck", () => {
  it("passes built-in ops and a correct custom Function, with several inputs", async () => {
    const x = torch.tensor(
      [
        [0.5, -1.0, 2.0],
        [1.5, 0.25, -0.75],
      ],
      { requires_grad: true },
    );
    const w = torch.tensor([1.0, 2.0, 3.0], { requires_grad: true });
    expect(await torch.autograd.gradcheck((a, b) => a.mul(b).tanh(), [x, w])).toBe(true);
    expect(await torch.autograd.gradcheck((a) => Square.apply(a) as torch.Tensor, [torch.tensor([1.0, 2.0, -3.0], { requires_grad: true })])).toBe(true);
    expect(await torch.autograd.gradcheck((a) => torch.nn.functional.softmax(a, 1), x)).toBe(true);
  });

  it("a backward that ignores grad_output fails with PyTorch's GradcheckError and both Jacobians", async () => {
    const v = torch.tensor([1.0, 2.0], { requires_grad: true });
    const before = torch.cuda.memory_allocated();
    // torch 1.13, gradcheck(BadSquare.apply, (tensor([1., 2.], requires_grad=True),), eps=1e-3, atol=1e-3, rtol=1e-2):
    // 'Jacobian mismatch for output 0 with respect to input 0,\nnumerical:tensor([[2.0000, 0.0000],\n        [0.0000, 3.9999]])\nanalytical:tensor([[2., 2.],\n        [4., 4.]])\n'
    const err = await torch.autograd.gradcheck((a) => BadSquare.apply(a) as torch.Tensor, [v]).catch((e: Error) => e);
    expect(err).toBeInstanceOf(torch.autograd.GradcheckError);
    expect(err).toBeInstanceOf(torch.RuntimeError);
    expect((err as Error).message).toBe(
      "Jacobian mismatch for output 0 with respect to input 0,\nnumerical:tensor([[2.0000, 0.0000],\n        [0.0000, 3.9999]])\nanalytical:tensor([[2., 2.],\n        [4., 4.]])\n",
    );
    expect(await torch.autograd.gradcheck((a) => BadSquare.apply(a) as torch.Tensor, [v], { raise_exception: false })).toBe(false);
    expect(torch.cuda.memory_allocated()).toBe(before);
  });

  it("refuses inputs without requires_grad and options it does not take, as PyTorch does", async () => {
    await expect(torch.autograd.gradcheck((a) => a.mul(2), [torch.ones(2)])).rejects.toThrow(
      "gradcheck expects at least one input tensor to require gradient, but none of the them have requires_grad=True.",
    );
    const x = torch.ones(2, { requires_grad: true });
    await expect(torch.autograd.gradcheck((a) => a.mul(2), [x], { epsilon: 1 } as never)).rejects.toThrow(
      "gradcheck() got an unexpected keyword argument 'epsilon'",
    );
    await expect(torch.autograd.gradcheck((a) => a.mul(2), [x], { fast_mode: true } as never)).rejects.toThrow(/does not support fast_mode=true/);
  });
});
