// nn.Sequential and nn.ModuleList. Children are stored under the keys "0", "1", ... as PyTorch's are,
// so `seq[0]` indexes like Python; `at(i)` also takes negative indices.

import { Module, hasHooks } from "../module.ts";
import { Tensor } from "../../tensor.ts";
import { IndexError } from "../../errors.ts";
import { dropIntermediate } from "../../memory/ownership.ts";

function wrapIndex(i: number, n: number, _what: string): number {
  const j = i < 0 ? i + n : i;
  if (!Number.isInteger(j) || j < 0 || j >= n) throw new IndexError(`index ${i} is out of range`);
  return j;
}

/** Shared by both containers: numbered children, length, iteration. */
abstract class Indexed extends Module {
  [index: number]: Module;
  get length(): number {
    return [...this.named_children()].length;
  }
  at(i: number): Module {
    const kids = [...this.named_children()];
    return kids[wrapIndex(i, kids.length, this._get_name())][1];
  }
  *[Symbol.iterator](): Iterator<Module> {
    yield* this.children();
  }
  append(m: Module): this {
    this.add_module(String(this.length), m);
    return this;
  }
  extend(ms: Iterable<Module>): this {
    for (const m of ms) this.append(m);
    return this;
  }
}

export class Sequential extends Indexed {
  /** `new Sequential(a, b, c)`, or `new Sequential({name: module, ...})` as from an OrderedDict. */
  constructor(...mods: Array<Module | Record<string, Module>>) {
    super();
    if (mods.length === 1 && !(mods[0] instanceof Module)) {
      for (const [k, m] of Object.entries(mods[0])) this.add_module(k, m);
    } else mods.forEach((m, i) => this.add_module(String(i), m as Module));
  }
  override forward(input: unknown): any {
    let x = input;
    let prev: Module | null = null;
    for (const m of this.children()) {
      const next = m(x);
      // As Python's `input = module(input)`: the previous intermediate is dropped as soon as the next
      // module has consumed it (what autograd saved keeps its own reference), not when forward returns;
      // unless a hook saw it (it may have kept the handle, as a stored reference keeps it in PyTorch) or
      // a cell's module stored it (`this.out = y`: dropIntermediate).
      if (x !== input && x !== next && x instanceof Tensor && !hasHooks(m) && !(prev && hasHooks(prev))) dropIntermediate(x);
      x = next;
      prev = m;
    }
    return x;
  }
}

export class ModuleList extends Indexed {
  constructor(mods: Iterable<Module> = []) {
    super();
    this.extend(mods);
  }
}
