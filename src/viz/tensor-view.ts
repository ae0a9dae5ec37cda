// The HTML view of a tensor (Tensor's Jupyter display): its values as a table for 1-D and 2-D tensors,
// summarized past 1000 elements as PyTorch's repr does (first and last three along each dim), and one
// line of metadata. Tensors on a simulated device have no values: metadata only.

import type { Tensor } from "../tensor.ts";
import { bytes, esc, exactBytes, pyName, TABLE_STYLE } from "./common.ts";
import { sizeRepr } from "../format.ts";

const THRESHOLD = 1000;
const EDGE = 3;

function kept(n: number, summarize: boolean): number[] {
  if (!summarize || n <= 2 * EDGE) return Array.from({ length: n }, (_, i) => i);
  return [0, 1, 2, -1, n - 3, n - 2, n - 1];
}

function formatter(values: ArrayLike<number>, dtype: string): (v: number) => string {
  if (dtype === "bool") return (v) => (v ? "True" : "False");
  if (dtype === "int32") return (v) => String(v);
  let ints = true;
  let max = 0;
  let min = Infinity;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) continue;
    if (v !== Math.trunc(v)) ints = false;
    const a = Math.abs(v);
    if (a > 0) {
      max = Math.max(max, a);
      min = Math.min(min, a);
    }
  }
  const sci = max > 1e8 || (max > 0 && (max / min > 1000 || (!ints && min < 1e-4)));
  return (v) =>
    !Number.isFinite(v)
      ? String(v).replace("Infinity", "inf").replace("NaN", "nan")
      : sci
        ? v.toExponential(4).replace(/e([+-])(\d)$/, "e$10$2")
        : ints
          ? `${v}.`
          : v.toFixed(4);
}

/** The metadata line: shape, dtype, device, requires_grad, grad_fn, _version, bytes. */
function tensorMeta(t: Tensor): string {
  const fn = t.grad_fn ? `&lt;${esc(pyName(t.grad_fn.name()))}&gt;` : "None";
  return [
    `shape=${sizeRepr(t.shape)}`,
    `dtype=torch.${t.dtype}`,
    `device=${esc(t.device)}`,
    `requires_grad=${t.requires_grad ? "True" : "False"}`,
    `grad_fn=${fn}`,
    `_version=${t._version}`,
    `bytes=<span title="${exactBytes(t.nbytes)}">${esc(bytes(t.nbytes))}</span>`,
  ].join(" · ");
}

/** The text/html of a tensor; `values` is null when they cannot be read (simulated device). */
export function tensorHtml(t: Tensor, values: ArrayLike<number> | null): string {
  const meta = `<div style="font-family:monospace;font-size:11px;color:#555">${tensorMeta(t)}</div>`;
  if (!values || t.ndim === 0 || t.ndim > 2 || t.numel() === 0) {
    const v = values && t.ndim === 0 ? `<div style="font-family:monospace">${esc(formatter(values, t.dtype)(values[0]))}</div>` : "";
    return `<div>${v}${meta}</div>`;
  }
  const summarize = t.numel() > THRESHOLD;
  const [rows, cols] = t.ndim === 1 ? [1, t.shape[0]] : [t.shape[0], t.shape[1]];
  const ri = t.ndim === 1 ? [0] : kept(rows, summarize);
  const ci = kept(cols, summarize);
  const shown: number[] = [];
  for (const r of ri) for (const c of ci) if (r >= 0 && c >= 0) shown.push(values[r * cols + c]);
  const fmt = formatter(shown, t.dtype);
  const td = 'style="border:1px solid #ddd;padding:1px 6px;text-align:right"';
  const th = 'style="border:1px solid #ddd;padding:1px 6px;color:#888;font-weight:normal"';
  const head = `<tr><th ${th}></th>${ci.map((c) => `<th ${th}>${c < 0 ? "…" : c}</th>`).join("")}</tr>`;
  const body = ri
    .map((r) => {
      const label = t.ndim === 1 ? "" : r < 0 ? "…" : String(r);
      const cells = ci.map((c) => `<td ${td}>${r < 0 || c < 0 ? "…" : esc(fmt(values[r * cols + c]))}</td>`).join("");
      return `<tr><th ${th}>${label}</th>${cells}</tr>`;
    })
    .join("");
  return `<div><table style="${TABLE_STYLE}">${head}${body}</table>${meta}</div>`;
}
