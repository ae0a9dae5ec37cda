// What cells see: display(), clear_output(), prompt()/input(), comms, and the display helpers.
import { randomUUID } from "node:crypto";
import { toBundle, rawBundle, type Bundle } from "./bundle.ts";
import type { Kernel } from "../kernel.ts";

export interface DisplayOptions {
  display_id?: string | boolean;
  update?: boolean;
  metadata?: Record<string, unknown>;
}

export interface DisplayHandle {
  display_id: string;
  update(obj: unknown, opts?: { metadata?: Record<string, unknown> }): void | Promise<void>;
}

export function installGlobals(k: Kernel): void {
  const parent = () => k.currentParent();

  const send = (b: Bundle, opts: DisplayOptions, id: string | undefined) => {
    const content: any = { data: b.data, metadata: { ...b.metadata, ...(opts.metadata ?? {}) }, transient: id ? { display_id: id } : {} };
    k.publish(opts.update ? "update_display_data" : "display_data", content, parent());
  };

  function display(obj: unknown, opts: DisplayOptions = {}): DisplayHandle | undefined | Promise<DisplayHandle | undefined> {
    const id = opts.display_id === true ? randomUUID() : typeof opts.display_id === "string" ? opts.display_id : undefined;
    if (opts.update && !id) throw new Error("display(obj, {update: true}) needs a display_id");
    const handle = id ? { display_id: id, update: (o: unknown, u: { metadata?: Record<string, unknown> } = {}) => void display(o, { ...u, display_id: id, update: true }) } : undefined;
    const b = toBundle(obj);
    if (b instanceof Promise) {
      const p = parent();
      return b.then((bb) => {
        k.publish(opts.update ? "update_display_data" : "display_data", { data: bb.data, metadata: { ...bb.metadata, ...(opts.metadata ?? {}) }, transient: id ? { display_id: id } : {} }, p);
        return handle;
      });
    }
    send(b, opts, id);
    return handle;
  }
  const mime = (type: string) => (content: unknown, opts?: DisplayOptions) => display(rawBundle(type, content), opts);
  Object.assign(display, {
    html: mime("text/html"),
    markdown: mime("text/markdown"),
    svg: mime("image/svg+xml"),
    json: mime("application/json"),
    latex: mime("text/latex"),
    png: (b64: string | Uint8Array, opts?: DisplayOptions) => display(rawBundle("image/png", typeof b64 === "string" ? b64 : Buffer.from(b64).toString("base64")), opts),
    /** display a raw MIME bundle: display.bundle({"text/html": "..."}) */
    bundle: (data: Record<string, unknown>, opts?: DisplayOptions) => display({ [Symbol.for("Jupyter.display")]: () => data }, opts),
    /** Runs fn once when the running cell ends, before its result and reply (e.g. a throttled live
     *  plot's last redraw, so the last state lands while the front end still listens to the cell). */
    on_cell_end: (fn: () => void) => {
      if (typeof fn !== "function") throw new TypeError("display.on_cell_end(fn) needs a function");
      k.cellEndHooks.push(fn);
    },
  });

  function clear_output(opts: { wait?: boolean } = {}): void {
    k.publish("clear_output", { wait: !!opts.wait }, parent());
  }

  function prompt(message = "", _default?: string): string | null {
    const v = k.prompt(k.capture.als.getStore() ?? null, String(message), false);
    return v ?? _default ?? null;
  }
  const input = async (message = "", opts: { password?: boolean } = {}) => k.prompt(k.capture.als.getStore() ?? null, String(message), !!opts.password);

  const g = globalThis as any;
  const define = (name: string, value: unknown) =>
    Object.defineProperty(g, name, { value, writable: true, configurable: true, enumerable: false });
  define("display", display);
  define("clear_output", clear_output);
  define("prompt", prompt);
  define("input", input);
  define("comms", k.comms.api());
}
