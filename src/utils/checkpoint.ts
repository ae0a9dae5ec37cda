// torch.utils.checkpoint: activation checkpointing, non-reentrant (use_reentrant: false), built as
// PyTorch's is on saved-tensor hooks. In the forward pass, tensors that autograd would save are dropped
// (a small holder is saved instead); the block's inputs stay. The first time backward unpacks one of
// them, the block's forward runs again (with the RNG state it had, so dropout draws the same mask) and
// the recomputed tensors are handed over one by one, each freed once its node has used it.
//
// Selective checkpointing: a policy decides, per saved tensor, by the op that produced it, whether to
// keep it (MUST_SAVE / PREFER_SAVE) or recompute it (MUST_RECOMPUTE / PREFER_RECOMPUTE), e.g. keep
// matmul outputs, recompute GELU / LayerNorm / softmax / dropout. GradLab still re-runs the whole block
// on recompute (PyTorch's SAC also skips recomputing the saved ops), so it saves memory, not time.

import { RuntimeError, ValueError } from "../errors.ts";
import { Tensor } from "../tensor.ts";
import { get_rng_state, set_rng_state } from "../ops/creation.ts";
import { owned, scope } from "../memory/lifetime.ts";
import { enable_grad } from "../autograd/grad-mode.ts";
import { saved_tensors_hooks } from "../autograd/saved-hooks.ts";
import { pyName } from "../autograd/names.ts";

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
export type PolicyFn = (ctx: PolicyCtx, op: string) => CheckpointPolicy;

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

/** A policy function, or the list of ops whose outputs to save (everything else is recomputed). */
export function create_selective_checkpoint_contexts(policy: PolicyFn | string[]): SelectiveContexts {
  if (Array.isArray(policy)) {
    const save = new Set(policy);
    return { policy: (_ctx, op) => (save.has(op) ? CheckpointPolicy.MUST_SAVE : CheckpointPolicy.PREFER_RECOMPUTE) };
  }
  if (typeof policy !== "function") throw new ValueError("create_selective_checkpoint_contexts expects a policy function or a list of ops");
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
  kept: Tensor | null;
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
  const dropped = new Set<number>();
  let count = 0;
  let live = 0;
  let done = false;

  const releaseFrame = () => {
    for (const a of args) if (a instanceof Tensor) a.dispose();
    for (const t of recomputed.values()) t.dispose();
    recomputed.clear();
  };

  const recompute = () => {
    const after = get_rng_state();
    if (rng) set_rng_state(rng);
    let i = 0;
    try {
      enable_grad(() =>
        saved_tensors_hooks(
          (t) => {
            const k = i++;
            if (dropped.has(k))
              recomputed.set(
                k,
                owned(() => t._alias()),
              );
            return k;
          },
          () => {
            throw new RuntimeError("internal: the recomputed graph is not differentiated");
          },
          () => scope(() => void fn(...(args as never[]))),
        ),
      );
    } finally {
      set_rng_state(after);
    }
    done = true;
  };

  const pack = (t: Tensor): Holder => {
    const idx = count++;
    live++;
    const producer = t.grad_fn ? opOfNode(t.grad_fn.name()) : null;
    const decision = policy && producer ? policy({ is_recompute: false }, producer) : null;
    const keep = decision === CheckpointPolicy.MUST_SAVE || decision === CheckpointPolicy.PREFER_SAVE;
    if (keep) return { idx, kept: t._alias() };
    dropped.add(idx);
    return { idx, kept: null };
  };
  const unpack = (v: unknown): Tensor => {
    const h = v as Holder;
    if (h.kept) return h.kept._alias();
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
  const release = (v: unknown) => {
    (v as Holder).kept?.dispose();
    if (--live === 0) releaseFrame();
  };

  const out = saved_tensors_hooks(pack, unpack, () => fn(...(inputs as never[])), release) as T;
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
      if (y !== x) y.dispose();
      y = next;
    }
    return y;
  };
  let x = input;
  let start = 0;
  for (; start + size < fns.length; start += size) {
    const y = checkpoint(runSegment(start, start + size), x, opts);
    if (x !== input) x.dispose();
    x = y;
  }
  const out = runSegment(start, fns.length)(x);
  if (x !== input && x !== out) x.dispose();
  return out;
}
