// The session: signs what the kernel sends, replies on the channel a request came on, publishes on
// iopub, and tracks the parent header each message carries. Above the socket server, below handlers.
import { makeHeader, serialize, type Message, type Signer } from "./wire/message.ts";
import type { Channel, ErrorReply, IOPub, IOPubType, Replies, ReplyType } from "./wire/protocol.ts";
import type { SocketServer } from "./sockets/server.ts";
import { log } from "./log.ts";

export class Session {
  /** the request being handled now (its header is the parent of what handlers publish) */
  current: Message | null = null;
  /** the channel each request came on: its reply goes back there */
  private readonly channels = new WeakMap<Message, Channel>();
  /** parent headers in JSON, per request (streams carry them with every write) */
  private readonly parentJson = new WeakMap<object, string>();

  constructor(
    readonly id: string,
    private readonly signer: Signer,
    private readonly server: SocketServer,
  ) {}

  /** Records where a request came from; call before it is handled. */
  received(msg: Message, channel: Channel): void {
    this.channels.set(msg, channel);
  }

  channelOf(msg: Message): Channel {
    return this.channels.get(msg) ?? "shell";
  }

  reply<T extends ReplyType>(req: Message, type: T, content: Replies[T], metadata: object = {}): void {
    this.send(req, type, content, metadata);
  }

  /** An error reply for a request type the kernel does not serve (the type comes from the client). */
  replyError(req: Message, type: string, content: ErrorReply): void {
    this.send(req, type, content, {});
  }

  private send(req: Message, type: string, content: object, metadata: object): void {
    let frames: Buffer[];
    try {
      frames = serialize(this.signer, makeHeader(type, this.id), req.header, metadata, content, req.identities);
    } catch (e) {
      // content that cannot be serialized (a user's cyclic value, a BigInt): say so rather than go silent
      log(`cannot serialize ${type}: ${(e as Error)?.message ?? e}`);
      const error: ErrorReply = { status: "error", ename: "SerializationError", evalue: String((e as Error)?.message ?? e), traceback: [] };
      frames = serialize(this.signer, makeHeader(type, this.id), req.header, {}, error, req.identities);
    }
    this.server.send(this.channelOf(req), frames);
  }

  /** Publishes on iopub (through the socket thread, after everything posted before it). */
  publish<T extends IOPubType>(type: T, content: IOPub[T], parent: object, metadata: object = {}, buffers: Buffer[] = []): void {
    const topic = Buffer.from(`kernel.${this.id}.${type}`);
    this.server.iopub(serialize(this.signer, makeHeader(type, this.id), parent, metadata, content, [topic], buffers));
  }

  /** Text a cell wrote under `parent`: coalesced into stream messages on the socket thread. */
  stream(parent: object, name: "stdout" | "stderr", text: string): void {
    let j = this.parentJson.get(parent);
    if (j === undefined) this.parentJson.set(parent, (j = JSON.stringify(parent)));
    this.server.stream(name, text, j);
  }
}
