// torch.nn: for now the functional namespace; modules come with the nn issue.
export * as functional from "./functional.ts";
