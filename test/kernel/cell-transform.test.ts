// The cell transform, in process (no kernel): what a student's cell compiles to must run on Node 20.
import { describe, expect, it } from "vitest";
import * as torch from "../../src/index.ts";
import { runCell } from "../helpers/cells.ts";

const g = globalThis as Record<string, any>;

describe("cell transform", () => {
  it("`using` works in a plain JavaScript cell (acorn parses it; Node 20 cannot run it unlowered)", async () => {
    await runCell(
      `
      seen = [];
      { using big = torch.zeros(1024); seen.push(torch.cuda.memory_allocated() - base); }
      seen.push(torch.cuda.memory_allocated() - base);
    `,
      { torch, base: torch.cuda.memory_allocated() },
    );
    expect(g.seen).toEqual([4096, 0]);
  });

  it("a statement's temporaries die with it; named tensors live until rebound", async () => {
    await runCell(
      `
      const base2 = torch.cuda.memory_allocated();
      const kept = torch.ones(1024).mul(2).add(1); // two temporaries, one result
      after = torch.cuda.memory_allocated() - base2;
    `,
      { torch },
    );
    expect(g.after).toBe(4096);
  });

  it("wrapping a statement never makes the line before it a call (no semicolons, as people write)", async () => {
    await runCell("r = 1\nbump()\nr = r + 1\n", { bump: () => void (g.bumped = true) });
    expect([g.r, g.bumped]).toEqual([2, true]);
  });

  it("a dynamic import() works in a cell, as a static import does (node:vm has no loader of its own)", async () => {
    await runCell(
      `
      const fs = await import("node:fs");
      const { join } = await import(/* a comment */ "node:path");
      async function later(m: string) { return (await import(m)).sep; }
      dyn = [typeof fs.readFileSync, join("a", "b"), await later("node:path")];
    `,
    );
    expect(g.dyn).toEqual(["function", "a/b", "/"]);
  });
});
