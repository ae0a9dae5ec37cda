// torch.autograd.Function: user-defined forward/backward. `apply` runs forward without recording
// (inside a scope, so its temporaries die, but not what a cell's forward stored), then gives the outputs
// a node named <Class>Backward whose apply calls the class's static backward with the ctx forward filled.

import { RuntimeError } from "../errors.ts";
import { callScope, owned, RECORD } from "../memory/lifetime.ts";
import { madeSince, mark, settleHandedOut, takenAway } from "../memory/ownership.ts";
import { Tensor } from "../tensor.ts";
import { no_grad } from "./grad-mode.ts";
import { isRuntimeHook, Node, SavedVariable, type Grads } from "./node.ts";
import { adopt, handOut } from "./hand-out.ts";
import { edgeOf, needsGrad } from "./record.ts";

export class FunctionCtx {
  private savedVars: SavedVariable[] = [];
  needs_input_grad: boolean[] = [];
  /** Inputs modified in place by forward (their version is bumped and history rebased to this node). */
  dirty = new Set<Tensor>();
  nonDifferentiable = new Set<Tensor>();
  [key: string]: unknown;

  /** Holds its own handles at once, so temporaries of forward survive the end of forward's scope. */
  save_for_backward(...tensors: Array<Tensor | null>): void {
    for (const t of this.pendingSave) t?.dispose();
    this.pendingSave = owned(() => tensors.map((t) => (t ? t._alias() : null)));
  }
  private pendingSave: Array<Tensor | null> = [];
  /** Called by apply once the node exists, so saved outputs are recognised as this node's own. */
  /** Nothing is recorded (no input requires grad, or grad mode is off): the saves are not needed. */
  _dropSaves(): void {
    for (const t of this.pendingSave) t?.dispose();
    this.pendingSave = [];
  }
  _commitSaves(node: Node, outputs: Tensor[]): void {
    this.savedVars = this.pendingSave.map((t) => {
      if (!t) return null as unknown as SavedVariable;
      const nr = outputs.findIndex((o) => o.storage === t.storage && o._meta === t._meta);
      const sv = new SavedVariable(t, node, nr >= 0 ? { node, outputNr: nr } : undefined);
      t.dispose();
      return sv;
    });
    this.pendingSave = [];
  }
  get saved_tensors(): Array<Tensor | null> {
    return this.savedVars.map((sv) => (sv ? sv.unpack() : null));
  }
  mark_dirty(...tensors: Tensor[]): void {
    for (const t of tensors) this.dirty.add(t);
  }
  mark_non_differentiable(...tensors: Tensor[]): void {
    for (const t of tensors) this.nonDifferentiable.add(t);
  }
  _release(): void {
    for (const sv of this.savedVars) sv?.release();
  }
  _savedVariables(): SavedVariable[] {
    return this.savedVars.filter(Boolean);
  }
}

class CustomNode extends Node {
  constructor(
    private readonly cls: typeof Function & { name: string },
    readonly ctx: FunctionCtx,
    next: ReturnType<typeof edgeOf>[],
  ) {
    super(next);
  }
  name(): string {
    return `${this.cls.name}Backward`;
  }
  apply(grads: Grads): Grads {
    const cls = this.cls as unknown as { backward(ctx: FunctionCtx, ...g: Grads): unknown };
    // A user's backward gets handles of its own, as a hook does (engine.ts): it may keep one
    // (`saved.push(g)`), as PyTorch's may keep a reference; a backward a cell defines that keeps
    // nothing has them released as it returns. The runtime's own Functions get the engine's.
    const runtime = isRuntimeHook(this.cls);
    const since = mark();
    const given = runtime ? grads : handOut(grads);
    // in a frame of its own, as forward: a tensor it makes and stores (`kept.push(g.mul(2))`) is the
    // user's, which the engine's scope around apply would otherwise dispose as a temporary
    const r = runtime ? cls.backward(this.ctx, ...given) : callScope(() => cls.backward(this.ctx, ...given), takenAway);
    const list = (Array.isArray(r) ? r : [r]) as Grads;
    if (list.length < this.next_functions.length) {
      throw new RuntimeError(`function ${this.name()} returned an incorrect number of gradients (expected ${this.next_functions.length}, got ${list.length})`);
    }
    // A gradient backward did not make (one it was given, `return g`; one forward put on ctx or a global,
    // `return ctx.ones`), or one it made and also stored (`kept.push(r); return r`), goes on as a handle
    // of the engine's: the user's may be kept, and used again.
    const users = (g: Tensor) => given.includes(g) || !madeSince(g, since) || takenAway(g[RECORD]);
    const out = list.slice(0, this.next_functions.length).map((g) => (g instanceof Tensor ? (!runtime && users(g) ? adopt([g])[0] : g) : null));
    if (!runtime) settleHandedOut([cls.backward], given, since);
    return out;
  }
  override release_saved_variables(): void {
    this.ctx._release();
  }
  override get mayHoldUserTensors(): boolean {
    return true; // forward may have put tensors on ctx
  }
  override savedVariables(): ReadonlyMap<string, SavedVariable> {
    return new Map(this.ctx._savedVariables().map((sv, i) => [`tensors[${i}]`, sv]));
  }
}

export class Function {
  static forward(_ctx: FunctionCtx, ..._args: unknown[]): unknown {
    throw new RuntimeError("You must implement the forward function for custom autograd.Function.");
  }
  static backward(_ctx: FunctionCtx, ..._grads: unknown[]): unknown {
    throw new RuntimeError("You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD.");
  }

  static apply<T>(this: { forward(ctx: FunctionCtx, ...a: never[]): T } & typeof Function, ...args: unknown[]): T {
    const ctx = new FunctionCtx();
    const tensorArgs = args.filter((a): a is Tensor => a instanceof Tensor);
    ctx.needs_input_grad = args.map((a) => a instanceof Tensor && a.requires_grad);
    const record = needsGrad(...tensorArgs);
    // Temporaries of forward die with its frame, but not what a cell's forward stored (`ctx.mask = x.gt(0)`,
    // which backward reads: PyTorch's ctx keeps it until the graph goes), as for a module's forward.
    const result = no_grad(() => callScope(() => (this.forward as (c: FunctionCtx, ...a: unknown[]) => T)(ctx, ...args), takenAway));
    const outputs = (Array.isArray(result) ? result : [result]).filter((o): o is Tensor => o instanceof Tensor);
    if (!record) {
      ctx._dropSaves();
      return result;
    }
    const node = new CustomNode(this, ctx, tensorArgs.map(edgeOf));
    node.numOutputs = outputs.length;
    ctx._commitSaves(node, outputs);
    outputs.forEach((o, i) => {
      if (ctx.nonDifferentiable.has(o)) return;
      if (tensorArgs.includes(o) && !ctx.dirty.has(o)) {
        throw new RuntimeError("a custom Function returned an input unchanged; return input.view_as(input) or mark it dirty if modified in place");
      }
      o._meta.grad_fn = node;
      o._meta.output_nr = i;
    });
    // The node keeps ctx for backward: it must not keep these handles (PyTorch's ctx holds them only
    // during forward), or the graph would keep the tensors' memory and the handles would never be collected.
    ctx.dirty.clear();
    ctx.nonDifferentiable.clear();
    return result;
  }
}
