// Memory shared between the main thread (cells) and the socket thread (control, heartbeat, stdin).
export interface SharedState {
  /** [0]: 0, or the number of the cell an interrupt was requested for. Cells poll it in every loop
   *  body and function entry; a value that is not the running cell's number is stale and ignored. */
  irq: Int32Array;
  /** [0]: the number of the cell (execute request) running now; 0 between cells. */
  cell: Int32Array;
  /** [0]: stdin state (0 waiting, 1 reply ready / idle, 2 interrupted); [1]: reply byte length. */
  stdinCtl: Int32Array;
  /** [0]: when the running cell was requested (its execute_request's header date, µs since the epoch,
   *  NaN when unknown); [1]: when it started here (µs). An interrupt requested, or a SIGINT received,
   *  before these is for an earlier cell and is dropped. */
  cellTimes: Float64Array;
  /** [0]: 1 when the socket thread's SIGINT helper is running (then it alone handles SIGINT) */
  helper: Int32Array;
  /** [0]: hash of the running cell's execute_request header session (whose clock its date is on) */
  cellSession: Int32Array;
  stdinData: Uint8Array;
}

const STDIN_BYTES = 1 << 20;

export function createShared(): { sab: SharedArrayBuffer; state: SharedState } {
  const sab = new SharedArrayBuffer(40 + STDIN_BYTES);
  const state = fromSab(sab);
  state.stdinCtl[0] = 1; // nobody waiting
  return { sab, state };
}

export function fromSab(sab: SharedArrayBuffer): SharedState {
  return {
    irq: new Int32Array(sab, 0, 1),
    cell: new Int32Array(sab, 4, 1),
    stdinCtl: new Int32Array(sab, 8, 2),
    cellTimes: new Float64Array(sab, 16, 2),
    helper: new Int32Array(sab, 32, 1),
    cellSession: new Int32Array(sab, 36, 1),
    stdinData: new Uint8Array(sab, 40, STDIN_BYTES),
  };
}

/** Messages the socket thread posts to the main thread. */
export type FromWorker =
  | { type: "ready" }
  | { type: "closed" }
  | { type: "interrupt"; cell: number }
  | { type: "shutdown"; restart: boolean }
  | { type: "control"; frames: Uint8Array[] };

/** Messages the main thread posts to the socket thread. iopub lives there, so that what a cell prints
 *  or displays leaves the kernel while the main thread is still busy in the cell. Printed text goes
 *  through the stream ring; every other message is posted right after a mark in the ring, and leaves
 *  when the reader reaches it, so everything leaves in the order the cell produced it. */
export type ToWorker =
  | { type: "input_request"; prompt: string; password: boolean; parent: object; identities: Uint8Array[]; marked: boolean }
  /** text a cell wrote is in the stream ring (ring.ts), which was empty: drain it soon */
  | { type: "streams" }
  /** a signed iopub message, ready to send; `marked`: the stream ring has its mark (ring.ts), and the
   *  text written before it leaves first */
  | { type: "iopub"; frames: PackedFrames; marked: boolean }
  | { type: "control-send"; frames: PackedFrames }
  | { type: "close"; marked: boolean };

/** A protocol header date (ISO 8601, up to microseconds, Z or an offset) in µs since the epoch; NaN
 *  when it is not one. */
export function dateMicros(d: unknown): number {
  if (typeof d !== "string" || d.length > 64) return NaN;
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:?\d\d)?$/.exec(d);
  if (!m) return NaN;
  const ms = Date.parse(m[1] + (m[3] ?? "Z"));
  return Number.isFinite(ms) ? ms * 1000 + Math.trunc(Number((m[2] ?? "0").padEnd(6, "0").slice(0, 6))) : NaN;
}

/** A 32-bit hash of a string (FNV-1a), to compare sessions across threads through shared memory. */
export function hash32(s: unknown): number {
  const str = typeof s === "string" ? s : "";
  let h = 0x811c9dc5;
  for (let i = 0; i < str.length && i < 1024; i++) h = Math.imul(h ^ str.charCodeAt(i), 0x01000193);
  return h | 0;
}

/** Frames in one ArrayBuffer, transferred rather than copied. A small Buffer is a view of Node's shared
 *  8-KiB pool, and cloning a view copies its whole ArrayBuffer: posting a message's frames as Buffers
 *  was a third of an empty cell's time on the main thread (profiled, issue 22). */
export interface PackedFrames {
  bytes: ArrayBuffer;
  lengths: number[];
}

export function packFrames(frames: Uint8Array[]): PackedFrames {
  let n = 0;
  for (const f of frames) n += f.byteLength;
  const bytes = new ArrayBuffer(n);
  const u8 = new Uint8Array(bytes);
  const lengths: number[] = [];
  let at = 0;
  for (const f of frames) {
    u8.set(f, at);
    at += f.byteLength;
    lengths.push(f.byteLength);
  }
  return { bytes, lengths };
}

export function unpackFrames({ bytes, lengths }: PackedFrames): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  for (const n of lengths) {
    out.push(Buffer.from(bytes, at, n));
    at += n;
  }
  return out;
}
