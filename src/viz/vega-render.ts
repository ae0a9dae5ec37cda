// Vega-Lite v5 specs rendered to SVG in Node with vega (the fallback for front ends without a
// Vega renderer: classic Notebook, nbconvert HTML, GitHub), loaded on first use.

import { pictureHtml, svgFragment, type MimeBundle } from "./common.ts";
import { svgToPng } from "./png.ts";

export const VEGALITE_MIME = "application/vnd.vegalite.v5+json";
export const VEGALITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json";

type VegaMods = [typeof import("vega"), typeof import("vega-lite")];
let mods: Promise<VegaMods> | null = null;
const load = () => (mods ??= Promise.all([import("vega"), import("vega-lite")]));

export async function vegaLiteToSvg(spec: object): Promise<string> {
  const [vega, vl] = await load();
  const compiled = vl.compile(spec as Parameters<typeof vl.compile>[0]).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: "none", logLevel: vega.Error });
  try {
    return await view.toSVG();
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
export async function plotBundle(spec: object, text: string): Promise<MimeBundle> {
  const svg = svgFragment(await vegaLiteToSvg(spec));
  const title = (spec as { title?: unknown }).title;
  const md = pictureHtml(svg, await svgToPng(svg), typeof title === "string" ? title : "memory plot");
  return { [VEGALITE_MIME]: spec, "image/svg+xml": svg, "text/markdown": md, "text/plain": text };
}
