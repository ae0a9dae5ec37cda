// Hostile or broken messages (issue 16): every message is answered or rejected in bounded time, and
// nothing a client sends stops the shell, control or heartbeat loops.
import { afterAll, beforeAll, expect, test } from "vitest";
import { installedKernel, drive, type Env } from "./helpers.ts";

let e: Env;
let r: any;
beforeAll(async () => {
  e = await installedKernel();
  r = await drive(e, "hostile");
}, 180_000);
afterAll(() => e?.cleanup());

test("JSON nested 10,000 and 100,000 deep is rejected; shell and control keep answering", () => {
  expect(r.shell_after_deep?.content.status).toBe("ok");
  expect(r.control_after_deep?.content.status).toBe("ok");
  expect(r.kernel_log).toMatch(/dropped message: JSON nested deeper than 256/);
});

test("complete and inspect with cursor_pos 1e308, negative or not a number answer at once", () => {
  for (const k of ["complete_big", "complete_neg", "complete_str", "complete_inf"]) {
    expect(r[k], k).not.toBeNull();
    expect(r[k].content.status, k).toBe("ok");
  }
  expect(r.complete_big.content.matches).toContain("max");
  expect(r.complete_big.content.cursor_end).toBe(7);
  expect(r.inspect_big.content.status).toBe("ok");
});

test("msg_type names of Object.prototype get an error reply like any unknown type", () => {
  for (const t of ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"]) {
    expect(r.proto_names[t], t).toEqual({ type: `${t}_reply`, status: "error" });
  }
});

// The bound on time is drive.py's: no reply within 10 s is a failure (a full parse of the huge input,
// or a backtracking history pattern, would take far longer); the seconds taken are a figure.
test("is_complete is bounded in time, and an open comment is incomplete", () => {
  expect(r.is_complete_huge.content.status).toBe("unknown");
  console.info(`is_complete on a huge input answered in ${r.is_complete_huge.s.toFixed(3)} s`);
  expect(r.is_complete_comment.content.status).toBe("incomplete");
});

test("a history search pattern cannot backtrack for ages; wrong content types still get a reply", () => {
  expect(r.history_redos.content.status).toBe("ok");
  console.info(`a backtracking history pattern answered in ${r.history_redos.s.toFixed(3)} s`);
  expect(r.execute_wrong_types.content.status).toBeDefined();
});

test("diagnostics about dropped messages reach the kernel log only, never a cell's output", () => {
  expect(r.leaked_to_cells).toEqual([]);
  expect(r.kernel_log).toMatch(/control: dropped message: invalid signature/);
  expect(r.kernel_log).toMatch(/shell: dropped message: malformed JSON/);
});

test("afterwards the kernel executes and interrupts as before", () => {
  expect(r.alive).toBe("'alive'");
  expect(r.interrupt_after).toBe("KeyboardInterrupt");
});
