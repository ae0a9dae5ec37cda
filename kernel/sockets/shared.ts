// Memory shared between the main thread (cells) and the socket thread (control, heartbeat, stdin).
export interface SharedState {
  /** [0]: interrupt requested (1) or not (0). Cells poll it in every loop body. */
  irq: Int32Array;
  /** [0]: stdin state (0 waiting, 1 reply ready / idle, 2 interrupted); [1]: reply byte length. */
  stdinCtl: Int32Array;
  stdinData: Uint8Array;
}

export const STDIN_BYTES = 1 << 20;

export function createShared(): { sab: SharedArrayBuffer; state: SharedState } {
  const sab = new SharedArrayBuffer(4 + 8 + STDIN_BYTES);
  const state = fromSab(sab);
  state.stdinCtl[0] = 1; // nobody waiting
  return { sab, state };
}

export function fromSab(sab: SharedArrayBuffer): SharedState {
  return {
    irq: new Int32Array(sab, 0, 1),
    stdinCtl: new Int32Array(sab, 4, 2),
    stdinData: new Uint8Array(sab, 12, STDIN_BYTES),
  };
}

/** Messages the socket thread posts to the main thread. */
export type FromWorker =
  | { type: "ready" }
  | { type: "closed" }
  | { type: "interrupt" }
  | { type: "shutdown"; restart: boolean }
  | { type: "control-status"; parent: object; state: "busy" | "idle" }
  | { type: "control"; frames: Uint8Array[] };

/** Messages the main thread posts to the socket thread. */
export type ToWorker =
  | { type: "input_request"; prompt: string; password: boolean; parent: object; identities: Uint8Array[] }
  | { type: "control-send"; frames: Uint8Array[] }
  | { type: "close" };
