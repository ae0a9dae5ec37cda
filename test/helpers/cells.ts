// Runs TypeScript the way the GradLab kernel runs a notebook cell (kernel/executor/transform.ts: top-level
// declarations become globals, each statement's temporaries get their own frame, top-level await), in
// this process and without sockets: for tests of code written as a student writes it in a cell.
import { runInThisContext } from "node:vm";
import { IRQ, RT, transformCell } from "../../kernel/executor/transform.ts";
import { bindOwnership, ownershipUntilLoaded } from "../../kernel/executor/ownership.ts";
import * as torch from "../../src/index.ts";

const g = globalThis as Record<string, unknown>;
g[IRQ] = new Int32Array(new SharedArrayBuffer(4));
g[RT] = {
  import: (spec: string) => import(spec),
  defaultExport: (m: { default?: unknown }) => (m && "default" in m ? m.default : m),
  namedExport: (m: Record<string, unknown>, name: string) => m[name],
  interrupted: () => {},
  ...ownershipUntilLoaded(),
};

let n = 0;
/** Runs one cell with `globals` defined (torch, print, ...); returns the cell's value. */
export async function runCell(source: string, globals: Record<string, unknown> = {}): Promise<unknown> {
  Object.assign(g, globals);
  bindOwnership(g[RT] as Parameters<typeof bindOwnership>[0], torch);
  const t = transformCell(source, `cell${++n}.ts`);
  for (const name of t.names) if (!(name in g)) g[name] = undefined;
  return await (runInThisContext(t.code, { filename: `cell${n}.js` }) as Promise<unknown>);
}
