// Errors from cells -> Jupyter `error` content, with stack frames mapped back to cell lines.
import { SourceMap } from "node:module";
import type { Message as EsbuildMessage } from "esbuild";
import { REPO } from "../repo.ts";

export interface ErrorContent {
  ename: string;
  evalue: string;
  traceback: string[];
}

/** What a traceback needs of each cell that ran: kept small (the source map stays JSON until an error
 *  needs it), since every cell of a long session has one. */
interface CellRecord {
  label: string;
  source: string;
  mapJson: string | null;
  wrapperLine: number;
  prologue: number;
}
const cells = new Map<string, CellRecord>();

const RED = "\x1b[31m",
  GREEN = "\x1b[32m",
  BOLD = "\x1b[1m",
  RESET = "\x1b[0m";

export function registerCell(filename: string, label: string, source: string, map: string | null, code: string): void {
  const wrapperLine = code.split("\n").length; // the line holding the wrapper's `})()`
  const prologue = code.indexOf("{") + 1; // columns the wrapper adds to line 1 (approximately)
  cells.set(filename, { label, source, mapJson: map, wrapperLine, prologue });
}

export class InterruptError extends Error {
  constructor() {
    super("Execution interrupted");
    this.name = "KeyboardInterrupt";
  }
}

let lastMap: { json: string; map: SourceMap } | null = null;
function sourceMap(json: string): SourceMap {
  if (lastMap?.json !== json) lastMap = { json, map: new SourceMap(JSON.parse(json)) };
  return lastMap.map;
}

function mapPosition(file: string, line: number, col: number): { cell: CellRecord; line: number; col: number } | null {
  const cell = cells.get(file);
  if (!cell) return null;
  if (!cell.mapJson) return { cell, line, col: line === 1 ? Math.max(1, col - cell.prologue) : col };
  const map = sourceMap(cell.mapJson);
  const e = map.findEntry(line - 1, Math.max(0, col - 1)) as any;
  if (!e || e.originalLine === undefined) {
    const e0 = map.findEntry(line - 1, 0) as any;
    if (!e0 || e0.originalLine === undefined) return null;
    return { cell, line: e0.originalLine + 1, col: 1 };
  }
  return { cell, line: e.originalLine + 1, col: e.originalColumn + 1 };
}

function context(cell: CellRecord, line: number): string[] {
  const out = [`${GREEN}${cell.label}${RESET}, line ${line}:`];
  const lines = cell.source.split("\n");
  const from = Math.max(1, line - 2),
    to = Math.min(lines.length, line + 2);
  const w = String(to).length;
  for (let i = from; i <= to; i++) {
    const text = lines[i - 1];
    out.push(i === line ? `${RED}--> ${String(i).padStart(w)}${RESET} ${text}` : `    ${String(i).padStart(w)} ${text}`);
  }
  return out;
}

const REPO_DIR = REPO.replace(/\/$/, "");
/** GradLab's own code (the runtime, the kernel, their packages): not the user's, never shown. */
const isRuntimeFrame = (line: string) =>
  [`${REPO_DIR}/src/`, `${REPO_DIR}/dist/`, `${REPO_DIR}/node_modules/`, `${REPO_DIR}/kernel/`].some((dir) => line.includes(dir));
/** Frames in the user's own files show paths relative to the notebook's directory. */
const relativePaths = (line: string) => line.split(`file://${process.cwd()}/`).join("").split(`${process.cwd()}/`).join("");

const INTERNAL = /\(node:|at node:|\/kernel\/[\w/-]+\.[jt]s|node_modules\/(tsx|esbuild)\//;

export function errorContent(err: unknown): ErrorContent {
  if (err instanceof InterruptError)
    return { ename: "KeyboardInterrupt", evalue: "Execution interrupted", traceback: [`${RED}KeyboardInterrupt${RESET}: Execution interrupted`] };
  if (!(err instanceof Error)) {
    const evalue = typeof err === "string" ? err : safeString(err);
    return { ename: "Error", evalue, traceback: [`${RED}Uncaught${RESET} ${evalue}`] };
  }
  const ename = err.name || err.constructor?.name || "Error";
  const evalue = cellFramesOnly(String(err.message ?? ""));
  const traceback = [`${RED}${BOLD}${ename}${RESET}: ${evalue}`];
  let shownContext = false;
  const frames: string[] = [];
  // the stack repeats the message first, and a message may embed a stack of its own (anomaly mode)
  const forward = (err as { forward_traceback?: unknown }).forward_traceback;
  const stack = String(err.stack ?? "").replace(typeof forward === "string" ? forward : "\u0000", "");
  const msgAt = err.message ? stack.indexOf(err.message) : -1;
  const ownFrames = msgAt >= 0 ? stack.slice(msgAt + err.message.length) : stack.split("\n").slice(1).join("\n");
  for (const raw of ownFrames.split("\n")) {
    if (!/^\s+at /.test(raw)) continue;
    if (INTERNAL.test(raw) || isRuntimeFrame(raw)) continue;
    const m = /(gradlab-cell-\d+\.js):(\d+):(\d+)/.exec(raw);
    if (m) {
      if (cells.get(m[1])?.wrapperLine === Number(m[2])) continue;
      const pos = mapPosition(m[1], Number(m[2]), Number(m[3]));
      if (pos) {
        if (!shownContext) {
          traceback.push(...context(pos.cell, pos.line));
          shownContext = true;
        }
        frames.push(raw.replace(m[0], `${pos.cell.label}:${pos.line}:${pos.col}`).replace(/^\s+/, "    "));
        continue;
      }
    }
    frames.push(relativePaths(raw).replace(/^\s+/, "    "));
  }
  if (frames.length) traceback.push(...frames);
  // Anomaly mode's forward traceback (torch prints it as a warning above the error), cell lines only.
  if (typeof forward === "string") traceback.unshift(...cellFramesOnly(forward).split("\n"));
  return { ename, evalue, traceback };
}

/** A message that embeds a stack (anomaly mode's "Traceback of forward call that caused the error")
 *  keeps the frames in the user's cells, mapped to cell lines, and loses every other frame: kernel
 *  internals, Node's, and the machine's absolute paths. */
function cellFramesOnly(message: string): string {
  if (!/\n\s+at /.test(message)) return message;
  const out: string[] = [];
  for (const line of message.split("\n")) {
    if (!/^\s+at /.test(line)) {
      out.push(line);
      continue;
    }
    const m = /(gradlab-cell-\d+\.js):(\d+):(\d+)/.exec(line);
    if (!m || cells.get(m[1])?.wrapperLine === Number(m[2])) continue;
    const pos = mapPosition(m[1], Number(m[2]), Number(m[3]));
    if (pos) out.push(line.replace(m[0], `${pos.cell.label}:${pos.line}:${pos.col}`).replace(/^\s+/, "    "));
  }
  return out.join("\n");
}

export function syntaxErrorContent(errors: EsbuildMessage[], label: string, source: string): ErrorContent {
  const first = errors[0];
  const line = first?.location?.line ?? 1;
  const col = (first?.location?.column ?? 0) + 1;
  const rec = { label, source, mapJson: null, wrapperLine: 0, prologue: 0 };
  const tb = [`${RED}${BOLD}SyntaxError${RESET}: ${first?.text ?? "invalid syntax"} (${label}, line ${line}:${col})`, ...context(rec, line)];
  return { ename: "SyntaxError", evalue: `${first?.text ?? "invalid syntax"} (line ${line})`, traceback: tb };
}

function safeString(v: unknown): string {
  try {
    return String(v);
  } catch {
    return Object.prototype.toString.call(v);
  }
}
