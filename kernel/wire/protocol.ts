// Message contents, typed with JupyterLab's own protocol types (type-only: nothing of
// @jupyterlab/services is loaded at run time). One table per direction, keyed by msg_type, so a
// handler, a reply or a publish with the wrong content (or a misspelt type) is a compile error.
import type { KernelMessage as KM } from "@jupyterlab/services";

/** The socket a request came on; its reply goes back on the same one. */
export type Channel = "shell" | "control";

/** What a client may send: the protocol's field names, with values not yet checked (a hostile or
 *  buggy client sends anything, so each handler validates what it reads). */
export type Untrusted<C> = { [K in KeysOfUnion<C>]?: unknown };
/** every field name of every member (history_request's content is a union by hist_access_type) */
type KeysOfUnion<C> = C extends unknown ? keyof C : never;

/** Requests served by the main thread's handlers (interrupt_request and the control channel's
 *  kernel_info/shutdown are answered on the socket thread: see sockets/control-worker.ts). */
export interface Requests {
  kernel_info_request: KM.IInfoRequestMsg["content"];
  execute_request: KM.IExecuteRequestMsg["content"];
  complete_request: KM.ICompleteRequestMsg["content"];
  inspect_request: KM.IInspectRequestMsg["content"];
  is_complete_request: KM.IIsCompleteRequestMsg["content"];
  history_request: KM.IHistoryRequestMsg["content"];
  comm_info_request: KM.ICommInfoRequestMsg["content"];
  comm_open: KM.ICommOpenMsg<"shell">["content"];
  comm_msg: KM.ICommMsgMsg<"shell">["content"];
  comm_close: KM.ICommCloseMsg<"shell">["content"];
  /** (JupyterLab has no type for it: it shuts down through the server's REST API) */
  shutdown_request: { restart: boolean };
}
export type RequestType = keyof Requests;

/** An error reply (any request type; also what an unknown `*_request` gets). */
export type ErrorReply = KM.IReplyErrorContent;

/** Replies the kernel sends, by type. Values cells produce (user_expressions, payload data) are
 *  plain objects rather than the protocol's JSON types: they are serialized, and a value that cannot
 *  be is answered with an error reply (see Session.reply). */
export interface Replies {
  kernel_info_reply: KM.IInfoReply;
  execute_reply:
    | (KM.IExecuteCount & { status: "ok"; payload: object[]; user_expressions: Record<string, unknown> })
    | (KM.IExecuteCount & ErrorReply & { payload: object[]; user_expressions: Record<string, unknown> })
    | (KM.IExecuteCount & { status: "aborted" });
  complete_reply: { status: "ok"; matches: string[]; cursor_start: number; cursor_end: number; metadata: Record<string, unknown> };
  inspect_reply: { status: "ok"; found: boolean; data: Record<string, unknown>; metadata: Record<string, unknown> };
  is_complete_reply: KM.IIsCompleteReplyMsg["content"];
  history_reply: { status: "ok"; history: unknown[] };
  comm_info_reply: KM.ICommInfoReply;
  shutdown_reply: ShutdownReply;
  interrupt_reply: KM.IInterruptReplyMsg["content"];
}
export type ReplyType = keyof Replies;

/** What the kernel publishes on iopub, by type. */
export interface IOPub {
  status: KM.IStatusMsg["content"];
  stream: KM.IStreamMsg["content"];
  execute_input: KM.IExecuteInputMsg["content"];
  execute_result: { execution_count: number; data: Record<string, unknown>; metadata: Record<string, unknown> };
  error: { ename: string; evalue: string; traceback: string[] };
  display_data: DisplayContent;
  update_display_data: DisplayContent;
  clear_output: KM.IClearOutputMsg["content"];
  comm_open: { comm_id: string; target_name: string; data: unknown };
  comm_msg: { comm_id: string; data: unknown };
  comm_close: { comm_id: unknown; data: unknown };
  shutdown_reply: ShutdownReply;
}
export type IOPubType = keyof IOPub;

/** display_data / update_display_data content (`transient.display_id` names the output to update). */
export interface DisplayContent {
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
  transient: { display_id?: string };
}

interface ShutdownReply {
  status: "ok";
  restart: boolean;
}
