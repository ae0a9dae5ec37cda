// kernel_info, is_complete, history, comms, shutdown.
import type { HandlerContext, Request } from "./context.ts";
import { stripTypes, CellSyntaxError } from "../executor/transform.ts";

export function kernelInfoRequest(k: HandlerContext, msg: Request<"kernel_info_request">): void {
  k.reply(msg, "kernel_info_reply", k.kernelInfo);
  k.warmUp();
}

export function isCompleteRequest(k: HandlerContext, msg: Request<"is_complete_request">): void {
  const code = String(msg.content?.code ?? "");
  k.reply(msg, "is_complete_reply", isComplete(code));
}

/** is_complete answers "unknown" past these (a frontend then runs the code as typed): the check is a
 *  full parse, and a client must get its answer in bounded time. */
export const IS_COMPLETE_MAX_LINES = 10_000;
const IS_COMPLETE_MAX_BYTES = 1 << 20;

export function isComplete(code: string): { status: "complete" | "invalid" | "unknown" } | { status: "incomplete"; indent: string } {
  if (code.length > IS_COMPLETE_MAX_BYTES) return { status: "unknown" };
  let lines = 1;
  for (let i = code.indexOf("\n"); i >= 0; i = code.indexOf("\n", i + 1)) if (++lines > IS_COMPLETE_MAX_LINES) return { status: "unknown" };
  try {
    stripTypes(code, "is_complete.ts");
    return { status: "complete" };
  } catch (e) {
    if (!(e instanceof CellSyntaxError)) return { status: "invalid" };
    const atEnd = e.errors.some(
      (x) =>
        /end of file|Unterminated template|to terminate multi-line comment/i.test(x.text) ||
        (/Unterminated string/i.test(x.text) && (code.match(/(?<!\\)`/g) ?? []).length % 2 === 1),
    );
    if (!atEnd) return { status: "invalid" };
    const lastLine = code.split("\n").pop() ?? "";
    const indent = /^\s*/.exec(lastLine)![0] + (/[{([]\s*$/.test(lastLine) ? "  " : "");
    return { status: "incomplete", indent };
  }
}

export function historyRequest(k: HandlerContext, msg: Request<"history_request">): void {
  const c = msg.content ?? {};
  const output = !!c.output;
  let history: unknown[] = [];
  const num = (v: unknown, d: number) => (Number.isFinite(Number(v)) ? Math.trunc(Number(v)) : d);
  if (c.hist_access_type === "tail") history = k.history.tail(Math.max(0, num(c.n ?? 10, 10)), output);
  else if (c.hist_access_type === "range")
    history = k.history.range(Number(c.session ?? 0), Number(c.start ?? 0), c.stop == null ? null : Number(c.stop), output);
  else if (c.hist_access_type === "search") history = k.history.search(String(c.pattern ?? "*"), c.n == null ? null : Number(c.n), !!c.unique, output);
  k.reply(msg, "history_reply", { status: "ok", history });
}

export function commInfoRequest(k: HandlerContext, msg: Request<"comm_info_request">): void {
  k.reply(msg, "comm_info_reply", { status: "ok", comms: k.comms.info(typeof msg.content?.target_name === "string" ? msg.content.target_name : undefined) });
}

/** Runs comm callbacks as if in a cell: their output and errors go to the frontend, attributed to this message. */
function inCommContext(k: HandlerContext, msg: Request<"comm_open" | "comm_msg" | "comm_close">, fn: () => boolean): boolean {
  const ctx = { parent: msg.header, identities: msg.identities, executionCount: k.executionCount, allowStdin: false };
  return k.capture.als.run(ctx, () => {
    try {
      return fn();
    } catch (e) {
      process.stderr.write(`Error in comm handler: ${(e as Error)?.stack ?? e}\n`);
      return true;
    }
  });
}

export function commOpen(k: HandlerContext, msg: Request<"comm_open">): void {
  const ok = inCommContext(k, msg, () => k.comms.open(msg.content, msg.metadata, msg.buffers));
  if (!ok) {
    // no such target: tell the frontend the comm is closed, as ipykernel does
    k.publish("comm_close", { comm_id: msg.content?.comm_id, data: {} }, msg.header);
  }
}

export function commMsg(k: HandlerContext, msg: Request<"comm_msg">): void {
  inCommContext(k, msg, () => k.comms.msg(msg.content, msg.metadata, msg.buffers));
}

export function commClose(k: HandlerContext, msg: Request<"comm_close">): void {
  inCommContext(k, msg, () => k.comms.close(msg.content));
}

export async function shutdownRequest(k: HandlerContext, msg: Request<"shutdown_request">): Promise<void> {
  const restart = !!msg.content?.restart;
  k.reply(msg, "shutdown_reply", { status: "ok", restart });
  await k.shutdown(restart);
}
