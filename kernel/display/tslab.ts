// `import * as tslab from "tslab"` in a cell: the display API of tslab, the TypeScript kernel whose
// notebooks people already have, so those notebooks run here unchanged. tslab.display.<kind>(content)
// shows one output; tslab.newDisplay() gives a display whose first call shows an output and whose later
// calls replace it in place (display_data, then update_display_data with the same display_id). Built on
// the kernel's own display() (globals.ts), which the kernel installs before any cell runs.
import { randomUUID } from "node:crypto";
import { DISPLAY } from "./bundle.ts";

/** tslab's Display interface, as its typings declare it. */
export interface TslabDisplay {
  javascript(s: string): void;
  html(s: string): void;
  markdown(s: string): void;
  latex(s: string): void;
  svg(s: string): void;
  png(b: Uint8Array): void;
  jpeg(b: Uint8Array): void;
  gif(b: Uint8Array): void;
  pdf(b: Uint8Array): void;
  text(s: string): void;
  raw(contentType: string, b: string | Uint8Array): void;
}

type KernelDisplay = (obj: unknown, opts?: { display_id?: string; update?: boolean }) => unknown;

function kernelDisplay(): KernelDisplay {
  const d = (globalThis as { display?: KernelDisplay }).display;
  if (typeof d !== "function") throw new Error("tslab: no display() here (the module works inside a GradLab kernel)");
  return d;
}

class Display implements TslabDisplay {
  private shown = false;
  constructor(private readonly id?: string) {}
  raw(contentType: string, b: string | Uint8Array): void {
    if (typeof contentType !== "string" || !contentType.includes("/"))
      throw new TypeError(`tslab display: "${contentType}" is not a MIME type (e.g. "text/html")`);
    if (typeof b !== "string" && !(b instanceof Uint8Array))
      throw new TypeError(`tslab display.raw: content must be a string or a Uint8Array, got ${typeof b}`);
    // binary content travels base64-encoded, as Jupyter's display_data carries images
    const content = typeof b === "string" ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64");
    const update = this.id !== undefined && this.shown;
    if (this.id !== undefined) this.shown = true;
    // the MIME type asked for, and a text/plain that front ends without it can show (the kernel adds
    // one anyway: not an image's base64)
    const plain = typeof b === "string" ? b : `<${contentType}, ${b.byteLength} bytes>`;
    const bundle = { [DISPLAY]: () => ({ [contentType]: content, "text/plain": plain }) };
    void kernelDisplay()(bundle, this.id === undefined ? {} : { display_id: this.id, update });
  }
  javascript(s: string): void {
    this.raw("text/javascript", s);
  }
  html(s: string): void {
    this.raw("text/html", s);
  }
  markdown(s: string): void {
    this.raw("text/markdown", s);
  }
  latex(s: string): void {
    this.raw("text/latex", s);
  }
  svg(s: string): void {
    this.raw("image/svg+xml", s);
  }
  png(b: Uint8Array): void {
    this.raw("image/png", b);
  }
  jpeg(b: Uint8Array): void {
    this.raw("image/jpeg", b);
  }
  gif(b: Uint8Array): void {
    this.raw("image/gif", b);
  }
  pdf(b: Uint8Array): void {
    this.raw("application/pdf", b);
  }
  text(s: string): void {
    this.raw("text/plain", s);
  }
}

/** What `import * as tslab from "tslab"` gives a cell. */
export function tslabModule() {
  const display: TslabDisplay = new Display();
  return Object.freeze({
    display,
    /** A display entry of its own: the first call shows it, later calls overwrite it. */
    newDisplay: (): TslabDisplay => new Display(randomUUID()),
    /** Cells run in Node here, never in a browser. */
    isNode: true,
    isBrowser: false,
    [Symbol.toStringTag]: "Module",
  });
}
