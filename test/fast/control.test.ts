// Control while busy, in process: the table of what the socket thread answers itself on control
// (interrupt, kernel_info, shutdown), with fakes for its sockets; everything else goes to the main thread.
import { describe, expect, it } from "vitest";
import { makeHeader, type Message } from "../../kernel/wire/message.ts";
import { answerFor, controlTable, type ControlDeps } from "../../kernel/sockets/control.ts";
import { kernelInfo } from "../../kernel/info.ts";

function request(type: string, content: object = {}, date?: string): Message {
  const header = { ...makeHeader(type, "client-session"), ...(date ? { date } : {}) };
  return { identities: [], header, parent_header: {}, metadata: {}, content, buffers: [] };
}

function fakes() {
  const log: unknown[][] = [];
  let release!: () => void;
  const flushed = new Promise<void>((r) => (release = r));
  const deps: ControlDeps = {
    reply: (_req, type, content) => void log.push(["reply", type, content]),
    interrupt: (when) => void log.push(["interrupt", when]),
    flushed: () => flushed,
    shutdown: (restart) => void log.push(["shutdown", restart]),
    kernelInfo: kernelInfo(),
  };
  return { log, deps, release: () => release() };
}

describe("control while busy", () => {
  it("interrupt_request interrupts with the request's date and session, replies ok, and is done", () => {
    const { log, deps } = fakes();
    const answer = answerFor(controlTable(deps), "interrupt_request")!;
    expect(answer(request("interrupt_request", {}, "2026-12-02T23:00:00.123456Z"))).toBe(true);
    expect(log).toEqual([
      ["interrupt", { requestedUs: Date.parse("2026-12-02T23:00:00Z") * 1000 + 123456, session: "client-session" }],
      ["reply", "interrupt_reply", { status: "ok" }],
    ]);
    // a request without a usable date interrupts whatever runs now
    log.length = 0;
    answer(request("interrupt_request", {}, "yesterday"));
    expect(log[0]).toEqual(["interrupt", {}]);
  });

  it("kernel_info_request is answered here with the kernel's info", () => {
    const { log, deps } = fakes();
    expect(answerFor(controlTable(deps), "kernel_info_request")!(request("kernel_info_request"))).toBe(true);
    expect(log).toEqual([["reply", "kernel_info_reply", deps.kernelInfo]]);
    expect(deps.kernelInfo).toMatchObject({ status: "ok", implementation: "gradlab", language_info: { name: "typescript" } });
  });

  it("shutdown_request replies first, then (once the reply has left) interrupts and shuts down; no idle", async () => {
    const { log, deps, release } = fakes();
    expect(answerFor(controlTable(deps), "shutdown_request")!(request("shutdown_request", { restart: true }))).toBe(false);
    expect(log).toEqual([["reply", "shutdown_reply", { status: "ok", restart: true }]]);
    release();
    await new Promise((r) => setImmediate(r));
    expect(log.slice(1)).toEqual([
      ["interrupt", undefined],
      ["shutdown", true],
    ]);
  });

  it("every other type goes to the main thread, Object.prototype's names included", () => {
    const table = controlTable(fakes().deps);
    for (const t of ["debug_request", "execute_request", "constructor", "__proto__", "toString", "hasOwnProperty"]) {
      expect(answerFor(table, t), t).toBeUndefined();
    }
  });
});
