// Where this checkout is, whether the kernel runs from its TypeScript sources (under tsx) or from the
// bundle that kernel/cli/start.mjs builds (where esbuild defines __GRADLAB_REPO__).
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

declare const __GRADLAB_REPO__: string | undefined;

export const BUNDLED = typeof __GRADLAB_REPO__ !== "undefined";
export const REPO: string = BUNDLED ? __GRADLAB_REPO__! : resolve(dirname(fileURLToPath(import.meta.url)), "..");
