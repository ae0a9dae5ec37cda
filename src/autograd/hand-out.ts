// Gradients the engine hands to user code (a hook, a custom Function's backward) and tensors that code
// hands back. In PyTorch such code may keep what it is given (`grads.append(g)`) and what it returns,
// while the engine disposes its own handles as soon as it has used them: so each side gets handles of
// its own, on the same storage. What user code was given is settled once it returned
// (memory/ownership.ts's settleHandedOut), or collected.

import { owned } from "../memory/lifetime.ts";
import { Tensor } from "../tensor.ts";
import type { Grads } from "./node.ts";

/** Handles of their own for user code, which may keep them (no scope collects them). */
export const handOut = (gs: Grads): Grads => owned(() => gs.map((g) => (g ? g._alias() : null)));

/** The engine's own handles for the tensors user code handed back (it may hold them too); others are null. */
export const adopt = (gs: readonly unknown[]): Grads => owned(() => gs.map((t) => (t instanceof Tensor ? t._alias() : null)));
