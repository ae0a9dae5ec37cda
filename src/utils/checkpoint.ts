// torch.utils.checkpoint: activation checkpointing, non-reentrant (use_reentrant: false), built as
// PyTorch's is on saved-tensor hooks. In the forward pass, tensors that autograd would save are dropped
// (a small holder is saved instead); the block's inputs stay. The first time backward unpacks one of
// them, the block's forward runs again (with the RNG state it had, so dropout draws the same mask) and
// the recomputed tensors are handed over one by one, each freed once its node has used it.
//
// Selective checkpointing (create_selective_checkpoint_contexts) follows PyTorch's caching dispatch
// mode: a policy is asked about every op the block runs (by its aten name: "addmm", "gelu", "t", ...)
// and for MUST_SAVE / PREFER_SAVE keeps *every output* of that op until backward, whether or not
// autograd saves it (PyTorch's CheckpointPolicy: such a policy saves tensors "not limited to ones that
// are actually needed for gradient computation"). Saved tensors are dropped and recomputed as in full
// checkpointing. PyTorch's recompute takes a kept op's output from the cache instead of running the
// op; GradLab re-runs the whole block and releases each cached output as the recompute reaches its op,
// so it saves the same memory after forward, not the time. The ops a policy sees are those that record
// an autograd node (GradLab has no dispatcher below autograd): the outputs of ops on tensors that need
// no gradient are not offered to the policy.

import { RuntimeError, TypeError_, ValueError } from "../errors.ts";
import { Tensor } from "../tensor.ts";
import { get_rng_state, set_rng_state } from "../ops/creation.ts";
import { callScope, owned, userCode } from "../memory/lifetime.ts";
import { dropIntermediate, takenAway } from "../memory/ownership.ts";
import { enable_grad } from "../autograd/grad-mode.ts";
import { saved_tensors_hooks } from "../autograd/saved-hooks.ts";
import { pyName } from "../autograd/names.ts";
import { watchRecords } from "../autograd/record.ts";
import { OP_TABLE } from "../api/install.ts";

export const CheckpointPolicy = {
  MUST_SAVE: "MUST_SAVE",
  PREFER_SAVE: "PREFER_SAVE",
  MUST_RECOMPUTE: "MUST_RECOMPUTE",
  PREFER_RECOMPUTE: "PREFER_RECOMPUTE",
} as const;
export type CheckpointPolicy = (typeof CheckpointPolicy)[keyof typeof CheckpointPolicy];

/** What the policy is asked about: the op that produced a tensor autograd wants to save. */
export interface PolicyCtx {
  is_recompute: boolean;
}
export type PolicyFn = (ctx: PolicyCtx, op: string) => CheckpointPolicy | boolean;

export interface SelectiveContexts {
  policy: PolicyFn;
}

/** The op behind a node name, as a policy sees it: AddmmBackward0 -> "addmm", NativeLayerNormBackward0 -> "native_layer_norm". */
export function opOfNode(nodeName: string): string {
  return pyName(nodeName)
    .replace(/Backward\d*$/, "")
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase();
}

/** Ops recorded outside the op table (nn functional kernels), by their node names' op. */
const NN_OPS = [
  "native_layer_norm",
  "native_dropout",
  "embedding",
  "nll_loss",
  "mse_loss",
  "as_strided",
  // ops that backward formulas record under create_graph (double backward), as ATen's are
  "threshold_backward",
  "sigmoid_backward",
  "tanh_backward",
  "gelu_backward",
  "softmax_backward_data",
  "log_softmax_backward_data",
  "native_layer_norm_backward",
  "embedding_dense_backward",
  "nll_loss_backward",
  "mse_loss_backward",
  "slice_backward",
  "select_backward",
  "masked_fill",
  "scatter",
  "sgn",
  "reciprocal",
];
let known: Set<string> | null = null;
/** The ops a selective checkpoint policy can name: every op that records an autograd node. */
export function policyOps(): ReadonlySet<string> {
  if (!known) {
    known = new Set(NN_OPS);
    for (const def of OP_TABLE.values()) if (Array.isArray(def.grad)) for (const g of def.grad) known.add(opOfNode(g));
  }
  return known;
}

