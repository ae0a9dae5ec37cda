// What a block of device memory is for, as PyTorch's memory visualizer colours it: parameters,
// gradients, activations (tensors autograd saved), autograd temporaries (made during backward),
// optimizer state, other. A storage takes the category in force when it is allocated; the runtime
// re-tags it when its role becomes known (a tensor becomes a Parameter, a .grad, a saved activation).

import type { Storage } from "./storage.ts";
import { retag } from "./history.ts";
import { context } from "./context.ts";

export type Category = "parameter" | "gradient" | "activation" | "autograd_temporary" | "optimizer_state" | "other";

const category = context<Category>("other");

export const currentCategory = category.get;
/** Runs fn with allocations tagged `category` (nestable). */
export const withCategory = <T>(c: Category, fn: () => T): T => category.with(c, fn);

/** Re-tags memory whose role is now known; a parameter stays a parameter. */
export function setCategory(storage: Storage, category: Category): void {
  if (storage.category === "parameter") return;
  storage.category = category;
  retag(storage, { category });
}
