// A Python pickle writer (protocol 2) for the values a memory snapshot holds: dicts with string keys,
// lists, tuples, strings, integers, floats, booleans and None. Written here because npm has readers
// (pickleparser, jpickle) but no maintained writer; it emits only opcodes that both CPython's
// unpickler and pytorch.org/memory_viz's own JavaScript unpickler read (PROTO, EMPTY_DICT, EMPTY_LIST,
// MARK, SETITEMS, APPENDS, TUPLE2/TUPLE, BINUNICODE, BININT1/BININT2/BININT, LONG1, BINFLOAT,
// NEWTRUE/NEWFALSE, NONE, STOP), and no memo: a snapshot has no shared or cyclic objects.

const OP = {
  PROTO: 0x80,
  STOP: 0x2e, // .
  NONE: 0x4e, // N
  NEWTRUE: 0x88,
  NEWFALSE: 0x89,
  BININT: 0x4a, // J
  BININT1: 0x4b, // K
  BININT2: 0x4d, // M
  LONG1: 0x8a,
  BINFLOAT: 0x47, // G
  BINUNICODE: 0x58, // X
  EMPTY_LIST: 0x5d, // ]
  EMPTY_DICT: 0x7d, // }
  MARK: 0x28, // (
  APPENDS: 0x65, // e
  SETITEMS: 0x75, // u
  TUPLE: 0x74, // t
  EMPTY_TUPLE: 0x29, // )
  TUPLE2: 0x86,
} as const;

const TUPLE = Symbol("pickle.tuple");
/** A Python tuple (JavaScript has none): `pyTuple(0, 0)` pickles as `(0, 0)`. */
export interface PyTuple {
  readonly [TUPLE]: true;
  readonly items: readonly unknown[];
}
export const pyTuple = (...items: unknown[]): PyTuple => ({ [TUPLE]: true, items });
const isTuple = (v: object): v is PyTuple => TUPLE in v;

const utf8 = new TextEncoder();

// Python's pickler batches APPENDS / SETITEMS by 1000 so the unpickler's stack stays small.
const BATCH = 1000;

/** A growing byte buffer (Uint8Array and DataView: the runtime also runs in a browser, which has no
 *  Node Buffer). */
class Out {
  private buf = new Uint8Array(1 << 16);
  private view = new DataView(this.buf.buffer);
  private n = 0;
  private room(k: number): void {
    if (this.n + k <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.n + k));
    next.set(this.buf.subarray(0, this.n));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  byte(b: number): void {
    this.room(1);
    this.buf[this.n++] = b;
  }
  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.n);
    this.n += b.length;
  }
  u16(v: number): void {
    this.room(2);
    this.view.setUint16(this.n, v, true);
    this.n += 2;
  }
  i32(v: number): void {
    this.room(4);
    this.view.setInt32(this.n, v, true);
    this.n += 4;
  }
  u32(v: number): void {
    this.room(4);
    this.view.setUint32(this.n, v, true);
    this.n += 4;
  }
  f64be(v: number): void {
    this.room(8);
    this.view.setFloat64(this.n, v, false);
    this.n += 8;
  }
  done(): Uint8Array {
    return this.buf.subarray(0, this.n);
  }
}

/** Little-endian two's complement in as few bytes as keep the sign (LONG1's payload). */
function longBytes(v: bigint): Uint8Array {
  const out: number[] = [];
  let x = v;
  for (;;) {
    const b = Number(x & 0xffn);
    out.push(b);
    x >>= 8n;
    if ((x === 0n && (b & 0x80) === 0) || (x === -1n && (b & 0x80) !== 0)) break;
  }
  return Uint8Array.from(out);
}

function writeInt(o: Out, v: number | bigint): void {
  if (typeof v === "number" && v >= 0 && v < 0x100) {
    o.byte(OP.BININT1);
    o.byte(v);
  } else if (typeof v === "number" && v >= 0 && v < 0x10000) {
    o.byte(OP.BININT2);
    o.u16(v);
  } else if (typeof v === "number" && v >= -(2 ** 31) && v < 2 ** 31) {
    o.byte(OP.BININT);
    o.i32(v);
  } else {
    const b = longBytes(BigInt(v));
    o.byte(OP.LONG1);
    o.byte(b.length);
    o.bytes(b);
  }
}

function write(o: Out, v: unknown, path: string): void {
  if (v === null || v === undefined) o.byte(OP.NONE);
  else if (v === true) o.byte(OP.NEWTRUE);
  else if (v === false) o.byte(OP.NEWFALSE);
  else if (typeof v === "bigint") writeInt(o, v);
  else if (typeof v === "number") {
    if (Number.isSafeInteger(v)) writeInt(o, v);
    else {
      o.byte(OP.BINFLOAT);
      o.f64be(v);
    }
  } else if (typeof v === "string") {
    const b = utf8.encode(v);
    o.byte(OP.BINUNICODE);
    o.u32(b.length);
    o.bytes(b);
  } else if (Array.isArray(v)) {
    o.byte(OP.EMPTY_LIST);
    for (let i = 0; i < v.length; i += BATCH) {
      o.byte(OP.MARK);
      for (let j = i; j < Math.min(v.length, i + BATCH); j++) write(o, v[j], `${path}[${j}]`);
      o.byte(OP.APPENDS);
    }
  } else if (typeof v === "object" && isTuple(v)) {
    if (v.items.length === 0) o.byte(OP.EMPTY_TUPLE);
    else if (v.items.length === 2) {
      v.items.forEach((x, i) => write(o, x, `${path}[${i}]`));
      o.byte(OP.TUPLE2);
    } else {
      o.byte(OP.MARK);
      v.items.forEach((x, i) => write(o, x, `${path}[${i}]`));
      o.byte(OP.TUPLE);
    }
  } else if (typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
    const entries = Object.entries(v).filter(([, x]) => x !== undefined);
    o.byte(OP.EMPTY_DICT);
    for (let i = 0; i < entries.length; i += BATCH) {
      o.byte(OP.MARK);
      for (const [k, x] of entries.slice(i, i + BATCH)) {
        write(o, k, path);
        write(o, x, `${path}.${k}`);
      }
      o.byte(OP.SETITEMS);
    }
  } else {
    throw new TypeError(`cannot pickle ${path || "the value"}: ${Object.prototype.toString.call(v)} is not a dict, list, tuple, str, int, float, bool or None`);
  }
}

/** `pickle.dumps(value, protocol=2)` for plain data. */
export function pickleDumps(value: unknown): Uint8Array {
  const o = new Out();
  o.byte(OP.PROTO);
  o.byte(2);
  write(o, value, "");
  o.byte(OP.STOP);
  return o.done();
}
