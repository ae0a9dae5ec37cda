// torch.viz.graph(root, {show_saved, show_attrs, params}): a backward graph drawn as torchviz's
// make_dot draws it (Graphviz via @viz-js/viz, edges pointing toward the output), as the article's
// print_computation_graph text tree, and as DOT source. Each node is drawn once, however many
// edges reach it; saved tensors are drawn beside the node that saved them.

import type { Node } from "../autograd/node.ts";
import type { Tensor } from "../tensor.ts";
import { Display, bytes, pictureHtml, pyName, svgFragment, type MimeBundle } from "./common.ts";
import { canRasterize, svgToPng } from "./png.ts";
import { isNode, leafOf, namesOf, reachable, savedAttrs, savedInfo, type Root, type SavedInfo } from "./graph-walk.ts";

export interface GraphOptions {
  /** Draw each node's saved tensors (shape, bytes, saved vs current version, released). Default false. */
  show_saved?: boolean;
  /** Show non-tensor saved attributes (dim, alpha, ...). Default false. */
  show_attrs?: boolean;
  /** Names for leaves, as make_dot's params: `{w: w}` or `model.named_parameters()`. */
  params?: Record<string, Tensor> | Iterable<[string, Tensor]>;
  /** Above this many nodes the SVG is left out (Graphviz layout grows fast); text and DOT remain. */
  max_svg_nodes?: number;
}

const dotStr = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;
const sizeTuple = (s: readonly number[]) => `(${s.join(", ")}${s.length === 1 ? "," : ""})`;
const attrValue = (v: unknown): string => {
  const s = Array.isArray(v) ? `[${v.join(", ")}]` : typeof v === "object" && v !== null ? JSON.stringify(v) : String(v);
  return s.length > 50 ? `${s.slice(0, 47)}...` : s;
};

function savedLabel(s: SavedInfo): string {
  const version =
    s.currentVersion === null
      ? `version ${s.savedVersion}`
      : s.currentVersion === s.savedVersion
        ? `version ${s.savedVersion}`
        : `saved v${s.savedVersion}, now v${s.currentVersion}`;
  const state = s.released ? "released" : s.packed ? "packed by hooks" : bytes(s.bytes);
  return `${s.slot}\n${sizeTuple(s.shape)}\n${state}, ${version}`;
}
const savedState = (s: SavedInfo) => (s.released ? "released" : s.currentVersion !== null && s.currentVersion !== s.savedVersion ? "stale" : "alive");

export class GraphView extends Display {
  readonly roots: Array<Tensor | Node>;
  readonly nodes: Node[];
  private readonly names: Map<unknown, string>;
  constructor(
    root: Root | Root[],
    readonly opts: GraphOptions = {},
  ) {
    super();
    const list = (Array.isArray(root) ? root : [root]).filter((r): r is Tensor | Node => r != null);
    this.roots = list;
    const fns = list.map((r) => (isNode(r) ? r : (r as Tensor).grad_fn)).filter((n): n is Node => !!n);
    this.nodes = reachable(fns);
    this.names = namesOf(opts.params);
  }

  private leafName(n: Node): string | null {
    const v = leafOf(n);
    return v ? (this.names.get(v._meta) ?? null) : null;
  }

  /** DOT source, with node ids numbered in visit order (stable for the same graph). */
  get dot(): string {
    const id = new Map<Node, string>(this.nodes.map((n, i) => [n, `n${i}`]));
    const lines = [
      "digraph {",
      '\tgraph [rankdir=TB size="12,12"]',
      "\tnode [align=left fontname=Courier fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]",
    ];
    this.roots.forEach((r, i) => {
      if (isNode(r)) return;
      const t = r as Tensor;
      lines.push(`\tt${i} [label=${dotStr(`${this.names.get(t._meta) ?? "output"}\n${sizeTuple(t.shape)}`)} fillcolor=darkolivegreen1]`);
      if (t.grad_fn) lines.push(`\t${id.get(t.grad_fn)} -> t${i}`);
    });
    const savedIds = new Map<string, string>();
    let nSaved = 0;
    for (const n of this.nodes) {
      const leaf = leafOf(n);
      if (leaf) {
        const label = `${this.leafName(n) ?? "AccumulateGrad"}\n${sizeTuple(leaf.shape)}`;
        lines.push(`\t${id.get(n)} [label=${dotStr(label)} fillcolor=lightblue]`);
      } else {
        let label = pyName(n.name());
        if (this.opts.show_attrs) {
          const attrs = savedAttrs(n).map(([k, v]) => `${k}: ${attrValue(v)}`);
          if (attrs.length) label += `\n${"-".repeat(Math.max(label.length, ...attrs.map((a) => a.length)))}\n${attrs.join("\n")}`;
        }
        lines.push(`\t${id.get(n)} [label=${dotStr(label)} fillcolor=lightgrey]`);
      }
      for (const [next] of n.next_functions) if (next) lines.push(`\t${id.get(next)} -> ${id.get(n)}`);
      if (!this.opts.show_saved) continue;
      for (const [k, sv] of n.savedVariables()) {
        const s = savedInfo(k, sv);
        // A tensor saved by several nodes (same storage and shape) is drawn once.
        const key = s.storage ? `${storageKey(s.storage)}:${s.shape.join("x")}` : `free${nSaved}`;
        let sid = savedIds.get(key);
        if (!sid) {
          sid = `s${nSaved++}`;
          savedIds.set(key, sid);
          const st = savedState(s);
          const style =
            st === "released"
              ? 'style="filled,dashed" fillcolor=white fontcolor=gray50 color=gray50'
              : st === "stale"
                ? "fillcolor=tomato"
                : "fillcolor=orange";
          lines.push(`\t${sid} [label=${dotStr(savedLabel(s))} ${style}]`);
        }
        lines.push(`\t${sid} -> ${id.get(n)} [dir=none style=dashed]`);
      }
    }
    lines.push("}");
    return lines.join("\n");
  }

