// torch.viz: every display's MIME set, exact text forms, Vega-Lite specs valid against the v5 schema,
// SVG that parses as XML, and the displays attached to tensors, grad_fns and modules. Timings are not
// tested here (bench/viz.ts prints them).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { Ajv } from "ajv";
import { DOMParser } from "@xmldom/xmldom";
import * as torch from "../src/index.ts";
import * as viz from "../src/viz/index.ts";

const DISPLAY = Symbol.for("Jupyter.display");
const show = async (o: unknown): Promise<Record<string, unknown>> => (o as any)[DISPLAY]();
const keys = (b: Record<string, unknown>) => Object.keys(b).sort();

const require = createRequire(import.meta.url);
const schema = JSON.parse(readFileSync(require.resolve("vega-lite/build/vega-lite-schema.json"), "utf8"));
const validate = new Ajv({ allowUnionTypes: true, strict: false }).compile(schema);
function expectValidSpec(spec: unknown) {
  const ok = validate(spec);
  expect(validate.errors ?? [], JSON.stringify(validate.errors?.slice(0, 3))).toEqual([]);
  expect(ok).toBe(true);
}
function expectSvg(svg: unknown) {
  expect(typeof svg).toBe("string");
  const errors: string[] = [];
  const doc = new DOMParser({
    onError: (level: string, msg: string) => {
      if (level !== "warning") errors.push(msg);
    },
  }).parseFromString(svg as string, "image/svg+xml");
  expect(errors).toEqual([]);
  expect(doc.documentElement?.nodeName).toBe("svg");
}

/** The article's print_computation_graph lab (block 25), in TypeScript. */
function labGraph() {
  const x = torch.randn(2, 4, { requires_grad: true });
  const w1 = torch.randn(4, 8, { requires_grad: true });
  const b1 = torch.randn(8, { requires_grad: true });
  const w2 = torch.randn(8, 1, { requires_grad: true });
  const h1 = torch.matmul(x, w1).add(b1);
  const act = torch.relu(h1);
  const out = torch.matmul(act, w2).add(act.mul(0.5).sum());
  const loss = out.mean();
  return { x, w1, b1, w2, h1, act, out, loss };
}

// What PyTorch 1.13 prints for the lab when the visited set holds the nodes themselves. (The lab as
// written keys on id() of transient Python wrappers, so an id can be reused and it prints
// "[MulBackward0] (Re-visited)" instead of descending to the shared ReluBackward0.)
const LAB_TEXT = `============================================================
          Ringi 动态计算图（DAG）拓扑遍历器
============================================================
└─► [MeanBackward0]
  └─► [AddBackward0]
    └─► [MmBackward0]
      └─► [ReluBackward0]
        └─► [AddBackward0]
          └─► [MmBackward0]
            └─► [AccumulateGrad] [Leaf Variable Shape: [2, 4], requires_grad=True]
            └─► [AccumulateGrad] [Leaf Variable Shape: [4, 8], requires_grad=True]
          └─► [AccumulateGrad] [Leaf Variable Shape: [8], requires_grad=True]
      └─► [AccumulateGrad] [Leaf Variable Shape: [8, 1], requires_grad=True]
    └─► [SumBackward0]
      └─► [MulBackward0]
        └─► [ReluBackward0] (Re-visited)`;

