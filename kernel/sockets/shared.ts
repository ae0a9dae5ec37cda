// Memory shared between the main thread (cells) and the socket thread (control, heartbeat, stdin).
export interface SharedState {
  /** [0]: 0, or the number of the cell an interrupt was requested for. Cells poll it in every loop
   *  body and function entry; a value that is not the running cell's number is stale and ignored. */
  irq: Int32Array;
  /** [0]: the number of the cell (execute request) running now; 0 between cells. */
  cell: Int32Array;
  /** [0]: stdin state (0 waiting, 1 reply ready / idle, 2 interrupted); [1]: reply byte length. */
  stdinCtl: Int32Array;
  stdinData: Uint8Array;
}

export const STDIN_BYTES = 1 << 20;

export function createShared(): { sab: SharedArrayBuffer; state: SharedState } {
  const sab = new SharedArrayBuffer(8 + 8 + STDIN_BYTES);
  const state = fromSab(sab);
  state.stdinCtl[0] = 1; // nobody waiting
  return { sab, state };
}

export function fromSab(sab: SharedArrayBuffer): SharedState {
  return {
    irq: new Int32Array(sab, 0, 1),
    cell: new Int32Array(sab, 4, 1),
    stdinCtl: new Int32Array(sab, 8, 2),
    stdinData: new Uint8Array(sab, 16, STDIN_BYTES),
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
 *  or displays leaves the kernel while the main thread is still busy in the cell; everything published
 *  goes through this one port, so it leaves in the order the cell produced it. */
export type ToWorker =
  | { type: "input_request"; prompt: string; password: boolean; parent: object; identities: Uint8Array[] }
  /** text a cell wrote: coalesced by the socket thread into stream messages (parent: JSON) */
  | { type: "stream"; name: "stdout" | "stderr"; text: string; parent: string }
  /** a signed iopub message, ready to send (pending stream text leaves first) */
  | { type: "iopub"; frames: Uint8Array[] }
  | { type: "control-send"; frames: Uint8Array[] }
  | { type: "close" };