  /** The text tree of the article's print_computation_graph lab (same header, prefixes and marks). */
  get text(): string {
    const out = ["=".repeat(60), "          Ringi 动态计算图（DAG）拓扑遍历器", "=".repeat(60)];
    const visited = new Set<Node>();
    const fns = this.roots.map((r) => (isNode(r) ? r : (r as Tensor).grad_fn)).filter((n): n is Node => !!n);
    const stack: Array<[Node, number]> = fns.map((n) => [n, 0] as [Node, number]).reverse();
    while (stack.length) {
      const [n, indent] = stack.pop()!;
      const again = visited.has(n);
      visited.add(n);
      const leaf = leafOf(n);
      const extra = leaf ? ` [Leaf Variable Shape: [${leaf.shape.join(", ")}], requires_grad=${leaf.requires_grad ? "True" : "False"}]` : "";
      const name = this.leafName(n);
      out.push(`${"  ".repeat(indent)}└─► [${pyName(n.name())}]${extra}${name ? ` (${name})` : ""}${again ? " (Re-visited)" : ""}`);
      if (again) continue;
      if (this.opts.show_saved) {
        for (const [k, sv] of n.savedVariables()) {
          const s = savedInfo(k, sv);
          out.push(`${"  ".repeat(indent + 1)}    · ${savedLabel(s).replace(/\n/g, " ")}`);
        }
      }
      const next = n.next_functions.map(([m]) => m).filter((m): m is Node => !!m);
      for (let i = next.length - 1; i >= 0; i--) stack.push([next[i], indent + 1]);
    }
    return out.join("\n");
  }

  /** The Graphviz SVG of the graph as it is now (null past max_svg_nodes). */
  async svg(): Promise<string | null> {
    return this.renderSvg(this.dot);
  }
  private async renderSvg(dot: string): Promise<string | null> {
    if (this.nodes.length > (this.opts.max_svg_nodes ?? 2000)) return null;
    const viz = await graphviz();
    return svgFragment(viz.renderString(dot, { format: "svg" }));
  }

  /**
   * The MIME bundle of the graph at the moment of the call: text and DOT are read synchronously, and the
   * SVG is drawn from that DOT, so `display(graph); loss.backward()` shows the graph before backward.
   */
  protected build(): Promise<MimeBundle> {
    const dot = this.dot;
    const text = this.text;
    return (async () => {
      const b: MimeBundle = { "text/plain": text, "text/vnd.graphviz": dot };
      const svg = await this.renderSvg(dot);
      if (svg) {
        b["image/svg+xml"] = svg;
        // For exporters that cannot show image/svg+xml (see pictureHtml); browsers still draw the SVG.
        if (canRasterize()) b["text/html"] = pictureHtml(svg, await svgToPng(svg), "autograd graph");
      }
      return b;
    })();
  }
  toString(): string {
    return this.text;
  }
}

const storageIds = new WeakMap<object, number>();
let nextStorageKey = 0;
function storageKey(s: object): number {
  let k = storageIds.get(s);
  if (k === undefined) storageIds.set(s, (k = nextStorageKey++));
  return k;
}

type Viz = { renderString(src: string, o: { format: string }): string };
let vizInstance: Promise<Viz> | null = null;
/** Graphviz compiled to WebAssembly, loaded on first use. */
export function graphviz(): Promise<Viz> {
  vizInstance ??= import("@viz-js/viz").then((m) => m.instance() as Promise<Viz>);
  return vizInstance;
}

/** torch.viz.graph(root, opts): the backward graph of a tensor (or grad_fn, or several) as a display. */
export function graph(root: Root | Root[], opts: GraphOptions = {}): GraphView {
  return new GraphView(root, opts);
}
