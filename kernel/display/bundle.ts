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
  if (b && typeof b === "object") {
    b = { ...b };
    const metadata = (b as any).metadata ?? {};
    if ("metadata" in b && typeof (b as any).metadata === "object") delete (b as any).metadata;
    if (!("text/plain" in b)) b["text/plain"] = plain(value);
    return { data: b, metadata };
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

/** Node's bookkeeping on promises (async ids, AsyncLocalStorage's store: the kernel's message context
 *  for the cell) that util.inspect would print as if it were the promise's own data. */
const PROMISE_INTERNALS = new Set(["async_id_symbol", "trigger_async_id_symbol", "kResourceStore"]);

/** Promises print as Node prints them without async hooks (`Promise { <pending> }`), in results,
 *  console.log and inspect alike. */
export function installPromiseInspect(onPending: () => void = () => {}): void {
  Object.defineProperty(Promise.prototype, inspect.custom, {
    configurable: true,
    writable: true,
    enumerable: false,
    value(this: Promise<unknown>, _depth: number, options: object) {
      for (const sym of Object.getOwnPropertySymbols(this)) {
        if (!PROMISE_INTERNALS.has(sym.description ?? "")) continue;
        const d = Object.getOwnPropertyDescriptor(this, sym);
        if (d?.enumerable) Object.defineProperty(this, sym, { ...d, enumerable: false });
      }
      const text = inspect(this, { ...options, customInspect: false });
      if (text.startsWith("Promise { <pending>")) onPending();
      return text;
    },
  });
}

/** The one-line hint shown (once per cell) when a cell prints a pending promise. */
export const PROMISE_HINT = "Hint: a pending Promise was printed; write `await` before the expression to get what it resolves to (e.g. `await x.item()`).\n";
