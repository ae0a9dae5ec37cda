// The kernel driven by Debian's jupyter_client over real sockets (scenarios in drive.py).
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { installedKernel, drive, run, PYTHON, REPO, type Env } from "./helpers.ts";

let e: Env;
beforeAll(async () => {
  e = await installedKernel();
});
afterAll(() => e?.cleanup());

const strip = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, "");

describe("cells", () => {
  let r: any;
  beforeAll(async () => {
    r = await drive(e, "cells");
  }, 90_000);

  test("top-level declarations persist, may be redeclared, top-level await and imports work", () => {
    expect(r.persist).toBe("[ 1, 2, 4, 7 ]");
    expect(r.redeclare).toBe("'redeclared'");
    expect(r.tla).toBe("10");
    expect(r.gc).toBe("'function'"); // Node started with --expose-gc, for torch.gc()
    // and with --harmony-weak-refs-with-cleanup-some, for synchronous reclamation of dropped handles
    expect(r.cleanup_some).toBe("'function'");
    expect(r.import).toBe("'y.tsfunction'");
  });

  test("runtime errors point at the cell line through the source map", () => {
    expect(r.error_reply).toEqual({ status: "error", ename: "TypeError", evalue: "Cannot read properties of undefined (reading 'boom')" });
    const tb = strip(r.error_traceback);
    expect(tb).toMatch(/Cell \[\d+\], line 4:/);
    expect(tb).toMatch(/--> 4\s+return \(undefined as any\)\.boom/);
    expect(tb).toMatch(/at bad \(Cell \[\d+\]:4:\d+\)/);
    expect(tb).not.toMatch(/kernel\/|node:internal|node:vm/);
  });

  test("syntax errors name the line", () => {
    expect(r.syntax_error.status).toBe("error");
    expect(r.syntax_error.ename).toBe("SyntaxError");
    expect(strip(r.syntax_error.traceback)).toMatch(/--> 2\s+const = 2/);
  });

  test("console and process.stdout are captured in order, then the result", () => {
    expect(r.streams).toEqual([
      ["stdout", "out\n"],
      ["stderr", "err\n"],
      ["stdout", "raw\n"],
    ]);
    expect(r.mixed_result).toBe("3");
  });

  test("silent execution publishes nothing but status and does not count", () => {
    expect(r.silent.types).toEqual(["status"]);
  });

  test("user_expressions are evaluated after the cell", () => {
    expect(r.user_expressions.sum).toEqual({ status: "ok", data: { "text/plain": "42" }, metadata: {} });
    expect(r.user_expressions.bad.status).toBe("error");
    expect(r.user_expressions.bad.ename).toBe("ReferenceError");
  });

  test("display with display_id updates, clear_output(wait)", () => {
    expect(r.display.map((d: any) => d.type)).toEqual(["display_data", "update_display_data", "clear_output", "display_data"]);
    expect(r.display[0].content.transient).toEqual({ display_id: "progress" });
    expect(r.display[1].content).toMatchObject({ data: { "text/plain": "{ step: 2 }" }, transient: { display_id: "progress" } });
    expect(r.display[2].content).toEqual({ wait: true });
    expect(r.display[3].content.data["text/html"]).toBe("<p>x</p>");
  });

  test("10,000 printed lines arrive whole, coalesced, followed by idle", () => {
    expect(r.bulk.lines).toBe(10000);
    expect(r.bulk.first).toBe("line 0");
    expect(r.bulk.last).toBe("line 9999");
    expect(r.bulk.messages).toBeLessThanOrEqual(20);
    expect(r.bulk.idle_last).toBe(true);
  });

  test("late output from a timer is attributed to the cell that started it", () => {
    expect(r.late).toEqual([{ parent: "cell1", text: "late from cell 1\n" }]);
  });

  test("errors thrown by timers, unhandled rejections and process.exit() leave the kernel alive", () => {
    expect(r.exit.status).toBe("error");
    expect(r.exit.evalue).toMatch(/^process\.exit\(3\) would end the kernel/);
    expect(r.async_errors_alive).toBe("'still alive'");
    const text = strip(r.async_errors);
    expect(text).toContain("Uncaught: TypeError: async boom");
    expect(text).toContain("Unhandled promise rejection: Error: nobody awaits me");
  });

  test("the runtime is preloaded as torch and renders through Symbol.for('Jupyter.display')", () => {
    expect(r.display_protocol).toHaveLength(1);
    expect(r.display_protocol[0].data).toEqual({ "text/plain": "tensor([1, 2, 3])", "text/html": "<code>tensor(3)</code>" });
  });
});

