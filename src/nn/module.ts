// nn.Module. A module is callable like PyTorch's (`model(x)`): the constructor returns a function
// object whose prototype is the subclass's, so the subclass's fields land on that function. The base
// class keeps its own state in a WeakMap (fields declared here would land on the discarded `this`).
// Parameters, buffers and submodules are found from the object's own properties in assignment order
// (no __setattr__ in JavaScript), plus what register_parameter / register_buffer / add_module declare.

import { Tensor } from "../tensor.ts";
import { Parameter } from "./parameter.ts";
import { RuntimeError, TypeError_ } from "../errors.ts";
import { callScope, scope } from "../memory/lifetime.ts";
import { dropIntermediate, keep, takenAway } from "../memory/ownership.ts";
import { currentPhase, withPhase } from "../memory/history.ts";
import { no_grad } from "../autograd/grad-mode.ts";
import { tensor } from "../ops/creation.ts";
import { BackwardHook, runHook, type BackwardHookFn, type BackwardPreHookFn } from "./backward-hook.ts";

export type ForwardPreHook = (module: Module, input: unknown[]) => unknown;
export type ForwardHook = (module: Module, input: unknown[], output: any) => unknown;
export interface RemovableHandle {
  readonly id: number;
  remove(): void;
}

interface State {
  training: boolean;
  /** Names declared by register_parameter / register_buffer / add_module (values may be null). */
  kinds: Map<string, "parameter" | "buffer" | "module">;
  nonPersistent: Set<string>;
  forwardPre: Map<number, ForwardPreHook>;
  forward: Map<number, ForwardHook>;
  backward: Map<number, BackwardHookFn<Module>>;
  backwardPre: Map<number, BackwardPreHookFn<Module>>;
}
const states = new WeakMap<object, State>();
let nextHookId = 0;

function state(m: Module): State {
  const s = states.get(m);
  if (!s) throw new RuntimeError("cannot access the state of a Module before Module.constructor ran (call super() first)");
  return s;
}

function handle(map: Map<number, unknown>, fn: unknown): RemovableHandle {
  const id = nextHookId++;
  map.set(id, fn);
  return { id, remove: () => void map.delete(id) };
}

function checkName(name: string, what: string): void {
  if (typeof name !== "string") throw new TypeError_(`${what} name should be a string. Got ${typeof name}`);
  if (name.includes(".")) throw new RuntimeError(`${what} name can't contain ".", got: ${name}`);
  if (name === "") throw new RuntimeError(`${what} name can't be empty string ""`);
}

/** The direct entries of one kind, in assignment order, skipping nulls. */
function own(m: Module, kind: "parameter" | "buffer" | "module"): Array<[string, any]> {
  const s = state(m);
  const out: Array<[string, any]> = [];
  for (const k of Object.keys(m)) {
    const v = (m as any)[k];
    const declared = s.kinds.get(k);
    const isKind = declared ? declared === kind : kind === "parameter" ? v instanceof Parameter : kind === "module" ? v instanceof Module : false;
    if (isKind && v !== null && v !== undefined) out.push([k, v]);
  }
  return out;
}

/** PyTorch's _addindent: every line but the first indented by n spaces. */
const addIndent = (s: string, n: number) =>
  s
    .split("\n")
    .map((l, i) => (i === 0 ? l : " ".repeat(n) + l))
    .join("\n");

export interface Module {
  /** Calling a module runs its hooks and forward (PyTorch's __call__ / _call_impl). */
  // biome-ignore lint/style/useShorthandFunctionType: a call signature merged into the class, which a type alias cannot be.
  (...args: any[]): any;
}

export class Module {
  constructor() {
    const f = ((...args: unknown[]) => callImpl(f, args)) as unknown as Module;
    // A function's own name/length would shadow module attributes of those names.
    delete (f as { name?: string }).name;
    delete (f as { length?: number }).length;
    Object.setPrototypeOf(f, new.target.prototype);
    states.set(f, {
      training: true,
      kinds: new Map(),
      nonPersistent: new Set(),
      forwardPre: new Map(),
      forward: new Map(),
      backward: new Map(),
      backwardPre: new Map(),
    });
    return f;
  }

  forward(..._args: any[]): any {
    throw new RuntimeError(`Module [${this._get_name()}] is missing the required "forward" function`);
  }

