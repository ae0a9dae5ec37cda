// torch.viz.stepper(loss): runs loss.backward() while recording what the engine does at each step
// (the node popped from the ready queue, the gradients it gets and passes on, the saved tensors it
// releases, memory_allocated around it), then shows the pass as a widget: a Play button and a slider
// over the steps, the graph with the running node highlighted, released tensors struck out and
// produced gradients written in, and a memory bar. The article's blocks 13–15, one step at a time.
//
// The steps are recorded with the engine's tracer, which names the node objects, so two nodes of one
// name are told apart; nothing of the graph is kept afterwards (backward frees it; the stepper must
// not hold it alive). Where no widget can show (gradlab run, nbconvert), the same display carries a
// static form: a table of the steps with their memory bars and the drawing after the last step.

import type { Node } from "../autograd/node.ts";
import { setTracer } from "../autograd/engine.ts";
import { reclaim } from "../memory/lifetime.ts";
import { Tensor } from "../tensor.ts";
import { RuntimeError } from "../errors.ts";
import { HBox, HTML, IntSlider, Layout, Play, VBox, jslink } from "../widgets/controls.ts";
import { commHost } from "../widgets/comm.ts";
import { WIDGET_VIEW_MIME } from "../widgets/widget.ts";
import { DISPLAY, esc, htmlTable, pictureHtml, pyName, svgFragment, type MimeBundle } from "./common.ts";
import { graphviz } from "./graph.ts";
import { leafOf, namesOf, reachable, savedInfo } from "./graph-walk.ts";
import { canRasterize, svgToPng } from "./png.ts";
import { caption, captionHtml, frameCount, frameDot, memoryAt, memoryBar, stepsText, type DrawnNode, type Recording, type StepRecord } from "./stepper-draw.ts";

export interface StepperOptions {
  /** Names for leaves, as torch.viz.graph's params: `{w: w}` or `model.named_parameters()`. */
  params?: Record<string, Tensor> | Iterable<[string, Tensor]>;
  /** The output's name in the drawing (default "loss"). */
  name?: string;
  /** Passed to backward: keep the saved tensors (then nothing is released). */
  retain_graph?: boolean;
  /** Milliseconds per step when playing (default 900). */
  interval?: number;
}

const KEYS = ["params", "name", "retain_graph", "interval"];

/** Runs loss.backward() under the engine's tracer and returns what each step did. */
function record(loss: Tensor, opts: StepperOptions): Recording {
  if (!(loss instanceof Tensor)) throw new TypeError(`stepper(loss): loss must be a Tensor, not ${loss === null ? "null" : typeof loss}`);
  if (!loss.grad_fn) throw new RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn");
  const graphNodes = reachable([loss.grad_fn]);
  const id = new Map<Node, string>(graphNodes.map((n, i) => [n, `n${i}`]));
  const names = namesOf(opts.params);
  const nodes: DrawnNode[] = graphNodes.map((n) => {
    const leaf = leafOf(n);
    return {
      id: id.get(n)!,
      name: pyName(n.name()),
      sequence_nr: leaf ? null : n.sequence_nr(),
      leaf: leaf ? { name: names.get(leaf._meta) ?? null, shape: [...leaf.shape] } : null,
      saved: [...n.savedVariables()].map(([k, sv]) => {
        const s = savedInfo(k, sv);
        return { slot: s.slot, shape: s.shape, bytes: s.bytes };
      }),
      next: n.next_functions.map(([m]) => (m ? (id.get(m) ?? null) : null)),
    };
  });
  const allocator = loss.storage.device.allocator;
  reclaim(); // what user code dropped before the call is not part of the picture
  const mem = () => allocator.allocated.all.current;
  const end = (s: StepRecord) => {
    s.mem_end = mem();
    s.mem_peak = Math.max(allocator.allocatedHighWater, s.mem_end);
  };
  const mem_before = mem();
  const steps: StepRecord[] = [];
  let cur: StepRecord | null = null;
  const label = (n: Node | undefined) => {
    if (!n) return "?";
    const leaf = leafOf(n);
    const nm = leaf ? names.get(leaf._meta) : undefined;
    return nm ? `${pyName(n.name())} (${nm})` : pyName(n.name());
  };
  const outer = setTracer((e, ns) => {
    const d = e.detail as Record<string, any>;
    if (e.step === "ready" && ns.node) {
      if (cur) end(cur);
      allocator.markHighWater();
      cur = {
        node: id.get(ns.node) ?? "?",
        name: label(ns.node),
        sequence_nr: leafOf(ns.node) ? null : ns.node.sequence_nr(),
        queue: (d.queue ?? []).map(pyName),
        grads_in: [],
        applied: false,
        released: [],
        bytes_freed: 0,
        passes: [],
        mem_start: mem(),
        mem_peak: 0,
        mem_end: 0,
      };
      steps.push(cur);
    } else if (cur && e.step === "apply") {
      cur.applied = true;
      cur.grads_in = (d.grads_in ?? []).filter((g: string | null) => g !== null);
    } else if (cur && e.step === "release") {
      cur.released.push(...(d.saved ?? []));
      cur.bytes_freed += d.bytes_freed ?? 0;
    } else if (cur && e.step === "pass" && ns.node && ns.to) {
      const node = ns.node;
      const to = ns.to;
      // the edge this gradient took: the first of the node's edges to `to` (with that input_nr) not yet used
      const used = new Set(cur.passes.map((p) => p.edge));
      const edge = node.next_functions.findIndex(([m, nr], i) => m === to && nr === d.input_nr && !used.has(i));
      cur.passes.push({ edge, to: label(to), shape: String(d.shape) });
    }
    outer?.(e, ns);
  });
  try {
    loss.backward({ retain_graph: !!opts.retain_graph });
  } finally {
    setTracer(outer);
  }
  const last = cur as StepRecord | null;
  if (last) end(last);
  return {
    nodes,
    root: { name: opts.name ?? "loss", shape: [...loss.shape], node: id.get(loss.grad_fn) ?? "n0" },
    steps,
    mem_before,
    retain_graph: !!opts.retain_graph,
  };
}

