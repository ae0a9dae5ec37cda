// Execution history, persisted as JSON lines so history_request (tail, range, search) spans restarts.
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { homedir } from "node:os";

interface Entry {
  s: number;
  l: number;
  i: string;
  o: string | null;
}
type Row = [number, number, string | [string, string | null]];

export function defaultHistoryFile(): string {
  if (process.env.GRADLAB_HISTORY_FILE) return process.env.GRADLAB_HISTORY_FILE;
  const base = process.env.XDG_DATA_HOME || join(homedir(), ".local", "share");
  return join(base, "gradlab", "history.jsonl");
}

const SESSION_KEY = Buffer.from('{"s":');

export class History {
  /** every entry, parsed only when a history request needs them; then kept up to date */
  private entries: Entry[] | null = null;
  private sessionNo = 0;
  /** entries the file refused (a read-only home): kept for this session's requests */
  private readonly unwritten: Entry[] = [];
  private dirMade = false;

  constructor(private readonly file: string) {}

  private load(): Entry[] {
    if (this.entries) return this.entries;
    const entries: Entry[] = [];
    if (existsSync(this.file)) {
      for (const line of readFileSync(this.file, "utf8").split("\n")) {
        if (!line) continue;
        try {
          entries.push(JSON.parse(line));
        } catch {
          // a torn line from a killed kernel: skip it
        }
      }
    }
    // the entries this session added before the file was parsed are in it already, but those it refused
    return (this.entries = entries.concat(this.unwritten));
  }

  /** This kernel's session: one more than the highest in the file. Found by scanning the file's bytes
   *  for the start of each line ({"s":N, as add() writes it), not by parsing every entry: a year of
   *  history made every new kernel's first cell wait for it (190 ms for 5.8 MB here, against ~20 ms). */
  get session(): number {
    if (!this.sessionNo) {
      let b: Buffer | null = null;
      try {
        b = readFileSync(this.file);
      } catch {
        // no history yet, or unreadable: the first session
      }
      this.sessionNo = highestSession(b) + 1;
    }
    return this.sessionNo;
  }

  /** Finds the session number in the background (the file read off this thread), so that the first
   *  cell's entry need not read the file. */
  async prepare(): Promise<void> {
    const b = await readFile(this.file).catch(() => null);
    this.sessionNo ||= highestSession(b) + 1;
  }

  add(line: number, input: string, output: string | null): void {
    const e = { s: this.session, l: line, i: input, o: output };
    this.entries?.push(e);
    try {
      if (!this.dirMade) mkdirSync(dirname(this.file), { recursive: true });
      this.dirMade = true;
      appendFileSync(this.file, `${JSON.stringify(e)}\n`);
    } catch {
      // history is a convenience: a read-only home must not break execution; this session's requests
      // still see the entry
      if (!this.entries) this.unwritten.push(e);
    }
  }

  private row(e: Entry, output: boolean): Row {
    return [e.s, e.l, output ? [e.i, e.o] : e.i];
  }

  tail(n: number, output: boolean): Row[] {
    const all = this.load();
    return all.slice(Math.max(0, all.length - n)).map((e) => this.row(e, output));
  }

  range(session: number, start: number, stop: number | null, output: boolean): Row[] {
    const s = session <= 0 ? this.session + session : session;
    return this.load()
      .filter((e) => e.s === s && e.l >= start && (stop == null || e.l < stop))
      .map((e) => this.row(e, output));
  }

  search(pattern: string, n: number | null, unique: boolean, output: boolean): Row[] {
    const p = pattern.slice(0, 10_000);
    let hits = this.load().filter((e) => globMatch(p, e.i));
    if (unique) {
      const seen = new Set<string>();
      // the last occurrence of each input is kept, in order
      hits = hits
        .reverse()
        .filter((e) => {
          if (seen.has(e.i)) return false;
          seen.add(e.i);
          return true;
        })
        .reverse();
    }
    if (n != null && n > 0) hits = hits.slice(Math.max(0, hits.length - n));
    return hits.map((e) => this.row(e, output));
  }
}

function highestSession(b: Buffer | null): number {
  let max = 0;
  if (!b) return max;
  for (let i = b.indexOf(SESSION_KEY); i >= 0; i = b.indexOf(SESSION_KEY, i + SESSION_KEY.length)) {
    if (i > 0 && b[i - 1] !== 0x0a) continue; // not at a line's start (JSON text escapes newlines)
    let n = 0;
    let j = i + SESSION_KEY.length;
    while (j < b.length && b[j] >= 0x30 && b[j] <= 0x39 && n < 1e12) n = n * 10 + b[j++] - 0x30;
    if (b[j] === 0x2c && n > max) max = n; // a comma after the digits: a whole number, not a torn line
  }
  return max;
}

/** IPython's history glob (`*` any run, `?` one character) in O(len(text) * len(pattern)) at worst:
 *  a regular expression built from a client's pattern could backtrack for ages. */
function globMatch(pattern: string, text: string): boolean {
  let p = 0,
    t = 0,
    star = -1,
    mark = 0;
  while (t < text.length) {
    if (p < pattern.length && (pattern[p] === "?" || pattern[p] === text[t])) {
      p++;
      t++;
    } else if (p < pattern.length && pattern[p] === "*") {
      star = p++;
      mark = t;
    } else if (star >= 0) {
      p = star + 1;
      t = ++mark;
    } else return false;
  }
  while (p < pattern.length && pattern[p] === "*") p++;
  return p === pattern.length;
}
