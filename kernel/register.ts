// `node --import gradlab/register script.ts` (or `gradlab run script.ts`): a plain script's own modules let
// go of tensors where a notebook cell does. Without it, only V8's collector learns that a tensor is no longer
// referenced, so every allocation that would set a new peak pays a full collection (src/memory/lifetime.ts):
// a chain `y = y.add(1)` ran one per op (issue 20). With it, each module the script loads (not the runtime,
// not node_modules) goes through the cell transform's passes (kernel/executor/transform.ts's
// transformModule): statement temporaries die with their statement, a variable that lets go of the only
// handle to a tensor releases it, and what the script keeps (a gradient, an activation a forward stores)
// stays usable. TypeScript files are compiled on the way (module-hooks.ts, with their tsconfig.json).
import { register } from "node:module";
import { pathToFileURL } from "node:url";
import { FROM_SOURCE, REPO, RUNTIME_MODULE } from "./repo.ts";
import { bindOwnership, ownershipUntilLoaded } from "./executor/ownership.ts";
import { RT } from "./executor/transform.ts";

const g = globalThis as Record<string, unknown>;
// (already set where this process runs cells too: test/helpers/cells.ts, bench/lifecycle.ts)
g[RT] ??= ownershipUntilLoaded();
// the module `import "gradlab"` gives the script (module-hooks.ts's resolve)
const runtime = pathToFileURL(RUNTIME_MODULE).href;
bindOwnership(g[RT] as Parameters<typeof bindOwnership>[0], await import(runtime));
// a stack trace names the lines of the TypeScript file, not of what its types were stripped to
process.setSourceMapsEnabled(true);
register(new URL(`./executor/module-hooks.${FROM_SOURCE ? "ts" : "js"}`, import.meta.url), { data: { root: REPO, runtime } });
