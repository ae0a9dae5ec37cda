// The kernel under stress (issue 16), each part bounded in time: the interrupt race (idle and under CPU
// hogs started here and ended by their process ids), a 60-s interrupt storm, interrupts inside no_grad
// and tensor loops, 2,000 fuzzed messages on shell and control, a 1,000-cell soak, 20 restarts and 20
// out-of-memory errors. Figures are printed (and written to $GRADLAB_STRESS_OUT when set).
import { afterAll, beforeAll, expect, test } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { installedKernel, drive, type Env } from "../kernel/helpers.ts";

let e: Env;
const figures: Record<string, unknown> = {};
beforeAll(async () => {
  e = await installedKernel();
});
afterAll(() => {
  e?.cleanup();
  const text = JSON.stringify(figures, null, 1);
  console.log(`stress figures:\n${text}`);
  if (process.env.GRADLAB_STRESS_OUT) writeFileSync(process.env.GRADLAB_STRESS_OUT, `${text}\n`);
});

const REAL = { GRADLAB_RUNTIME: "" }; // the real runtime instead of the test double

test("interrupt race, idle: 100 rounds, no wrong interrupt, no death", async () => {
  const r = await drive(e, "interrupt_races", { DRIVE_ROUNDS: "100", DRIVE_SEED: "11" }, 280_000);
  figures.race_idle = { rounds: 100, interrupted: r.interrupted, wrong: r.wrong.length, deaths: r.deaths };
  expect(r.deaths).toBe(0);
  expect(r.wrong).toEqual([]);
  expect(r.completed).toBe(100);
  expect(r.alive).toBe(true);
}, 300_000);

test("interrupt race under CPU hogs: 100 rounds, no wrong interrupt, no death", async () => {
  const hogs: ChildProcess[] = [];
  try {
    for (let i = 0; i < Math.max(2, cpus().length); i++) hogs.push(spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
    const r = await drive(e, "interrupt_races", { DRIVE_ROUNDS: "100", DRIVE_SEED: "12" }, 280_000);
    figures.race_hogs = { rounds: 100, hogs: hogs.length, interrupted: r.interrupted, wrong: r.wrong.length, deaths: r.deaths };
    expect(r.deaths).toBe(0);
    expect(r.wrong).toEqual([]);
    expect(r.completed).toBe(100);
  } finally {
    for (const h of hogs) if (h.pid) process.kill(h.pid, "SIGKILL");
  }
}, 300_000);

test("60-s interrupt storm: only cells that were sent an interrupt stop; the kernel lives", async () => {
  const r = await drive(e, "storm", { DRIVE_SECONDS: "60", DRIVE_SEED: "13" }, 280_000);
  figures.storm = { seconds: 60, cells: r.cells, interrupts_sent: r.interrupts_sent, interrupted: r.interrupted, wrong: r.wrong.length, deaths: r.deaths };
  expect(r.deaths).toBe(0);
  expect(r.wrong).toEqual([]);
  expect(r.other_errors).toEqual([]);
  expect(r.interrupted).toBeGreaterThan(0);
  expect(r.alive).toBe("'alive'");
}, 300_000);

test("interrupts inside no_grad and tensor loops leave grad mode on and memory where it was", async () => {
  const r = await drive(e, "interrupt_memory", { ...REAL, DRIVE_ROUNDS: "20" }, 280_000);
  figures.interrupt_memory = { rounds: 20, base: r.base, allocated_after: [...new Set(r.allocated)] };
  expect(r.errors).toEqual([]);
  expect(r.grad.every((g: string) => g === "true")).toBe(true);
  expect(r.allocated.every((a: string) => a === r.base)).toBe(true);
}, 300_000);

test("2,000 fuzzed messages on shell and control: all well-formed ones answered, loops alive after each batch", async () => {
  const r = await drive(e, "fuzz", { DRIVE_MESSAGES: "2000", DRIVE_SEED: "14" }, 280_000);
  figures.fuzz = { sent: r.sent, expected_replies: r.expected_replies, unanswered: r.unanswered?.length, kinds: r.kinds };
  expect(r.dead_after ?? r.shell_silent_after ?? r.control_silent_after).toBeUndefined();
  expect(r.unanswered).toEqual([]);
  expect(r.alive).toBe("'alive'");
  expect(r.interrupt_after).toBe("KeyboardInterrupt");
}, 300_000);

test("1,000-cell soak: the heap and memory_allocated stay flat (latency and CPU per cell are recorded)", async () => {
  const r = await drive(e, "soak", { ...REAL, DRIVE_CELLS: "1000" }, 580_000);
  const s = r.samples;
  figures.soak = s;
  expect(s.find((x: any) => x.error)).toBeUndefined();
  expect(s).toHaveLength(10);
  const last = s[s.length - 1];
  // Latency and the kernel's CPU time per window are figures printed with the tier, not assertions: on
  // a shared machine the wall clock measures the other load (a rehearsal at load 15-23 saw windows of
  // 40 to 315 ms with the kernel's CPU per cell flat within 25%).
  // the kernel's and the runtime's heap (main thread, after a full collection) stays flat. RSS is
  // recorded too: it also counts the language service's thread, whose checker program grows with
  // every cell that declares something (kernel/language, a fix requested from its owner).
  expect(last.heap - s[1].heap).toBeLessThan(32 * 2 ** 20);
  expect(new Set(s.map((x: any) => x.allocated)).size).toBe(1);
}, 600_000);

test("20 restarts, each followed by a working cell", async () => {
  const r = await drive(e, "restarts", { DRIVE_ROUNDS: "20" }, 280_000);
  figures.restarts = { ok: r.ok, median_s: [...r.times].sort()[10] };
  expect(r.ok).toBe(20);
}, 300_000);

test("20 out-of-memory errors, with and without a recorded graph: memory returns to where it was", async () => {
  const r = await drive(e, "ooms", { ...REAL, DRIVE_ROUNDS: "20" }, 280_000);
  figures.ooms = { base: r.base, allocated_after: r.allocated, errors: [...new Set(r.errors)] };
  expect(r.other).toEqual([]);
  expect(r.allocated.every((a: number) => a === r.base)).toBe(true);
}, 300_000);
