// torch.optim.Optimizer: parameter groups with their hyper-parameters, per-parameter state, zero_grad,
// and state_dict / load_state_dict in PyTorch's layout (parameters referred to by their index).
// State tensors are owned by the runtime (they outlive any torch.scope) and tagged optimizer_state.

import { withPhase } from "../memory/history.ts";
import { Tensor } from "../tensor.ts";
import { TypeError_, ValueError } from "../errors.ts";
import { owned, scope } from "../memory/lifetime.ts";
import { keep } from "../memory/ownership.ts";
import { withCategory } from "../memory/category.ts";
import { enable_grad, no_grad } from "../autograd/grad-mode.ts";
import { zeroGrad } from "../nn/module.ts";

export interface ParamGroup {
  params: Tensor[];
  [hyper: string]: any;
}
export type ParamsArg = Iterable<Tensor> | Iterable<{ params: Iterable<Tensor> | Tensor; [hyper: string]: any }>;
export type ParamState = Record<string, any>;
export interface OptimizerStateDict {
  state: Record<number, ParamState>;
  param_groups: Array<Record<string, any> & { params: number[] }>;
}

/** Runs fn with its allocations owned by the optimizer: outside user scopes, tagged optimizer_state, and
 *  never a cell variable's own (memory/ownership.ts: the optimizer keeps it). */
export function stateTensor(fn: () => Tensor): Tensor {
  return keep(owned(() => withCategory("optimizer_state", fn)));
}

/** Tensors an update leaves bound to the loop's variables, by variable name. */
export type Carried = Record<string, Tensor | undefined>;

export abstract class Optimizer {
  readonly defaults: Record<string, any>;
  param_groups: ParamGroup[] = [];
  /** Per-parameter state, keyed by the parameter tensor (PyTorch's defaultdict keyed by Parameter). */
  state = new Map<Tensor, ParamState>();

  constructor(params: ParamsArg, defaults: Record<string, any>) {
    this.defaults = defaults;
    if (params instanceof Tensor) {
      throw new TypeError_("params argument given to the optimizer should be an iterable of Tensors or dicts, but got torch.FloatTensor");
    }
    const list = [...(params as Iterable<any>)];
    if (list.length === 0) throw new ValueError("optimizer got an empty parameter list");
    const groups = list[0] instanceof Tensor ? [{ params: list }] : list;
    for (const g of groups) this.add_param_group(g);
  }

  add_param_group(group: { params: Iterable<Tensor> | Tensor; [hyper: string]: any }): void {
    const params = group.params instanceof Tensor ? [group.params] : [...group.params];
    for (const p of params) {
      if (!(p instanceof Tensor)) throw new TypeError_(`optimizer can only optimize Tensors, but one of the params is ${typeof p}`);
      if (!p.is_leaf) throw new ValueError("can't optimize a non-leaf Tensor");
    }
    const full: ParamGroup = { ...group, params };
    for (const [k, v] of Object.entries(this.defaults)) if (!(k in full)) full[k] = v;
    const seen = new Set(this.param_groups.flatMap((g) => g.params));
    if (params.some((p) => seen.has(p))) throw new ValueError("some parameters appear in more than one parameter group");
    this.param_groups.push(full);
  }

  /** Frees the gradients (set_to_none, the default as in PyTorch 2) or zeroes them in place. */
  zero_grad(opts: { set_to_none?: boolean } = {}): void {
    for (const g of this.param_groups) for (const p of g.params) zeroGrad(p, opts.set_to_none ?? true);
  }