const POLICIES = new Set<unknown>(Object.values(CheckpointPolicy));
/** A policy's answer: a CheckpointPolicy, or a boolean (PyTorch's older form: true = MUST_SAVE). */
function normalize(answer: unknown): CheckpointPolicy {
  if (typeof answer === "boolean") return answer ? CheckpointPolicy.MUST_SAVE : CheckpointPolicy.PREFER_RECOMPUTE;
  if (!POLICIES.has(answer)) throw new TypeError_(`selective checkpoint policy must return CheckpointPolicy, got ${String(answer)}`);
  return answer as CheckpointPolicy;
}
const saves = (p: CheckpointPolicy) => p === CheckpointPolicy.MUST_SAVE || p === CheckpointPolicy.PREFER_SAVE;

/**
 * A policy function, or the list of ops whose outputs to keep (MUST_SAVE; every other op
 * PREFER_RECOMPUTE). A name in the list that is no op raises, as `torch.ops.aten.addm` does.
 */
export function create_selective_checkpoint_contexts(policy: PolicyFn | string[]): SelectiveContexts {
  if (Array.isArray(policy)) {
    for (const op of policy) {
      if (typeof op !== "string") throw new ValueError(`Expected op in \`op_list\` to be an op name but got: ${String(op)} of type ${typeof op}.`);
      if (!policyOps().has(op)) {
        throw new ValueError(
          `create_selective_checkpoint_contexts: no op named "${op}" (in PyTorch, torch.ops.aten has no attribute '${op}'). Ops a policy can name: ${[...policyOps()].sort().join(", ")}`,
        );
      }
    }
    const save = new Set(policy);
    return { policy: (_ctx, op) => (save.has(op) ? CheckpointPolicy.MUST_SAVE : CheckpointPolicy.PREFER_RECOMPUTE) };
  }
  if (typeof policy !== "function") throw new TypeError_("policy_fn_or_list must be either a function or a list of ops.");
  return { policy };
}

export interface CheckpointOptions {
  use_reentrant?: boolean;
  preserve_rng_state?: boolean;
  context_fn?: () => SelectiveContexts;
}

const OPTION_KEYS = ["use_reentrant", "preserve_rng_state", "context_fn"];
function splitArgs(args: unknown[]): { inputs: unknown[]; opts: CheckpointOptions } {
  const last = args[args.length - 1];
  if (last && typeof last === "object" && !(last instanceof Tensor) && !Array.isArray(last) && Object.keys(last).some((k) => OPTION_KEYS.includes(k))) {
    return { inputs: args.slice(0, -1), opts: last as CheckpointOptions };
  }
  return { inputs: args, opts: {} };
}

interface Holder {
  idx: number;
}

