// SVG -> PNG with resvg (Rust, through @resvg/resvg-js), for renderers that cannot show the SVG:
// Debian's nbconvert 6.5.3 passes image/svg+xml through lxml's clean_html, which keeps the <svg>
// element and drops every shape in it, so exported graphs and plots come out blank. The PNG is drawn
// with fonts from the machine: DejaVu for Latin text (Courier and monospace map to DejaVu Sans Mono,
// whose advance is Courier's 0.6 em, so Graphviz's boxes still fit), and a CJK font for the article's
// Chinese strings (fonts-wqy-zenhei or fonts-noto-cjk, which .ci/setup installs).

import { platform } from "../platform/current.ts";

type ResvgMod = typeof import("@resvg/resvg-js");
let mod: ResvgMod | null = null;
// A native addon: loaded synchronously, so a live plot can redraw inside a loop that never awaits.
// A browser has none (and needs no PNG: it draws the SVG): see canRasterize.
const load = (): ResvgMod => {
  mod ??= platform.requireSync<ResvgMod>("@resvg/resvg-js");
  if (!mod) throw new Error("no PNG renderer on this platform");
  return mod;
};
/** Whether SVG can be turned into PNG here (for exporters; a browser front end draws the SVG itself). */
export const canRasterize = () => platform.name === "node";

/** Font files GradLab gives resvg, where the machine has them (Debian paths). */
const FONT_FILES = [
  "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
  "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
  "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
  "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
  "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
  "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
  "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
];
/** CJK fonts known to GradLab's PNG fallback; the first one present is used for Chinese text. */
const CJK_FONT_FILES = FONT_FILES.slice(4);

let fontFiles: string[] | null = null;
function fonts(): { files: string[]; system: boolean } {
  fontFiles ??= FONT_FILES.filter((f) => platform.fileExists(f));
  // Without DejaVu (not Debian), let resvg look for the machine's fonts itself.
  return { files: fontFiles, system: !fontFiles.some((f) => f.includes("DejaVuSans.ttf")) };
}

/** Whether a CJK font is available for the PNG fallback. */
export function hasCjkFont(): boolean {
  return CJK_FONT_FILES.some((f) => platform.fileExists(f));
}

export interface Png {
  /** base64 of the PNG bytes */
  base64: string;
  /** the SVG's own size in CSS pixels (the PNG has `scale` times as many pixels) */
  width: number;
  height: number;
}

/** Renders an SVG document to PNG at `scale` pixels per CSS pixel, on a white background. */
export async function svgToPng(svg: string, scale = 2): Promise<Png> {
  return svgToPngSync(svg, scale);
}
/** svgToPng, synchronously. */
export function svgToPngSync(svg: string, scale = 2): Png {
  const r = renderSvgSync(svg, scale);
  return { base64: Buffer.from(r.png).toString("base64"), width: r.width, height: r.height }; // Node only (canRasterize)
}

/** The rendering itself: PNG bytes, RGBA pixels, and the SVG's CSS size. */
export async function renderSvg(svg: string, scale = 2): Promise<{ png: Uint8Array; pixels: Uint8Array; width: number; height: number }> {
  return renderSvgSync(svg, scale);
}
function renderSvgSync(svg: string, scale: number): { png: Uint8Array; pixels: Uint8Array; width: number; height: number } {
  const { Resvg } = load();
  const f = fonts();
  // resvg stops at the first family it cannot match ("Courier"): name the monospace face it has.
  const src = svg.replace(/font-family="[^"]*(?:Courier|monospace)[^"]*"/g, 'font-family="DejaVu Sans Mono"');
  const r = new Resvg(src, {
    background: "white",
    fitTo: { mode: "zoom", value: scale },
    font: {
      loadSystemFonts: f.system,
      fontFiles: f.files,
      defaultFontFamily: "DejaVu Sans",
      sansSerifFamily: "DejaVu Sans",
      serifFamily: "DejaVu Serif",
      monospaceFamily: "DejaVu Sans Mono",
    },
  });
  const img = r.render();
  return { png: img.asPng(), pixels: img.pixels, width: Math.round(r.width), height: Math.round(r.height) };
}
