// What cells print travels from the main thread to the socket thread through shared memory, not one
// message per write: a `postMessage` per `console.log` line was the largest cost of printed output
// (profiled: ~10 µs a line on the main thread, against ~1 µs to copy the text here; issue 22). One
// writer (the main thread), one reader (the socket thread). The writer posts a wake-up only when it
// finds the ring drained; the reader then waits `flushMs` (so a burst becomes few stream messages) and
// drains everything. Text stays in shared memory, so the socket thread reads it while the main thread
// is still busy in synchronous cell code: output streams as it did with messages.
//
// Layout: Int32 head and tail (byte counters, wrapping at 2^32; the ring's size is a power of two),
// then records aligned to 8 bytes: [Int32 payload bytes, or -1: the rest of the ring is unused, go to
// its start][Int32 kind][payload, UTF-8]. Kinds: stdout text, stderr text, the parent header (JSON)
// of the text records that follow it, or a mark: where a message the main thread posted (a display, an
// input request) goes between the texts. The reader stops at a mark until that message has arrived: a
// position sent with the message was not enough, since a drain that ran before the message arrived
// had already published the text written after it (a display arrived 649 lines late under load).
const RING_BYTES = 1 << 20;
const HEAD = 0;
const TAIL = 1;
const CTL_BYTES = 8;
const REC = 8;
const WRAP = -1;
export const STDOUT = 0;
export const STDERR = 1;
const PARENT = 2;
const MARK = 3;

/** How long a writer waits for room, in all, before it gives up on a write (only a dead socket
 *  thread, which can publish nothing any more, leaves the ring full that long). */
const FULL_WAIT_MS = 5000;

const align = (n: number) => (n + 7) & ~7;

export function createRing(bytes = RING_BYTES): SharedArrayBuffer {
  if (bytes & (bytes - 1) || bytes < 64) throw new Error("the ring's size must be a power of two");
  return new SharedArrayBuffer(CTL_BYTES + bytes);
}

class Ring {
  protected readonly ctl: Int32Array;
  protected readonly data: Buffer;
  protected readonly ints: Int32Array;
  protected readonly size: number;
  constructor(sab: SharedArrayBuffer) {
    this.ctl = new Int32Array(sab, 0, 2);
    this.size = sab.byteLength - CTL_BYTES;
    this.data = Buffer.from(sab, CTL_BYTES, this.size);
    this.ints = new Int32Array(sab, CTL_BYTES, this.size / 4);
  }

  /** Bytes written and not yet read. */
  protected used(head: number, tail: number): number {
    return (head - tail) >>> 0;
  }
}

export class RingWriter extends Ring {
  private lastParent: string | null = null;

  /** `wake` tells the reader there is text to drain (called when the ring was empty before a write). */
  constructor(
    sab: SharedArrayBuffer,
    private readonly wake: () => void,
    private readonly onDrop: (chars: number) => void = () => {},
    private readonly fullWaitMs = FULL_WAIT_MS,
  ) {
    super(sab);
  }

  /** Appends text a cell wrote to `stdout` or `stderr` under `parent` (a header's JSON). Long texts
   *  are cut into pieces the ring holds (the reader joins them again); waits while the ring is full. */
  write(kind: typeof STDOUT | typeof STDERR, text: string, parent: string): void {
    if (parent !== this.lastParent) {
      if (!this.put(PARENT, parent)) {
        this.dropped(text.length);
        return;
      }
      this.lastParent = parent;
    }
    // a piece's UTF-8 (at most 3 bytes per UTF-16 unit) must fit a quarter of the ring
    const max = Math.floor((this.size / 4 - REC) / 3);
    for (let i = 0; i < text.length; ) {
      let end = Math.min(text.length, i + max);
      // never cut a surrogate pair in two
      if (end < text.length && (text.charCodeAt(end - 1) & 0xfc00) === 0xd800) end--;
      if (!this.put(kind, i === 0 && end === text.length ? text : text.slice(i, end))) {
        this.dropped(text.length - i);
        return;
      }
      i = end;
    }
  }

  /** Marks where the text written so far ends, for a message posted right after (see MARK); false if
   *  the ring stayed full (a dead reader). The message, not a wake-up, makes the reader go on. */
  mark(): boolean {
    return this.put(MARK, "", false);
  }

  private dropped(chars: number): void {
    // the parent record may be the one lost: write it again before the next text
    this.lastParent = null;
    this.onDrop(chars);
  }

  private put(kind: number, text: string, wake = true): boolean {
    const need = REC + align(text.length * 3);
    let head = Atomics.load(this.ctl, HEAD);
    const start = head;
    let pos = head & (this.size - 1);
    const room = this.size - pos;
    // the record must be contiguous: if it may not fit before the end, mark the rest unused
    const skip = room < need ? room : 0;
    if (!this.waitForRoom(head, skip + need)) return false;
    if (skip) {
      this.ints[pos / 4] = WRAP;
      head = (head + skip) | 0;
      pos = 0;
    }
    const written = this.data.write(text, pos + REC, "utf8");
    this.ints[pos / 4] = written;
    this.ints[pos / 4 + 1] = kind;
    Atomics.store(this.ctl, HEAD, (head + REC + align(written)) | 0);
    // Head is stored before tail is read, and the reader stores tail before it reads head (both
    // sequentially consistent): either it sees this record, or this sees the ring drained and wakes it.
    if (wake && Atomics.load(this.ctl, TAIL) === start) this.wake();
    return true;
  }

  private waitForRoom(head: number, need: number): boolean {
    let waited = 0;
    for (;;) {
      const tail = Atomics.load(this.ctl, TAIL);
      if (this.size - this.used(head, tail) >= need) return true;
      if (waited >= this.fullWaitMs) return false;
      // the reader drains within its flush interval of a wake-up, which was sent when the ring was
      // empty; it notifies on tail after each drain
      const step = Math.min(50, this.fullWaitMs);
      Atomics.wait(this.ctl, TAIL, tail, step);
      waited += step;
    }
  }
}

export class RingReader extends Ring {
  /** parent header (JSON) of the text records being read */
  private parent = "{}";

  /** Reads the records written so far, handing each text to `onText` with its parent's JSON. At a mark
   *  it calls `onMark`, which sends the message posted with it and says true, or says false when that
   *  message has not arrived yet: reading stops there, and read returns true (blocked at a mark). */
  read(onText: (kind: typeof STDOUT | typeof STDERR, text: string, parent: string) => void, onMark: () => boolean = () => true): boolean {
    let tail = Atomics.load(this.ctl, TAIL);
    const head = Atomics.load(this.ctl, HEAD);
    let blocked = false;
    while (tail !== head) {
      const pos = tail & (this.size - 1);
      const len = this.ints[pos / 4];
      if (len === WRAP) {
        tail = (tail + this.size - pos) | 0;
        continue;
      }
      const kind = this.ints[pos / 4 + 1];
      if (kind === MARK) {
        if (!onMark()) {
          blocked = true;
          break;
        }
      } else {
        const text = this.data.toString("utf8", pos + REC, pos + REC + len);
        if (kind === PARENT) this.parent = text;
        else onText(kind as typeof STDOUT | typeof STDERR, text, this.parent);
      }
      tail = (tail + REC + align(len)) | 0;
    }
    Atomics.store(this.ctl, TAIL, tail);
    Atomics.notify(this.ctl, TAIL);
    return blocked;
  }

  /** Whether text was written that has not been read (checked after storing tail: see RingWriter.put). */
  get pending(): boolean {
    return Atomics.load(this.ctl, HEAD) !== Atomics.load(this.ctl, TAIL);
  }
}
