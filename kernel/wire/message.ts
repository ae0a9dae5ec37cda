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
  constructor(
    private readonly key: string,
    scheme = "hmac-sha256",
  ) {
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

/** Limits on what a client may send (documented in README's Kernel section): deeper JSON would overflow
 *  the stack when a header is echoed as parent_header; bigger parts are refused before parsing. */
export const MAX_JSON_DEPTH = 256;
export const MAX_HEADER_BYTES = 64 * 1024;
const MAX_CONTENT_BYTES = 256 * 1024 * 1024;

/** Deepest nesting of [ and { in a JSON text (outside strings), scanning at most until the limit. */
export function jsonDepthExceeds(buf: Buffer, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

export function parse(frames: Buffer[], signer: Signer): ParseResult {
  const i = frames.findIndex((f) => f.length === DELIM.length && f.toString("latin1") === DELIM);
  if (i < 0) return { ok: false, reason: "no <IDS|MSG> delimiter" };
  if (frames.length < i + 6) return { ok: false, reason: `truncated message (${frames.length - i - 1} frames after delimiter)` };
  const [sig, h, p, m, c] = frames.slice(i + 1, i + 6);
  if (!signer.verify(sig, [h, p, m, c])) return { ok: false, reason: "invalid signature" };
  if (h.length > MAX_HEADER_BYTES || p.length > MAX_HEADER_BYTES) return { ok: false, reason: `header or parent_header over ${MAX_HEADER_BYTES} bytes` };
  if (m.length + c.length > MAX_CONTENT_BYTES) return { ok: false, reason: `metadata and content over ${MAX_CONTENT_BYTES} bytes` };
  for (const part of [h, p, m, c]) {
    if (jsonDepthExceeds(part, MAX_JSON_DEPTH)) return { ok: false, reason: `JSON nested deeper than ${MAX_JSON_DEPTH}` };
  }
  try {
    const header = JSON.parse(h.toString("utf8"));
    if (!header || typeof header !== "object" || Array.isArray(header) || typeof header.msg_type !== "string")
      return { ok: false, reason: "header without msg_type" };
    if (header.msg_type.length > 256) return { ok: false, reason: "msg_type longer than 256 characters" };
    return {
      ok: true,
      msg: {
        identities: frames.slice(0, i),
        header,
        parent_header: objectOr(JSON.parse(p.toString("utf8"))),
        metadata: objectOr(JSON.parse(m.toString("utf8"))),
        content: objectOr(JSON.parse(c.toString("utf8"))),
        buffers: frames.slice(i + 6),
      },
    };
  } catch (e) {
    return { ok: false, reason: `malformed JSON (${(e as Error).message})` };
  }
}

const objectOr = (v: unknown): any => (v && typeof v === "object" && !Array.isArray(v) ? v : {});

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
  return serializeJson(signer, [header, parent, metadata, content].map((x) => JSON.stringify(x)) as Parts, identities, buffers);
}

type Parts = [header: string, parent: string, metadata: string, content: string];

/** As serialize(), from the four parts already in JSON. */
export function serializeJson(signer: Signer, json: Parts, identities: Buffer[] = [], buffers: Buffer[] = []): Buffer[] {
  const parts = json.map((x) => Buffer.from(x, "utf8"));
  const sig = signer.sign(parts);
  return [...identities, Buffer.from(DELIM), Buffer.from(sig), ...parts, ...buffers];
}
