// Vega-Lite v5 specs rendered to SVG in Node with vega (the fallback for front ends without a
// Vega renderer: classic Notebook, nbconvert HTML, GitHub), loaded on first use.

import type { MimeBundle } from "./common.ts";

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

/** The bundle of a plot: the Vega-Lite spec, its SVG and a text summary. */
export async function plotBundle(spec: object, text: string): Promise<MimeBundle> {
  return { [VEGALITE_MIME]: spec, "image/svg+xml": await vegaLiteToSvg(spec), "text/plain": text };
}
