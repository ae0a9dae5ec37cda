// What cells show (issue 12, kernel items): a promise that was not awaited prints as Node prints it,
// with a hint to await, never the kernel's message context; anomaly-mode tracebacks show the user's
// cells only.
import { afterAll, beforeAll, expect, test } from "vitest";
import { installedKernel, drive, type Env } from "./helpers.ts";

let e: Env;
let r: any;
beforeAll(async () => {
  e = await installedKernel();
  r = await drive(e, "promises_anomaly", { GRADLAB_RUNTIME: "" }); // the real runtime
}, 180_000);
afterAll(() => e?.cleanup());

const strip = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, "");

test("console.log of a pending promise prints what Node prints, with a one-line hint to await, once per cell", () => {
  expect(r.console.stdout).toBe("Promise { <pending> }\nPromise { <pending> }\nPromise { 'x' }\n");
  expect(r.console.stderr.trim().split("\n")).toHaveLength(1);
  expect(r.console.stderr).toMatch(/write `await` before the expression/);
  expect(r.not_a_promise_stderr).toBe("");
});

test("promises inside a value print without async bookkeeping or the kernel's message context; a last expression is awaited", () => {
  expect(r.nested).toBe("[ Promise { 42 }, Promise { <pending> } ]");
  expect(r.awaited_last).toBe("7");
});

test("an anomaly-mode traceback names the cell's lines and nothing of the kernel or the machine", () => {
  expect(r.anomaly.status).toBe("error");
  const text = strip(`${r.anomaly.evalue}\n${r.anomaly.traceback}`);
  expect(text).toMatch(/Traceback of forward call that caused the error/);
  expect(text).toMatch(/Cell \[\d+\]:3:\d+/); // a.sigmoid(), the forward call
  expect(text).not.toMatch(/\/kernel\/|node:internal|node_modules|gradlab-cell-|\(\//);
  expect(text).not.toContain(process.cwd());
});

test("what a student prints of anomaly mode (grad_fn.metadata.traceback_, a caught error's forward_traceback and message) shows cells and lines only", () => {
  const text = strip(r.anomaly_printed);
  // the node's traceback: the function of the earlier cell, then this cell's line 2, each once
  const [traceback] = text.split("Error detected in");
  // columns: the call of `sigmoid` in `  const s: torch.Tensor = t.sigmoid()`, of `squash` in `const y = squash(x)`
  expect(traceback.replace(/\s+$/, "").split("\n")).toEqual([
    expect.stringMatching(/^ {4}at squash \(Cell \[\d+\]:2:29\)$/),
    expect.stringMatching(/^ {4}at Cell \[\d+\]:2:11$/),
  ]);
  // the forward traceback travels beside the error (torch prints it as a warning above it); the
  // message itself is torch's own text
  expect(text).toMatch(
    /Error detected in SigmoidBackward0\. Traceback of forward call that caused the error:\n {4}at squash \(Cell \[\d+\]:2:29\)\n {4}at Cell \[\d+\]:2:11\n+one of the variables needed for gradient computation has been modified by an inplace operation: \[torch\.FloatTensor \[3\]\], which is output 0 of SigmoidBackward0, is at version 1; expected version 0 instead\. Hint: the backtrace further above shows the operation that failed to compute its gradient\. The variable in question was changed in there or anywhere later\. Good luck!\n$/,
  );
  expect(text).not.toMatch(/node:|\/kernel\/|\/dist\/|file:|gradlab-cell-/);
});
