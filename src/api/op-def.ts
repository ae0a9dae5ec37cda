// What the op table (api/functions.ts, api/methods.ts) declares for each op, and how a declaration
// becomes a `torch.*` function and a Tensor method (api/install.ts). Modelled on PyTorch's
// native_functions.yaml (which function/method exists) with derivatives.yaml (which node, what it saves).

import type { Tensor } from "../tensor.ts";
import { deviceOfArgs, runOpCall } from "../ops/op-context.ts";
import { TypeError_ } from "../errors.ts";
import { pyTypeName } from "../pystr.ts";
import { checkKwargs, isOpts } from "../kwargs.ts";

/** An op whose outputs never require grad (comparisons, argmax, creation): declared, not forgotten. */
export const NOT_DIFFERENTIABLE = "not differentiable";
/** A differentiable op whose gradient formula is not itself differentiable (none in torch 1.13's table for these ops). */
export const NOT_TWICE_DIFFERENTIABLE = "not twice differentiable";

// An op's arguments are whatever its impl declares (`any` so that every impl is assignable).
type Impl = (self: Tensor, ...args: any[]) => unknown;

export interface OpDef {
  /** The differentiable implementation, self first (the method's `this`, the function's first argument). */
  readonly impl: Impl;
  /**
   * The backward nodes the op may record (PyTorch's names; several where the arguments choose, as
   * sum / sum(dim)), none for an op that returns its input itself (x.to(x.dtype)), or NOT_DIFFERENTIABLE.
   * test/op-table.test.ts runs every op and checks it.
   */
  readonly grad: readonly string[] | typeof NOT_DIFFERENTIABLE;
  /** The `_saved_*` names of its node(s), as PyTorch shows them. */
  readonly saves?: readonly string[];
  /**
   * Second order (derivatives.yaml's double-backward entries): the nodes its gradient formula records
   * at the top of each input's gradient when the incoming gradient requires grad (create_graph), by
   * PyTorch's names: a named double-backward op (ThresholdBackwardBackward0) or the ops PyTorch's
   * formula is made of (MulBackward0); "zeros" for a constant zero gradient (PyTorch's zeros_like:
   * fill_, zero_); [] when the gradient is the incoming one itself (clone, an alias).
   * NOT_TWICE_DIFFERENTIABLE where the formula is not recorded.
   * test/op-table.test.ts requires it for every differentiable op and checks it.
   */
  readonly gradgrad?: readonly string[] | typeof NOT_TWICE_DIFFERENTIABLE;
  /**
   * How the op appears on Tensor: a method (the default) with the function's arguments after self,
   * a property getter (x.T), or a method with other arguments (x.where(cond, y) = torch.where(cond, x, y)).
   */
  readonly method?: "getter" | Impl;
  /** The function form takes a number as self, as PyTorch wraps it (torch.div(1, t)): the impl handles it. */
  readonly scalarSelf?: boolean;
  /**
   * The keywords its trailing options object may hold (PyTorch's names: x.sum(1, {keepdim: true})).
   * An op without takes none: an options object with any other key raises PyTorch's TypeError before
   * anything runs (JavaScript would drop an unknown property silently). test/op-kwargs.test.ts.
   */
  readonly kwargs?: readonly string[];
  /** PyTorch keywords GradLab does not implement, each accepted only at its default (else RuntimeError). */
  readonly kwargsAtDefault?: Readonly<Record<string, (v: unknown) => boolean>>;
  /** PyTorch keywords GradLab takes positionally (x.softmax(1), not x.softmax({dim: 1})): named in the error. */
  readonly positional?: readonly string[];
}

/** Checks an op call's trailing options object against its declaration (either form: function or method). */
export function checkOpKwargs(name: string, def: OpDef, args: readonly unknown[]): void {
  const last = args[args.length - 1];
  if (!isOpts(last)) return;
  for (const k of Object.keys(last)) {
    if (def.positional?.includes(k) && !def.kwargs?.includes(k)) {
      throw new TypeError_(
        `${name}() got an unexpected keyword argument '${k}' (GradLab takes ${def.positional.join(", ")} positionally: ${name}(${def.positional.join(", ")}))`,
      );
    }
  }
  checkKwargs(name, last, def.kwargs ?? [], def.kwargsAtDefault);
}

/** A declared op: callable as its `torch.*` function, carrying its declaration and its method's type. */
export type Op<F extends Impl, M> = F & { readonly def: OpDef; readonly __method?: M };

/** Tensor's method type for a function taking self first. */
export type MethodOf<F> = F extends (self: Tensor, ...args: infer A) => infer R ? (...args: A) => R : never;

/** Each op's name, the key it is declared under (set by api/install.ts, which walks the table). */
const names = new WeakMap<OpDef, string>();
export const nameOp = (def: OpDef, name: string) => names.set(def, name);

/**
 * Declares an op. The function form runs in an op context (ops/op-context.ts) on the device of its
 * first tensor argument, as the method form does on its own.
 */
export function op<F extends Impl, M = MethodOf<F>>(def: OpDef & { impl: F }): Op<F, M> {
  const f = ((...args: unknown[]) => {
    const self = args[0];
    // PyTorch's argument parser: torch.maximum(1, t) is a TypeError (add/sub/mul/div wrap a number themselves).
    if (self === null || self === undefined || (typeof self !== "object" && typeof self !== "function")) {
      if (!((typeof self === "number" || typeof self === "boolean") && def.scalarSelf)) {
        throw new TypeError_(`${names.get(def) ?? "op"}(): argument 'input' (position 1) must be Tensor, not ${pyTypeName(self)}`);
      }
    }
    checkOpKwargs(names.get(def) ?? "op", def, args);
    return runOpCall(names.get(def) ?? "op", deviceOfArgs(args), callImpl, def, args);
  }) as unknown as Op<F, M>;
  Object.defineProperty(f, "def", { value: def });
  return f;
}

/** Calls an op's impl with a call's arguments (passed through runOpCall: no closure per call). */
const callImpl = (def: OpDef, args: unknown[]) => (def.impl as (...a: unknown[]) => unknown)(...args);

/** A method-only op that reads as a property (x.T, x.mT). */
export function getter(def: OpDef & { impl: (self: Tensor) => Tensor }): Op<(self: Tensor) => Tensor, Tensor> {
  return op<(self: Tensor) => Tensor, Tensor>({ ...def, method: "getter" });
}
