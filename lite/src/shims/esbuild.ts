// esbuild for the Worker: the same esbuild, compiled to WebAssembly (npm esbuild-wasm, the version of
// GradLab's own esbuild). In a browser it transforms only asynchronously, while the cell transform
// (kernel/executor/transform.ts) strips types synchronously: the Worker strips each cell first
// (prestrip, awaited) and transformSync hands back that result.
import * as wasm from "esbuild-wasm";
import { stripOptions } from "../../../kernel/executor/transform.ts";

export type { Message } from "esbuild-wasm";
type Result = { code: string; map: string };
const stripped = new Map<string, Result>();
const key = (source: string, file: string) => `${file}\u0000${source}`;

let ready: Promise<void> | null = null;
export function initialize(wasmURL: string): Promise<void> {
  ready ??= wasm.initialize({ wasmURL, worker: false });
  return ready;
}

/** Strips a cell's types ahead of transformCell; a syntax error is left for transformSync to throw. */
export async function prestrip(source: string, sourcefile: string): Promise<void> {
  await ready;
  stripped.clear(); // one cell at a time: whatever an earlier cell left (plain JavaScript) is stale
  try {
    stripped.set(key(source, sourcefile), await wasm.transform(source, stripOptions(sourcefile)));
  } catch (e) {
    stripped.set(key(source, sourcefile), { error: e } as never);
  }
}

export function transformSync(source: string, options: { sourcefile?: string }): Result {
  const k = key(source, options.sourcefile ?? "");
  const r = stripped.get(k) as (Result & { error?: unknown }) | undefined;
  stripped.delete(k);
  if (!r) throw new Error("internal: a cell reached transformSync without prestrip");
  if (r.error) throw r.error;
  return r;
}

/** The service never dies in a browser (transform.ts restarts Node's after a SIGINT). */
export const stop = (): void => {};

/** Transpiles a module of the course (check.ts) to JavaScript. */
export async function transpileModule(source: string, sourcefile: string): Promise<string> {
  await ready;
  return (await wasm.transform(source, { loader: "ts", format: "esm", target: "es2022", sourcefile })).code;
}