test("completion and inspection merge the TypeScript language service with live values; type errors only warn", async () => {
  // generous wait for the type checker on a loaded CI machine (the default is 500 ms)
  const r = await drive(e, "language", { GRADLAB_TYPECHECK_WAIT_MS: "10000" });
  expect(r.complete_types.matches).toContain("toFixed");
  expect(r.complete_types.cursor_start).toBe(7);
  expect(r.complete_types.cursor_end).toBe(12);
  expect(r.complete_live).toContain("dynamicProp");
  expect(r.inspect.found).toBe(true);
  const text = r.inspect.data["text/plain"];
  expect(text).toContain("function dbl(x: number): number");
  expect(text).toContain("Doubles a number.");
  // inside a call's parentheses, the callee is described (with its TSDoc), as IPython does
  const callee = r.inspect_callee.data["text/plain"];
  expect(callee).toContain("function dbl(x: number): number");
  expect(callee).toContain("Doubles a number.");
  expect(r.typed.status).toBe("ok");
  expect(r.typed.result).toBe("'not a number'");
  expect(strip(r.typed.stderr)).toMatch(/warning TS2322 \(Cell \[\d+\], line 1:7\): Type 'string' is not assignable to type 'number'/);
}, 90_000);

test("cells import TypeScript files beside the notebook, ESM-only and CommonJS packages, and gradlab", async () => {
  const dir = join(e.dir, "nbdir");
  mkdirSync(join(dir, "node_modules", "esm-only-pkg"), { recursive: true });
  mkdirSync(join(dir, "node_modules", "cjs-pkg"), { recursive: true });
  writeFileSync(join(dir, "helper.ts"), "export function greet(who: string): string { return `hello ${who}` }\n");
  writeFileSync(
    join(dir, "node_modules", "esm-only-pkg", "package.json"),
    JSON.stringify({ name: "esm-only-pkg", type: "module", exports: { ".": { import: "./index.js" } } }),
  );
  writeFileSync(join(dir, "node_modules", "esm-only-pkg", "index.js"), "export default 'esm default'; export const named = 'esm named';\n");
  writeFileSync(join(dir, "node_modules", "cjs-pkg", "package.json"), JSON.stringify({ name: "cjs-pkg", main: "main.js" }));
  writeFileSync(join(dir, "node_modules", "cjs-pkg", "main.js"), "exports.add = (a, b) => a + b;\n");
  const r = await drive(e, "imports", { DRIVE_CWD: dir });
  expect(r.cwd).toBe(`'${dir}'`);
  expect(r.relative_ts).toBe("'hello notebook'");
  expect(r.esm_only).toBe("[ 'esm default', 'esm named' ]");
  expect(r.cjs).toBe("[ 3, 5 ]");
  expect(r.gradlab).toBe("true");
}, 60_000);

test("a runtime that fails to import leaves cells running and torch throwing a clear error", async () => {
  const r = await drive(e, "no_runtime", { GRADLAB_RUNTIME: "/nonexistent/gradlab/index.ts" });
  expect(r.status).toBe("error");
  expect(r.evalue).toMatch(/^torch is unavailable: importing \/nonexistent\/gradlab\/index\.ts failed/);
  expect(r.after).toBe("2");
}, 60_000);

test("stop_on_error aborts queued requests only when set", async () => {
  const r = await drive(e, "abort");
  expect(r.stop).toEqual(["error", "aborted", "aborted"]);
  expect(r.after_stop).toBe("[ false, false ]");
  expect(r.no_stop).toEqual(["error", "ok"]);
}, 60_000);

