// torch.viz.engine_trace(torch.autograd.trace(() => loss.backward())): the engine's six steps as
// tables — (1) the entry check, (2) dependency counts, then per node taken from the ready queue
// (3) the queue left behind, (4) apply with its incoming gradients, (5) saved tensors released and
// bytes freed, (6) gradients passed on, with each target's remaining dependency count.

import type { TraceEvent } from "../autograd/engine.ts";
import { Display, bytes, bytesHtml, esc, htmlTable, pyName, textTable, type MimeBundle } from "./common.ts";

/** AccumulateGrad's sequence_nr is UINT64_MAX (it runs as soon as it is ready). */
const seqStr = (n: number) => (n >= 2 ** 63 ? "UINT64_MAX" : String(n));

export interface EngineStep {
  step: number;
  node: string;
  sequence_nr: string | null;
  queue: string[];
  grads_in: string[];
  released: string[];
  bytes_freed: number;
  passes: string[];
}

export class EngineTraceView extends Display {
  readonly entry: Record<string, unknown> | null = null;
  readonly dependencies: Array<{ node: string; sequence_nr: string; dependencies: number }> = [];
  readonly steps: EngineStep[] = [];
  constructor(readonly events: TraceEvent[]) {
    super();
    // Remaining dependencies by node name where the name is unique (pass events carry names only).
    const left = new Map<string, number>();
    const dupes = new Set<string>();
    let cur: EngineStep | null = null;
    for (const e of events) {
      const d = e.detail as Record<string, any>;
      if (e.step === "entry") this.entry = d;
      else if (e.step === "dependencies") {
        for (const c of d.counts ?? []) {
          const row = { node: pyName(c.node), sequence_nr: seqStr(c.sequence_nr), dependencies: c.dependencies };
          this.dependencies.push(row);
          if (left.has(row.node)) dupes.add(row.node);
          left.set(row.node, row.dependencies);
        }
      } else if (e.step === "ready") {
        cur = {
          step: this.steps.length + 1,
          node: pyName(e.node ?? ""),
          sequence_nr: e.sequence_nr === undefined ? null : seqStr(e.sequence_nr),
          queue: (d.queue ?? []).map(pyName),
          grads_in: [],
          released: [],
          bytes_freed: 0,
          passes: [],
        };
        this.steps.push(cur);
      } else if (cur && e.step === "apply") cur.grads_in = (d.grads_in ?? []).map((g: string | null) => g ?? "None");
      else if (cur && e.step === "release") {
        cur.released.push(...(d.saved ?? []));
        cur.bytes_freed += d.bytes_freed ?? 0;
      } else if (cur && e.step === "pass") {
        const to = pyName(d.to);
        let deps = "";
        if (left.has(to) && !dupes.has(to)) {
          const n = left.get(to)! - 1;
          left.set(to, n);
          deps = `, deps left ${n}`;
        }
        cur.passes.push(`${to}[${d.input_nr}] ${d.shape}${deps}`);
      }
    }
  }

  get total_freed(): number {
    return this.steps.reduce((a, s) => a + s.bytes_freed, 0);
  }
  static readonly HEAD = ["#", "node (seq)", "ready queue after pop", "grads in", "released", "bytes freed", "passes to"];
  private cells(s: EngineStep): string[] {
    return [
      String(s.step),
      `${s.node} (${s.sequence_nr ?? "-"})`,
      s.queue.join(", ") || "(empty)",
      s.grads_in.join(", "),
      s.released.join(", "),
      s.bytes_freed ? bytes(s.bytes_freed) : s.released.length ? "0 bytes" : "",
      s.passes.join("; "),
    ];
  }
  private entryLine(): string {
    const e = this.entry ?? {};
    const roots = (e.roots as string[] | undefined) ?? [];
    return `1. entry: ${roots.length} root(s) of shape ${roots.join(", ")}, retain_graph=${e.retain_graph ? "True" : "False"}, create_graph=${e.create_graph ? "True" : "False"}`;
  }
  get text(): string {
    const deps = textTable(
      ["node", "seq", "dependencies"],
      this.dependencies.map((d) => [d.node, d.sequence_nr, d.dependencies]),
    );
    return [
      this.entryLine(),
      "2. dependency counts:",
      deps,
      "3-6. ready queue (highest sequence_nr first), apply, release saved tensors, pass gradients on:",
      textTable(
        EngineTraceView.HEAD,
        this.steps.map((s) => this.cells(s)),
      ),
      `${this.steps.length} nodes run, ${bytes(this.total_freed)} freed by releasing saved tensors`,
    ].join("\n");
  }
  protected build(): MimeBundle {
    const p = (s: string) => `<p style="font-family:monospace;font-size:12px;margin:4px 0">${esc(s)}</p>`;
    const html = [
      p(this.entryLine()),
      htmlTable(
        ["node", "seq", "dependencies"],
        this.dependencies.map((d) => [d.node, d.sequence_nr, d.dependencies]),
        "2. dependency counts",
      ),
      htmlTable(
        EngineTraceView.HEAD,
        this.steps.map((s) => this.cells(s).map((c, i) => (i === 5 && s.bytes_freed ? bytesHtml(s.bytes_freed) : c))),
        "3–6. ready queue, apply, release, pass",
      ),
      p(`${this.steps.length} nodes run, ${bytes(this.total_freed)} freed by releasing saved tensors`),
    ].join("");
    return { "text/plain": this.text, "text/html": html };
  }
  toString(): string {
    return this.text;
  }
}

/** torch.viz.engine_trace(events): a readable table of one backward pass. */
export function engine_trace(events: TraceEvent[]): EngineTraceView {
  return new EngineTraceView(events);
}
