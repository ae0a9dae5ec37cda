// What cells see: display(), clear_output(), prompt()/input(), comms, and the display helpers.
import { randomUUID } from "node:crypto";
import { toBundle, rawBundle, DISPLAY, type Bundle } from "./bundle.ts";
import type { CommManager } from "../comms.ts";
import type { DisplayContent, IOPub, IOPubType } from "../wire/protocol.ts";

interface DisplayOptions {
  display_id?: string | boolean;
  update?: boolean;
  metadata?: Record<string, unknown>;
}

interface DisplayHandle {
  display_id: string;
  update(obj: unknown, opts?: { metadata?: Record<string, unknown> }): void;
}

/** What display(), clear_output(), prompt() and comms need from the kernel: nothing else of it. */
export interface DisplayHost {
  publish<T extends IOPubType>(type: T, content: IOPub[T], parent: object, metadata?: object, buffers?: Buffer[]): void;
  /** parent header for output made now: the running cell's, or the request being handled */
  currentParent(): object;
  /** input_request on stdin for the running cell, blocking until the reply; null when none came */
  prompt(prompt: string, password: boolean): string | null;
  readonly comms: CommManager;
  /** display.on_cell_end callbacks for the running cell */
  cellEndHooks: (() => void)[];
  /** displays of the running cell still building their bundle (an async display method): the cell's
   *  reply waits for them, so every display of a cell is published before its reply and idle */
  pendingDisplays: Promise<unknown>[];
}

/** display_data / update_display_data content for a bundle. */
function displayContent(b: Bundle, opts: Pick<DisplayOptions, "metadata">, id: string | undefined): DisplayContent {
  return { data: b.data, metadata: { ...b.metadata, ...(opts.metadata ?? {}) }, transient: id ? { display_id: id } : {} };
}

export function installGlobals(k: DisplayHost): void {
  const send = (b: Bundle, opts: DisplayOptions, id: string | undefined, parent: object) =>
    k.publish(opts.update ? "update_display_data" : "display_data", displayContent(b, opts, id), parent);

  /** Always a promise (as in Deno's kernel, so `await display(x)` and `.then` work in both), resolved
   *  once the output is published. A bundle built synchronously is published before display()
   *  returns, so output shows even from a loop that never awaits; with a display_id the promise also
   *  carries the handle's `display_id` and `update` at once, for the same reason. */
  function display(obj: unknown, opts: DisplayOptions = {}): Promise<DisplayHandle | undefined> & Partial<DisplayHandle> {
    const id = opts.display_id === true ? randomUUID() : typeof opts.display_id === "string" ? opts.display_id : undefined;
    if (opts.update && !id) throw new Error("display(obj, {update: true}) needs a display_id");
    const handle: DisplayHandle | undefined = id
      ? { display_id: id, update: (o: unknown, u: { metadata?: Record<string, unknown> } = {}) => void display(o, { ...u, display_id: id, update: true }) }
      : undefined;
    const parent = k.currentParent();
    const b = toBundle(obj);
    let done: Promise<DisplayHandle | undefined>;
    if (b instanceof Promise) {
      done = b.then((bb) => {
        send(bb, opts, id, parent);
        return handle;
      });
      k.pendingDisplays.push(done);
    } else {
      send(b, opts, id, parent);
      done = Promise.resolve(handle);
    }
    return Object.assign(done, handle);
  }
  const mime = (type: string) => (content: unknown, opts?: DisplayOptions) => display(rawBundle(type, content), opts);
  Object.assign(display, {
    html: mime("text/html"),
    markdown: mime("text/markdown"),
    svg: mime("image/svg+xml"),
    json: mime("application/json"),
    latex: mime("text/latex"),
    png: (b64: string | Uint8Array, opts?: DisplayOptions) =>
      display(rawBundle("image/png", typeof b64 === "string" ? b64 : Buffer.from(b64).toString("base64")), opts),
    /** display a raw MIME bundle: display.bundle({"text/html": "..."}) */
    bundle: (data: Record<string, unknown>, opts?: DisplayOptions) => display({ [DISPLAY]: () => data }, opts),
    /** Runs fn once when the running cell ends, before its result and reply (e.g. a throttled live
     *  plot's last redraw, so the last state lands while the front end still listens to the cell). */
    on_cell_end: (fn: () => void) => {
      if (typeof fn !== "function") throw new TypeError("display.on_cell_end(fn) needs a function");
      k.cellEndHooks.push(fn);
    },
  });

  function clear_output(opts: { wait?: boolean } = {}): void {
    k.publish("clear_output", { wait: !!opts.wait }, k.currentParent());
  }

  function prompt(message = "", _default?: string): string | null {
    const v = k.prompt(String(message), false);
    return v ?? _default ?? null;
  }
  const input = async (message = "", opts: { password?: boolean } = {}) => k.prompt(String(message), !!opts.password);

  const g = globalThis as any;
  const define = (name: string, value: unknown) => Object.defineProperty(g, name, { value, writable: true, configurable: true, enumerable: false });
  define("display", display);
  define("clear_output", clear_output);
  define("prompt", prompt);
  define("input", input);
  const comms = k.comms.api();
  define("comms", comms);
  // The runtime's widgets (torch.widgets) find the comms here: src/ never imports the kernel, and another
  // kernel can offer the same host under the same symbol.
  Object.defineProperty(g, Symbol.for("Jupyter.comms"), { value: { ...comms, parentHeader: () => k.currentParent() }, configurable: true, enumerable: false });
}
