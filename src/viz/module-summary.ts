// torch.viz.module_summary(model): each module (named_modules order) with its type, its own
// parameters (shapes), parameter counts, trainable counts and bytes, plus buffers and the totals.

import type { Tensor } from "../tensor.ts";
import { Display, bytes, bytesHtml, esc, htmlTable, textTable, type MimeBundle } from "./common.ts";

interface ModuleLike {
  named_modules(): Iterable<[string, ModuleLike]>;
  named_parameters(opts?: { recurse?: boolean }): Iterable<[string, Tensor]>;
  named_buffers(opts?: { recurse?: boolean }): Iterable<[string, Tensor]>;
  _get_name(): string;
  extra_repr(): string;
}

export interface ModuleRow {
  name: string;
  depth: number;
  type: string;
  extra: string;
  params: number;
  trainable: number;
  bytes: number;
  shapes: string[];
}

export class ModuleSummaryView extends Display {
  readonly rows: ModuleRow[] = [];
  readonly total_params: number;
  readonly trainable_params: number;
  readonly param_bytes: number;
  readonly buffer_bytes: number;
  constructor(readonly model: ModuleLike) {
    super();
    const seen = new Set<unknown>(); // shared parameters are counted once, where first met
    for (const [name, m] of model.named_modules()) {
      let params = 0,
        trainable = 0,
        nbytes = 0;
      const shapes: string[] = [];
      for (const [pn, p] of m.named_parameters({ recurse: false })) {
        shapes.push(`${pn}: [${p.shape.join(", ")}]`);
        if (seen.has(p._meta)) continue;
        seen.add(p._meta);
        const n = p.numel();
        params += n;
        if (p.requires_grad) trainable += n;
        nbytes += p.nbytes;
      }
      const extra = m.extra_repr();
      this.rows.push({
        name: name || "(root)",
        depth: name ? name.split(".").length : 0,
        type: m._get_name(),
        extra,
        params,
        trainable,
        bytes: nbytes,
        shapes,
      });
    }
    this.total_params = this.rows.reduce((a, r) => a + r.params, 0);
    this.trainable_params = this.rows.reduce((a, r) => a + r.trainable, 0);
    this.param_bytes = this.rows.reduce((a, r) => a + r.bytes, 0);
    this.buffer_bytes = [...model.named_buffers()].reduce((a, [, b]) => a + b.nbytes, 0);
  }

  static readonly HEAD = ["module", "type", "parameters", "trainable", "bytes", "shapes"];
  private cells(r: ModuleRow): string[] {
    const n = (v: number) => v.toLocaleString("en-US");
    return [
      `${"  ".repeat(r.depth)}${r.name}`,
      r.extra ? `${r.type}(${r.extra})` : r.type,
      n(r.params),
      n(r.trainable),
      r.params ? bytes(r.bytes) : "",
      r.shapes.join("; "),
    ];
  }
  get footer(): string {
    return (
      `Total parameters: ${this.total_params.toLocaleString("en-US")} (trainable ${this.trainable_params.toLocaleString("en-US")}), ` +
      `${bytes(this.param_bytes)} of parameters${this.buffer_bytes ? `, ${bytes(this.buffer_bytes)} of buffers` : ""}`
    );
  }
  get text(): string {
    return `${textTable(
      ModuleSummaryView.HEAD,
      this.rows.map((r) => this.cells(r)),
    )}\n${this.footer}`;
  }
  protected build(): MimeBundle {
    const rows = this.rows.map((r) =>
      this.cells(r).map((c, i) => (i === 0 ? { html: `${"&nbsp;&nbsp;".repeat(r.depth)}${esc(r.name)}` } : i === 4 && r.params ? bytesHtml(r.bytes) : c)),
    );
    return {
      "text/plain": this.text,
      "text/html": `${htmlTable(ModuleSummaryView.HEAD, rows, this.model._get_name())}<div style="font-family:monospace;font-size:12px">${esc(this.footer)}</div>`,
    };
  }
  toString(): string {
    return this.text;
  }
}

/** torch.viz.module_summary(model): layers, parameter counts and bytes. */
export function module_summary(model: ModuleLike): ModuleSummaryView {
  return new ModuleSummaryView(model);
}
