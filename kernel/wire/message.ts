// Jupyter wire protocol: multipart framing and HMAC signing (messaging spec 5.3+).
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";

export const DELIM = "<IDS|MSG>";
export const PROTOCOL_VERSION = "5.3";

export interface Header {
  msg_id: string;
  session: string;
  username: string;
  date: string;
  msg_type: string;
  version: string;
  [k: string]: unknown;
}

export interface Message<C = any> {
  identities: Buffer[];
  header: Header;
  parent_header: Partial<Header> & Record<string, unknown>;
  metadata: Record<string, unknown>;
  content: C;
  buffers: Buffer[];
}

export type ParseResult = { ok: true; msg: Message } | { ok: false; reason: string };

/** Signs and verifies frames with the connection's key; an empty key means no signing. */
export class Signer {
  private readonly algo: string | null;
  constructor(private readonly key: string, scheme = "hmac-sha256") {
    if (!key) this.algo = null;
    else {
      const m = /^hmac-(.+)$/.exec(scheme);
      if (!m) throw new Error(`unsupported signature_scheme ${scheme}`);
      this.algo = m[1];
    }
  }
  sign(frames: (Buffer | string)[]): string {
    if (!this.algo) return "";
    const h = createHmac(this.algo, this.key);
    for (const f of frames) h.update(f);
    return h.digest("hex");
  }
  /** Constant-time comparison; never exposes the expected signature. */
  verify(signature: Buffer, frames: Buffer[]): boolean {
    if (!this.algo) return true;
    const expected = Buffer.from(this.sign(frames), "utf8");
    if (signature.length !== expected.length) {
      // compare against itself anyway so timing does not depend on where the mismatch is
      timingSafeEqual(expected, expected);
      return false;
    }
    return timingSafeEqual(signature, expected);
  }
}

export function parse(frames: Buffer[], signer: Signer): ParseResult {
  const i = frames.findIndex((f) => f.length === DELIM.length && f.toString("latin1") === DELIM);
  if (i < 0) return { ok: false, reason: "no <IDS|MSG> delimiter" };
  if (frames.length < i + 6) return { ok: false, reason: `truncated message (${frames.length - i - 1} frames after delimiter)` };
  const [sig, h, p, m, c] = frames.slice(i + 1, i + 6);
  if (!signer.verify(sig, [h, p, m, c])) return { ok: false, reason: "invalid signature" };
  try {
    const header = JSON.parse(h.toString("utf8"));
    if (!header || typeof header.msg_type !== "string") return { ok: false, reason: "header without msg_type" };
    return {
      ok: true,
      msg: {
        identities: frames.slice(0, i),
        header,
        parent_header: JSON.parse(p.toString("utf8")) ?? {},
        metadata: JSON.parse(m.toString("utf8")) ?? {},
        content: JSON.parse(c.toString("utf8")) ?? {},
        buffers: frames.slice(i + 6),
      },
    };
  } catch (e) {
    return { ok: false, reason: `malformed JSON (${(e as Error).message})` };
  }
}

export function makeHeader(msg_type: string, session: string, username = "kernel"): Header {
  return { msg_id: randomUUID(), session, username, date: new Date().toISOString(), msg_type, version: PROTOCOL_VERSION };
}

export function serialize(
  signer: Signer,
  header: Header,
  parent: object,
  metadata: object,
  content: object,
  identities: Buffer[] = [],
  buffers: Buffer[] = [],
): Buffer[] {
  const parts = [header, parent, metadata, content].map((x) => Buffer.from(JSON.stringify(x), "utf8"));
  const sig = signer.sign(parts);
  return [...identities, Buffer.from(DELIM), Buffer.from(sig), ...parts, ...buffers];
}