  get training(): boolean {
    return state(this).training;
  }
  set training(v: boolean) {
    state(this).training = v;
  }

  // ---- registration ----
  register_parameter(name: string, param: Parameter | null): void {
    checkName(name, "parameter");
    if (param !== null && !(param instanceof Parameter)) {
      throw new TypeError_(
        `cannot assign '${(param as unknown) instanceof Tensor ? "torch.FloatTensor" : typeof param}' object to parameter '${name}' (torch.nn.Parameter or None required)`,
      );
    }
    if (param && !param.is_leaf) {
      throw new RuntimeError(
        `Cannot assign non-leaf Tensor to parameter '${name}'. Model parameters must be created explicitly. To express '${name}' as a function of another Tensor, compute the value in the forward() method.`,
      );
    }
    state(this).kinds.set(name, "parameter");
    (this as any)[name] = param;
  }
  register_buffer(name: string, t: Tensor | null, opts: { persistent?: boolean } = {}): void {
    checkName(name, "buffer");
    if (t !== null && !(t instanceof Tensor)) throw new TypeError_(`cannot assign '${typeof t}' object to buffer '${name}' (torch Tensor or None required)`);
    if (t) keep(t); // the module keeps it: never a cell variable's own (memory/ownership.ts)
    const s = state(this);
    s.kinds.set(name, "buffer");
    if (opts.persistent === false) s.nonPersistent.add(name);
    else s.nonPersistent.delete(name);
    (this as any)[name] = t;
  }
  add_module(name: string, module: Module | null): void {
    checkName(name, "module");
    if (module !== null && !(module instanceof Module)) throw new TypeError_(`${typeof module} is not a Module subclass`);
    state(this).kinds.set(name, "module");
    (this as any)[name] = module;
  }
  register_module(name: string, module: Module | null): void {
    this.add_module(name, module);
  }

  // ---- traversal ----
  *named_modules(memo = new Set<Module>(), prefix = "", remove_duplicate = true): Generator<[string, Module]> {
    if (remove_duplicate && memo.has(this)) return;
    if (remove_duplicate) memo.add(this);
    yield [prefix, this];
    for (const [name, m] of own(this, "module")) yield* (m as Module).named_modules(memo, prefix ? `${prefix}.${name}` : name, remove_duplicate);
  }
  *modules(): Generator<Module> {
    for (const [, m] of this.named_modules()) yield m;
  }
  *named_children(): Generator<[string, Module]> {
    const seen = new Set<Module>();
    for (const [name, m] of own(this, "module"))
      if (!seen.has(m)) {
        seen.add(m);
        yield [name, m];
      }
  }
  *children(): Generator<Module> {
    for (const [, m] of this.named_children()) yield m;
  }

  private *namedMembers(kind: "parameter" | "buffer", prefix: string, recurse: boolean): Generator<[string, any]> {
    const seen = new Set<unknown>();
    const mods: Iterable<[string, Module]> = recurse ? this.named_modules(new Set(), prefix) : [[prefix, this]];
    for (const [mp, m] of mods) {
      for (const [k, v] of own(m, kind)) {
        if (seen.has(v)) continue;
        seen.add(v);
        yield [mp ? `${mp}.${k}` : k, v];
      }
    }
  }
  *named_parameters(opts: { prefix?: string; recurse?: boolean } = {}): Generator<[string, Parameter]> {
    yield* this.namedMembers("parameter", opts.prefix ?? "", opts.recurse ?? true);
  }
  *parameters(recurse = true): Generator<Parameter> {
    for (const [, p] of this.named_parameters({ recurse })) yield p;
  }
  *named_buffers(opts: { prefix?: string; recurse?: boolean } = {}): Generator<[string, Tensor]> {
    yield* this.namedMembers("buffer", opts.prefix ?? "", opts.recurse ?? true);
  }
  *buffers(recurse = true): Generator<Tensor> {
    for (const [, b] of this.named_buffers({ recurse })) yield b;
  }

  get_submodule(target: string): Module {
    let m: Module = this;
    for (const item of target ? target.split(".") : []) {
      const next = (m as any)[item];
      if (!(next instanceof Module)) throw new RuntimeError(`${m._get_name()} has no attribute \`${item}\``);
      m = next;
    }
    return m;
  }
  get_parameter(target: string): Parameter {
    const i = target.lastIndexOf(".");
    const m = this.get_submodule(i < 0 ? "" : target.slice(0, i));
    const p = (m as any)[target.slice(i + 1)];
    if (!(p instanceof Parameter)) throw new RuntimeError(`\`${target.slice(i + 1)}\` is not an nn.Parameter`);
    return p;
  }

