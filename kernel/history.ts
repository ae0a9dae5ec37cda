// Execution history, persisted as JSON lines so history_request (tail, range, search) spans restarts.
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
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

export class History {
  private entries: Entry[] | null = null;
  private sessionNo = 0;

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
    this.sessionNo = entries.reduce((m, e) => Math.max(m, e.s), 0) + 1;
    return (this.entries = entries);
  }

  get session(): number {
    this.load();
    return this.sessionNo;
  }

  add(line: number, input: string, output: string | null): void {
    const e = { s: this.session, l: line, i: input, o: output };
    this.load().push(e);
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      appendFileSync(this.file, `${JSON.stringify(e)}\n`);
    } catch {
      // history is a convenience: a read-only home must not break execution
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
