// PyTorch's tensor printing (torch/_tensor_str.py, default print options: precision 4, threshold 1000,
// edgeitems 3, linewidth 80), reproduced so that a learner comparing GradLab's output with the article's
// sees the same text.

import type { DType } from "./dtype.ts";

const PRECISION = 4;
const THRESHOLD = 1000;
const EDGEITEMS = 3;
const LINEWIDTH = 80;

/**
 * JS's toFixed/toExponential round exact ties away from zero; Python's format rounds them to even
 * (0.03125 -> "0.0312", 149.625 -> "1.4962e+02"). Both see the exact binary value, so only true ties
 * differ: detect one from a wide expansion and keep the truncated digits when their last one is even.
 */
function pyRound(v: number, digits: number, mode: "fixed" | "exp"): string {
  const naive = mode === "fixed" ? v.toFixed(digits) : v.toExponential(digits);
  const wide = mode === "fixed" ? v.toFixed(Math.min(100, digits + 25)) : v.toExponential(Math.min(100, digits + 25));
  const [mant, exp] = wide.split("e");
  const dot = mant.indexOf(".");
  if (!/^50*$/.test(mant.slice(dot + 1 + digits))) return naive;
  const kept = mant.slice(0, digits === 0 ? dot : dot + 1 + digits);
  if (Number(kept[kept.length - 1]) % 2 === 1) return naive;
  return exp === undefined ? kept : `${kept}e${exp}`;
}

/** Python's "{:.4e}": the exponent has a sign and at least two digits. */
function sci(v: number): string {
  const [m, e] = pyRound(v, PRECISION, "exp").split("e");
  const sign = e[0] === "-" ? "-" : "+";
  const digits = e.replace(/^[+-]/, "").padStart(2, "0");
  return `${m}e${sign}${digits}`;
}

function special(v: number): string | null {
  if (Number.isNaN(v)) return "nan";
  if (v === Infinity) return "inf";
  if (v === -Infinity) return "-inf";
  return null;
}

class Formatter {
  private intMode = true;
  private sciMode = false;
  width = 1;

  constructor(
    private readonly dtype: DType,
    values: ArrayLike<number>,
  ) {
    if (dtype !== "float32") {
      for (let i = 0; i < values.length; i++) this.width = Math.max(this.width, this.raw(values[i]).length);
      return;
    }
    const finite: number[] = [];
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (Number.isFinite(v)) {
        finite.push(v);
        if (v !== Math.ceil(v)) this.intMode = false;
      }
    }
    // As PyTorch's _Formatter: the mode and the column width come from the nonzero finite values only.
    const nonzero = finite.filter((v) => v !== 0);
    if (nonzero.length === 0) return;
    const abs = nonzero.map(Math.abs);
    const max = Math.max(...abs);
    const min = Math.min(...abs);
    if (this.intMode) this.sciMode = max / min > 1000 || max > 1e8;
    else this.sciMode = max / min > 1000 || max > 1e8 || min < 1e-4;
    for (const v of nonzero) this.width = Math.max(this.width, this.raw(v).length);
  }

  private raw(v: number): string {
    if (this.dtype === "bool") return v ? "True" : "False";
    if (this.dtype === "int32") return String(v);
    const s = special(v);
    if (s) return s;
    const neg0 = Object.is(v, -0) ? "-" : "";
    if (this.sciMode) return neg0 + sci(v);
    if (this.intMode) return `${neg0}${pyRound(v, 0, "fixed")}.`;
    return neg0 + pyRound(v, PRECISION, "fixed");
  }

  format(v: number): string {
    return this.raw(v).padStart(this.width);
  }
}

/** Indices kept along one dim when summarizing (edge items, with -1 marking the "..."). */
function kept(size: number, summarize: boolean): number[] {
  if (!summarize || size <= 2 * EDGEITEMS) return Array.from({ length: size }, (_, i) => i);
  return [0, 1, 2, -1, size - 3, size - 2, size - 1];
}

function strideOf(shape: readonly number[], d: number): number {
  let s = 1;
  for (let i = d + 1; i < shape.length; i++) s *= shape[i];
  return s;
}

