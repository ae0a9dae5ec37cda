// Shared pieces of the inline displays: the Jupyter.display symbol, HTML escaping, tables, sizes.

import { formatBytes } from "../memory/format-bytes.ts";
import { sizeRepr } from "../format.ts";
import { platform } from "../platform/current.ts";

export const DISPLAY = Symbol.for("Jupyter.display");
export type MimeBundle = Record<string, unknown>;

export const esc = (s: unknown) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

export const bytes = formatBytes;
/** Exact byte count with thousands separators: 12,669,440 bytes. */
export const exactBytes = (n: number) => `${n.toLocaleString("en-US")} bytes`;
/** Human units in HTML with the exact count kept as a tooltip: <span title="12,669,440 bytes">12.08 MiB</span>. */
export const bytesHtml = (n: number) => ({ html: `<span title="${exactBytes(n)}">${esc(formatBytes(n))}</span>` });
export const shapeStr = sizeRepr;

/**
 * An SVG as a standalone fragment: no XML declaration or DOCTYPE. Debian's nbconvert 6.5.3 feeds
 * image/svg+xml to lxml as a str, which refuses one with an encoding declaration (the export crashes).
 */
export const svgFragment = (svg: string) =>
  svg
    .replace(/^\s*<\?xml[^>]*\?>\s*/, "")
    .replace(/^\s*<!DOCTYPE[^>]*>\s*/, "")
    .replace(/^(\s*<!--[\s\S]*?-->)+\s*/, "");

/**
 * A figure for exporters: a <picture> whose source is the SVG and whose <img> is the PNG. Browsers
 * draw the SVG; nbconvert 6.5.3's clean_html drops <picture>/<source> (and SVG data URLs) but keeps a
 * PNG data URL, so the export shows the PNG where it would otherwise show nothing.
 */
export function pictureHtml(svg: string, png: { base64: string; width: number; height: number }, alt: string): string {
  const svg64 = platform.base64(svg);
  return (
    `<picture class="gradlab-figure"><source type="image/svg+xml" srcset="data:image/svg+xml;base64,${svg64}">` +
    `<img src="data:image/png;base64,${png.base64}" width="${png.width}" height="${png.height}" alt="${esc(alt)}"></picture>`
  );
}
export { pyName } from "../autograd/names.ts";

export const TABLE_STYLE = "border-collapse:collapse;font-family:monospace;font-size:12px";
const CELL = "border:1px solid #ccc;padding:2px 6px;text-align:left";

/** An HTML table; cells are escaped unless given as {html}. */
export function htmlTable(head: string[], rows: unknown[][], caption?: string): string {
  const cell = (v: unknown, tag: string) =>
    `<${tag} style="${CELL}">${v && typeof v === "object" && "html" in (v as object) ? (v as { html: string }).html : esc(v ?? "")}</${tag}>`;
  return [
    `<table style="${TABLE_STYLE}">`,
    caption ? `<caption style="text-align:left;font-weight:bold">${esc(caption)}</caption>` : "",
    `<thead><tr>${head.map((h) => cell(h, "th")).join("")}</tr></thead>`,
    `<tbody>${rows.map((r) => `<tr>${r.map((c) => cell(c, "td")).join("")}</tr>`).join("")}</tbody>`,
    `</table>`,
  ].join("");
}

/** A fixed-width text table (columns padded to the widest cell). */
export function textTable(head: string[], rows: unknown[][]): string {
  const all = [head, ...rows.map((r) => r.map((c) => String(c ?? "")))];
  const w = head.map((_, i) => Math.max(...all.map((r) => [...String(r[i] ?? "")].length)));
  const line = (r: unknown[]) =>
    r
      .map((c, i) => String(c ?? "").padEnd(w[i]))
      .join("  ")
      .trimEnd();
  return [line(head), w.map((n) => "-".repeat(n)).join("  "), ...all.slice(1).map(line)].join("\n");
}

/**
 * A display object: `bundle()` builds the MIME bundle from the live objects each time it is shown (a
 * graph displayed again after backward shows its saved tensors released).
 */
export abstract class Display {
  protected abstract build(): MimeBundle | Promise<MimeBundle>;
  bundle(): Promise<MimeBundle> {
    return Promise.resolve(this.build());
  }
  /** The bundle itself where it can be built synchronously (so a kernel can send it at once, even
   *  from a loop that never awaits), else a promise of it. */
  [DISPLAY](): MimeBundle | Promise<MimeBundle> {
    return this.build();
  }
}