  // ---- modes and utilities ----
  train(mode = true): this {
    if (typeof mode !== "boolean") throw new TypeError_("training mode is expected to be boolean");
    state(this).training = mode;
    for (const c of this.children()) c.train(mode);
    return this;
  }
  eval(): this {
    return this.train(false);
  }
  requires_grad_(requires_grad = true): this {
    for (const p of this.parameters()) p.requires_grad_(requires_grad);
    return this;
  }
  apply(fn: (m: Module) => void): this {
    for (const c of this.children()) c.apply(fn);
    fn(this);
    return this;
  }
  /** One device and float32 only: these return the module itself, as PyTorch's do when nothing moves. */
  to(..._args: unknown[]): this {
    return this;
  }
  cuda(): this {
    return this;
  }
  cpu(): this {
    return this;
  }
  float(): this {
    return this;
  }

  /** Frees the gradients (set_to_none, the default as in PyTorch 2) or zeroes them in place. */
  zero_grad(opts: { set_to_none?: boolean } = {}): void {
    for (const p of this.parameters()) zeroGrad(p, opts.set_to_none ?? true);
  }

  // ---- state dict ----
  state_dict(opts: { prefix?: string; keep_vars?: boolean } = {}): Record<string, Tensor> {
    const out: Record<string, Tensor> = {};
    const visit = (m: Module, prefix: string) => {
      for (const [k, p] of own(m, "parameter")) out[prefix + k] = opts.keep_vars ? p : p.detach();
      const np = state(m).nonPersistent;
      for (const [k, b] of own(m, "buffer")) if (!np.has(k)) out[prefix + k] = opts.keep_vars ? b : b.detach();
      for (const [k, c] of own(m, "module")) visit(c, `${prefix}${k}.`);
    };
    visit(this, opts.prefix ?? "");
    return out;
  }

  /** Copies values in place (under no_grad); strict: every key must match, as PyTorch's. */
  load_state_dict(sd: Record<string, Tensor | number[] | number>, opts: { strict?: boolean } = {}): { missing_keys: string[]; unexpected_keys: string[] } {
    const strict = opts.strict ?? true;
    const own_ = this.state_dict({ keep_vars: true });
    const missing = Object.keys(own_).filter((k) => !(k in sd));
    const unexpected = Object.keys(sd).filter((k) => !(k in own_));
    const errors: string[] = [];
    no_grad(() =>
      scope(() => {
        for (const [k, target] of Object.entries(own_)) {
          if (!(k in sd)) continue;
          const v = sd[k];
          const src = v instanceof Tensor ? v : tensor(v as number[], { dtype: target.dtype });
          const same = src.ndim === target.ndim && src.shape.every((s, i) => s === target.shape[i]);
          if (!same) {
            errors.push(
              `size mismatch for ${k}: copying a param with shape torch.Size([${src.shape.join(", ")}]) from checkpoint, the shape in current model is torch.Size([${target.shape.join(", ")}]).`,
            );
            continue;
          }
          target.copy_(src);
        }
      }),
    );
    if (strict) {
      if (unexpected.length) errors.unshift(`Unexpected key(s) in state_dict: ${unexpected.map((k) => `"${k}"`).join(", ")}. `);
      if (missing.length) errors.unshift(`Missing key(s) in state_dict: ${missing.map((k) => `"${k}"`).join(", ")}. `);
    }
    if (errors.length) throw new RuntimeError(`Error(s) in loading state_dict for ${this._get_name()}:\n\t${errors.join("\n\t")}`);
    return { missing_keys: missing, unexpected_keys: unexpected };
  }

  // ---- hooks ----
  register_forward_pre_hook(hook: ForwardPreHook): RemovableHandle {
    return handle(state(this).forwardPre, hook);
  }
  register_forward_hook(hook: ForwardHook): RemovableHandle {
    return handle(state(this).forward, hook);
  }
  register_full_backward_pre_hook(hook: BackwardPreHookFn<Module>): RemovableHandle {
    return handle(state(this).backwardPre, hook);
  }
  register_full_backward_hook(hook: BackwardHookFn<Module>): RemovableHandle {
    return handle(state(this).backward, hook);
  }

