// torch.viz.saved_tensors(root, {tensors}): what every node of a backward graph keeps for its
// backward formula — slot, shape, dtype, bytes, saved vs current version, alive or released, and
// what shares the storage (the memory is the same, not a copy): the user's tensors named in `tensors`,
// and the other saved slots on it. A storage saved by several nodes is held once: "still held" counts
// each storage once (a view's whole storage, as the allocator does).

import type { Tensor } from "../tensor.ts";
import { Display, bytes, bytesHtml, esc, htmlTable, pyName, shapeStr, textTable, type MimeBundle } from "./common.ts";
import { isNode, reachable, savedInfo, type Root } from "./graph-walk.ts";

export interface SavedRow {
  node: string;
  sequence_nr: number;
  slot: string;
  shape: number[];
  dtype: string;
  bytes: number;
  saved_version: number;
  current_version: number | null;
  state: "alive" | "released" | "packed" | "stale";
  /** What else is on the same storage: the user's tensors (by their names in the `tensors` option),
   *  then the other saved slots (`ReluBackward0._saved_result`; with `#seq` where two nodes share a name). */
  shares_storage_with: string[];
}

interface Row extends SavedRow {
  storage: { readonly nbytes: number } | null;
}

export class SavedTensorsView extends Display {
  private readonly fns: Array<NonNullable<Tensor["grad_fn"]>>;
  constructor(
    root: Root | Root[],
    private readonly tensors: Record<string, Tensor> = {},
  ) {
    super();
    const list = (Array.isArray(root) ? root : [root]).filter((r) => r != null);
    this.fns = list.map((r) => (isNode(r) ? r : (r as Tensor).grad_fn)).filter((n) => !!n) as NonNullable<Tensor["grad_fn"]>[];
  }

  /** The rows as the graph is now (read afresh on each access). */
  get rows(): SavedRow[] {
    return this.read().map(({ storage: _, ...row }) => row);
  }

  private read(): Row[] {
    const byStorage = new Map<object, string[]>();
    for (const [name, t] of Object.entries(this.tensors)) {
      if (!t?.storage || t.disposed) continue;
      byStorage.set(t.storage, [...(byStorage.get(t.storage) ?? []), name]);
    }
    const rows: Row[] = [];
    for (const n of reachable(this.fns)) {
      for (const [k, sv] of n.savedVariables()) {
        const s = savedInfo(k, sv);
        const state = s.released ? "released" : s.packed ? "packed" : s.currentVersion !== null && s.currentVersion !== s.savedVersion ? "stale" : "alive";
        rows.push({
          node: pyName(n.name()),
          sequence_nr: n.sequence_nr(),
          slot: s.slot,
          shape: s.shape,
          dtype: s.dtype,
          bytes: s.bytes,
          saved_version: s.savedVersion,
          current_version: s.currentVersion,
          state,
          shares_storage_with: s.storage ? [...(byStorage.get(s.storage) ?? [])] : [],
          storage: s.storage,
        });
      }
    }
    // the other slots on each row's storage
    const seqsOf = new Map<string, Set<number>>();
    for (const r of rows) seqsOf.set(r.node, (seqsOf.get(r.node) ?? new Set()).add(r.sequence_nr));
    const slotName = (r: Row) => `${r.node}${seqsOf.get(r.node)!.size > 1 ? `#${r.sequence_nr}` : ""}.${r.slot}`;
    for (const r of rows) {
      if (!r.storage) continue;
      for (const o of rows) if (o !== r && o.storage === r.storage) r.shares_storage_with.push(slotName(o));
    }
    return rows;
  }

  /** Bytes the graph keeps alive through saved tensors (alive or stale), each storage once. */
  get alive_bytes(): number {
    return heldBytes(this.read());
  }

  private cells(r: SavedRow): string[] {
    const ver = r.current_version === null ? `${r.saved_version} / -` : `${r.saved_version} / ${r.current_version}`;
    return [r.node, String(r.sequence_nr), r.slot, shapeStr(r.shape), r.dtype, bytes(r.bytes), ver, r.state, r.shares_storage_with.join(", ")];
  }
  static readonly HEAD = ["node", "seq", "slot", "shape", "dtype", "bytes", "version saved / now", "state", "shares storage with"];

  private textOf(rows: Row[]): string {
    if (!rows.length) return "No saved tensors (nothing saved, or no graph).";
    return `${textTable(
      SavedTensorsView.HEAD,
      rows.map((r) => this.cells(r)),
    )}\n${summary(rows)}`;
  }
  get text(): string {
    return this.textOf(this.read());
  }
  protected build(): MimeBundle {
    const rows = this.read();
    const colour = { alive: "#fff3e0", released: "#f0f0f0", packed: "#e3f2fd", stale: "#ffcdd2" };
    const cells = rows.map((r) =>
      this.cells(r).map((c, i) =>
        i === 7 ? { html: `<span style="background:${colour[r.state]};padding:0 4px">${esc(c)}</span>` } : i === 5 ? bytesHtml(r.bytes) : c,
      ),
    );
    const html = rows.length ? htmlTable(SavedTensorsView.HEAD, cells, `Saved tensors: ${summary(rows)}`) : `<p>${esc(this.textOf(rows))}</p>`;
    return { "text/plain": this.textOf(rows), "text/html": html };
  }
  toString(): string {
    return this.text;
  }
}

/** Each storage once, whole (a saved view keeps its base's storage), for the rows that hold one. */
function heldBytes(rows: Row[]): number {
  const held = new Set<{ readonly nbytes: number }>();
  for (const r of rows) if ((r.state === "alive" || r.state === "stale") && r.storage) held.add(r.storage);
  let total = 0;
  for (const st of held) total += st.nbytes;
  return total;
}

function summary(rows: Row[]): string {
  const held = rows.filter((r) => (r.state === "alive" || r.state === "stale") && r.storage);
  const storages = new Set(held.map((r) => r.storage)).size;
  const shared = held.length > storages ? ` (${storages} storage(s): a storage saved twice is held once)` : "";
  return `${rows.length} saved tensor(s), ${bytes(heldBytes(rows))} still held${shared}`;
}

/** torch.viz.saved_tensors(root, {tensors: {x, w}}): the saved-tensor table of a backward graph. */
export function saved_tensors(root: Root | Root[], opts: { tensors?: Record<string, Tensor> } | Record<string, Tensor> = {}): SavedTensorsView {
  const o = opts as { tensors?: Record<string, Tensor> };
  // Either {tensors: {x, w}} or the map itself: {x, w}.
  return new SavedTensorsView(root, o.tensors && !(o.tensors as unknown as Tensor)._meta ? o.tensors : (opts as Record<string, Tensor>));
}
