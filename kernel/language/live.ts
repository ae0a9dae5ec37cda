// Completion and inspection from live values: names defined by cells and properties of the objects
// they hold. Only plain identifier chains are walked (no calls), so nothing runs but getters.
import { inspect } from "node:util";

const KEYWORDS =
  "await async break case catch class const continue debugger default delete do else enum export extends false finally for function if import in instanceof interface let new null return super switch this throw true try type typeof undefined var void while with yield".split(
    " ",
  );

function tokenAt(code: string, cursor: number): { start: number; end: number; chain: string[]; partial: string } {
  let start = cursor;
  while (start > 0 && /[\w$.]/.test(code[start - 1])) start--;
  let end = cursor;
  while (end < code.length && /[\w$]/.test(code[end])) end++;
  const text = code.slice(start, cursor);
  const parts = text.split(".");
  const partial = parts.pop() ?? "";
  return { start: cursor - partial.length, end, chain: parts, partial };
}

function resolveChain(chain: string[]): { ok: boolean; value?: unknown } {
  let v: any = globalThis;
  for (const name of chain) {
    if (!/^[A-Za-z_$][\w$]*$/.test(name)) return { ok: false };
    try {
      if (v == null || !(name in Object(v))) return { ok: false };
      v = v[name];
    } catch {
      return { ok: false };
    }
  }
  return { ok: true, value: v };
}

function propertyNames(v: unknown): string[] {
  const out = new Set<string>();
  let o: any = Object(v);
  for (let depth = 0; o && depth < 10; depth++, o = Object.getPrototypeOf(o)) {
    if (o === Object.prototype && depth > 0) break;
    for (const n of Object.getOwnPropertyNames(o)) if (/^[A-Za-z_$][\w$]*$/.test(n) && n !== "constructor") out.add(n);
  }
  return [...out];
}

export function liveCompletions(code: string, cursor: number): { start: number; end: number; matches: string[] } {
  const t = tokenAt(code, cursor);
  let names: string[];
  if (t.chain.length) {
    const r = resolveChain(t.chain);
    names = r.ok && r.value != null ? propertyNames(r.value) : [];
  } else {
    names = [...propertyNames(globalThis), ...KEYWORDS];
  }
  const matches = [...new Set(names.filter((n) => n.startsWith(t.partial) && !n.startsWith("__gradlab")))].sort(
    (a, b) => Number(a.startsWith("_")) - Number(b.startsWith("_")) || a.localeCompare(b),
  );
  return { start: t.start, end: t.end, matches };
}

/** The names the code itself spells (declared or used) that complete the word at the cursor: what a
 *  Tab can offer before the language service has loaded. None after a dot, where only a value's own
 *  members belong. */
export function namesInCode(code: string, cursor: number): string[] {
  const t = tokenAt(code, cursor);
  if (t.chain.length || !t.partial) return [];
  const out = new Set<string>();
  for (const m of code.matchAll(/[A-Za-z_$][\w$]*/g)) {
    // the word being typed is not a completion of itself
    if (m.index === t.start) continue;
    if (m[0].startsWith(t.partial) && m[0] !== t.partial && !KEYWORDS.includes(m[0])) out.add(m[0]);
  }
  return [...out].sort();
}

export function liveInspect(code: string, cursor: number): { name: string; text: string } | null {
  const t = tokenAt(code, cursor);
  const chain = [...t.chain, code.slice(t.start, t.end)].filter(Boolean);
  if (!chain.length) return null;
  const r = resolveChain(chain);
  if (!r.ok) return null;
  const v = r.value as any;
  const name = chain.join(".");
  let kind: string = typeof v;
  if (v && typeof v === "object") kind = v.constructor?.name ?? "Object";
  if (typeof v === "function") {
    const src = Function.prototype.toString.call(v);
    const sig = src.slice(0, src.indexOf("{") > 0 ? src.indexOf("{") : 200).trim();
    return { name, text: `${name}: ${/^class\b/.test(src) ? "class" : "function"}\n${sig}` };
  }
  return { name, text: `${name}: ${kind}\n${inspect(v, { depth: 2, colors: false, maxArrayLength: 20 })}` };
}
