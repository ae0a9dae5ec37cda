// Values -> MIME bundles, honouring the Symbol.for("Jupyter.display") protocol.
import { inspect } from "node:util";

export const DISPLAY = Symbol.for("Jupyter.display");

export interface Bundle {
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

/** Synchronous unless the object's display method returns a promise. */
export function toBundle(value: unknown): Bundle | Promise<Bundle> {
  if (value != null && typeof (value as any)[DISPLAY] === "function") {
    const b = (value as any)[DISPLAY]();
    if (b && typeof b.then === "function") return b.then((r: unknown) => fromDisplayResult(value, r));
    return fromDisplayResult(value, b);
  }
  return { data: { "text/plain": plain(value) }, metadata: {} };
}

function fromDisplayResult(value: unknown, b: any): Bundle {
  {
    if (b && typeof b === "object") {
      b = { ...b };
      const metadata = (b as any).metadata ?? {};
      if ("metadata" in b && typeof (b as any).metadata === "object") delete (b as any).metadata;
      if (!("text/plain" in b)) b["text/plain"] = plain(value);
      return { data: b, metadata };
    }
  }
  return { data: { "text/plain": plain(value) }, metadata: {} };
}

export function plain(value: unknown): string {
  return inspect(value, { depth: 4, colors: false, maxArrayLength: 100, breakLength: 100 });
}

/** Helpers exposed as display.html(...), display.markdown(...) etc.: wrap raw content as a bundle. */
export function rawBundle(mime: string, content: unknown): object {
  return { [DISPLAY]: () => ({ [mime]: content, "text/plain": typeof content === "string" ? content : plain(content) }) };
}
