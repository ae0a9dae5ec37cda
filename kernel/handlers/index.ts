// msg_type -> handler. The table is keyed by every request type in wire/protocol.ts's `Requests`, so
// adding a message type is one line there and one here, and a type without a handler does not
// compile. Anything else is logged and, for *_request, answered with an error reply.
import type { Message } from "../wire/message.ts";
import type { Channel, RequestType } from "../wire/protocol.ts";
import type { HandlerContext, Request } from "./context.ts";
import { executeRequest } from "./execute.ts";
import { completeRequest, inspectRequest } from "./complete.ts";
import { commClose, commInfoRequest, commMsg, commOpen, historyRequest, isCompleteRequest, kernelInfoRequest, shutdownRequest } from "./misc.ts";
import { log } from "../log.ts";

type Handler<T extends RequestType> = (k: HandlerContext, msg: Request<T>, channel: Channel) => void | Promise<void>;

const handlers: { [T in RequestType]: Handler<T> } = {
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

const isRequestType = (type: string): type is RequestType => Object.hasOwn(handlers, type);

/** Runs the handler for msg's type. Own properties only: "constructor" or "__proto__" are unknown
 *  types, not Object's methods. */
export async function dispatch(k: HandlerContext, msg: Message, channel: Channel): Promise<void> {
  const type = msg.header.msg_type;
  if (isRequestType(type)) {
    // the content is whatever the client sent: each handler reads it as Untrusted
    await (handlers[type] as Handler<RequestType>)(k, msg, channel);
    return;
  }
  log(`unknown message type ${JSON.stringify(type).slice(0, 200)} on ${channel}`);
  if (!/^comm_|_reply$/.test(type)) {
    k.replyError(msg, `${type.replace(/_request$/, "")}_reply`, {
      status: "error",
      ename: "UnknownMessageType",
      evalue: `unknown message type ${type.slice(0, 200)}`,
      traceback: [],
    });
  }
}
