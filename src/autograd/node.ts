// Backward graph nodes, as torch/csrc/autograd/function.h: each Node has next edges (node, input_nr),
// a sequence number that orders execution, hooks, and the saved variables its backward formula needs.

import { RuntimeError } from "../errors.ts";
import type { Tensor } from "../tensor.ts";
import { activeSavedTensorsHooks, type PackHooks } from "./saved-hooks.ts";
import { retainNode } from "./meta.ts";
import { tuple } from "../pystr.ts";
import { pyName } from "./names.ts";
import { owned } from "../memory/lifetime.ts";
import { setCategory } from "../memory/storage.ts";
import { mayKeep } from "../memory/ownership.ts";

export type Edge = [Node | null, number];
export type Grads = Array<Tensor | null>;
type PreHook = (gradOutputs: Grads) => Grads | void;
type PostHook = (gradInputs: Grads, gradOutputs: Grads) => Grads | void;

/**
 * Hooks the runtime registers itself (retain_grad's, a module's full backward hooks): they are given
 * the engine's own handles, which they never keep. A user's hook gets handles of its own (engine.ts).
 */
const runtimeHooks = new WeakSet<object>();
export function runtimeHook<F extends object>(fn: F): F {
  runtimeHooks.add(fn);
  return fn;
}
export const isRuntimeHook = (fn: object): boolean => runtimeHooks.has(fn);

let nextSequenceNr = 0;
let nextAddress = 0x7f3a_0000_00n;
const UINT64_MAX = 2 ** 64 - 1;

const BACKWARD_TWICE =
  "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.";

/** How an anomaly-mode failure or an in-place error names a tensor: [torch.FloatTensor [3, 4]]. */
function tensorTypeName(t: { dtype: string; shape: readonly number[] }): string {
  const kind = t.dtype === "float32" ? "Float" : t.dtype === "int32" ? "Int" : "Bool";
  return `[torch.${kind}Tensor [${t.shape.join(", ")}]]`;
}

/** A tensor saved for backward, with the version it had then (SavedVariable in PyTorch). */
export class SavedVariable {
  private data: Tensor | null = null;
  private packed: { value: unknown; hooks: PackHooks } | null = null;
  private released = false;
  readonly savedVersion: number;
  /** For the in-place error: the node that produced the tensor, and which output it was. */
  /** For a tensor saved by the node that produces it: that node (held weakly, as PyTorch's weak_grad_fn_). */
  private readonly output: { node: Node; outputNr: number } | null;
  /**
   * Saved as a view that requires grad: once its version moves (an in-place write to it or its base),
   * PyTorch regenerates its grad_fn as AsStridedBackward0, and the unpack error names that node. The
   * saved handle has no base (it must not keep one alive), so it cannot regenerate its own.
   */
  private readonly viewAtSave: boolean;
  private readonly meta: { dtype: string; shape: number[] };
  private rawHooks: PackHooks | null = null;

  /**
   * `outputOf` marks a tensor saved by the node that produces it (ExpBackward0 saving its result): it is
   * kept without its autograd identity, since that identity points back at the node (PyTorch breaks the
   * same cycle with a weak grad_fn).
   */
  constructor(
    t: Tensor,
    readonly node: Node | null,
    outputOf?: { node: Node; outputNr: number },
    version?: number,
  ) {
    this.savedVersion = version ?? t._version;
    this.meta = { dtype: t.dtype, shape: [...t.shape] };
    this.output = outputOf ?? null;
    this.viewAtSave = !outputOf && t._base !== null && t.grad_fn !== null;
    if (t.is_inference()) {
      throw new RuntimeError(
        "Inference tensors cannot be saved for backward. To work around you can make a clone to get a normal tensor and use it in autograd.",
      );
    }
    const hooks = activeSavedTensorsHooks();
    owned(() => {
      // a user's pack hook may keep the very handle it is given (pack: (t) => t)
      if (hooks) this.packed = { value: hooks.pack(hooks.keepsNoHandle ? t : mayKeep(t)), hooks };
      else {
        const d = outputOf ? t.detach() : t._alias(false);
        d._role = { kind: "saved", description: `saved for backward by ${node?.name() ?? "a custom Function"}` };
        if (outputOf || !t.is_leaf) setCategory(d.storage, "activation"); // saved weights and inputs keep theirs
        this.data = d;
      }
    });
  }

  /** The tensor, checked against in-place modification since it was saved. */
  unpack(): Tensor {
    if (this.released) throw new RuntimeError(BACKWARD_TWICE);
    if (this.packed) return this.packed.hooks.unpack(this.packed.value);
    const t = this.data!;
    if (t._version !== this.savedVersion) {
      // Names the tensor's producer as it is now (an in-place op may have replaced it).
      const producer = this.output
        ? { name: this.output.node.name(), nr: this.output.outputNr }
        : this.viewAtSave
          ? { name: "AsStridedBackward0", nr: 0 }
          : t.grad_fn
            ? { name: t.grad_fn.name(), nr: t._output_nr }
            : null;
      const which = producer ? `, which is output ${producer.nr} of ${producer.name},` : "";
      throw new RuntimeError(
        `one of the variables needed for gradient computation has been modified by an inplace operation: ${tensorTypeName(this.meta)}${which} is at version ${t._version}; expected version ${this.savedVersion} instead. ${anomalyHint()}`,
      );
    }
    if (!this.output) return t._alias();
    // A saved output gets its grad_fn back on unpack, so double backward can differentiate through it.
    const u = t._alias();
    const fresh = t.detach();
    u.dispose();
    fresh._meta.grad_fn = this.output.node;
    fresh._meta.output_nr = this.output.outputNr;
    return fresh;
  }

