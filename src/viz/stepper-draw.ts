// What torch.viz.stepper draws for one moment of a backward pass: the graph (Graphviz DOT) with the node
// that runs highlighted, the saved tensors it releases struck out, the gradients it produces written
// on their edges and on the leaves; a caption; and a memory bar. Everything is read from plain data
// recorded before and during backward (stepper.ts), never from the live graph, which backward frees.
//
// Every frame's DOT has the same nodes, edges and label texts; only colours, strokes and the
// strike-through differ, so Graphviz lays each frame out the same way and the drawing stays still
// while the slider moves. Text that appears later (a gradient) is there from the start, transparent.

import { bytes, esc } from "./common.ts";

interface SavedBox {
  slot: string;
  shape: number[];
  bytes: number;
}
export interface DrawnNode {
  id: string;
  name: string;
  sequence_nr: number | null;
  /** for AccumulateGrad: the leaf's name (from params) and shape */
  leaf: { name: string | null; shape: number[] } | null;
  saved: SavedBox[];
  /** next_functions, in order: the drawn node each edge comes from (null: none) */
  next: Array<string | null>;
}
export interface StepRecord {
  node: string;
  name: string;
  sequence_nr: number | null;
  queue: string[];
  grads_in: string[];
  /** whether apply ran (a node reached with no gradient is popped and skipped) */
  applied: boolean;
  released: string[];
  bytes_freed: number;
  /** gradients passed on: index into the node's next list, and the shape */
  passes: Array<{ edge: number; to: string; shape: string }>;
  mem_start: number;
  /** the highest memory_allocated while the step ran (its gradients and temporaries alive at once) */
  mem_peak: number;
  mem_end: number;
}
export interface Recording {
  nodes: DrawnNode[];
  root: { name: string; shape: number[]; node: string };
  steps: StepRecord[];
  mem_before: number;
  retain_graph: boolean;
}

const shapeTuple = (s: readonly number[]) => `(${s.join(", ")}${s.length === 1 ? "," : ""})`;
const seqText = (n: number | null) => (n === null || n >= 2 ** 63 ? "" : ` (${n})`);
/** Graphviz HTML-like label text (the label is <...>: & < > must be entities). */
const h = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

const COLOURS = {
  running: "#ffd54f",
  runningEdge: "#d32f2f",
  waiting: "lightgrey",
  done: "#f2f2f2",
  leaf: "lightblue",
  saved: "orange",
  grad: "#1565c0",
};

/** The node's state at frame f (0 = before backward; k = step k ran). */
function stepOf(rec: Recording): Map<string, number> {
  const m = new Map<string, number>();
  rec.steps.forEach((s, i) => {
    if (!m.has(s.node)) m.set(s.node, i + 1);
  });
  return m;
}

/** The DOT source of frame f. */
export function frameDot(rec: Recording, f: number): string {
  const ranAt = stepOf(rec);
  const releasedAt = new Map<string, number>();
  const passedAt = new Map<string, { step: number; shape: string }>();
  rec.steps.forEach((s, i) => {
    for (const slot of s.released) releasedAt.set(`${s.node}:${slot}`, i + 1);
    for (const p of s.passes) passedAt.set(`${s.node}:${p.edge}`, { step: i + 1, shape: p.shape });
  });
  const lines = [
    "digraph {",
    "\tgraph [rankdir=TB bgcolor=white nodesep=0.3 ranksep=0.35 pad=0.1]",
    "\tnode [fontname=Courier fontsize=10 height=0.2 shape=box style=filled]",
    // arrows point the way gradients flow (from a node to its next_functions); the layout is torchviz's
    "\tedge [fontname=Courier fontsize=9 dir=back]",
  ];
  const rootNode = rec.root.node;
  lines.push(`\tout [label=<${h(rec.root.name)}<BR/>${h(shapeTuple(rec.root.shape))}> fillcolor=darkolivegreen1]`);
  lines.push(`\t${rootNode} -> out`);
  for (const n of rec.nodes) {
    const at = ranAt.get(n.id);
    const state = at === undefined || at > f ? "waiting" : at === f ? "running" : "done";
    const stroke = state === "running" ? ` color="${COLOURS.runningEdge}" penwidth=3` : "";
    const font = state === "done" ? ' fontcolor="gray35"' : "";
    if (n.leaf) {
      // the leaf's .grad: written once its AccumulateGrad has run
      const g = at !== undefined && at <= f ? COLOURS.grad : "transparent";
      const title = n.leaf.name ?? "AccumulateGrad";
      const fill = state === "running" ? COLOURS.running : COLOURS.leaf;
      lines.push(
        `\t${n.id} [label=<${h(title)}<BR/>${h(shapeTuple(n.leaf.shape))}<BR/><FONT COLOR="${g}">.grad ${h(shapeTuple(n.leaf.shape))}</FONT>> fillcolor="${fill}"${stroke}${font}]`,
      );
    } else {
      const fill = state === "running" ? COLOURS.running : state === "done" ? COLOURS.done : COLOURS.waiting;
      lines.push(`\t${n.id} [label=<${h(n.name + seqText(n.sequence_nr))}> fillcolor="${fill}"${stroke}${font}]`);
    }
    n.next.forEach((from, i) => {
      if (!from) return;
      const p = passedAt.get(`${n.id}:${i}`);
      const text = p ? `grad ${p.shape}` : "";
      const shown = p && p.step <= f;
      const now = p && p.step === f;
      const attrs = [
        text ? `label=<<FONT COLOR="${shown ? (now ? COLOURS.runningEdge : COLOURS.grad) : "transparent"}">${h(text)}</FONT>>` : "",
        now ? `color="${COLOURS.runningEdge}" penwidth=2.5` : "",
      ].filter(Boolean);
      lines.push(`\t${from} -> ${n.id}${attrs.length ? ` [${attrs.join(" ")}]` : ""}`);
    });
    n.saved.forEach((s, i) => {
      const r = releasedAt.get(`${n.id}:${s.slot}`);
      const gone = r !== undefined && r <= f;
      const body = `${h(s.slot)}<BR/>${h(shapeTuple(s.shape))}<BR/>${h(bytes(s.bytes))}`;
      const label = gone ? `<S>${body}</S>` : body;
      const border = r === f ? `penwidth=2.5 color="${COLOURS.runningEdge}"` : "color=gray50";
      const style = gone ? ` style="filled,dashed" fillcolor=white fontcolor=gray50 ${border}` : ` fillcolor="${COLOURS.saved}"`;
      lines.push(`\t${n.id}_s${i} [label=<${label}>${style}]`);
      lines.push(`\t${n.id}_s${i} -> ${n.id} [dir=none style=dashed]`);
    });
  }
  lines.push("}");
  return lines.join("\n");
}

