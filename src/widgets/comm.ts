// How the runtime reaches a kernel's comms without importing the kernel (src/ never imports kernel/):
// a kernel that supports comms puts this host on globalThis under Symbol.for("Jupyter.comms"), as it
// honours Symbol.for("Jupyter.display") for displays. GradLab's kernel installs its own comm manager
// there (kernel/display/globals.ts); in a plain Node script there is none, and widgets are plain
// objects whose display is text.

const COMM_HOST = Symbol.for("Jupyter.comms");

/** One comm (the kernel's Comm has these members). */
export interface CommLike {
  readonly comm_id: string;
  send(data: unknown, metadata?: object, buffers?: Buffer[]): void;
  close(data?: unknown): void;
  onMsg(fn: (data: any, msg: { metadata: unknown; buffers: Buffer[] }) => void): unknown;
  onClose(fn: (data: any) => void): unknown;
}

export interface CommHost {
  open(target_name: string, data?: unknown, metadata?: object, buffers?: Buffer[]): CommLike;
  registerTarget(name: string, handler: (comm: CommLike, open: { data: unknown; metadata: unknown; buffers: Buffer[] }) => void): void;
  /** the header of the message being handled (a cell's execute_request, a front end's comm_msg) */
  parentHeader?(): { msg_id?: string } | object;
}

export function commHost(): CommHost | null {
  const h = (globalThis as Record<symbol, unknown>)[COMM_HOST] as CommHost | undefined;
  return h && typeof h.open === "function" && typeof h.registerTarget === "function" ? h : null;
}