describe("torch.viz.graph", () => {
  it("prints the lab's text tree exactly and draws SVG and DOT", async () => {
    const { loss } = labGraph();
    const g = viz.graph(loss.grad_fn);
    expect(g.text).toBe(LAB_TEXT);
    const b = await g.bundle();
    expect(keys(b)).toEqual(["image/svg+xml", "text/html", "text/plain", "text/vnd.graphviz"]);
    expect(b["text/plain"]).toBe(LAB_TEXT);
    expectSvg(b["image/svg+xml"]);
    // 12 nodes, each drawn once, however many edges reach it (ReluBackward0 has two consumers).
    const dot = b["text/vnd.graphviz"] as string;
    expect(dot.match(/^\tn\d+ \[label=/gm)?.length).toBe(12);
    expect(dot.match(/label="ReluBackward0"/g)?.length).toBe(1);
    expect(dot.match(/ -> n\d+$/gm)?.length).toBe(12); // one per next_functions edge
  });

  it("names leaves from params, shows saved tensors once, and marks them released after backward", async () => {
    const { x, w1, b1, w2, loss } = labGraph();
    const before = viz.graph(loss, { show_saved: true, show_attrs: true, params: { x, w1, b1, w2 } }).dot;
    expect(before).toContain('[label="w1\\n(4, 8)" fillcolor=lightblue]');
    expect(before).toContain('[label="b1\\n(8,)" fillcolor=lightblue]');
    expect(before).toContain('label="output\\n()" fillcolor=darkolivegreen1');
    expect(before).toContain('label="_saved_mat2\\n(4, 8)\\n128 bytes, version 0" fillcolor=orange');
    expect(before).toContain("alpha: 1");
    // act is saved by MmBackward0 and ReluBackward0 (as its result): one box, two edges. act.mul(0.5)
    // saves no tensor, as in torch 1.13 (its _saved_self is None: the number needs no gradient).
    const actBox = before.match(/(s\d+) \[label="_saved_self\\n\(2, 8\)/)![1];
    expect(before.match(new RegExp(`\\t${actBox} -> n\\d+ \\[dir=none`, "g"))?.length).toBe(2);
    loss.backward();
    const after = viz.graph(loss.grad_fn, { show_saved: true });
    expect(after.dot).toContain("released, version 0");
    expect(after.dot).toContain('style="filled,dashed"');
    expect(after.text).toContain("· _saved_self (2, 4) released, version 0");
    expectSvg(await after.svg());
  });

  it("shows a stale saved tensor (modified in place after it was saved)", () => {
    const a = torch.randn(3, { requires_grad: true });
    const y = a.mul(2); // saves no tensor (a number's gradient is not needed), as in torch
    const z = y.pow(2); // PowBackward0 saves y
    y.add_(1);
    const dot = viz.graph(z, { show_saved: true }).dot;
    expect(dot).toContain("saved v0, now v1");
    expect(dot).toContain("fillcolor=tomato");
    expect(viz.saved_tensors(z).rows.map((r) => `${r.node} ${r.state}`)).toEqual(["PowBackward0 stale"]);
  });

  it("renders as a grad_fn's display", async () => {
    const { loss } = labGraph();
    const b = await show(loss.grad_fn);
    expect(keys(b)).toEqual(["image/svg+xml", "text/html", "text/plain", "text/vnd.graphviz"]);
    expect(b["text/plain"]).toContain("· _saved_result (2, 8) 64 bytes, version 0");
  });
});

describe("torch.viz.graph as people see it", () => {
  // Graphviz sizes boxes from its own metrics for the font it is told; browsers (which draw the SVG
  // as an <img>) and resvg draw with the machine's fonts. Courier is the one both agree on: Graphviz
  // knows its metrics exactly (0.6 em per character) and every monospace face Debian ships has them.
  it("uses Courier and sizes every box for Courier's 0.6 em advance", async () => {
    const { x, w1, b1, w2, loss } = labGraph();
    const g = viz.graph(loss, { show_saved: true, show_attrs: true, params: { x, w1, b1, w2 } });
    expect(g.dot).toContain("fontname=Courier");
    const svg = (await g.svg())!;
    const doc = new DOMParser().parseFromString(svg, "image/svg+xml");
    const nodes = Array.from(doc.getElementsByTagName("g")).filter((e) => e.getAttribute("class") === "node");
    expect(nodes.length).toBeGreaterThan(12);
    for (const n of nodes) {
      const pts = n
        .getElementsByTagName("polygon")[0]
        .getAttribute("points")!
        .trim()
        .split(/\s+/)
        .map((p) => Number(p.split(",")[0]));
      const boxWidth = Math.max(...pts) - Math.min(...pts);
      for (const t of Array.from(n.getElementsByTagName("text"))) {
        expect(t.getAttribute("font-family")).toMatch(/^Courier\b/);
        const size = Number(t.getAttribute("font-size"));
        const needed = [...(t.textContent ?? "")].length * 0.6 * size;
        expect(needed, `"${t.textContent}" in a ${boxWidth}pt box`).toBeLessThanOrEqual(boxWidth);
      }
    }
  });

  it("is a snapshot of the moment it was displayed, in every MIME type", async () => {
    const { loss } = labGraph();
    const pending = viz.graph(loss, { show_saved: true }).bundle();
    loss.backward(); // same cell, right after display(): must not show up in what was displayed
    const b = await pending;
    for (const mime of ["text/plain", "text/vnd.graphviz", "image/svg+xml"]) {
      expect(b[mime] as string, mime).not.toContain("released");
      expect(b[mime] as string, mime).toContain("64 bytes, version 0");
    }
    const later = await viz.graph(loss, { show_saved: true }).bundle();
    expect(later["image/svg+xml"] as string).toContain("released");
  });

  it("gives exporters an SVG without an XML declaration and a PNG fallback", async () => {
    const { loss } = labGraph();
    const b = await viz.graph(loss, { show_saved: true }).bundle();
    const svg = b["image/svg+xml"] as string;
    expect(svg.startsWith("<svg")).toBe(true); // lxml (nbconvert 6.5.3) refuses <?xml encoding=...?> in a str
    const html = b["text/html"] as string;
    expect(html).toMatch(/^<picture class="gradlab-figure"><source type="image\/svg\+xml" srcset="data:image\/svg\+xml;base64,/);
    const src = Buffer.from(html.match(/srcset="data:image\/svg\+xml;base64,([^"]+)"/)![1], "base64").toString("utf8");
    expect(src).toBe(svg);
    const png = Buffer.from(html.match(/<img src="data:image\/png;base64,([^"]+)"/)![1], "base64");
    expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
    // drawn at twice the SVG's CSS size; the <img> keeps the CSS size
    const [w, h] = [png.readUInt32BE(16), png.readUInt32BE(20)];
    const [cw, ch] = html
      .match(/width="(\d+)" height="(\d+)"/)!
      .slice(1)
      .map(Number);
    expect(Math.abs(w - 2 * cw)).toBeLessThanOrEqual(2);
    expect(Math.abs(h - 2 * ch)).toBeLessThanOrEqual(2);
  });
});

describe("PNG fallback", () => {
  it("draws Chinese text with a CJK font (the article's lab strings)", async () => {
    const { renderSvg, hasCjkFont } = await import("../src/viz/png.ts");
    expect(hasCjkFont(), "no CJK font: .ci/setup installs fonts-wqy-zenhei").toBe(true);
    const svgOf = (s: string) =>
      `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40"><text x="4" y="30" font-family="sans-serif" font-size="24">${s}</text></svg>`;
    const ink = async (s: string) => {
      const { pixels } = await renderSvg(svgOf(s), 1);
      let dark = 0;
      for (let i = 0; i < pixels.length; i += 4) if (pixels[i] < 128) dark++;
      return dark;
    };
    expect(await ink("")).toBe(0);
    expect(await ink("动态计算图")).toBeGreaterThan(200);
  });
});

describe("human byte counts", () => {
  it("show units with the exact count as a tooltip in tables, and exact bytes in plot tooltips", async () => {
    const big = torch.randn(1024, 1025, { requires_grad: true });
    const y = big.pow(2); // PowBackward0 saves big
    const t = await show(viz.saved_tensors(y.sum()));
    expect(t["text/html"]).toContain('<span title="4,198,400 bytes">4.00 MiB</span>');
    expect(t["text/html"]).not.toMatch(/>4198400</);
    const stages = viz.memory_stages([["a", 12669440]]);
    expect(JSON.stringify(stages.spec)).toContain('"allocated_bytes":12669440');
    expect(stages.text).toContain("12.08 MiB");
  });
});

describe("torch.Size", () => {
  it("prints a shape as torch.Size([2, 3]) once marked", async () => {
    const { asSize, isSize, sizeRepr } = await import("../src/format.ts");
    const { inspect } = await import("node:util");
    const s = asSize([2, 3]);
    expect(isSize(s)).toBe(true);
    expect(isSize([2, 3])).toBe(false);
    expect(inspect(s)).toBe("torch.Size([2, 3])");
    expect(sizeRepr([])).toBe("torch.Size([])");
    expect([...s]).toEqual([2, 3]);
    expect(JSON.stringify(s)).toBe("[2,3]");
  });
});

describe("torch.viz.saved_tensors", () => {
  it("lists each slot with version, state and the user tensor sharing its storage", async () => {
    const { x, w1, act, loss } = labGraph();
    const t = viz.saved_tensors(loss, { tensors: { x, w1, act } });
    const seq = t.rows.map((r) => r.sequence_nr);
    // what shares each storage: the user's tensors by name, then the other saved slots on it (two
    // MmBackward0 nodes: told apart by their sequence_nr)
    expect(t.rows.map((r) => [r.node, r.slot, r.shape.join("x"), r.state, r.shares_storage_with.join()])).toEqual([
      ["MmBackward0", "_saved_self", "2x8", "alive", "act,ReluBackward0._saved_result"],
      ["MmBackward0", "_saved_mat2", "8x1", "alive", ""],
      ["ReluBackward0", "_saved_result", "2x8", "alive", `act,MmBackward0#${seq[0]}._saved_self`],
      ["MmBackward0", "_saved_self", "2x4", "alive", "x"],
      ["MmBackward0", "_saved_mat2", "4x8", "alive", "w1"],
    ]);
    expect(viz.saved_tensors(loss, { x }).rows[3].shares_storage_with).toEqual(["x"]); // the map itself works too
    const b = await show(t);
    expect(keys(b)).toEqual(["text/html", "text/plain"]);
    // act (64 B) is saved by two nodes and held once: 64 + w2 32 + x 32 + w1 128 = 256 bytes
    expect(b["text/plain"]).toContain("5 saved tensor(s), 256 bytes still held (4 storage(s): a storage saved twice is held once)");
    expect(t.alive_bytes).toBe(256);
    expect(viz.saved_tensors(loss).rows[0].shares_storage_with).toEqual(["ReluBackward0._saved_result"]); // without names
    // a saved view keeps its base's whole storage
    const base = torch.randn(4, 8, { requires_grad: true });
    const part = base.mul(1).narrow(0, 0, 1); // a view of MulBackward0's 128-byte output
    const sq = part.pow(2);
    expect(viz.saved_tensors(sq).rows.map((r) => [r.node, r.bytes])).toEqual([["PowBackward0", 32]]);
    expect(viz.saved_tensors(sq).alive_bytes).toBe(128);
    loss.backward();
    expect(viz.saved_tensors(loss).rows.every((r) => r.state === "released" && r.current_version === null)).toBe(true);
  });
});

describe("tensor and module displays", () => {
  it("adds an HTML table with a metadata line to the tensor repr", async () => {
    const t = torch.tensor(
      [
        [1, 2, 3],
        [4, 5, 6],
      ],
      { requires_grad: true },
    );
    const b = await show(t);
    expect(keys(b)).toEqual(["text/html", "text/plain"]);
    expect(b["text/plain"]).toBe(await t.repr());
    const html = b["text/html"] as string;
    expect(html).toContain(">6.</td>");
    expect(html).toContain(
      'shape=torch.Size([2, 3]) · dtype=torch.float32 · device=webgpu:0 · requires_grad=True · grad_fn=None · _version=0 · bytes=<span title="24 bytes">24 bytes</span>',
    );
    const y = t.mul(2);
    expect((await show(y))["text/html"]).toContain("grad_fn=&lt;MulBackward0&gt;");
  });

  it("summarizes large tensors and leaves simulated ones without values", async () => {
    const big = torch.arange(1000, 3000).float().reshape([40, 50]);
    const html = (await show(big))["text/html"] as string;
    expect(html.match(/<tr>/g)?.length).toBe(8); // header, 3 rows, "…", 3 rows
    expect(html).toContain(">2999.</td>");
    using _sim = torch.cuda.simulate() as torch.autograd.Guard;
    const s = torch.randn(4, 4);
    const sb = await show(s);
    expect(sb["text/html"]).not.toContain("<table");
    expect(sb["text/html"]).toContain("shape=torch.Size([4, 4])");
  });

  it("summarizes a module: layers, parameter counts and bytes", async () => {
    const nn = torch.nn;
    const model = new nn.Sequential(new nn.Linear(4, 8), new nn.ReLU(), new nn.Linear(8, 2));
    const s = viz.module_summary(model);
    expect(s.total_params).toBe(58);
    expect(s.param_bytes).toBe(232);
    expect(s.text.split("\n").at(-1)).toBe("Total parameters: 58 (trainable 58), 232 bytes of parameters");
    const b = await show(model);
    expect(keys(b)).toEqual(["text/html", "text/plain"]);
    expect(b["text/plain"]).toBe(model.repr());
    expect(b["text/html"]).toContain("weight: [8, 4]; bias: [8]");
  });
});

describe("torch.viz.engine_trace", () => {
  it("shows the six steps of one backward", async () => {
    const v = torch.scope(() => {
      const w = torch.randn(4, 4, { requires_grad: true });
      // Forward temporaries die with the inner scope: the relu result lives on only as a saved tensor.
      const loss = torch.scope(() => torch.randn(8, 4).matmul(w).relu().sum());
      return { loss, ev: torch.autograd.trace(() => loss.backward()) };
    });
    const t = viz.engine_trace(v.ev);
    expect(t.steps.map((s) => s.node)).toEqual(["SumBackward0", "ReluBackward0", "MmBackward0", "AccumulateGrad"]);
    expect(t.dependencies.find((d) => d.node === "AccumulateGrad")!.sequence_nr).toBe("UINT64_MAX");
    // ReluBackward0's result is held only by the graph: releasing it frees its block.
    expect(t.steps[1].released).toEqual(["_saved_result"]);
    expect(t.steps[1].bytes_freed).toBe(512);
    const b = await show(t);
    expect(keys(b)).toEqual(["text/html", "text/plain"]);
    expect(b["text/plain"]).toMatch(/^1\. entry: 1 root\(s\) of shape \[\], retain_graph=False/);
  });
});

/** Synthetic events: n allocations and frees over forward, backward and optimizer. */
function syntheticEvents(n: number) {
  const ev: any[] = [];
  const live: number[] = [];
  const cats = ["activation", "autograd_temporary", "gradient", "optimizer_state"];
  for (let i = 0; i < n; i++) {
    const phase = i < n * 0.4 ? "forward" : i < n * 0.8 ? "backward" : "optimizer";
    const alloc = phase === "forward" || live.length === 0 || i % 3 !== 0;
    if (alloc) {
      live.push(i);
      ev.push({
        action: "alloc",
        time_us: i,
        device: "x",
        storage_id: 1e6 + i,
        size: 1024 * (1 + (i % 7)),
        requested: 0,
        addr: 0,
        op: null,
        node: null,
        phase,
        category: cats[i % 4],
        frames: [],
      });
    } else {
      const id = live.shift()!;
      ev.push({
        action: "free",
        time_us: i,
        device: "x",
        storage_id: 1e6 + id,
        size: 1024 * (1 + (id % 7)),
        requested: 0,
        addr: 0,
        op: null,
        node: null,
        phase,
        category: cats[id % 4],
        frames: [],
      });
    }
  }
  return ev;
}

describe("memory plots", () => {
  it("timeline: stacked categories, phase bands, the peak; valid Vega-Lite and SVG", async () => {
    torch.cuda.memory._record_memory_history("all");
    const w = torch.randn(64, 64, { requires_grad: true });
    const loss = torch.randn(32, 64).matmul(w).relu().sum();
    loss.backward();
    const snap = torch.cuda.memory._snapshot();
    torch.cuda.memory._record_memory_history(null);
    const tl = viz.memory_timeline(snap);
    const b = await show(tl);
    expect(keys(b)).toEqual(["application/vnd.vegalite.v5+json", "image/svg+xml", "text/markdown", "text/plain"]);
    expectValidSpec(b["application/vnd.vegalite.v5+json"]);
    expectSvg(b["image/svg+xml"]);
    expect(b["text/plain"]).toMatch(/^Memory timeline: \d+ events; peak [\d.]+ KiB at event \d+ \(backward\)/);
    expect(b["image/svg+xml"]).toContain("peak ");
  });

  it("keeps the exact peak of a 10,000-event recording in a few hundred points", () => {
    const ev = syntheticEvents(10_000);
    const s = viz.memory_series(ev);
    let cur = 0,
      peak = 0;
    for (const e of ev) peak = Math.max(peak, (cur += e.action === "alloc" ? e.size : -e.size));
    expect(s.peak.bytes).toBe(peak);
    expect(s.samples.length).toBeLessThanOrEqual(601);
    expect(Math.max(...s.samples.map((p) => p.total))).toBe(peak);
    expect(s.bands.map((b) => b.phase)).toEqual(["forward", "backward", "optimizer"]);
    expectValidSpec(viz.memory_timeline(ev).spec);
  });

  it("per-stage bars and side-by-side runs", async () => {
    const MiB = 2 ** 20;
    const st = viz.memory_stages([
      ["0. start", 0, 0],
      ["1. weights", 128 * MiB, 128 * MiB],
      ["7. backward", "416.00 MB", "448.00 MB"],
    ]);
    expect(st.text).toBe(
      [
        "stage        allocated   peak",
        "-----------  ----------  ----------",
        "0. start     0 bytes     0 bytes",
        "1. weights   128.00 MiB  128.00 MiB",
        "7. backward  416.00 MiB  448.00 MiB",
      ].join("\n"),
    );
    const cmp = viz.compare_runs({ plain: syntheticEvents(300), checkpointed: syntheticEvents(200) });
    for (const v of [st, cmp]) {
      const b = await show(v);
      expect(keys(b)).toEqual(["application/vnd.vegalite.v5+json", "image/svg+xml", "text/markdown", "text/plain"]);
      expectValidSpec(b["application/vnd.vegalite.v5+json"]);
      expectSvg(b["image/svg+xml"]);
    }
    expect(cmp.text.split("\n")[2]).toMatch(/^plain\s+300\s+/);
  });

  it("updates in place at most every throttle interval", async () => {
    const updates: unknown[] = [];
    const plot = viz.memory_timeline([]).show({ update: (o) => updates.push(o) });
    plot.throttle_ms = 10_000;
    expect(plot.update(syntheticEvents(10))).toBe(false); // shown just now: deferred
    expect(plot.update(syntheticEvents(20))).toBe(false);
    expect(updates.length).toBe(0);
    plot.flush();
    const sent = (i: number) => (updates[i] as Record<symbol, () => Record<string, unknown>>)[DISPLAY]();
    expect(updates.length).toBe(1);
    expect(sent(0)["text/plain"]).toMatch(/^Memory timeline: 20 events/);
    expect(sent(0)["text/markdown"]).toContain("data:image/png;base64,"); // the last redraw has the exporters' PNG
    expect(plot.summary.events).toBe(20);
    plot.throttle_ms = 0;
    expect(plot.update(syntheticEvents(30))).toBe(true);
    expect(updates.length).toBe(2);
    expect(sent(1)["text/markdown"]).toBeUndefined(); // redraws in a loop skip the PNG ...
    plot.flush();
    expect(updates.length).toBe(3); // ... and flush() (or the cell's end) sends the full one
    expect(sent(2)["text/markdown"]).toContain("data:image/png;base64,");
    expect(sent(2)["text/plain"]).toMatch(/^Memory timeline: 30 events/);
    expect((await plot.bundle())["text/plain"]).toMatch(/^Memory timeline: 30 events/);
  });

  it("redraws inside a loop that never awaits, each redraw a snapshot handed over at once", () => {
    const updates: Array<Record<symbol, () => Record<string, unknown>>> = [];
    const plot = viz.memory_timeline([]).show({ update: (o) => updates.push(o as never) });
    plot.throttle_ms = 30;
    const end = Date.now() + 400;
    let n = 10;
    while (Date.now() < end) plot.update(syntheticEvents((n += 10))); // no await anywhere
    expect(updates.length).toBeGreaterThanOrEqual(2);
    const texts = updates.map((u) => u[DISPLAY]()["text/plain"] as string);
    const counts = texts.map((t) => Number(t.match(/^Memory timeline: (\d+) events/)![1]));
    expect(counts).toEqual([...counts].sort((a, b) => a - b)); // in order, each its own moment
    expect(new Set(counts).size).toBe(counts.length);
  });
});
