// Walking a backward graph for the displays: nodes in first-visit order (depth first from the roots,
// next_functions in order, as the article's print_computation_graph does), each visited once, with
// its saved tensors described without unpacking them (unpacking would check versions and could throw).

import type { Node, SavedVariable } from "../autograd/node.ts";
import type { Tensor } from "../tensor.ts";
import { pyName } from "./common.ts";
import { ELEMENT_SIZE } from "../dtype.ts";

export interface SavedInfo {
  slot: string;
  shape: number[];
  dtype: string;
  bytes: number;
  savedVersion: number;
  /** The version the tensor has now (null once released, or when packed by saved-tensor hooks). */
  currentVersion: number | null;
  released: boolean;
  packed: boolean;
  storage: { readonly nbytes: number } | null;
}

/** A saved variable's state, read from its fields (SavedVariable keeps them private to the runtime). */
export function savedInfo(slot: string, sv: SavedVariable): SavedInfo {
  const raw = sv as unknown as { data: Tensor | null; packed: unknown; meta: { dtype: string; shape: number[] } };
  const data = raw.data && !raw.data.disposed ? raw.data : null;
  const numel = raw.meta.shape.reduce((a, b) => a * b, 1);
  return {
    slot: `_saved_${slot}`,
    shape: [...raw.meta.shape],
    dtype: raw.meta.dtype,
    bytes: numel * ELEMENT_SIZE,
    savedVersion: sv.savedVersion,
    currentVersion: data ? data._version : null,
    released: sv.isReleased,
    packed: raw.packed != null,
    storage: data ? data.storage : null,
  };
}

/** Non-tensor saved attributes (`_saved_dim`, `_saved_alpha`, ...), for show_attrs. */
export function savedAttrs(n: Node): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  for (const k of Object.getOwnPropertyNames(n)) {
    if (!k.startsWith("_saved_")) continue;
    const d = Object.getOwnPropertyDescriptor(n, k)!;
    if (!("value" in d) || d.value === null) continue; // getters are saved tensors
    out.push([k.slice("_saved_".length), d.value]);
  }
  return out;
}

const isAccumulateGrad = (n: Node) => pyName(n.name()) === "AccumulateGrad";
export const leafOf = (n: Node): Tensor | null => (isAccumulateGrad(n) ? ((n as unknown as { variable: Tensor }).variable ?? null) : null);

export type Root = Tensor | Node | null | undefined;
export const isNode = (v: unknown): v is Node => !!v && typeof (v as Node).next_functions === "object" && typeof (v as Node).name === "function";

/** Nodes reachable from the roots, in first-visit depth-first order. */
export function reachable(roots: Node[]): Node[] {
  const seen = new Set<Node>();
  const order: Node[] = [];
  const stack = [...roots].reverse();
  while (stack.length) {
    const n = stack.pop()!;
    if (seen.has(n)) continue;
    seen.add(n);
    order.push(n);
    const next = n.next_functions.map(([m]) => m).filter((m): m is Node => !!m);
    for (let i = next.length - 1; i >= 0; i--) if (!seen.has(next[i])) stack.push(next[i]);
  }
  return order;
}

/** `{name: tensor}` or `model.named_parameters()` as a lookup from autograd identity to name. */
export function namesOf(params?: Record<string, Tensor> | Iterable<[string, Tensor]>): Map<unknown, string> {
  const m = new Map<unknown, string>();
  if (!params) return m;
  const entries = Symbol.iterator in Object(params) ? [...(params as Iterable<[string, Tensor]>)] : Object.entries(params);
  for (const [k, t] of entries) if (t && (t as Tensor)._meta && !m.has((t as Tensor)._meta)) m.set((t as Tensor)._meta, k);
  return m;
}