  // ---- printing ----
  _get_name(): string {
    return this.constructor.name;
  }
  extra_repr(): string {
    return "";
  }
  /** PyTorch's repr: `Linear(in_features=4, out_features=2, bias=True)`, children indented. */
  repr(): string {
    const extra = this.extra_repr();
    const extraLines = extra ? extra.split("\n") : [];
    const childLines = own(this, "module").map(([k, m]) => `(${k}): ${addIndent((m as Module).repr(), 2)}`);
    const lines = [...extraLines, ...childLines];
    let main = `${this._get_name()}(`;
    if (lines.length) main += extraLines.length === 1 && !childLines.length ? extraLines[0] : `\n  ${lines.join("\n  ")}\n`;
    return `${main})`;
  }
  toString(): string {
    return this.repr();
  }
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.repr();
  }
}

/** Whether any hook can see (and keep) what goes into or comes out of a call of m. */
export function hasHooks(m: Module): boolean {
  const s = state(m);
  return s.forwardPre.size + s.forward.size + s.backward.size + s.backwardPre.size > 0;
}

export function zeroGrad(p: Tensor, setToNone: boolean): void {
  const g = p.grad;
  if (!g) return;
  if (setToNone) {
    p.grad = null;
    return;
  }
  if (g.grad_fn) {
    const d = g.detach();
    p.grad = d;
    d.dispose();
  }
  no_grad(() => p.grad!.zero_());
}

/**
 * Module.__call__: pre-hooks, backward-hook wrapping, forward inside a scope, forward hooks. Hooks run
 * with no scope collecting what they create, so `acts[name] = output.detach()` in a hook outlives the
 * enclosing module's forward, as a stored reference does in PyTorch.
 */
function callImpl(m: Module, args: unknown[]): unknown {
  const s = state(m);
  let input = args;
  for (const hook of [...s.forwardPre.values()]) {
    const r = runHook(() => hook(m, input));
    if (r !== undefined && r !== null) input = Array.isArray(r) ? r : [r];
  }
  let bw: BackwardHook<Module> | null = null;
  const given = input;
  if (s.backward.size || s.backwardPre.size) {
    bw = new BackwardHook(m, [...s.backward.values()], [...s.backwardPre.values()]);
    input = bw.setupInputHook(input);
  }
  // Temporaries of forward that are neither returned nor saved for backward die here (DESIGN.md), but
  // for what a cell's forward put where it outlives the call (`this.h = h`: takenAway; a plain script
  // has no transform to say so, and there such a tensor is still disposed).
  // Allocations of a module call are the forward phase of the memory timeline (unless it is the
  // recomputation inside a backward pass, which stays "backward").
  const run = () => callScope(() => m.forward(...input), takenAway);
  let result = currentPhase() === "other" ? withPhase("forward", run) : run();
  for (const hook of [...s.forward.values()]) {
    const r = runHook(() => hook(m, input, result));
    if (r !== undefined && r !== null) result = r;
  }
  if (bw) {
    const forwardResult = result;
    result = bw.setupOutputHook(result);
    // The handles full backward hooks put around forward (its inputs, and its outputs before) are the
    // runtime's: dropped now unless a cell's forward stored one, as CPython drops them when __call__
    // returns (they went to the collector, one or two per step). A forward hook saw them too, and may
    // have kept one where no transform could tell: then they are left to the collector, as before.
    if (s.forward.size === 0) dropWrappers(given, input, forwardResult, result);
  }
  return result;
}

/** See callImpl: the wrappers among `input` (not in `given`) and the outputs of forward not in `result`. */
function dropWrappers(given: unknown[], input: unknown[], forwardResult: unknown, result: unknown): void {
  const listOf = (v: unknown): unknown[] | null => (v instanceof Tensor ? [v] : Array.isArray(v) ? v : null);
  const after = listOf(result);
  const before = listOf(forwardResult);
  if (after === null || before === null) return; // a result of another shape may hold anything
  for (const t of before) if (t instanceof Tensor && !after.includes(t)) dropIntermediate(t);
  for (const t of input) if (t instanceof Tensor && !given.includes(t) && !after.includes(t) && !before.includes(t)) dropIntermediate(t);
}
