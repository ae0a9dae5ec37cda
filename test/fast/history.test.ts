// Execution history's session numbers (kernel/history.ts): found by scanning the file's lines, not by
// parsing every entry, with the same answer as parsing would give; entries added before a history
// request are seen by it; a file that cannot be written still serves this session's entries.
import { afterEach, describe, expect, it } from "vitest";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { History } from "../../kernel/history.ts";

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "gradlab-history-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) {
    chmodSync(d, 0o700);
    rmSync(d, { recursive: true, force: true });
  }
});

const line = (s: number, l: number, i: string, o: string | null = null) => `${JSON.stringify({ s, l, i, o })}\n`;

describe("history", () => {
  it("a new kernel's session is one past the highest in the file, whatever the entries' texts hold", async () => {
    const file = join(tmp(), "history.jsonl");
    // an input holding what looks like a later session's line, and a line torn by a killed kernel
    writeFileSync(file, [line(1, 1, "a"), line(3, 1, 'x = `\n{"s":99,"l":1}`'), line(2, 5, "b", "out"), '{"s":77'].join(""));
    const h = new History(file);
    await h.prepare();
    expect(h.session).toBe(4);
    // the same answer as parsing every entry
    const parsed = readFileSync(file, "utf8")
      .split("\n")
      .flatMap((l) => {
        try {
          return [JSON.parse(l).s as number];
        } catch {
          return [];
        }
      });
    expect(Math.max(...parsed) + 1).toBe(4);
  });

  it("without prepare(), the first entry finds the session itself; a missing file is session 1", () => {
    const dir = tmp();
    const h = new History(join(dir, "sub", "history.jsonl"));
    h.add(1, "1 + 1", "2");
    expect(h.session).toBe(1);
    const h2 = new History(join(dir, "sub", "history.jsonl"));
    h2.add(1, "2 + 2", "4");
    expect(h2.session).toBe(2);
    expect(h2.tail(10, true)).toEqual([
      [1, 1, ["1 + 1", "2"]],
      [2, 1, ["2 + 2", "4"]],
    ]);
  });

  it("entries added before and after the first history request are all in it, once", () => {
    const file = join(tmp(), "history.jsonl");
    writeFileSync(file, line(1, 1, "old"));
    const h = new History(file);
    h.add(1, "a", null);
    expect(h.range(0, 1, null, false)).toEqual([[2, 1, "a"]]);
    h.add(2, "b", null);
    expect(h.range(0, 1, null, false)).toEqual([
      [2, 1, "a"],
      [2, 2, "b"],
    ]);
    expect(h.search("*", null, false, false)).toHaveLength(3);
  });

  it("a history file that cannot be written: execution goes on and this session's requests see its entries", () => {
    if (process.getuid?.() === 0) {
      // root writes anyway: use a path under a file, which no one can create
      const f = join(tmp(), "not-a-dir");
      writeFileSync(f, "");
      const h = new History(join(f, "history.jsonl"));
      h.add(1, "a", "1");
      expect(h.tail(5, true)).toEqual([[1, 1, ["a", "1"]]]);
      return;
    }
    const d = tmp();
    chmodSync(d, 0o500);
    const h = new History(join(d, "history.jsonl"));
    h.add(1, "a", "1");
    expect(h.tail(5, true)).toEqual([[1, 1, ["a", "1"]]]);
  });
});
