// node:vm's runInThisContext for the Worker: the executor runs each transformed cell as a script in the
// global scope. An indirect eval is exactly that in a browser; `sourceURL` names the script so that
// stack frames read `gradlab-cell-N.js:line:col`, which kernel/executor/errors.ts maps back to the cell.
export function runInThisContext(code: string, opts: { filename?: string } = {}): unknown {
  // biome-ignore lint/security/noGlobalEval: running the user's cell is this function's whole job
  const indirectEval = eval;
  return indirectEval(opts.filename ? `${code}\n//# sourceURL=${opts.filename}` : code);
}