/** Frames: 0 (before backward), then one per node the engine popped. */
export const frameCount = (rec: Recording) => rec.steps.length + 1;

/** memory_allocated at the end of frame f. */
export const memoryAt = (rec: Recording, f: number) => (f === 0 ? rec.mem_before : rec.steps[f - 1].mem_end);

/** The largest figure the bar must hold (its full width). */
function barScale(rec: Recording): number {
  return Math.max(rec.mem_before, ...rec.steps.flatMap((s) => [s.mem_start, s.mem_end, s.mem_peak]), 1);
}

/** The memory bar of frame f: memory_allocated after the step, and (lighter) the step's own peak. */
export function memoryBar(rec: Recording, f: number, width = 420): string {
  const scale = barScale(rec);
  const now = memoryAt(rec, f);
  const high = f > 0 ? Math.max(rec.steps[f - 1].mem_peak, now) : now;
  const pct = (b: number) => `${((100 * b) / scale).toFixed(2)}%`;
  const note = high > now ? ` · peak during this step ${bytes(high)}` : "";
  return (
    `<div class="gradlab-membar" data-bytes="${now}" style="font:12px monospace;margin:4px 0">` +
    `<div style="position:relative;width:${width}px;height:14px;border:1px solid #888;background:#fafafa;display:inline-block;vertical-align:middle">` +
    `<div style="position:absolute;left:0;top:0;bottom:0;width:${pct(high)};background:#f4b183"></div>` +
    `<div class="gradlab-membar-now" style="position:absolute;left:0;top:0;bottom:0;width:${pct(now)};background:#4472c4"></div></div>` +
    ` <span title="${now.toLocaleString("en-US")} bytes">memory_allocated ${esc(bytes(now))}</span>${esc(note)}</div>`
  );
}

/** One line saying what happens at frame f. */
export function caption(rec: Recording, f: number): string {
  const n = frameCount(rec) - 1;
  if (f === 0) {
    const saved = rec.nodes.reduce((a, x) => a + x.saved.length, 0);
    return `Before backward: ${rec.nodes.length} nodes, ${saved} saved tensors held by the graph. Press ▶ or drag the slider.`;
  }
  const s = rec.steps[f - 1];
  const accumulates = s.name.startsWith("AccumulateGrad");
  const parts = [`Step ${f} of ${n}: ${s.name}${seqText(s.sequence_nr)} ${s.applied ? "runs" : "is popped with no gradient and skipped"}`];
  if (s.applied && s.grads_in.length) parts.push(`on grad ${s.grads_in.map((g) => (g === "[]" ? "[] (a scalar)" : g)).join(", ")}`);
  if (s.released.length)
    parts.push(`releases ${s.released.join(", ")} (${s.bytes_freed ? `frees ${bytes(s.bytes_freed)}` : "frees nothing: still held elsewhere"})`);
  else if (s.applied && !rec.retain_graph && !accumulates) parts.push("saved nothing");
  if (accumulates && s.applied) parts.push("writes the leaf's .grad");
  if (s.passes.length) parts.push(`passes ${s.passes.map((p) => `grad ${p.shape} to ${p.to}`).join(", ")}`);
  if (s.queue.length) parts.push(`ready queue: ${s.queue.join(", ")}`);
  return `${parts.join(" · ")}.`;
}

/** The caption as the widget shows it. */
export const captionHtml = (rec: Recording, f: number) =>
  `<div class="gradlab-step-caption" data-frame="${f}" style="font:13px sans-serif;margin:2px 0">${esc(caption(rec, f))}</div>`;

/** Every frame as a text table: the stepper's text/plain (gradlab run, a terminal). */
export function stepsText(rec: Recording): string {
  const peak = (f: number) => (f === 0 ? "" : bytes(rec.steps[f - 1].mem_peak));
  const rows = Array.from(
    { length: frameCount(rec) },
    (_, f) => `${String(f).padStart(4)}  ${bytes(memoryAt(rec, f)).padStart(11)}  ${peak(f).padStart(11)}  ${caption(rec, f)}`,
  );
  return [
    `torch.viz.stepper: ${frameCount(rec) - 1} steps of backward`,
    `step  ${"allocated".padStart(11)}  ${"step peak".padStart(11)}  what happens`,
    ...rows,
  ].join("\n");
}
