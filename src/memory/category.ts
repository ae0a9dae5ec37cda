// What a block of device memory is for, as PyTorch's memory visualizer colours it: parameters,
// gradients, activations (tensors autograd saved), autograd temporaries (made during backward),
// optimizer state, other. A storage takes the category in force when it is allocated; the runtime
// re-tags it when its role becomes known (a tensor becomes a Parameter, a .grad, a saved activation).

import { context } from "./context.ts";

export type Category = "parameter" | "gradient" | "activation" | "autograd_temporary" | "optimizer_state" | "other";

const category = context<Category>("other");

export const currentCategory = category.get;
/** Runs fn with allocations tagged `category` (nestable). */
export const withCategory = <T>(c: Category, fn: () => T): T => category.with(c, fn);
