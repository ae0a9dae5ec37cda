// What handlers may use of the kernel: this interface, never the Kernel class (kernel.ts sits above
// every layer and implements it), so the handlers, displays and language client import nothing above.
import type { Message } from "../wire/message.ts";
import type { ErrorReply, Replies, ReplyType, RequestType, Requests, Untrusted } from "../wire/protocol.ts";
import type { DisplayHost } from "../display/globals.ts";
import type { Executor } from "../executor/executor.ts";
import type { OutputCapture } from "../executor/output.ts";
import type { History } from "../history.ts";
import type { KernelInfo } from "../info.ts";

export interface HandlerContext extends DisplayHost {
  /** replies on the channel the request came on */
  reply<T extends ReplyType>(req: Message, type: T, content: Replies[T], metadata?: object): void;
  /** an error reply for a request type the kernel does not serve */
  replyError(req: Message, type: string, content: ErrorReply): void;
  readonly executor: Executor;
  readonly capture: OutputCapture;
  readonly history: History;
  readonly kernelInfo: KernelInfo;
  /** the execution counter (In [n]); execute_request advances it for cells stored in history */
  executionCount: number;
  /** after an error with stop_on_error, true for the execute_requests that arrived before it */
  readonly aborting: boolean;
  /** stop_on_error: abort every request already sent to us (call before the error reply) */
  abortQueued(): Promise<void>;
  /** loads the runtime and the language service in the background, once */
  warmUp(): void;
  shutdown(restart: boolean): Promise<void>;
}

/** A request of type T as it arrived: its content's fields are the client's, unchecked. */
export type Request<T extends RequestType> = Message<Untrusted<Requests[T]>>;
