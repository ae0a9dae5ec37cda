// A `process` for the Worker, installed before anything else runs: the kernel's output capture writes
// through process.stdout / process.stderr as it does in Node (kernel/executor/output.ts patches these
// writers), and a few modules read process.env or process.cwd(). Nothing else of Node's is offered.
type Writer = { write: (chunk: unknown) => boolean };
const discard: Writer = { write: () => true };
const g = globalThis as { process?: unknown };
g.process ??= {
  env: {},
  platform: "browser",
  argv: [],
  version: "",
  versions: {},
  cwd: () => "/",
  stdout: { ...discard },
  stderr: { ...discard },
  emitWarning: (message: string, type = "Warning") => console.warn(`${type}: ${message}`),
  on: () => {},
};
