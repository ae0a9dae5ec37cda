// Interrupts (issue 16): only the cell running when one is requested stops; one that arrives between
// cells or late is dropped; no interrupt ends the process; runtime state is what it was before.
import { afterAll, beforeAll, expect, test } from "vitest";
import { installedKernel, drive, type Env } from "./helpers.ts";

let e: Env;
beforeAll(async () => {
  e = await installedKernel();
});
afterAll(() => e?.cleanup());

test("interrupts racing cell ends (by message and by SIGINT) never stop a later cell nor kill the kernel", async () => {
  const r = await drive(e, "interrupt_races", { DRIVE_ROUNDS: "40", DRIVE_SEED: "7" });
  expect(r.deaths).toBe(0);
  expect(r.wrong).toEqual([]);
  expect(r.completed).toBe(40);
  expect(r.interrupted).toBeGreaterThan(0); // the race was real: some short cells were stopped
  expect(r.after_idle).toBe("'after idle interrupts'");
  expect(r.alive).toBe(true);
}, 120_000);

test("after an interrupt grad mode and anomaly mode are as before, finally blocks ran, recursion and caught interrupts stop", async () => {
  const r = await drive(e, "interrupt_state", { GRADLAB_RUNTIME: "" });
  expect(r.loop_ename).toBe("KeyboardInterrupt");
  expect(r.loop_grad).toBe("true");
  expect(r.await_ename).toBe("KeyboardInterrupt");
  expect(r.await_grad).toBe("true");
  expect(r.anomaly_ename).toBe("KeyboardInterrupt");
  expect(r.anomaly).toBe("false");
  expect(r.finally_ename).toBe("KeyboardInterrupt");
  expect(r.finally).toBe("true");
  expect(r.recursion_ename).toBe("KeyboardInterrupt");
  expect(r.caught_ename).toBe("KeyboardInterrupt");
  expect(r.alive).toBe("'alive'");
}, 120_000);
