// Output and display updates leave the kernel while a cell runs synchronous code (issue 10): driven
// by Debian's jupyter_client. The cells wait for the driver to receive each message before going on
// (drive.py's scenario_streaming), so this holds on a loaded machine and compares no timings.
import { afterAll, beforeAll, expect, test } from "vitest";
import { installedKernel, drive, type Env } from "./helpers.ts";

let e: Env;
let r: any;
beforeAll(async () => {
  e = await installedKernel();
  r = await drive(e, "streaming");
}, 120_000);
afterAll(() => e?.cleanup());

test("a busy loop's prints reach the client while it runs (it waits for each before the next), in order", () => {
  const { texts, types } = r.print;
  expect(texts).toEqual([...Array(12).keys()].map((i) => `tick ${i}\n`));
  expect(types[0]).toBe("status");
  expect(types.slice(-2)).toEqual(["execute_result", "status"]);
});

test("display_id updates and clear_output stream during the loop, in the order the cell made them", () => {
  const d = r.display;
  expect(d.map((m: any) => m.type)).toEqual([
    "execute_input",
    "display_data",
    ...Array(6).fill("update_display_data"),
    "clear_output",
    "stream",
    "execute_result",
  ]);
  const updates = d.filter((m: any) => m.type === "update_display_data");
  updates.forEach((u: any, i: number) => expect(u.data).toBe(`{ step: ${i} }`));
  expect(d.find((m: any) => m.type === "stream").text).toBe("after clear\n");
});

test("display.on_cell_end runs before the result (a live plot's last state lands while the cell is current)", () => {
  expect(r.cell_end).toEqual([
    { type: "display_data", data: "'first'" },
    { type: "update_display_data", data: "'last'" },
    { type: "execute_result", data: "'r'" },
  ]);
});

test("an interrupted cell delivers every line it printed before the interrupt, then the error", () => {
  const { ename, lines, n, after } = r.interrupted;
  expect(ename).toBe("KeyboardInterrupt");
  expect(lines.length).toBeGreaterThanOrEqual(4);
  expect(lines).toEqual(lines.map((_: string, i: number) => `line ${i}`));
  expect(Number(n)).toBe(lines.length); // nothing printed was dropped
  expect(after).toEqual(["error", "status"]);
});
