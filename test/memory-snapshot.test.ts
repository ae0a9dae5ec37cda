// Snapshots that PyTorch's readers and pytorch.org/memory_viz open (issue 25): torch.cuda.memory_snapshot()
// and _snapshot() in PyTorch 2.x's layout, with sizes, segment counts and states equal to what the
// allocator reports; _dump_snapshot's pickle read back by an independent JavaScript unpickler
// (pickleparser) and by test/fixtures/check_snapshot.py (Python's standard library); the fixture records
// what torch 1.13's and PyTorch 2.x's readers made of the same program (gen_memory_snapshot.py).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Parser } from "pickleparser";
import { afterAll, describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";
import { figures, program } from "./fixtures/memory-snapshot.ts";

const FIXTURE = JSON.parse(readFileSync(join(import.meta.dirname, "fixtures/memory-snapshot.json"), "utf8"));
const SOURCE = readFileSync(join(import.meta.dirname, "fixtures/memory-snapshot.ts"), "utf8").split("\n");
const dir = mkdtempSync(join(tmpdir(), "gradlab-snapshot-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the fixture's program on a fresh simulated device; returns what a student would read. */
function runProgram() {
  const sim = torch.cuda.simulate();
  const { kept } = program();
  const snap = torch.cuda.memory._snapshot();
  const segments = torch.cuda.memory_snapshot();
  const path = join(dir, `snap-${Math.random().toString(36).slice(2)}.pickle`);
  torch.cuda.memory._dump_snapshot(path);
  const figs = figures();
  torch.cuda.memory._record_memory_history(null);
  torch.del(...kept);
  sim[Symbol.dispose]();
  return { snap, segments, path, figs };
}
const run = runProgram();

describe("torch.cuda.memory_snapshot() and _snapshot()", () => {
  it("report the segments the allocator holds: counts, bytes and states", () => {
    const { segments, figs } = run;
    expect(figs).toEqual(FIXTURE.allocator); // the program is deterministic
    expect(segments.length).toBe(figs.segments);
    expect(segments.filter((s) => s.segment_type === "small").length).toBe(figs.small_segments);
    expect(segments.reduce((n, s) => n + s.total_size, 0)).toBe(figs.reserved);
    const blocks = segments.flatMap((s) => s.blocks);
    const active = blocks.filter((b) => b.state === "active_allocated");
    expect(active.reduce((n, b) => n + b.size, 0)).toBe(figs.allocated);
    expect(active.reduce((n, b) => n + b.requested_size, 0)).toBe(figs.requested);
    expect(blocks.filter((b) => b.state === "inactive").reduce((n, b) => n + b.size, 0)).toBe(figs.inactive_split);
    for (const s of segments) {
      // blocks tile the segment in address order, as PyTorch lists them
      let addr = s.address;
      for (const b of s.blocks) {
        expect(b.address).toBe(addr);
        addr += b.size;
      }
      expect(addr).toBe(s.address + s.total_size);
      expect(s.allocated_size).toBe(s.blocks.filter((b) => b.state === "active_allocated").reduce((n, b) => n + b.size, 0));
    }
    expect(run.snap.segments).toEqual(segments);
  });

  it("name the line that allocated each live block (a tensor's creation, then its gradient in backward)", () => {
    const w1 = SOURCE.findIndex((l) => l.includes("const w1 = ")) + 1;
    const backward = SOURCE.findIndex((l) => l.includes("loss.backward()")) + 1;
    const large = run.segments.find((s) => s.segment_type === "large")!;
    const [param, grad] = large.blocks;
    expect(param.frames[0]).toEqual({ filename: "test/fixtures/memory-snapshot.ts", line: w1, name: "program" });
    expect(grad.frames[0]).toEqual({ filename: "test/fixtures/memory-snapshot.ts", line: backward, name: "program" });
    expect(large.blocks[2]).toMatchObject({ state: "inactive", frames: [] });
  });

  it("trace every allocation, free and segment in PyTorch's actions, and replay to the segments' state", () => {
    const trace = run.snap.device_traces[0];
    const live = new Map<number, number>();
    const reserved = new Map<number, number>();
    trace.forEach((e, k) => {
      if (e.action === "alloc") live.set(e.addr, e.size);
      if (e.action === "free_requested") expect(trace[k + 1]).toMatchObject({ action: "free_completed", addr: e.addr, size: e.size });
      if (e.action === "free_completed") expect(live.delete(e.addr)).toBe(true);
      if (e.action === "segment_alloc") reserved.set(e.addr, e.size);
      if (e.action === "segment_free") expect(reserved.delete(e.addr)).toBe(true);
    });
    const blocks = run.segments.flatMap((s) => s.blocks).filter((b) => b.state === "active_allocated");
    expect([...live].sort()).toEqual(blocks.map((b) => [b.address, b.size]).sort());
    expect([...reserved].sort()).toEqual(run.segments.map((s) => [s.address, s.total_size]).sort());
    // empty_cache gave back the scratch tensor's own segment
    expect(trace.filter((e) => e.action === "segment_free").map((e) => e.size)).toEqual([20 * 2 ** 20]);
    const grads = trace.filter((e) => e.action === "alloc" && e.category === "gradient");
    expect(grads.every((e) => e.phase === "backward")).toBe(true);
    expect(trace.some((e) => e.action === "alloc" && e.phase === "forward" && e.category === "activation")).toBe(true);
  });

  it("without a recording, still lists the segments (as PyTorch does) with an empty trace", () => {
    using _sim = torch.cuda.simulate();
    const t = torch.empty(1000);
    const snap = torch.cuda.memory._snapshot();
    expect(snap.device_traces).toEqual([[]]);
    expect(snap.segments.map((s) => s.blocks.map((b) => [b.state, b.size]))).toEqual([
      [
        ["active_allocated", 4096],
        ["inactive", 2 * 2 ** 20 - 4096],
      ],
    ]);
    expect(snap.segments[0].blocks[0].requested_size).toBe(4000);
    torch.del(t);
    torch.cuda.empty_cache();
    expect(torch.cuda.memory_snapshot()).toEqual([]);
  });
});

describe("_dump_snapshot(path)", () => {
  it("writes a pickle that an independent unpickler reads back as the snapshot", () => {
    const parsed = new Parser().parse(readFileSync(run.path)) as { segments: unknown[]; device_traces: Array<Array<Record<string, unknown>>> };
    expect(parsed.segments).toEqual(run.segments);
    const trace = run.snap.device_traces[0];
    expect(parsed.device_traces[0].map((e) => [e.action, e.addr, e.size, e.stream])).toEqual(trace.map((e) => [e.action, e.addr, e.size, e.stream]));
    // GradLab's own fields travel under `gradlab`, so memory_viz's category colouring stays off
    expect(parsed.device_traces[0].every((e) => !("category" in e) && typeof (e.gradlab as { category: unknown }).category === "string")).toBe(true);
  });

  it("passes the Python reader's checks (layout, tiling, trace replay, memory_viz's opcodes) with the allocator's figures", () => {
    const summary = JSON.parse(execFileSync("python3", [join(import.meta.dirname, "fixtures/check_snapshot.py"), run.path], { encoding: "utf8" }));
    expect(summary).toMatchObject({
      segments: run.figs.segments,
      reserved: run.figs.reserved,
      allocated: run.figs.allocated,
      requested: run.figs.requested,
      inactive: run.figs.inactive_split,
    });
    expect(summary).toEqual(FIXTURE.check_snapshot);
  });

  it("the Python reader rejects a snapshot whose blocks do not add up", () => {
    const bad = Buffer.from(readFileSync(run.path));
    // the first segment's total_size, 20 MiB, follows its key as a BININT ("J" and 4 bytes): make it 512 bytes more
    const at = bad.indexOf("total_size") + "total_size".length;
    expect([String.fromCharCode(bad[at]), bad.readInt32LE(at + 1)]).toEqual(["J", 20 * 2 ** 20]);
    bad.writeInt32LE(20 * 2 ** 20 + 512, at + 1);
    expect(() => execFileSync("python3", [join(import.meta.dirname, "fixtures/check_snapshot.py"), "-"], { input: bad, stdio: "pipe" })).toThrow(
      /segments\[0\]: blocks cover 20971520 of 20972032 bytes/,
    );
  });

  it("reads as torch 1.13's and PyTorch 2.x's readers read the generator's run of the same program", () => {
    // torch 1.13's stats() over the segment list
    const blocks = run.segments.flatMap((s) => s.blocks);
    const sumOf = (state: string) => blocks.filter((b) => b.state === state).reduce((n, b) => n + b.size, 0);
    expect(FIXTURE.torch_1_13.stats).toEqual({
      segments: run.figs.segments,
      total_size: run.figs.reserved,
      active_allocated: sumOf("active_allocated"),
      inactive: sumOf("inactive"),
    });
    // torch 1.13's segments(): one line per block, stream, segment address, state and size
    expect(FIXTURE.torch_1_13.segments_lines).toEqual(run.segments.flatMap((s) => s.blocks.map((b) => `stream_0;seg_${s.address};${b.state} ${b.size}`)));
    // PyTorch 2.x's segsum() totals (the generator's run, read with PyTorch's main-branch reader)
    const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)}MiB`;
    expect(FIXTURE.pytorch_2x.segsum).toEqual(
      expect.arrayContaining([`segments: ${run.figs.segments}`, `total_reserved: ${mib(run.figs.reserved)}`, `total_allocated: ${mib(run.figs.requested)}`]),
    );
    expect(FIXTURE.pytorch_2x.trace.filter((l: string) => l.startsWith("cudaFree("))).toEqual(["cudaFree(q) # 20.0MiB"]);
  });
});
