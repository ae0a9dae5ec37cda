// Where GradLab's files are. The kernel runs as built JavaScript from <root>/dist/kernel/ (what the
// kernelspec starts; `npm run build` emits it); the test suites also import kernel modules from their
// TypeScript sources at <root>/kernel/. Paths are derived from this module's own location, so the
// same code works in a checkout and in an installed package (node_modules/gradlab).
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** True when this module runs from its TypeScript source (tests), false in the built kernel. */
export const FROM_SOURCE = import.meta.url.endsWith(".ts");
/** The package root: package.json, kernel.json, kernel/assets, node_modules in a checkout. */
export const REPO: string = resolve(dirname(fileURLToPath(import.meta.url)), FROM_SOURCE ? ".." : "../..");
/** The root of the code that is running: REPO itself (sources) or REPO/dist (built). */
const CODE_ROOT: string = FROM_SOURCE ? REPO : join(REPO, "dist");
/** The runtime preloaded as `torch` and its types for the language service: `src/index.ts` beside
 *  the kernel's sources, `dist/src/index.js` (+ `index.d.ts`) beside the built kernel. */
export const RUNTIME_MODULE: string = join(CODE_ROOT, "src", FROM_SOURCE ? "index.ts" : "index.js");
