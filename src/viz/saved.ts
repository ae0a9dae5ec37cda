// torch.viz.saved_tensors(root, {tensors}): what every node of a backward graph keeps for its
// backward formula — slot, shape, dtype, bytes, saved vs current version, alive or released, and
// which of the user's tensors shares the storage (the memory is the same, not a copy).

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
  /** Names (from the `tensors` option) of user tensors on the same storage. */
  shares_storage_with: string[];
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
    const byStorage = new Map<object, string[]>();
    for (const [name, t] of Object.entries(this.tensors)) {
      if (!t?.storage || t.disposed) continue;
      byStorage.set(t.storage, [...(byStorage.get(t.storage) ?? []), name]);
    }
    const rows: SavedRow[] = [];
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
          shares_storage_with: s.storage ? (byStorage.get(s.storage) ?? []) : [],
        });
      }
    }
    return rows;
  }

  /** Bytes the graph keeps alive through saved tensors (alive or stale). */
  get alive_bytes(): number {
    return aliveBytes(this.rows);
  }

  private cells(r: SavedRow): string[] {
    const ver = r.current_version === null ? `${r.saved_version} / -` : `${r.saved_version} / ${r.current_version}`;
    return [r.node, String(r.sequence_nr), r.slot, shapeStr(r.shape), r.dtype, bytes(r.bytes), ver, r.state, r.shares_storage_with.join(", ")];
  }
  static readonly HEAD = ["node", "seq", "slot", "shape", "dtype", "bytes", "version saved / now", "state", "shares storage with"];

  private textOf(rows: SavedRow[]): string {
    if (!rows.length) return "No saved tensors (nothing saved, or no graph).";
    return `${textTable(
      SavedTensorsView.HEAD,
      rows.map((r) => this.cells(r)),
    )}\n${rows.length} saved tensor(s), ${bytes(aliveBytes(rows))} still held`;
  }
  get text(): string {
    return this.textOf(this.rows);
  }
  protected build(): MimeBundle {
    const rows = this.rows;
    const colour = { alive: "#fff3e0", released: "#f0f0f0", packed: "#e3f2fd", stale: "#ffcdd2" };
    const cells = rows.map((r) =>
      this.cells(r).map((c, i) =>
        i === 7 ? { html: `<span style="background:${colour[r.state]};padding:0 4px">${esc(c)}</span>` } : i === 5 ? bytesHtml(r.bytes) : c,
      ),
    );
    const html = rows.length
      ? htmlTable(SavedTensorsView.HEAD, cells, `Saved tensors: ${rows.length}, ${bytes(aliveBytes(rows))} still held`)
      : `<p>${esc(this.textOf(rows))}</p>`;
    return { "text/plain": this.textOf(rows), "text/html": html };
  }
  toString(): string {
    return this.text;
  }
}

const aliveBytes = (rows: SavedRow[]) => rows.filter((r) => r.state === "alive" || r.state === "stale").reduce((a, r) => a + r.bytes, 0);

/** torch.viz.saved_tensors(root, {tensors: {x, w}}): the saved-tensor table of a backward graph. */
export function saved_tensors(root: Root | Root[], opts: { tensors?: Record<string, Tensor> } | Record<string, Tensor> = {}): SavedTensorsView {
  const o = opts as { tensors?: Record<string, Tensor> };
  // Either {tensors: {x, w}} or the map itself: {x, w}.
  return new SavedTensorsView(root, o.tensors && !(o.tensors as unknown as Tensor)._meta ? o.tensors : (opts as Record<string, Tensor>));
}
