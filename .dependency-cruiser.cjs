// Layering rules (npm run lint:deps; issue #13). The runtime's layers, bottom up: memory < device < ops
// < autograd < nn < viz, with the kernel on top and never imported by the runtime. The kernel's: wire <
// sockets < session < handlers < kernel.ts, which only the CLI starts. Type-only imports are told apart
// (tsPreCompilationDeps) so that an import cycle is allowed only as the type-only tensor <-> autograd/meta
// pair; every layer rule counts type-only imports too.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-runtime-cycle",
      severity: "error",
      comment: "An import cycle that survives compilation: modules in it run in an order that depends on who is imported first.",
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ["type-only"] } },
    },
    {
      name: "no-cycle-but-tensor-meta",
      severity: "error",
      comment: "The only cycle allowed is the type-only pair src/tensor.ts <-> src/autograd/meta.ts (a tensor's grad_fn and a node's saved tensors).",
      from: {},
      to: { circular: true, via: { pathNot: "^src/(tensor|autograd/meta)\\.ts$" } },
    },
    {
      name: "src-not-kernel",
      severity: "error",
      comment: "The runtime is a library of its own (import * as torch from 'gradlab'); the kernel is built on it, never the reverse.",
      from: { path: "^src/" },
      to: { path: "^kernel/" },
    },
    {
      name: "node-only-in-platform",
      severity: "error",
      comment:
        "The runtime also runs in a browser Worker (GradLab Lite): Node's modules are reached only through src/platform/node.ts, which the browser bundle swaps for src/platform/browser.ts.",
      from: { path: "^src/", pathNot: "^src/platform/node\\.ts$" },
      to: { dependencyTypes: ["core"] },
    },
    {
      name: "memory-below-device",
      severity: "error",
      comment: "The allocator sits below the device (device implements memory's backing interface) and knows nothing of autograd.",
      from: { path: "^src/memory/" },
      to: { path: "^src/(device|autograd)/" },
    },
    {
      name: "ops-below-autograd",
      severity: "error",
      comment: "Ops compute; autograd records them. Ops never reach up into the graph.",
      from: { path: "^src/ops/" },
      to: { path: "^src/autograd/" },
    },
    {
      name: "autograd-below-nn-viz",
      severity: "error",
      comment: "Autograd is below nn (layer_norm/dropout kernels live in ops) and below viz (viz registers its displays).",
      from: { path: "^src/autograd/" },
      to: { path: "^src/(nn|viz)/" },
    },
    {
      name: "widgets-stand-alone",
      comment: "torch.widgets speaks the widget protocol and knows nothing of tensors: viz builds on it, never the reverse.",
      severity: "error",
      from: { path: "^src/widgets/" },
      to: { path: "^src/", pathNot: "^src/widgets/" },
    },
    {
      name: "kernel-loads-runtime-by-path",
      severity: "error",
      comment:
        "The kernel imports the runtime at run time from one path (kernel/executor/modules.ts), so cells and the kernel share one instance; a static import would load a second copy.",
      from: { path: "^kernel/" },
      to: { path: "^src/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "wire-is-the-bottom",
      severity: "error",
      comment: "Message framing and signing know no sockets, session, handlers or kernel.",
      from: { path: "^kernel/wire/" },
      to: { path: "^kernel/(sockets|handlers|executor|display|language|session\\.ts|kernel\\.ts)" },
    },
    {
      name: "sockets-below-session",
      severity: "error",
      comment: "The socket server moves frames; it knows no session, handlers or kernel.",
      from: { path: "^kernel/sockets/" },
      to: { path: "^kernel/(handlers|display|language|session\\.ts|kernel\\.ts)" },
    },
    {
      name: "session-below-handlers",
      severity: "error",
      comment: "The session replies and publishes for whoever handles a request.",
      from: { path: "^kernel/session\\.ts$" },
      to: { path: "^kernel/(handlers|executor|display|language|kernel\\.ts)" },
    },
    {
      name: "only-the-cli-starts-the-kernel",
      severity: "error",
      comment: "Handlers, displays and the language client depend on HandlerContext, never on the Kernel class.",
      from: { pathNot: "^kernel/cli/main\\.ts$" },
      to: { path: "^kernel/kernel\\.ts$" },
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      comment: "An import that resolves to nothing.",
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(dist|node_modules)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default", "types"] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