/** The graph drawn at each frame, rendered on demand and kept. */
class Frames {
  private svgs = new Map<number, string>();
  constructor(readonly rec: Recording) {}
  /** needs graphviz() loaded (every caller awaited it first) */
  svg(viz: { renderString(src: string, o: { format: string }): string }, f: number): string {
    let s = this.svgs.get(f);
    if (s === undefined) {
      s = svgFragment(viz.renderString(frameDot(this.rec, f), { format: "svg" }));
      this.svgs.set(f, s);
    }
    return s;
  }
}

export class StepperView {
  readonly recording: Recording;
  private readonly frames: Frames;
  private ui: { slider: IntSlider; play: Play; box: VBox } | null = null;
  constructor(
    loss: Tensor,
    private readonly opts: StepperOptions = {},
  ) {
    for (const k of Object.keys(opts ?? {})) if (!KEYS.includes(k)) throw new TypeError(`stepper() got an unexpected keyword argument '${k}'`);
    this.recording = record(loss, opts);
    this.frames = new Frames(this.recording);
  }

  /** Number of steps (the slider runs from 0, before backward, to this). */
  get steps(): number {
    return frameCount(this.recording) - 1;
  }
  /** What happens at step f, in words. */
  caption(f: number): string {
    return caption(this.recording, this.check(f));
  }
  /** memory_allocated at the end of step f (0: before backward). */
  memory_allocated(f: number): number {
    return memoryAt(this.recording, this.check(f));
  }
  /** The Graphviz source of the drawing at step f. */
  dot(f: number): string {
    return frameDot(this.recording, this.check(f));
  }
  private check(f: number): number {
    if (!Number.isInteger(f) || f < 0 || f > this.steps) throw new RangeError(`step ${f} out of range: this backward has steps 0 to ${this.steps}`);
    return f;
  }

  /** The slider (its value is the step shown), once the stepper has been displayed in a kernel with widgets. */
  get slider(): IntSlider | null {
    return this.ui?.slider ?? null;
  }

  /** The widget, built once (a second display shows the same models). */
  private async widget(): Promise<VBox | null> {
    if (this.ui) return this.ui.box;
    if (!commHost()) return null;
    const viz = await graphviz();
    const rec = this.recording;
    const n = this.steps;
    const play = new Play({ min: 0, max: n, value: 0, interval: this.opts.interval ?? 900, description: "", tooltip: "play the backward pass" });
    const slider = new IntSlider({ min: 0, max: n, value: 0, description: "step", continuous_update: true, layout: { width: "420px" } });
    jslink([play, "value"], [slider, "value"]);
    const cap = new HTML(captionHtml(rec, 0));
    const bar = new HTML(memoryBar(rec, 0));
    const drawing = new HTML({ value: this.drawingHtml(viz, 0), layout: new Layout({ overflow: "auto", max_width: "100%" }) });
    slider.observe((c) => {
      const f = c.new as number;
      // one message for the three: the caption, the bar and the drawing change together
      cap.value = captionHtml(rec, f);
      bar.value = memoryBar(rec, f);
      drawing.value = this.drawingHtml(viz, f);
    }, "value");
    const box = new VBox([new HBox([play, slider]), cap, bar, drawing]);
    this.ui = { slider, play, box };
    return box;
  }
  private drawingHtml(viz: Parameters<Frames["svg"]>[0], f: number): string {
    return `<div class="gradlab-stepper-graph" data-frame="${f}">${this.frames.svg(viz, f)}</div>`;
  }

  /** The static form: each step with its memory bar, and the graph after the last step. */
  private async staticHtml(): Promise<string> {
    const rec = this.recording;
    const viz = await graphviz();
    const last = this.steps;
    const svg = this.frames.svg(viz, last);
    const rows = Array.from({ length: last + 1 }, (_, f) => [f, { html: esc(caption(rec, f)) }, { html: memoryBar(rec, f, 160) }]);
    return [
      `<div class="gradlab-stepper-static">`,
      `<p style="font:13px sans-serif;margin:4px 0">torch.viz.stepper: the backward pass step by step (open the notebook in JupyterLab or Notebook 7 and run it to step through it).</p>`,
      htmlTable(["step", "what happens", "memory_allocated"], rows),
      `<p style="font:12px sans-serif;margin:6px 0 2px">After the last step:</p>`,
      // a platform without a rasteriser (GradLab Lite in a browser) shows the SVG alone
      canRasterize() ? pictureHtml(svg, await svgToPng(svg), "autograd graph after backward") : svgFragment(svg),
      `</div>`,
    ].join("");
  }

  [DISPLAY](): Promise<MimeBundle> {
    return (async () => {
      const box = await this.widget();
      const b: MimeBundle = { "text/plain": stepsText(this.recording), "text/html": await this.staticHtml() };
      if (box) b[WIDGET_VIEW_MIME] = (box as unknown as Record<symbol, () => MimeBundle>)[DISPLAY]()[WIDGET_VIEW_MIME];
      return b;
    })();
  }
  toString(): string {
    return stepsText(this.recording);
  }
}

/**
 * torch.viz.stepper(loss, {params, name, retain_graph, interval}): runs loss.backward() and shows it step
 * by step (use it instead of loss.backward()). A cell's last expression, or display(stepper).
 */
export function stepper(loss: Tensor, opts: StepperOptions = {}): StepperView {
  return new StepperView(loss, opts);
}
