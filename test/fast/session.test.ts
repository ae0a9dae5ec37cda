// The session and the dispatch table in process, over a fake socket server: replies go back on the
// channel their request came on, signed; what cannot be serialized becomes an error reply; unknown
// types (Object.prototype's names included) get an error reply where the protocol has one.
import { describe, expect, it } from "vitest";
import { makeHeader, parse, serialize, Signer, type Message } from "../../kernel/wire/message.ts";
import type { Channel } from "../../kernel/wire/protocol.ts";
import { Session } from "../../kernel/session.ts";
import type { SocketServer } from "../../kernel/sockets/server.ts";
import { dispatch } from "../../kernel/handlers/index.ts";
import type { HandlerContext } from "../../kernel/handlers/context.ts";

const signer = new Signer("key");

function fakeServer() {
  const sent: { channel: Channel | "iopub"; frames: Buffer[] }[] = [];
  const streams: unknown[][] = [];
  const server = {
    send: (channel: Channel, frames: Buffer[]) => sent.push({ channel, frames }),
    iopub: (frames: Buffer[]) => sent.push({ channel: "iopub", frames }),
    stream: (...a: unknown[]) => streams.push(a),
  } as unknown as SocketServer;
  return { server, sent, streams };
}

function request(type: string, content: object = {}): Message {
  const r = parse(serialize(signer, makeHeader(type, "client"), {}, {}, content, [Buffer.from("peer")]), signer);
  if (!r.ok) throw new Error(r.reason);
  return r.msg;
}

const read = (frames: Buffer[]) => {
  const r = parse(frames, signer);
  if (!r.ok) throw new Error(r.reason);
  return r.msg;
};

describe("session", () => {
  it("replies on the request's channel, signed, with the request as parent and its identities", () => {
    const { server, sent } = fakeServer();
    const s = new Session("S", signer, server);
    const a = request("is_complete_request", { code: "1" });
    const b = request("kernel_info_request");
    s.received(a, "shell");
    s.received(b, "control");
    s.reply(b, "is_complete_reply", { status: "complete" });
    s.reply(a, "is_complete_reply", { status: "invalid" });
    expect(sent.map((x) => x.channel)).toEqual(["control", "shell"]);
    const m = read(sent[1].frames);
    expect(m.identities.map(String)).toEqual(["peer"]);
    expect(m.header).toMatchObject({ msg_type: "is_complete_reply", session: "S" });
    expect(m.parent_header.msg_id).toBe(a.header.msg_id);
    expect(m.content).toEqual({ status: "invalid" });
  });

  it("a reply that cannot be serialized becomes an error reply naming why", () => {
    const { server, sent } = fakeServer();
    const s = new Session("S", signer, server);
    const req = request("execute_request");
    s.received(req, "shell");
    s.reply(req, "execute_reply", { status: "ok", execution_count: 1, payload: [], user_expressions: { x: 10n } });
    expect(read(sent[0].frames).content).toMatchObject({ status: "error", ename: "SerializationError", evalue: expect.stringMatching(/BigInt/) });
  });

  it("publishes on iopub under kernel.<session>.<type>, and streams with the parent in JSON", () => {
    const { server, sent, streams } = fakeServer();
    const s = new Session("S", signer, server);
    const parent = { msg_id: "p1" };
    s.publish("status", { execution_state: "busy" }, parent);
    expect(String(sent[0].frames[0])).toBe("kernel.S.status");
    expect(read(sent[0].frames).parent_header).toEqual(parent);
    s.stream(parent, "stdout", "hi");
    s.stream(parent, "stderr", "oops");
    expect(streams).toEqual([
      ["stdout", "hi", '{"msg_id":"p1"}'],
      ["stderr", "oops", '{"msg_id":"p1"}'],
    ]);
  });
});

describe("dispatch", () => {
  function fakeContext() {
    const replies: { type: string; content: any }[] = [];
    const k = {
      reply: (_req: Message, type: string, content: unknown) => replies.push({ type, content }),
      replyError: (_req: Message, type: string, content: unknown) => replies.push({ type, content }),
    } as unknown as HandlerContext;
    return { k, replies };
  }

  it("runs the handler of the request's type", async () => {
    const { k, replies } = fakeContext();
    await dispatch(k, request("is_complete_request", { code: "for (;;) {" }), "shell");
    expect(replies).toEqual([{ type: "is_complete_reply", content: { status: "incomplete", indent: "  " } }]);
  });

  it("unknown request types, Object.prototype's names included, get an error reply; unknown comm_ and _reply types none", async () => {
    const { k, replies } = fakeContext();
    for (const t of ["debug_request", "constructor", "__proto__", "toString"]) await dispatch(k, request(t), "control");
    expect(replies.map((r) => [r.type, r.content.status, r.content.ename])).toEqual([
      ["debug_reply", "error", "UnknownMessageType"],
      ["constructor_reply", "error", "UnknownMessageType"],
      ["__proto___reply", "error", "UnknownMessageType"],
      ["toString_reply", "error", "UnknownMessageType"],
    ]);
    await dispatch(k, request("comm_whatever"), "shell");
    await dispatch(k, request("input_reply"), "shell");
    expect(replies).toHaveLength(4);
  });
});
