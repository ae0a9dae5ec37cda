// Output and display updates leave the kernel while a cell runs synchronous code (issue 10): driven
// by Debian's jupyter_client, with the time each message was received.
import { afterAll, beforeAll, expect, test } from "vitest";
import { installedKernel, drive, type Env } from "./helpers.ts";

let e: Env;
let r: any;
beforeAll(async () => {
  e = await installedKernel();
  r = await drive(e, "streaming");
}, 120_000);
afterAll(() => e?.cleanup());

test("a busy loop printing every 100 ms: each line reaches the client within 250 ms, in order, before the cell ends", () => {
  const { ticks, types, result_t } = r.print;
  expect(ticks.map((t: any) => t.i)).toEqual([...Array(12).keys()]);
  for (const t of ticks) expect(t.latency, `tick ${t.i}`).toBeLessThan(250);
  // the first line arrived while the cell was still running (over a second before its result)
  expect(result_t - ticks[0].t).toBeGreaterThan(800);
  expect(types[0]).toBe("status");
  expect(types.slice(-2)).toEqual(["execute_result", "status"]);
});

test("display_id updates and clear_output stream during the loop, in the order the cell made them", () => {
  const d = r.display;
  expect(d.map((m: any) => m.type)).toEqual([
    "execute_input", "display_data", ...Array(6).fill("update_display_data"), "clear_output", "stream", "execute_result",
  ]);
  const updates = d.filter((m: any) => m.type === "update_display_data");
  updates.forEach((u: any, i: number) => {
    expect(u.data).toContain(`step: ${i}`);
    const now = Number(/now: (\d+)/.exec(u.data)![1]);
    expect(u.t - now, `update ${i}`).toBeLessThan(250);
  });
  // the updates were spread over the loop, not delivered in a burst at its end
  expect(updates[5].t - updates[0].t).toBeGreaterThan(400);
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
