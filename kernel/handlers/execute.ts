// execute_request: execute_input, streams, execute_result / error, reply; stop_on_error aborts the queue.
import type { HandlerContext, Request } from "./context.ts";
import { toBundle, plain } from "../display/bundle.ts";
import { runCell } from "../executor/cell.ts";
import type { CellContext } from "../executor/output.ts";
import { languageService } from "../language/client.ts";
import { inspectText } from "../language/answers.ts";
import { reportTypeErrors, typeCheck } from "../language/type-warnings.ts";
import { dateMicros, hash32 } from "../sockets/shared.ts";

/** `name?` shows what inspection knows about name in the pager, as IPython does. */
async function pageHelp(k: HandlerContext, msg: Request<"execute_request">, name: string, storeHistory: boolean, started: string): Promise<void> {
  if (storeHistory) k.executionCount++;
  const text = (await inspectText(languageService(), name, name.length)) ?? `No information about ${name}`;
  k.reply(
    msg,
    "execute_reply",
    {
      status: "ok",
      execution_count: k.executionCount,
      payload: [{ source: "page", data: { "text/plain": text }, start: 0 }],
      user_expressions: {},
    },
    { status: "ok", started },
  );
}

export async function executeRequest(k: HandlerContext, msg: Request<"execute_request">): Promise<void> {
  const c = msg.content ?? {};
  const code = String(c.code ?? "");
  const silent = !!c.silent;
  const storeHistory = silent ? false : c.store_history !== false;
  const stopOnError = c.stop_on_error !== false;
  const started = new Date().toISOString();

  if (k.aborting) {
    k.reply(msg, "execute_reply", { status: "aborted", execution_count: k.executionCount }, { status: "aborted", started });
    return;
  }
  const help = code.length < 1000 ? /^\s*([A-Za-z_$][\w$.]*)\s*\?\s*$/.exec(code) : null;
  if (help) return pageHelp(k, msg, help[1], storeHistory, started);
  if (storeHistory) k.executionCount++;
  const count = k.executionCount;
  if (!silent) k.publish("execute_input", { code, execution_count: count }, msg.header);

  const ctx: CellContext = { parent: msg.header, identities: msg.identities, executionCount: count, allowStdin: c.allow_stdin !== false };
  const label = storeHistory ? `Cell [${count}]` : "Cell";
  const diagnostics = silent ? null : typeCheck(languageService(), code);
  let resultText: string | null = null;
  await runCell(k, {
    code,
    label,
    ctx,
    silent,
    requestedUs: dateMicros(msg.header.date),
    sessionHash: hash32(msg.header.session),
    afterDisplays: async () => {
      if (diagnostics) await reportTypeErrors((text) => k.publish("stream", { name: "stderr", text }, msg.header), diagnostics, label);
    },
    result: (b) => {
      resultText = String(b.data["text/plain"] ?? "");
      k.publish("execute_result", { execution_count: count, data: b.data, metadata: b.metadata }, msg.header);
    },
    finish: async (error) => {
      if (!error) {
        const user_expressions = await userExpressions(k, c.user_expressions, ctx);
        k.reply(msg, "execute_reply", { status: "ok", execution_count: count, payload: [], user_expressions }, { status: "ok", started });
      } else {
        if (!silent) k.publish("error", error, msg.header);
        if (stopOnError) await k.abortQueued();
        k.reply(msg, "execute_reply", { status: "error", execution_count: count, ...error, payload: [], user_expressions: {} }, { status: "error", started });
      }
      if (storeHistory) k.history.add(count, code, resultText);
      // later cells see this one's declarations; a cell that declares nothing adds nothing to check
      if (!error && !silent) languageService().cellRan(code);
    },
  });
}

async function userExpressions(k: HandlerContext, exprs: unknown, ctx: CellContext): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  if (!exprs || typeof exprs !== "object") return out;
  for (const [name, expr] of Object.entries(exprs as Record<string, string>)) {
    const r = await k.executor.run(`(${expr})`, `user_expressions[${JSON.stringify(name)}]`, ctx);
    if (r.status === "ok") {
      try {
        const b = await toBundle(r.value);
        out[name] = { status: "ok", data: b.data, metadata: b.metadata };
      } catch {
        out[name] = { status: "ok", data: { "text/plain": plain(r.value) }, metadata: {} };
      }
    } else out[name] = { status: "error", ...r.error };
  }
  return out;
}
