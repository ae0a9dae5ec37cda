// Vega-Lite v5 specs rendered to SVG in Node with vega (the fallback for front ends without a
// Vega renderer: classic Notebook, nbconvert HTML, GitHub), loaded on first use.

import { pictureHtml, svgFragment, type MimeBundle } from "./common.ts";
import { canRasterize, svgToPngSync } from "./png.ts";
import { platform } from "../platform/current.ts";

export const VEGALITE_MIME = "application/vnd.vegalite.v5+json";
export const VEGALITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json";

type VegaMods = [typeof import("vega"), typeof import("vega-lite")];
let mods: VegaMods | null = null;
// Loaded synchronously (their CommonJS builds) on first use, so that a plot renders without awaiting:
// a live plot redraws from inside a loop that never yields to the event loop.
const load = (): VegaMods => {
  if (!mods) {
    const vega = platform.requireSync<VegaMods[0]>("vega");
    const vl = platform.requireSync<VegaMods[1]>("vega-lite");
    if (!vega || !vl) throw new Error("no Vega renderer on this platform");
    mods = [vega, vl];
  }
  return mods;
};

export async function vegaLiteToSvg(spec: object): Promise<string> {
  return vegaLiteToSvgSync(spec);
}

/**
 * Vega-Lite to SVG without awaiting: the dataflow runs synchronously (the specs here carry inline
 * data, nothing to load) and the scene is written by vega's SVG string renderer, sized as
 * view.toSVG() sizes it (the same text, measured by the tests).
 */
function vegaLiteToSvgSync(spec: object): string {
  const [vega, vl] = load();
  const compiled = vl.compile(spec as Parameters<typeof vl.compile>[0]).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: "none", logLevel: vega.Error });
  try {
    view.run();
    const v = view as unknown as { _viewWidth: number; _viewHeight: number; _origin: [number, number] };
    const pad = view.padding() as { left: number; right: number; top: number; bottom: number };
    type StringRenderer = {
      initialize(el: null, w: number, h: number, origin: number[], scale: number): void;
      background(c: unknown): void;
      render(scene: unknown): void;
      svg(): string | null;
    };
    const Renderer = (vega as unknown as { SVGStringRenderer: new (loader: unknown) => StringRenderer }).SVGStringRenderer;
    const r = new Renderer(view.loader());
    r.initialize(
      null,
      Math.max(0, v._viewWidth + pad.left + pad.right),
      Math.max(0, v._viewHeight + pad.top + pad.bottom),
      [pad.left + v._origin[0], pad.top + v._origin[1]],
      1,
    );
    r.background(view.background());
    r.render((view.scenegraph() as unknown as { root: unknown }).root);
    return r.svg() as string;
  } finally {
    view.finalize();
  }
}

/**
 * The bundle of a plot: the Vega-Lite spec (JupyterLab and Notebook 7 draw it with their Vega
 * extension), its SVG, a text summary, and a text/markdown <picture> of the SVG with a PNG inside for
 * exporters: nbconvert prefers markdown to SVG, and 6.5.3 blanks inline SVG (see pictureHtml). JupyterLab
 * ranks Vega (57) above markdown (60), so the live Vega view stays what Lab shows.
 */
export function plotBundle(spec: object, text: string, opts: { png?: boolean } = {}): MimeBundle {
  // In a browser (GradLab Lite) JupyterLab draws the spec itself and there is no exporter to serve:
  // the SVG and PNG, drawn by vega and resvg in Node, are left out.
  if (!canRasterize()) return { [VEGALITE_MIME]: spec, "text/plain": text };
  const svg = svgFragment(vegaLiteToSvgSync(spec));
  const title = (spec as { title?: unknown }).title;
  const b: MimeBundle = { [VEGALITE_MIME]: spec, "image/svg+xml": svg };
  if (opts.png !== false) b["text/markdown"] = pictureHtml(svg, svgToPngSync(svg), typeof title === "string" ? title : "memory plot");
  b["text/plain"] = text;
  return b;
}
