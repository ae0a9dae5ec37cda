// Installs the op table (api/functions.ts, api/methods.ts) on Tensor: each op becomes a method (or a
// getter) that runs in an op context on the tensor's device, and names itself for the memory timeline.
// The Tensor class (tensor.ts) declares no op: its method types are derived here from the table, so a
// declared op cannot be missing from Tensor, and a Tensor method cannot exist without a declaration.

import { Tensor } from "../tensor.ts";
// Autograd's side of the handle (requires_grad, grad_fn, backward): installed when autograd loads.
import "../autograd/tensor-autograd.ts";
import { runOp, runOpCall } from "../ops/op-context.ts";
import * as functions from "./functions.ts";
import * as methods from "./methods.ts";
import { checkOpKwargs, nameOp, type OpDef } from "./op-def.ts";

type MethodsOf<NS> = { [K in keyof NS]: NS[K] extends { readonly __method?: infer X } ? NonNullable<X> : never };
type TableMethods = MethodsOf<typeof functions> & MethodsOf<typeof methods>;

declare module "../tensor.ts" {
  // The declaration merges the table's methods into the class.
  interface Tensor extends TableMethods {}
}

/** Every declared op, by name: the table as data (test/op-table.test.ts walks it). */
export const OP_TABLE: ReadonlyMap<string, OpDef> = new Map(
  [...Object.entries(functions), ...Object.entries(methods)].map(([name, f]) => [name, (f as { readonly def: OpDef }).def]),
);

/** The op table's functions and methods (torch.add, Tensor.prototype.add...): none keeps its arguments. */
const opCalls = new WeakSet<object>(Object.values(functions).filter((f) => typeof f === "function" && "def" in f));
export const isOpCall = (fn: unknown): boolean => typeof fn === "function" && opCalls.has(fn);

for (const [name, def] of OP_TABLE) {
  nameOp(def, name);
  const impl = typeof def.method === "function" ? def.method : def.impl;
  if (Object.hasOwn(Tensor.prototype, name)) throw new Error(`internal: Tensor.${name} is declared twice`);
  if (def.method === "getter") {
    Object.defineProperty(Tensor.prototype, name, {
      get(this: Tensor) {
        return runOp(name, this.storage.device, () => impl(this));
      },
      configurable: true,
    });
  } else {
    // Made once per op, so that a call passes its arguments through runOpCall instead of a new closure.
    const call = (self: Tensor, args: unknown[]) => impl(self, ...args);
    const method = function (this: Tensor, ...args: unknown[]) {
      checkOpKwargs(name, def, args);
      return runOpCall(name, this.storage.device, call, this, args);
    };
    opCalls.add(method);
    Object.defineProperty(Tensor.prototype, name, { value: method, writable: true, configurable: true });
  }
}
