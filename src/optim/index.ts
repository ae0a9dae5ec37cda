// torch.optim: SGD, Adam, AdamW over an Optimizer base with PyTorch's param_groups / state layout.
export { Optimizer, type ParamGroup, type OptimizerStateDict } from "./optimizer.ts";
export { SGD, type SGDOptions } from "./sgd.ts";
export { Adam, AdamW, type AdamOptions } from "./adam.ts";
