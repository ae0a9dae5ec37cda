// complete_request and inspect_request: the TypeScript language service (types, signatures, docs)
// merged with live values (language/answers.ts, which GradLab Lite's Worker answers with too).
import type { HandlerContext, Request } from "./context.ts";
import { completeAnswer, inspectAnswer } from "../language/answers.ts";
import { languageService } from "../language/client.ts";

export async function completeRequest(k: HandlerContext, msg: Request<"complete_request">): Promise<void> {
  k.reply(msg, "complete_reply", await completeAnswer(languageService(), msg.content?.code, msg.content?.cursor_pos));
}

export async function inspectRequest(k: HandlerContext, msg: Request<"inspect_request">): Promise<void> {
  const text = await inspectAnswer(languageService(), msg.content?.code, msg.content?.cursor_pos);
  k.reply(
    msg,
    "inspect_reply",
    text == null ? { status: "ok", found: false, data: {}, metadata: {} } : { status: "ok", found: true, data: { "text/plain": text }, metadata: {} },
  );
}
