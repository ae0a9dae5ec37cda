// Messages between the GradLab Lite kernel (main thread, extension.ts) and its Worker (worker.ts):
// Jupyter's content shapes, carried by postMessage instead of ZeroMQ.
import type { CompleteAnswer } from "../../kernel/language/answers.ts";

/** Memory the page and the Worker share where the page is cross-origin isolated (GradLab Lite's
 *  service worker makes it so from the second visit on): the server kernel's interrupt flag and stdin
 *  slots (kernel/kernel.ts), written by the page while the Worker runs a synchronous loop or waits in
 *  input(). */
export interface Shared {
  /** the executor's interrupt flag: the number of the cell to stop */
  irq: Int32Array;
  /** the number of the cell running now (0: none) */
  cellNo: Int32Array;
  /** [0]: 0 waiting, 1 answered, 2 interrupted; [1]: the answer's length in bytes */
  stdinCtl: Int32Array;
  /** the answer, UTF-8 */
  stdinData: Uint8Array;
}

/** main thread -> Worker */
export type ToWorker =
  | { type: "init"; dir: string; shared: Shared | null }
  | { type: "execute"; id: number; code: string; count: number; silent: boolean; storeHistory: boolean; allowStdin: boolean; parent: object }
  | { type: "interrupt" }
  | { type: "complete"; id: number; code: string; cursor: number }
  | { type: "inspect"; id: number; code: string; cursor: number }
  /** the answer to a `read`: the file's text, or why there is none */
  | ({ type: "file"; id: number } & ({ text: string } | { error: string }))
  | { type: "comm"; msgType: "comm_open" | "comm_msg" | "comm_close"; content: any; metadata: unknown; buffers: any[] };

/** Worker -> main thread */
export type FromWorker =
  /** the Worker's first message: it handles messages from now on */
  | { type: "listening" }
  /** an interrupt message was read (the Worker is not in a synchronous loop) */
  | { type: "interrupted" }
  | { type: "ready"; device: string | null; problem: string | null }
  | {
      type: "iopub";
      msgType: "stream" | "display_data" | "update_display_data" | "clear_output" | "execute_result" | "error" | "comm_open" | "comm_msg" | "comm_close";
      content: any;
      parent: object | null;
      /** comm messages only (widgets): their metadata and binary buffers */
      metadata?: unknown;
      buffers?: any[];
    }
  | { type: "input"; prompt: string; password: boolean; parent: object }
  | { type: "reply"; id: number; content: { status: "ok" | "error"; ename?: string; evalue?: string; traceback?: string[] } }
  /** complete_reply's content, as the server kernel's (kernel/language/answers.ts) */
  | { type: "completed"; id: number; content: CompleteAnswer }
  | { type: "inspected"; id: number; text: string | null }
  /** a cell imports a file of the drive (`./check.ts`): its path from the drive's root */
  | { type: "read"; id: number; path: string }
  /** the runtime wrote a file (torch.cuda.memory._dump_snapshot): its path from the drive's root */
  | { type: "write"; path: string; base64: string };
