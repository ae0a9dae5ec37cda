// torch.viz.memory_viz (issue 25): memory_viz's three views inline, checked against the allocator's own
// figures: the bands stack to memory_allocated, the reserved line is memory_reserved, the segment view
// at the last event shows the segments memory_snapshot() lists, and what the text says empty_cache
// would return is what empty_cache() then returns.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";
import { program } from "./fixtures/memory-snapshot.ts";

const require = createRequire(import.meta.url);
const validate = new Ajv({ allowUnionTypes: true, strict: false }).compile(
  JSON.parse(readFileSync(require.resolve("vega-lite/build/vega-lite-schema.json"), "utf8")),
);
const SOURCE = readFileSync(join(import.meta.dirname, "fixtures/memory-snapshot.ts"), "utf8").split("\n");

type Row = Record<string, number | string>;
type Layer = { data: { values: Row[] }; mark: { type: string } };
type View = { title: { text: string }; layer: Layer[] };

function recorded() {
  const sim = torch.cuda.simulate();
  const { kept } = program();
  const snap = torch.cuda.memory._snapshot();
  const figs = { allocated: torch.cuda.memory_allocated(), reserved: torch.cuda.memory_reserved(), peak: torch.cuda.max_memory_allocated() };
  torch.cuda.memory._record_memory_history(null);
  return { snap, figs, kept, sim };
}