/** checkpoint(fn, ...args, {use_reentrant: false, preserve_rng_state, context_fn}). */
export function checkpoint<T>(fn: (...a: never[]) => T, ...rest: unknown[]): T {
  const { inputs, opts } = splitArgs(rest);
  if (opts.use_reentrant) {
    throw new RuntimeError("GradLab implements the non-reentrant checkpoint only; pass {use_reentrant: false} (PyTorch's recommended default)");
  }
  const policy = opts.context_fn?.().policy ?? null;
  const rng = opts.preserve_rng_state === false ? null : get_rng_state();
  // The block's inputs are kept (as PyTorch's checkpoint keeps them) until every holder is released.
  const args = owned(() => inputs.map((a) => (a instanceof Tensor ? a._alias() : a)));
  const recomputed = new Map<number, Tensor>();
  // Selective: the outputs of the ops the policy keeps, per op in the order they ran (PyTorch's storage).
  const cache = new Map<string, Tensor[][]>();
  let count = 0;
  let live = 0;
  let done = false;

  const releaseCache = () => {
    for (const entries of cache.values()) for (const outs of entries) for (const t of outs) t.dispose();
    cache.clear();
  };
  const releaseFrame = () => {
    for (const a of args) if (a instanceof Tensor) a.dispose();
    for (const t of recomputed.values()) t.dispose();
    recomputed.clear();
    releaseCache();
  };

  // The policy is asked about each op as it records its node; a kept op's outputs go to the cache in
  // the forward pass and leave it when the recompute reaches the same op.
  const watch = (is_recompute: boolean) => (nodeName: string, outputs: Tensor[]) => {
    const op = opOfNode(nodeName);
    if (!saves(normalize(policy!({ is_recompute }, op)))) return;
    if (!is_recompute) {
      const kept = owned(() => outputs.map((o) => o.detach())); // detached, as PyTorch caches them: no grad_fn, so no cycle through the graph
      const entries = cache.get(op);
      if (entries) entries.push(kept);
      else cache.set(op, [kept]);
      return;
    }
    const entry = cache.get(op)?.shift();
    if (!entry) throw new RuntimeError(`${op} encountered during backward, but not found in storage`);
    for (const t of entry) t.dispose();
  };
  const selectively = <R>(is_recompute: boolean, run: () => R): R => (policy ? watchRecords(watch(is_recompute), run) : run());

  const recompute = () => {
    const after = get_rng_state();
    if (rng) set_rng_state(rng);
    let i = 0;
    try {
      enable_grad(() =>
        saved_tensors_hooks(
          (t) => {
            const k = i++;
            recomputed.set(
              k,
              owned(() => t._alias()),
            );
            return k;
          },
          () => {
            throw new RuntimeError("internal: the recomputed graph is not differentiated");
          },
          // The block's forward is user code again: its intermediates die once consumed, as in the forward pass.
          () => selectively(true, () => callScope(() => void userCode(() => fn(...(args as never[]))), takenAway)),
        ),
      );
    } finally {
      set_rng_state(after);
    }
    releaseCache(); // what the recompute did not reach (an op that ran only in the forward pass)
    done = true;
  };

  const pack = (_t: Tensor): Holder => {
    live++;
    return { idx: count++ };
  };
  const unpack = (v: unknown): Tensor => {
    const h = v as Holder;
    if (!recomputed.has(h.idx)) {
      if (done) {
        throw new RuntimeError(
          "torch.utils.checkpoint: Unpack is being triggered for a tensor that was already unpacked once. If you are calling ctx.saved_tensors in backward, make sure to do so only once. Otherwise please open an issue with details on your use case.",
        );
      }
      recompute();
    }
    const t = recomputed.get(h.idx)!;
    recomputed.delete(h.idx);
    // Hand over a handle made in the caller's scope (so it dies with the node's formula), drop ours.
    const mine = t._alias();
    t.dispose();
    return mine;
  };
  const release = () => {
    if (--live === 0) releaseFrame();
  };

  const out = saved_tensors_hooks(pack, unpack, () => selectively(false, () => fn(...(inputs as never[]))), release) as T;
  if (live === 0) releaseFrame(); // nothing was saved (no grad needed): nothing to recompute later
  return out;
}

/** Runs a sequence of modules / functions in `segments` checkpointed chunks (the last chunk is not checkpointed). */
export function checkpoint_sequential(functions: Iterable<(x: Tensor) => Tensor>, segments: number, input: Tensor, opts: CheckpointOptions = {}): Tensor {
  const fns = [...functions];
  if (segments < 1) throw new ValueError("segments must be at least 1");
  const size = Math.ceil(fns.length / segments);
  const runSegment = (from: number, to: number) => (x: Tensor) => {
    let y = x;
    for (let i = from; i < to; i++) {
      const next = fns[i](y);
      if (y !== x) dropIntermediate(y);
      y = next;
    }
    return y;
  };
  let x = input;
  let start = 0;
  for (; start + size < fns.length; start += size) {
    const y = checkpoint(runSegment(start, start + size), x, opts);
    if (x !== input) dropIntermediate(x);
    x = y;
  }
  const out = runSegment(start, fns.length)(x);
  if (x !== input && x !== out) dropIntermediate(x);
  return out;
}
