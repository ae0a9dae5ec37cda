// msg_type -> handler. Anything not listed is logged and, for *_request, answered with an error reply.
import type { Kernel } from "../kernel.ts";
import type { Message } from "../wire/message.ts";
import { executeRequest } from "./execute.ts";
import { completeRequest, inspectRequest } from "./complete.ts";
import {
  commClose, commInfoRequest, commMsg, commOpen, historyRequest, isCompleteRequest, kernelInfoRequest, shutdownRequest,
} from "./misc.ts";

export type Handler = (k: Kernel, msg: Message, channel: "shell" | "control") => void | Promise<void>;

export const handlers: Record<string, Handler> = {
  kernel_info_request: kernelInfoRequest,
  execute_request: executeRequest,
  complete_request: completeRequest,
  inspect_request: inspectRequest,
  is_complete_request: isCompleteRequest,
  history_request: historyRequest,
  comm_info_request: commInfoRequest,
  comm_open: commOpen,
  comm_msg: commMsg,
  comm_close: commClose,
  shutdown_request: shutdownRequest,
};