test("interrupt_request and SIGINT stop while(true), a pending await and a loop after await; state survives; heartbeat and control answer while busy", async () => {
  const r = await drive(e, "interrupt");
  const cases = ["loop", "await", "async_loop", "display_await", "sigint_loop", "sigint_await"];
  for (const k of cases) {
    expect(r[k].status, k).toBe("error");
    expect(r[k].ename, k).toBe("KeyboardInterrupt");
    expect(r[k].heartbeat_while_busy, k).toBe(true);
    expect(r[k].control_while_busy, k).toBe(true);
  }
  expect(r.kept).toBe("42");
  // a figure, not a verdict (a loaded machine may take longer): seconds from interrupt to reply
  console.info("interrupt latency (s):", cases.map((k) => `${k} ${r[k].latency.toFixed(3)}`).join(", "));
}, 60_000);

test("prompt() sends input_request on stdin and returns the reply; refused without allow_stdin; interruptible", async () => {
  const r = await drive(e, "stdin");
  expect(r.prompt).toBe("Who?");
  expect(r.password).toBe(false);
  expect(r.parent_ok).toBe(true);
  expect(r.result).toBe("'hello Ada'");
  expect(r.denied).toBe("error");
  expect(r.denied_evalue).toMatch(/stdin is not available/);
  expect(r.interrupted).toBe("KeyboardInterrupt");
  console.info(`interrupt latency of a waiting prompt (s): ${r.interrupted_latency.toFixed(3)}`);
}, 60_000);

test("comms in both directions", async () => {
  const r = await drive(e, "comms");
  expect(r.on_open).toEqual([{ comm_id: "c1", data: { opened: { hi: 1 } } }]);
  expect(r.on_msg).toEqual([{ comm_id: "c1", data: { echo: { n: 2 } } }]);
  expect(r.buffers_echoed).toBe(true);
  expect(r.info).toEqual({ c1: { target_name: "echo" } });
  expect(r.on_close).toEqual(['closed {"bye":true}\n']);
  expect(r.unknown_target).toEqual([{ comm_id: "c2", data: {} }]);
  expect(r.kernel_open).toEqual([
    { type: "comm_open", target: "from_kernel", data: { hello: 1 } },
    { type: "comm_msg", target: null, data: { n: 1 } },
  ]);
  // it had sent a binary frame by reference: it waited for zeromq to let go of it, and exited cleanly
  expect(r.kernel_exit).toBe(0);
}, 60_000);

test("history is persisted across a restart", async () => {
  const r = await drive(e, "history");
  const [session, line, [input, output]] = r.first[0];
  expect(input).toBe(r.marker);
  expect(output).toBe(r.marker);
  expect(r.after_restart).toEqual([[session, line, r.marker]]);
  expect(r.new_session[0][0]).toBe(session + 1);
}, 90_000);

test("forged, truncated and malformed messages are dropped and logged without the signature", async () => {
  const r = await drive(e, "security");
  expect(r.forged_ran).toBe("false");
  expect(r.kernel_log).toMatch(/dropped message: invalid signature/);
  expect(r.kernel_log).toMatch(/dropped message: truncated/);
  expect(r.kernel_log).not.toContain(r.expected_signature);
  expect(r.kernel_log).toMatch(/unknown message type "no_such_request"/);
  expect(r.unknown_reply.status).toBe("error");
  expect(r.kernel_info.status).toBe("ok");
  expect(r.kernel_info.language_info).toMatchObject({ name: "typescript", file_extension: ".ts", mimetype: "text/typescript" });
  expect(r.kernel_info.help_links.length).toBeGreaterThan(0);
  expect(r.kernel_info.protocol_version).toBe("5.3");
}, 60_000);

test("a kernel whose client dies without shutting it down exits by itself", async () => {
  const r = await run(PYTHON, [join(REPO, "test", "kernel", "orphan.py")], { env: e.env });
  const pid = Number(r.stdout.trim());
  expect(pid, r.stderr).toBeGreaterThan(1);
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const deadline = Date.now() + 8000;
  while (alive() && Date.now() < deadline) await new Promise((res) => setTimeout(res, 100));
  expect(alive()).toBe(false);
}, 60_000);
