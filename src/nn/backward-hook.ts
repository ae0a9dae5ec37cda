// Full backward hooks the way PyTorch builds them (torch/utils/hooks.py BackwardHook): the module's
// tensor inputs and outputs pass through an identity autograd Function (BackwardHookFunction). The
// node around the outputs sees grad_output first (and runs the backward pre-hooks); the node around
// the inputs runs last, and its post-hook calls the user's hooks with (module, grad_input,
// grad_output), where grad_input is the gradient with respect to the module's inputs.

import { Function, type FunctionCtx } from "../autograd/function.ts";
import { runtimeHook, type Grads, type Node } from "../autograd/node.ts";
import { adopt, handOut } from "../autograd/hand-out.ts";
import { is_grad_enabled } from "../autograd/grad-mode.ts";
import { owned } from "../memory/lifetime.ts";
import { mark, settleHandedOut } from "../memory/ownership.ts";
import { RuntimeError } from "../errors.ts";
import { Tensor } from "../tensor.ts";

export type BackwardHookFn<M> = (module: M, grad_input: Grads, grad_output: Grads) => Grads | void | null;
export type BackwardPreHookFn<M> = (module: M, grad_output: Grads) => Grads | void | null;

/**
 * Identity on its tensor arguments; outputs of inputs that do not require grad stay non-differentiable.
 * The runtime's own Function (runtimeHook): its backward keeps nothing, so it gets the engine's handles.
 */
const BackwardHookFunction = runtimeHook(
  class BackwardHookFunction extends Function {
    static override forward(ctx: FunctionCtx, ...args: Tensor[]): Tensor[] {
      const outs = args.map((a) => a.detach());
      ctx.mark_non_differentiable(...outs.filter((_, i) => !args[i].requires_grad));
      return outs;
    }
    static override backward(_ctx: FunctionCtx, ...grads: Grads): Grads {
      return grads;
    }
  },
);

const release = (gs: Grads) => gs.forEach((g) => g?.dispose());
export const runHook = <T>(fn: () => T): T => owned(fn);

export class BackwardHook<M> {
  private gradOutputs: Grads | null = null;
  /** What the user's hooks were given or returned in this backward pass, settled after the last one. */
  private handedOut: Grads = [];
  /** The mark taken before the first of them was made (settleHandedOut). */
  private since = 0;
  private nOutputs = -1;
  private outputIdx: number[] | null = null;
  private nInputs = -1;
  private inputIdx: number[] | null = null;

  constructor(
    private readonly module: M,
    private readonly userHooks: BackwardHookFn<M>[],
    private readonly userPreHooks: BackwardPreHookFn<M>[],
  ) {}

  private pack(indices: number[], values: Grads, size: number): Grads {
    const res: Grads = new Array(size).fill(null);
    indices.forEach((idx, k) => (res[idx] = values[k] ?? null));
    return res;
  }

  /** Wraps the tensors among args in one BackwardHookFunction; fn gets its node. */
  private applyOnTensors(fn: (node: Node) => void, args: unknown[]): [unknown[], number[] | null] {
    const idx: number[] = [];
    const tensors: Tensor[] = [];
    let requiresGrad = false;
    args.forEach((a, i) => {
      if (a instanceof Tensor) {
        idx.push(i);
        tensors.push(a);
        requiresGrad ||= a.requires_grad;
      }
    });
    if (!(requiresGrad && is_grad_enabled())) return [args, null];
    const wrapped = BackwardHookFunction.apply(...tensors) as Tensor[];
    const node = wrapped.map((t) => t.grad_fn).find((f) => f && f.name() === "BackwardHookFunctionBackward");
    if (!node) throw new RuntimeError("Error while setting up backward hooks. Please open an issue with a code sample to reproduce this.");
    fn(node);
    const out = [...args];
    idx.forEach((i, k) => (out[i] = wrapped[k]));
    return [out, idx];
  }

  setupInputHook(args: unknown[]): unknown[] {
    const [res, idx] = this.applyOnTensors((node) => this.setUserHook(node), args);
    this.nInputs = args.length;
    this.inputIdx = idx;
    return res;
  }

  /** The hooks were done with what they were given: see memory/ownership.ts's settleHandedOut. */
  private settle(): void {
    settleHandedOut([...this.userPreHooks, ...this.userHooks], this.handedOut, this.since);
    this.handedOut = [];
  }

  private setUserHook(node: Node): void {
    node.register_hook(
      runtimeHook((gradInputs: Grads) => {
        // No grad_output yet: the gradient reached the inputs without passing through the outputs.
        if (this.gradOutputs === null) return;
        if (this.handedOut.length === 0) this.since = mark();
        const mine = handOut(gradInputs);
        this.handedOut.push(...mine);
        let res = this.pack(this.inputIdx!, mine, this.nInputs);
        let changed = false;
        for (const hook of this.userHooks) {
          const gradOutputs = this.gradOutputs;
          const out: Grads | void | null = runHook(() => hook(this.module, res, gradOutputs));
          if (out === undefined || out === null) continue;
          if (out.length !== res.length) {
            throw new RuntimeError(`Backward hook returned an invalid number of grad_input, got ${out.length}, but expected ${res.length}`);
          }
          res = out;
          this.handedOut.push(...out);
          changed = true;
        }
        this.gradOutputs = null;
        const replaced = changed ? adopt(this.inputIdx!.map((i) => res[i])) : undefined;
        this.settle();
        if (!replaced) return;
        release(gradInputs);
        return replaced;
      }),
    );
  }

  setupOutputHook(result: unknown): unknown {
    const isTuple = Array.isArray(result);
    const args = isTuple ? (result as unknown[]) : [result];
    const [res, idx] = this.applyOnTensors((node) => {
      node.register_prehook(
        runtimeHook((gradOutputs: Grads) => {
          this.settle(); // an earlier pass whose gradient never reached the inputs
          this.since = mark();
          const given = handOut(gradOutputs);
          this.handedOut.push(...given);
          let current: Grads = this.pack(this.outputIdx!, given, this.nOutputs);
          let changed = false;
          for (const pre of this.userPreHooks) {
            const seen = current;
            const r: Grads | void | null = runHook(() => pre(this.module, seen));
            if (r === undefined || r === null) continue;
            if (r.length !== current.length) {
              throw new RuntimeError(`Backward pre hook returned an invalid number of grad_output, got ${r.length}, but expected ${current.length}`);
            }
            current = r;
            this.handedOut.push(...r);
            changed = true;
          }
          this.gradOutputs = current;
          // No input requires grad: the input-side node never runs, so the hooks run here.
          if (this.inputIdx === null) {
            const gradInputs = this.pack([], [], this.nInputs);
            for (const hook of this.userHooks) {
              const r: Grads | void | null = runHook(() => hook(this.module, gradInputs, current));
              if (r && !r.every((g) => g === null)) {
                throw new RuntimeError("Backward hook for Modules where no input requires gradient should always return None or None for all gradients.");
              }
            }
            this.gradOutputs = null;
          }
          const replaced = changed ? adopt(this.outputIdx!.map((i) => current[i])) : undefined;
          if (this.gradOutputs === null) this.settle();
          if (!replaced) return;
          release(gradOutputs);
          return replaced;
        }),
      );
    }, args);
    this.nOutputs = args.length;
    this.outputIdx = idx;
    return isTuple ? res : res[0];
  }
}
