// Python's str()/repr() for the values a PyTorch program prints, so a TypeScript twin of the article's
// code prints the same text: True/False/None, lists as [a, b], tuples as (a, b) and (a,), nodes as
// <AddBackward0 object at 0x…>. Tensors print with `await t.repr()` / torch.print (their data is on the GPU).
import { isSize, sizeRepr } from "./format.ts";

const TUPLE = Symbol.for("gradlab.tuple");

/** Marks an array as a Python tuple for printing (next_functions and its edges are tuples in PyTorch). */
export function tuple<T extends unknown[]>(items: T): T {
  Object.defineProperty(items, TUPLE, { value: true });
  return items;
}

export function pyRepr(v: unknown): string {
  if (typeof v === "string") return `'${v.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
  return pyStr(v);
}

export function pyStr(v: unknown): string {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "string") return v;
  if (isSize(v)) return sizeRepr(v);
  if (Array.isArray(v)) {
    const items = v.map(pyRepr);
    if ((v as unknown as Record<symbol, boolean>)[TUPLE]) return items.length === 1 ? `(${items[0]},)` : `(${items.join(", ")})`;
    return `[${items.join(", ")}]`;
  }
  return String(v);
}

/** A tagged template that interpolates with Python's str(): torch.f`x.is_leaf: ${x.is_leaf}` → "x.is_leaf: True". */
export function f(strings: TemplateStringsArray, ...values: unknown[]): string {
  return strings.reduce((out, s, i) => out + s + (i < values.length ? pyStr(values[i]) : ""), "");
}

/**
 * Python's type name for a JS argument, as PyTorch's argument errors print it ("NoneType", "int",
 * "float", "str", "bool", "list"); any other value by `other` (its JS typeof unless told).
 */
export function pyTypeName(v: unknown, other: (v: unknown) => string = (x) => typeof x): string {
  if (v === null || v === undefined) return "NoneType";
  if (typeof v === "string") return "str";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "number") return Number.isInteger(v) ? "int" : "float";
  if (Array.isArray(v)) return "list";
  return other(v);
}