  /** One update of every parameter with a gradient; closure (re-evaluating the loss) is optional. */
  step(closure?: () => Tensor): Tensor | undefined {
    const loss = closure ? enable_grad(closure) : undefined;
    // One frame for the whole step: it is runtime code that frees its own temporaries, so the
    // memory tools need not look for garbage at each parameter (memory/lifetime.ts).
    withPhase("optimizer", () =>
      no_grad(() =>
        scope(() => {
          for (const group of this.param_groups) {
            // As torch 1.13's step: a group's new state is made for every parameter (_init_group)
            // before any update runs, so the first step's peak holds all of it.
            for (const p of group.params) {
              if (!p.grad) continue;
              if (!this.state.has(p)) this.state.set(p, {});
              this.initState(p, this.state.get(p)!, group);
            }
            // What an update leaves bound for the next (torch's loop variables): freed when the group's
            // single-tensor function returns.
            let carried: Carried = {};
            for (const p of group.params) {
              const grad = p.grad;
              if (!grad) continue;
              // Temporaries of the update die with this scope, except what it carries to the next;
              // state tensors are made with stateTensor.
              const c: Carried = carried;
              carried = scope(() => this.update(p, grad, this.state.get(p)!, group, c)) ?? {};
            }
            for (const t of Object.values(carried)) t?.dispose();
          }
        }),
      ),
    );
    return loss;
  }

  /** State a parameter's first update needs, made before the group's updates (none by default). */
  protected initState(_p: Tensor, _state: ParamState, _group: ParamGroup): void {}

  /**
   * The single-tensor update of one parameter (PyTorch's _single_tensor_* functions). `carried`: the
   * tensors the previous parameter's update left bound to the loop's variables, which PyTorch frees only
   * when the variable is bound again in this one (Adam's `denom`); the update frees them at that point
   * and returns its own.
   */
  protected abstract update(p: Tensor, grad: Tensor, state: ParamState, group: ParamGroup, carried: Carried): Carried | void;

  state_dict(): OptimizerStateDict {
    const index = new Map<Tensor, number>();
    const param_groups = this.param_groups.map((g) => {
      const packed: Record<string, any> = { ...g };
      packed.params = g.params.map((p) => {
        if (!index.has(p)) index.set(p, index.size);
        return index.get(p)!;
      });
      return packed as Record<string, any> & { params: number[] };
    });
    const state: Record<number, ParamState> = {};
    for (const [p, s] of this.state) if (index.has(p)) state[index.get(p)!] = s;
    return { state, param_groups };
  }

  /** Copies the state in (as PyTorch deep-copies it) and takes the groups' hyper-parameters. */
  load_state_dict(sd: OptimizerStateDict): void {
    const groups = sd.param_groups;
    if (groups.length !== this.param_groups.length) throw new ValueError("loaded state dict has a different number of parameter groups");
    groups.forEach((g, i) => {
      if (g.params.length !== this.param_groups[i].params.length) {
        throw new ValueError("loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
      }
    });
    const byIndex = new Map<number, Tensor>();
    groups.forEach((g, i) => g.params.forEach((id, k) => byIndex.set(id, this.param_groups[i].params[k])));
    for (const s of this.state.values()) disposeState(s);
    this.state = new Map();
    for (const [id, s] of Object.entries(sd.state)) {
      const p = byIndex.get(Number(id));
      if (!p) continue;
      const copy: ParamState = {};
      for (const [k, v] of Object.entries(s)) copy[k] = v instanceof Tensor ? stateTensor(() => no_grad(() => v.clone())) : v;
      this.state.set(p, copy);
    }
    this.param_groups = groups.map((g, i) => ({ ...g, params: this.param_groups[i].params }));
  }

  /** Python's repr: `SGD (\nParameter Group 0\n    lr: 0.1\n ...)`. */
  toString(): string {
    let s = `${this.constructor.name} (`;
    this.param_groups.forEach((g, i) => {
      s += `\nParameter Group ${i}`;
      for (const k of Object.keys(g).sort()) if (k !== "params") s += `\n    ${k}: ${fmt(g[k])}`;
    });
    return `${s}\n)`;
  }
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
}

function fmt(v: unknown): string {
  if (typeof v === "boolean") return v ? "True" : "False";
  if (v === null || v === undefined) return "None";
  if (Array.isArray(v)) return `(${v.map(fmt).join(", ")})`;
  return String(v);
}

function disposeState(s: ParamState): void {
  for (const v of Object.values(s)) if (v instanceof Tensor) v.dispose();
}

export function checkHyper(cond: boolean, msg: string): void {
  if (!cond) throw new ValueError(msg);
}