describe("torch.viz.memory_viz", () => {
  const { snap, figs, kept, sim } = recorded();
  const view = torch.viz.memory_viz(snap);
  const spec = view.spec as { vconcat: View[]; params: Array<{ name: string; value: number }> };
  const [active, segments, reserved] = spec.vconcat;
  const end = snap.device_traces[0].filter((e) => e.action !== "free_requested").length;

  it("is valid Vega-Lite with a Vega-Lite, SVG, exporter and text form", async () => {
    expect(validate(spec), JSON.stringify(validate.errors?.slice(0, 3))).toBe(true);
    const b = await view.bundle();
    expect(Object.keys(b).sort()).toEqual(["application/vnd.vegalite.v5+json", "image/svg+xml", "text/markdown", "text/plain"]);
    expect(b["image/svg+xml"]).toContain("Active memory timeline");
    expect(b["text/markdown"]).toMatch(/data:image\/png;base64,/);
  });

  it("active timeline: one band per allocation, stacked to memory_allocated, with the line that made it on hover", () => {
    const bands = active.layer[1].data.values;
    const atEnd = bands.filter((r) => r.free_event === "alive at the end" && Number(r.t1) >= end);
    expect(Math.max(...atEnd.map((r) => Number(r.y1)))).toBeCloseTo(figs.allocated / 2 ** 20, 2);
    expect(atEnd.reduce((n, r) => n + Number(r.bytes), 0)).toBe(figs.allocated);
    // the stack's height over time reaches the recording's peak
    expect(Math.max(...bands.map((r) => Number(r.y1)))).toBeCloseTo(figs.peak / 2 ** 20, 2);
    const w1 = SOURCE.findIndex((l) => l.includes("const w1 = ")) + 1;
    expect(bands.find((r) => r.bytes === 2 * 2 ** 20 && r.category !== "gradient")!.where).toBe(`test/fixtures/memory-snapshot.ts:${w1} in program`);
    const grad = bands.find((r) => r.category === "gradient" && r.bytes === 2 * 2 ** 20)!;
    expect(grad).toMatchObject({ phase: "backward", node: expect.stringMatching(/Backward|AccumulateGrad/) });
    const tooltip = (active.layer[1] as unknown as { encoding: { tooltip: Array<{ field: string }> } }).encoding.tooltip.map((t) => t.field);
    expect(tooltip).toEqual(expect.arrayContaining(["where", "size", "category", "op", "node", "phase"]));
    // forward and backward shaded
    expect((active.layer[0].data as unknown as { name: string }).name).toBe("phases");
    expect(new Set((view.spec as { datasets: { phases: Row[] } }).datasets.phases.map((b) => b.phase))).toEqual(new Set(["forward", "backward"]));
  });

  it("reserved view: memory_reserved and memory_allocated step for step, ending at the allocator's figures", () => {
    const rows = reserved.layer[1].data.values;
    const last = (series: string) => rows.filter((r) => r.series === series).at(-1)!;
    expect(last("memory_reserved").bytes).toBe(figs.reserved);
    expect(last("memory_allocated").bytes).toBe(figs.allocated);
    expect(Math.max(...rows.filter((r) => r.series === "memory_allocated").map((r) => Number(r.bytes)))).toBe(figs.peak);
    // reserved never below allocated
    for (let i = 0; i < rows.length; i += 2) expect(Number(rows[i].bytes)).toBeGreaterThanOrEqual(Number(rows[i + 1].bytes));
  });

  it("segment view: at the slider's last event, the segments memory_snapshot() lists and their live blocks", () => {
    expect(spec.params[0]).toMatchObject({ name: "at_event", value: end });
    const at = (r: Row) => Number(r.t0) <= end && end < Number(r.t1);
    const segs = segments.layer[0].data.values.filter(at);
    expect(segs.map((s) => s.seg)).toEqual(["segment 1 (large, 20 MiB)", "segment 2 (small, 2 MiB)"]);
    expect(segs.length).toBe(torch.cuda.memory_snapshot().length || snap.segments.length);
    const blocks = segments.layer[1].data.values.filter(at);
    const mib = blocks.reduce((n, b) => n + Number(b.x1) - Number(b.x0), 0);
    expect(mib).toBeCloseTo(figs.allocated / 2 ** 20, 2);
    // the 100-float tensor asked for 400 bytes of its 512-byte block: rounding waste drawn
    expect(blocks.some((b) => b.state === "rounding waste")).toBe(true);
    // the scratch tensor's own segment existed earlier, and is gone at the end (empty_cache)
    expect(segments.layer[0].data.values.some((s) => String(s.seg).startsWith("segment 3") && Number(s.t1) <= end)).toBe(true);
  });

  it("says what empty_cache() returns and what fragmentation keeps, as empty_cache then does", () => {
    torch.del(kept[0]); // w1 and, with it, its gradient: the large segment holds nothing now
    const s = torch.viz.memory_viz(torch.cuda.memory._snapshot()).summary;
    expect(s.empty_cache_returns).toBe(20 * 2 ** 20);
    // the small segment still holds w2, its gradient and the 100-float tensor: its free bytes stay reserved
    expect(s.fragmented).toBe(2 * 2 ** 20 - s.allocated);
    expect(s.allocated).toBe(torch.cuda.memory_allocated());
    const r0 = torch.cuda.memory_reserved();
    torch.cuda.empty_cache();
    expect(r0 - torch.cuda.memory_reserved()).toBe(s.empty_cache_returns);
    expect(torch.viz.memory_viz(torch.cuda.memory._snapshot()).text).toMatch(/1 segments reserve 2\.00 MiB.*\n.*empty_cache\(\) would return 0 bytes/);
    torch.del(...kept.slice(1));
    sim[Symbol.dispose]();
  });

  it("refuses what is not a snapshot, saying what to pass", () => {
    expect(() => torch.viz.memory_viz(snap.device_traces[0] as never)).toThrow(/takes a snapshot: torch\.cuda\.memory\._snapshot\(\)/);
  });

  it("keeps a 40,000-event trace's spec small and its peak exact", () => {
    // 10,000 iterations of: alloc a (forward), alloc b (backward), free b, free a; every 100th b is bigger
    const ev = (action: string, addr: number, size: number, phase: string) =>
      ({
        action,
        addr,
        size,
        stream: 0,
        time_us: 0,
        frames: [],
        device: "sim:x",
        storage_id: addr,
        requested: size,
        op: null,
        node: null,
        phase,
        category: "activation",
      }) as never;
    const trace: never[] = [];
    for (let i = 0; i < 10_000; i++) {
      const big = i % 100 === 37 ? 8192 : 1024;
      trace.push(
        ev("alloc", 2 ** 32, 512, "forward"),
        ev("alloc", 2 ** 32 + 512, big, "backward"),
        ev("free_completed", 2 ** 32 + 512, big, "backward"),
        ev("free_completed", 2 ** 32, 512, "other"),
      );
    }
    const big = torch.viz.memory_viz({ segments: [], device_traces: [trace] });
    const spec = big.spec as { vconcat: View[] };
    expect(JSON.stringify(spec).length).toBeLessThan(400_000);
    const rows = spec.vconcat[2].layer[1].data.values.filter((r) => r.series === "memory_allocated");
    expect(rows.length).toBeLessThanOrEqual(602);
    expect(Math.max(...rows.map((r) => Number(r.bytes)))).toBe(512 + 8192);
    expect(rows.at(-1)!.bytes).toBe(0);
  });

  it("one view alone keeps its own slider only where it has one", () => {
    const only = torch.viz.memory_viz(snap, { view: "reserved" }).spec as { params?: unknown; layer: Layer[] };
    expect(only.params).toBeUndefined();
    expect(validate(only)).toBe(true);
    const seg = torch.viz.memory_viz(snap, { view: "segments" }).spec;
    expect(validate(seg), JSON.stringify(validate.errors?.slice(0, 2))).toBe(true);
  });
});
