// The wire format in process: framing, HMAC signing and verification, and what parse() refuses.
import { describe, expect, it } from "vitest";
import { createHmac } from "node:crypto";
import { DELIM, MAX_HEADER_BYTES, MAX_JSON_DEPTH, makeHeader, parse, serialize, Signer, jsonDepthExceeds } from "../../kernel/wire/message.ts";

const KEY = "a0b1c2d3-secret";
const signer = new Signer(KEY, "hmac-sha256");
const ids = [Buffer.from("client-1"), Buffer.from("router-2")];

function frames(content: object = { code: "1 + 1" }, s = signer) {
  return serialize(s, makeHeader("execute_request", "session-1", "alice"), { msg_id: "p" }, { m: 1 }, content, ids, [Buffer.from([1, 2, 3])]);
}

describe("wire", () => {
  it("round-trips a message: identities, the four parts and buffers", () => {
    const r = parse(frames(), signer);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.msg.identities.map(String)).toEqual(["client-1", "router-2"]);
    expect(r.msg.header).toMatchObject({ msg_type: "execute_request", session: "session-1", username: "alice", version: "5.3" });
    expect(r.msg.parent_header).toEqual({ msg_id: "p" });
    expect(r.msg.metadata).toEqual({ m: 1 });
    expect(r.msg.content).toEqual({ code: "1 + 1" });
    expect(r.msg.buffers).toEqual([Buffer.from([1, 2, 3])]);
  });

  it("signs with HMAC-SHA256 over header, parent, metadata and content, in that order", () => {
    const f = frames();
    const at = f.findIndex((b) => b.toString() === DELIM);
    const h = createHmac("sha256", KEY);
    for (const part of f.slice(at + 2, at + 6)) h.update(part);
    expect(f[at + 1].toString()).toBe(h.digest("hex"));
  });

  it("refuses a bad signature, a tampered part and a message signed with another key", () => {
    const f = frames();
    const at = f.findIndex((b) => b.toString() === DELIM);
    const badSig = [...f];
    badSig[at + 1] = Buffer.from("0".repeat(64));
    expect(parse(badSig, signer)).toEqual({ ok: false, reason: "invalid signature" });
    const shortSig = [...f];
    shortSig[at + 1] = Buffer.from("abc");
    expect(parse(shortSig, signer)).toEqual({ ok: false, reason: "invalid signature" });
    const tampered = [...f];
    tampered[at + 5] = Buffer.from(JSON.stringify({ code: "rm -rf" }));
    expect(parse(tampered, signer)).toEqual({ ok: false, reason: "invalid signature" });
    expect(parse(frames({}, new Signer("other-key")), signer)).toEqual({ ok: false, reason: "invalid signature" });
  });

  it("refuses truncated frames, a missing delimiter and a wrong one", () => {
    const f = frames();
    const at = f.findIndex((b) => b.toString() === DELIM);
    for (let n = at + 1; n < at + 6; n++) {
      const r = parse(f.slice(0, n), signer);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason).toMatch(/^truncated message/);
    }
    expect(
      parse(
        f.filter((_, i) => i !== at),
        signer,
      ),
    ).toEqual({ ok: false, reason: "no <IDS|MSG> delimiter" });
    const wrong = [...f];
    wrong[at] = Buffer.from("<IDS|MSG >");
    expect(parse(wrong, signer)).toEqual({ ok: false, reason: "no <IDS|MSG> delimiter" });
    expect(parse([], signer)).toEqual({ ok: false, reason: "no <IDS|MSG> delimiter" });
  });

  it("refuses a header without msg_type, malformed JSON, oversized headers and deep nesting", () => {
    const none = new Signer("");
    const raw = (h: string, c = "{}") => [Buffer.from(DELIM), Buffer.from(""), Buffer.from(h), Buffer.from("{}"), Buffer.from("{}"), Buffer.from(c)];
    expect(parse(raw("{}"), none)).toEqual({ ok: false, reason: "header without msg_type" });
    expect(parse(raw("[1]"), none)).toEqual({ ok: false, reason: "header without msg_type" });
    expect(parse(raw(JSON.stringify({ msg_type: "x".repeat(257) })), none)).toEqual({ ok: false, reason: "msg_type longer than 256 characters" });
    const bad = parse(raw('{"msg_type": '), none);
    expect(bad.ok || bad.reason).toMatch(/^malformed JSON/);
    const big = parse(raw(JSON.stringify({ msg_type: "a", pad: "x".repeat(MAX_HEADER_BYTES) })), none);
    expect(big.ok || big.reason).toMatch(/over 65536 bytes/);
    const deep = "[".repeat(MAX_JSON_DEPTH + 1) + "]".repeat(MAX_JSON_DEPTH + 1);
    expect(parse(raw(JSON.stringify({ msg_type: "a" }), deep), none)).toEqual({ ok: false, reason: `JSON nested deeper than ${MAX_JSON_DEPTH}` });
    // content that is not an object becomes {} (handlers read fields of it)
    const arr = parse(raw(JSON.stringify({ msg_type: "a" }), "[1, 2]"), none);
    expect(arr.ok && arr.msg.content).toEqual({});
  });

  it("counts nesting outside strings only", () => {
    expect(jsonDepthExceeds(Buffer.from(JSON.stringify({ s: "[[[[[[" })), 2)).toBe(false);
    expect(jsonDepthExceeds(Buffer.from('{"s": "\\"[[[["}'), 2)).toBe(false);
    expect(jsonDepthExceeds(Buffer.from("[[[]]]"), 2)).toBe(true);
  });

  it("an empty key signs nothing and accepts any signature; an unknown scheme is refused", () => {
    const none = new Signer("");
    expect(none.sign([Buffer.from("x")])).toBe("");
    const f = frames({}, none);
    expect(parse(f, none).ok).toBe(true);
    expect(() => new Signer("k", "sha256")).toThrow(/unsupported signature_scheme sha256/);
  });
});
