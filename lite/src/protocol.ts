// Messages between the GradLab Lite kernel (main thread, extension.ts) and its Worker (worker.ts):
// Jupyter's content shapes, carried by postMessage instead of ZeroMQ.
import type { CompleteAnswer } from "../../kernel/language/answers.ts";

/** main thread -> Worker */
export type ToWorker =
  | { type: "execute"; id: number; code: string; count: number; silent: boolean; storeHistory: boolean; parent: object }
  | { type: "interrupt" }
  | { type: "complete"; id: number; code: string; cursor: number }
  | { type: "inspect"; id: number; code: string; cursor: number }
  | { type: "location"; dir: string }
  /** the answer to a `read`: the file's text, or why there is none */
  | ({ type: "file"; id: number } & ({ text: string } | { error: string }))
  | { type: "comm"; msgType: "comm_open" | "comm_msg" | "comm_close"; content: any; metadata: unknown; buffers: any[] };

/** Worker -> main thread */
export type FromWorker =
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
  | { type: "reply"; id: number; content: { status: "ok" | "error"; ename?: string; evalue?: string; traceback?: string[] } }
  /** complete_reply's content, as the server kernel's (kernel/language/answers.ts) */
  | { type: "completed"; id: number; content: CompleteAnswer }
  | { type: "inspected"; id: number; text: string | null }
  /** a cell imports a file of the drive (`./check.ts`): its path from the drive's root */
  | { type: "read"; id: number; path: string };
