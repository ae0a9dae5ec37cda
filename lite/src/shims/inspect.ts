// node:util's inspect and format for the Worker (kernel/display/bundle.ts prints values with inspect;
// console.log formats with format). Written here because the browser ports of Node's util (npm `util`)
// predate Symbol.for("nodejs.util.inspect.custom"), which tensors, modules and nodes print through.
// It follows Node's layout for what notebooks print (primitives, arrays, plain and class objects, Map,
// Set, errors, functions); Node's column grouping of long arrays is not reproduced.
const CUSTOM = Symbol.for("nodejs.util.inspect.custom");

interface Options {
  depth?: number;
  colors?: boolean;
  maxArrayLength?: number;
  breakLength?: number;
  customInspect?: boolean;
}

/** Node's quoting: single quotes, else double quotes when the string has a single quote, else backticks. */
function quote(s: string): string {
  const q = !s.includes("'") ? "'" : !s.includes('"') ? '"' : !s.includes("`") ? "`" : "'";
  const escaped = s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
  return q + (q === "'" ? escaped.replace(/'/g, "\\'") : escaped) + q;
}
const keyText = (k: string) => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : quote(k));

function wrap(open: string, parts: string[], close: string, indent: string, breakLength: number): string {
  if (parts.length === 0) return `${open}${close}`;
  const one = `${open} ${parts.join(", ")} ${close}`;
  if (one.length + indent.length <= breakLength && !one.includes("\n")) return one;
  const inner = `${indent}  `;
  return `${open}\n${parts.map((p) => inner + p.replace(/\n/g, `\n${inner}`)).join(",\n")}\n${indent}${close}`;
}

function fmt(v: unknown, o: Required<Options>, depth: number, seen: Set<object>): string {
  switch (typeof v) {
    case "string":
      return quote(v);
    case "number":
      return Object.is(v, -0) ? "-0" : String(v);
    case "bigint":
      return `${v}n`;
    case "symbol":
      return v.toString();
    case "undefined":
      return "undefined";
    case "boolean":
      return String(v);
    case "function": {
      const src = Function.prototype.toString.call(v);
      if (src.startsWith("class")) return `[class ${v.name || "(anonymous)"}]`;
      return v.name ? `[Function: ${v.name}]` : "[Function (anonymous)]";
    }
  }
  if (v === null) return "null";
  const obj = v as Record<string | symbol, unknown>;
  if (o.customInspect && typeof obj[CUSTOM] === "function") {
    const r = (obj[CUSTOM] as (d: number, opts: object) => unknown)(o.depth - depth, o);
    return typeof r === "string" ? r : fmt(r, o, depth, seen);
  }
  if (seen.has(obj)) return "[Circular *1]";
  if (v instanceof Error) return v.stack ?? `${v.name}: ${v.message}`;
  if (v instanceof Date) return v.toISOString();
  if (v instanceof RegExp) return String(v);
  if (v instanceof Promise) return "Promise { <pending> }";
  const ctor = (Object.getPrototypeOf(obj) as { constructor?: { name?: string } } | null)?.constructor?.name;
  if (depth > o.depth) return Array.isArray(v) ? "[Array]" : `[${ctor || "Object"}]`;
  seen.add(obj);
  try {
    const indent = "  ".repeat(depth);
    const sub = (x: unknown) => fmt(x, o, depth + 1, seen);
    if (Array.isArray(v) || ArrayBuffer.isView(v)) {
      const arr = v as ArrayLike<unknown>;
      const n = Math.min(arr.length, o.maxArrayLength);
      const parts: string[] = [];
      for (let i = 0; i < n; i++) parts.push(sub(arr[i]));
      if (arr.length > n) parts.push(`... ${arr.length - n} more item${arr.length - n > 1 ? "s" : ""}`);
      const prefix = Array.isArray(v) ? "" : `${ctor}(${arr.length}) `;
      return prefix + wrap("[", parts, "]", indent, o.breakLength);
    }
    if (v instanceof Map) {
      const parts = [...v].map(([k, x]) => `${sub(k)} => ${sub(x)}`);
      return `Map(${v.size}) ${wrap("{", parts, "}", indent, o.breakLength)}`;
    }
    if (v instanceof Set) return `Set(${v.size}) ${wrap("{", [...v].map(sub), "}", indent, o.breakLength)}`;
    const parts = Object.keys(obj).map((k) => `${keyText(k)}: ${sub(obj[k])}`);
    const prefix = ctor === "Object" ? "" : ctor ? `${ctor} ` : "[Object: null prototype] ";
    return prefix + wrap("{", parts, "}", indent, o.breakLength);
  } finally {
    seen.delete(obj);
  }
}

export function inspect(value: unknown, opts: Options = {}): string {
  const o: Required<Options> = { depth: 2, colors: false, maxArrayLength: 100, breakLength: 80, customInspect: true, ...opts };
  return fmt(value, o, 0, new Set());
}
inspect.custom = CUSTOM;

/** console.log's formatting: strings as they are, everything else inspected, joined by spaces. */
export function format(...args: unknown[]): string {
  return args.map((a) => (typeof a === "string" ? a : inspect(a, { depth: 2 }))).join(" ");
}
