// torch.nn: Module and Parameter, the layers and losses, init and functional.
export * as functional from "./functional.ts";
export * as init from "./init.ts";
export { Module, type RemovableHandle, type ForwardHook, type ForwardPreHook } from "./module.ts";
export { Parameter } from "./parameter.ts";
export { Linear, Identity } from "./modules/linear.ts";
export { ReLU, GELU, Tanh, Sigmoid, Softmax } from "./modules/activation.ts";
export { LayerNorm } from "./modules/normalization.ts";
export { Dropout } from "./modules/dropout.ts";
export { Sequential, ModuleList } from "./modules/container.ts";
export { Embedding } from "./modules/sparse.ts";
export { MSELoss, CrossEntropyLoss, NLLLoss } from "./modules/loss.ts";