  /** Frees the saved data (the engine does this right after the node runs, unless retain_graph). */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.data?.dispose();
    this.data = null;
    if (this.packed) {
      // A packed tensor is ours to drop (as Python would drop the packed object).
      const { value, hooks } = this.packed;
      if (hooks.release) hooks.release(value);
      else if (value && typeof (value as Tensor).dispose === "function" && (value as Tensor)._meta) (value as Tensor).dispose();
    }
    this.packed = null;
  }

  get isReleased(): boolean {
    return this.released;
  }
  get isPacked(): boolean {
    return this.packed !== null;
  }
  /** Bytes of device memory this saved variable keeps alive (0 once released or packed away). */
  get storageBytes(): number {
    return this.data && !this.data.disposed ? this.data.storage.nbytes : 0;
  }
  get storage(): Tensor["storage"] | null {
    return this.data?.storage ?? null;
  }
  /** PyTorch's `_raw_saved_x.register_hooks(pack, unpack)`: repack the saved tensor through the hooks. */
  register_hooks(pack: (t: Tensor) => unknown, unpack: (v: unknown) => Tensor): void {
    if (this.released) throw new RuntimeError(BACKWARD_TWICE);
    if (this.rawHooks || this.packed) throw new RuntimeError("SavedTensor hooks have already been set");
    const t = this.data!;
    this.rawHooks = { pack, unpack };
    this.packed = { value: owned(() => pack(t)), hooks: this.rawHooks };
    this.data = null;
    t.dispose();
  }
}

const runtimeDir = new URL("..", import.meta.url).pathname;
/**
 * A front end (the GradLab kernel) may register how a stack is shown to its user (cells and lines,
 * nothing of its own machinery) under this symbol: a function from the stack's frames to the frames to
 * show. Without one, Node's internal frames are dropped.
 */
const USER_STACK = Symbol.for("gradlab.userStack");
/** The forward call's stack without GradLab's own frames: what the user's code (cell and line) did.
 *  Captured at once (cheap), formatted when read: anomaly mode records one per node. */
