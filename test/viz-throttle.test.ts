// The live memory_timeline's default ("auto") throttle: at least 250 ms between redraws, and at least four
// times what the last redraw took, so a loop slowed down by a busy machine does not spend most of its time
// drawing. The redraw's cost is set by hand and the clock is the test's (a loaded machine can stall
// for more than 100 ms between two lines): no assertion depends on how fast this machine is.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import * as viz from "../src/viz/index.ts";

type Internals = { last: number; cost: number };

describe("memory_timeline: auto throttle", () => {
  beforeEach(() => void vi.useFakeTimers({ toFake: ["Date", "setTimeout", "clearTimeout"] }));
  afterEach(() => void vi.useRealTimers());

  it("redraws after 250 ms when redraws are cheap, and waits four times a slow redraw's cost", () => {
    const updates: unknown[] = [];
    const plot = viz.memory_timeline([]).show({ update: (o) => updates.push(o) });
    const p = plot as unknown as Internals;
    expect(plot.throttle_ms).toBe("auto");

    expect(plot.update([])).toBe(false); // shown just now: within 250 ms
    p.last = Date.now() - 300;
    p.cost = 10;
    expect(plot.update([])).toBe(true); // 300 ms > max(250, 4 × 10)
    expect(updates.length).toBe(1);

    p.last = Date.now() - 300;
    p.cost = 100; // a redraw that took 100 ms: the next one waits 400 ms from its start
    expect(plot.update([])).toBe(false);
    p.last = Date.now() - 450;
    expect(plot.update([])).toBe(true);
    expect(updates.length).toBe(2);

    plot.flush(); // the cell's end: the last redraw, with the exporters' PNG
    expect(updates.length).toBe(3);
  });

  it("a number is a fixed interval, whatever the redraws cost", () => {
    const updates: unknown[] = [];
    const plot = viz.memory_timeline([]).show({ update: (o) => updates.push(o) });
    const p = plot as unknown as Internals;
    plot.throttle_ms = 100;
    p.last = Date.now() - 150;
    p.cost = 1000;
    expect(plot.update([])).toBe(true);
    plot.throttle_ms = 0;
    p.cost = 1000;
    expect(plot.update([])).toBe(true);
    expect(updates.length).toBe(2);
  });
});
