// torch.utils
export * as checkpoint from "./checkpoint.ts";