function userStack(): () => string {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 64; // the runtime's own frames come first and are dropped
  const raw = new Error().stack ?? "";
  Error.stackTraceLimit = limit;
  let shown: string | null = null;
  return () => {
    if (shown === null) {
      const lines = raw
        .split("\n")
        .slice(1)
        .filter((l) => !l.includes(runtimeDir));
      const format = (globalThis as Record<symbol, unknown>)[USER_STACK];
      shown = typeof format === "function" ? String(format(lines.join("\n"))) : lines.filter((l) => !/\(node:|at node:/.test(l)).join("\n");
    }
    return shown;
  };
}

let anomalyEnabled = false;
export const setAnomaly = (on: boolean) => (anomalyEnabled = on);
export const isAnomalyEnabled = () => anomalyEnabled;
function anomalyHint(): string {
  return anomalyEnabled
    ? "Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable in question was changed in there or anywhere later. Good luck!"
    : "Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).";
}

export abstract class Node {
  readonly next_functions: Edge[];
  readonly metadata: Record<string, unknown> = {};
  protected readonly saved = new Map<string, SavedVariable>();
  readonly preHooks: PreHook[] = [];
  readonly postHooks: PostHook[] = [];
  /** Hooks registered through Tensor.register_hook on a non-leaf, keyed by its output number. */
  readonly tensorPreHooks = new Map<number, Array<(g: Tensor) => Tensor | void>>();
  private readonly seq: number;
  readonly address = `0x${(nextAddress++).toString(16)}`;
  /** Number of outputs of the forward op (inputs of this node's apply). */
  numOutputs = 1;
  /** Whether freeing this node may make user tensors unreachable (a custom Function's ctx, packed saves). */
  get mayHoldUserTensors(): boolean {
    for (const sv of this.saved.values()) if (sv.isPacked) return true;
    return false;
  }

  constructor(next: Edge[], sequenceNr?: number) {
    // Tuples, as in PyTorch, so they print as ((<AddBackward0 object at 0x…>, 0),)
    this.next_functions = tuple(next.map((e) => tuple(e)));
    for (const [n] of next) retainNode(n);
    this.seq = sequenceNr ?? nextSequenceNr++;
    if (anomalyEnabled) {
      const stack = userStack();
      Object.defineProperty(this.metadata, "traceback_", { get: stack, enumerable: true, configurable: true });
    }
  }

  abstract name(): string;
  /** Computes gradients for the forward inputs from gradients of the forward outputs. */
  abstract apply(gradOutputs: Grads): Grads;

  sequence_nr(): number {
    return this.seq;
  }

  register_hook(fn: PostHook): { remove(): void } {
    this.postHooks.push(fn);
    return { remove: () => void this.postHooks.splice(this.postHooks.indexOf(fn) >>> 0, 1) };
  }
  register_prehook(fn: PreHook): { remove(): void } {
    this.preHooks.push(fn);
    return { remove: () => void this.preHooks.splice(this.preHooks.indexOf(fn) >>> 0, 1) };
  }

  /**
   * Saves a tensor for backward under `name` (visible as `_saved_<name>` and `_raw_saved_<name>`);
   * `outputNr` says it is this node's own output number outputNr.
   */
  save(name: string, t: Tensor | null, outputNr?: number, version?: number): void {
    if (!t) {
      Object.defineProperty(this, `_saved_${name}`, { value: null, enumerable: false, configurable: true });
      return;
    }
    const sv = new SavedVariable(t, this, outputNr === undefined ? undefined : { node: this, outputNr }, version);
    this.saved.set(name, sv);
    Object.defineProperty(this, `_saved_${name}`, { get: () => sv.unpack(), enumerable: false, configurable: true });
    Object.defineProperty(this, `_raw_saved_${name}`, { value: sv, enumerable: false, configurable: true });
  }
  /** Records a non-tensor attribute (`_saved_dim`, `_saved_alpha`, ...). */
  saveValue(name: string, v: unknown): void {
    Object.defineProperty(this, `_saved_${name}`, { value: v, enumerable: false, configurable: true });
  }
  unpack(name: string): Tensor {
    const sv = this.saved.get(name);
    if (!sv) throw new RuntimeError(`internal: ${this.name()} has no saved tensor "${name}"`);
    return sv.unpack();
  }
  savedVariables(): ReadonlyMap<string, SavedVariable> {
    return this.saved;
  }
  /** release_saved_variables(): what the engine calls after apply unless retain_graph. */
  release_saved_variables(): void {
    for (const sv of this.saved.values()) sv.release();
  }
  /** Called when nothing refers to this node any more (its last grad_fn or edge went away). */
  freed(): void {}

  /** str(node): the Python class name, without the C++ namespace that name() keeps for hand-written nodes. */
  toString(): string {
    return `<${pyName(this.name())} object at ${this.address}>`;
  }
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
}

/**
 * The sink for a leaf's gradient: stores the first one, adds later ones (AccumulateGrad::apply). Like
 * PyTorch's, it holds its leaf strongly: a graph kept alive (a loss in a list) keeps the leaf and its
 * .grad alive too. It lives while graphs use it; the leaf's hooks live on the leaf.
 */
export class AccumulateGrad extends Node {
  readonly variable: Tensor;
  constructor(leaf: Tensor) {
    super([], UINT64_MAX);
    this.variable = owned(() => leaf._alias());
    this.variable._role = { kind: "accumulate_grad", description: "leaf kept alive by its AccumulateGrad node (a graph that uses it is alive)" };
    this.tensorPreHooks.set(0, leaf._meta.leafPreHooks);
  }
  override freed(): void {
    const meta = this.variable._meta;
    if (meta.accumulator === this) meta.accumulator = null;
    this.variable.dispose();
  }
  /** PyTorch's name() is the C++ one; the Python class (what str() shows) is AccumulateGrad. */
  name(): string {
    return "torch::autograd::AccumulateGrad";
  }
  apply([grad]: Grads): Grads {
    const v = this.variable;
    if (grad) v._accumulateGrad(grad);
    const hooks = v._meta.postAccumulateHooks;
    if (hooks.length > 0) for (const h of hooks.slice()) h(v); // a copy: a hook may remove itself
    return [];
  }
}

/** A node whose backward is a formula over saved tensors and values (most ops). */
export class FormulaNode extends Node {
  /** Plain values the formula needs that PyTorch does not show as `_saved_*` (shapes, flags). */
  consts: Readonly<Record<string, unknown>> = {};
  constructor(
    private readonly opName: string,
    next: Edge[],
    private readonly formula: (node: FormulaNode, grads: Grads) => Grads,
  ) {
    super(next);
  }
  name(): string {
    return this.opName;
  }
  apply(grads: Grads): Grads {
    return this.formula(this, grads);
  }
  /** Whether input i needs a gradient (PyTorch's should_compute_output). */
  needs(i: number): boolean {
    return this.next_functions[i]?.[0] != null;
  }
  /** A saved non-tensor value. */
  value<T>(name: string): T {
    return (this as unknown as Record<string, T>)[`_saved_${name}`];
  }
  /** The saved tensor `name` (checked and unpacked), or null when `name` was saved as a plain value. */
  savedTensor(name: string): Tensor | null {
    return this.saved.has(name) ? this.unpack(name) : null;
  }
}

declare module "./meta.ts" {
  interface GraphTypes {
    node: Node;
    accumulateGrad: AccumulateGrad;
  }
}