// Mirrors _tensor_str_with_formatter: a row wraps at the line width, and each nesting level indents
// one more space than the bracket that opens it.
function body(values: ArrayLike<number>, shape: readonly number[], fmt: Formatter, summarize: boolean, indent: number): string {
  const rec = (dim: number, base: number, ind: number): string => {
    if (dim === shape.length - 1) {
      const elems = kept(shape[dim], summarize).map((i) => (i < 0 ? " ..." : fmt.format(values[base + i])));
      const perLine = Math.max(1, Math.floor((LINEWIDTH - ind) / (fmt.width + 2)));
      const lines: string[] = [];
      for (let i = 0; i < elems.length; i += perLine) lines.push(elems.slice(i, i + perLine).join(", "));
      return `[${lines.join(`,\n${" ".repeat(ind + 1)}`)}]`;
    }
    const st = strideOf(shape, dim);
    const sep = `,${"\n".repeat(shape.length - dim - 1)}${" ".repeat(ind + 1)}`;
    const parts = kept(shape[dim], summarize).map((i) => (i < 0 ? "..." : rec(dim + 1, base + i * st, ind + 1)));
    return `[${parts.join(sep)}]`;
  };
  return rec(0, 0, indent);
}

/** Values as PyTorch prints them, without the "tensor(" prefix and suffixes. */
function formatValues(values: ArrayLike<number>, shape: readonly number[], dtype: DType, indent: number): string {
  const numel = shape.reduce((a, b) => a * b, 1);
  if (shape.length === 0) return new Formatter(dtype, values).format(values[0]).trim();
  if (numel === 0) return "[]";
  const summarize = numel > THRESHOLD;
  let shown: number[] = [];
  if (summarize) {
    // The formatter's width comes from the shown elements only, as in PyTorch's get_summarized_data.
    const collect = (dim: number, base: number) => {
      for (const i of kept(shape[dim], true)) {
        if (i < 0) continue;
        if (dim === shape.length - 1) shown.push(values[base + i]);
        else collect(dim + 1, base + i * strideOf(shape, dim));
      }
    };
    collect(0, 0);
  } else shown = Array.from(values);
  return body(values, shape, new Formatter(dtype, shown), summarize, indent);
}

/** The whole repr: `tensor([...], suffix=...)`, wrapping suffixes past the line width as PyTorch does. */
export function formatTensor(values: ArrayLike<number>, shape: readonly number[], dtype: DType, suffixes: string[]): string {
  const prefix = "tensor(";
  const numel = shape.reduce((a, b) => a * b, 1);
  let text = formatValues(values, shape, dtype, prefix.length);
  const extra: string[] = [];
  if (numel === 0 && shape.length !== 1) extra.push(`size=(${shape.join(", ")}${shape.length === 1 ? "," : ""})`);
  if (dtype === "int32" || (numel === 0 && dtype !== "float32")) extra.push(`dtype=torch.${dtype}`);
  for (const s of [...extra, ...suffixes]) {
    const lastLine = text.split("\n").pop()!;
    if (lastLine.length + s.length + 2 > LINEWIDTH) text += `,\n${" ".repeat(prefix.length)}${s}`;
    else text += `, ${s}`;
  }
  return `${prefix + text})`;
}

// ---- torch.Size ----
const INSPECT = Symbol.for("nodejs.util.inspect.custom");
/** asSize's descriptor, one for all shapes. */
const SIZE_INSPECTOR = { value: inspectSize };

/** PyTorch's str() and repr() of a size: `torch.Size([2, 3])`, `torch.Size([])` for a scalar. */
export function sizeRepr(shape: readonly number[]): string {
  return `torch.Size([${shape.join(", ")}])`;
}

/**
 * Marks a shape array as a torch.Size, in place: it stays a plain number[] for indexing, spreading and
 * JSON, and Node's inspect (the kernel's text/plain, console.log) prints `torch.Size([2, 3])`.
 * Python's str() (torch.f, torch.str) prints it the same through isSize.
 */
export function asSize<T extends number[]>(shape: T): T {
  // One non-enumerable property, which also marks it (isSize): every tensor's shape gets it, and a second
  // one (a marker symbol of its own) cost 0.28 µs more per tensor and made reading the array 1.7× slower
  // (Node 20: V8 gives an array with two such properties a slower shape).
  if (!isSize(shape)) Object.defineProperty(shape, INSPECT, SIZE_INSPECTOR);
  return shape;
}

/** Node's inspect calls a custom inspector with the value as `this`. */
function inspectSize(this: number[]): string {
  return sizeRepr(this);
}

/** Whether a value is an array marked by asSize. */
export function isSize(v: unknown): v is number[] {
  return Array.isArray(v) && (v as unknown as Record<symbol, unknown>)[INSPECT] === inspectSize;
}
