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
  /** a line and column of the code that ran, as one of the JavaScript the transform read */
  jsPosition: (line: number, col: number) => { line: number; col: number };
}
const cells = new Map<string, CellRecord>();

const RED = "\x1b[31m",
  GREEN = "\x1b[32m",
  BOLD = "\x1b[1m",
  RESET = "\x1b[0m";

export function registerCell(
  filename: string,
  label: string,
  source: string,
  map: string | null,
  code: string,
  jsPosition: CellRecord["jsPosition"] = (line, col) => ({ line, col }),
): void {
  const wrapperLine = code.split("\n").length; // the line holding the wrapper's `})()`
  cells.set(filename, { label, source, mapJson: map, wrapperLine, jsPosition });
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

function mapPosition(file: string, codeLine: number, codeCol: number): { cell: CellRecord; line: number; col: number } | null {
  const cell = cells.get(file);
  if (!cell) return null;
  const { line, col } = cell.jsPosition(codeLine, codeCol);
  if (!cell.mapJson) return { cell, line, col };
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

// (the last: the indirect eval GradLab Lite's Worker runs a cell with, lite/src/shims/vm.ts)
const INTERNAL = /\(node:|at node:|\/kernel\/[\w/-]+\.[jt]s|node_modules\/(tsx|esbuild)\/|^\s*at eval \(<anonymous>\)$/;

const CELL_FRAME = /(gradlab-cell-\d+\.js):(\d+):(\d+)/;
/** A frame already mapped to a cell ("at f (Cell [3]:2:5)"): kept as it is. */
const MAPPED_FRAME = /\bCell \[\d+\]:\d+:\d+\)?$/;

/**
 * The frames of a stack a student should see: frames in cells mapped to "Cell [N]:line:col", frames in
 * the user's own files with paths relative to the notebook, and nothing of the kernel, the runtime,
 * Node's internals or the machine's paths. A statement's frame repeated by the arrow that gives its
 * temporaries a frame (temporaries.ts: anonymous, same cell and line) is shown once.
 * `first` is called with the first frame mapped to a cell.
 */
function userFrames(lines: Iterable<string>, first?: (pos: NonNullable<ReturnType<typeof mapPosition>>) => void): string[] {
  const frames: string[] = [];
  // the last frame shown, when it is in a cell: where, and the function's name if it has one
  let last: { at: string; col: string; name: string | null } | null = null;
  let told = false;
  const cellFrame = (name: string | null, at: string, col: string) => `    at ${name ? `${name} (${at}:${col})` : `${at}:${col}`}`;
  for (const raw of lines) {
    let at: string;
    let col: string;
    const m = CELL_FRAME.exec(raw);
    if (m) {
      if (cells.get(m[1])?.wrapperLine === Number(m[2])) continue;
      const pos = mapPosition(m[1], Number(m[2]), Number(m[3]));
      if (!pos) continue;
      if (!told) first?.(pos);
      told = true;
      at = `${pos.cell.label}:${pos.line}`;
      col = String(pos.col);
    } else if (MAPPED_FRAME.test(raw)) {
      [, at, col] = /(Cell \[\d+\]:\d+):(\d+)/.exec(raw)!;
    } else {
      if (!(INTERNAL.test(raw) || isRuntimeFrame(raw) || raw.includes("gradlab-cell-"))) frames.push(relativePaths(raw).replace(/^\s+/, "    "));
      last = null;
      continue;
    }
    const name = /^\s*at (.+?) \(/.exec(raw)?.[1] ?? null;
    if (last && last.at === at && (!name || !last.name)) {
      // the same line again: a statement's arrow (temporaries.ts, anonymous) around or inside the
      // call; one frame, with the function's name and the innermost position
      last.name ??= name;
      frames[frames.length - 1] = cellFrame(last.name, at, last.col);
      continue;
    }
    last = { at, col, name };
    frames.push(cellFrame(name, at, col));
  }
  return frames;
}

/** For the runtime (anomaly mode's forward tracebacks, grad_fn.metadata.traceback_): the stack a
 *  student should see. Registered on globalThis so that src/ never imports the kernel. */
export function installUserStackFormatter(): void {
  (globalThis as Record<symbol, unknown>)[Symbol.for("gradlab.userStack")] = (stack: string) =>
    userFrames(stack.split("\n").filter((l) => /^\s+at /.test(l))).join("\n");
}

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
  // the stack repeats the message first, and a message may embed a stack of its own (anomaly mode)
  const forward = (err as { forward_traceback?: unknown }).forward_traceback;
  const stack = String(err.stack ?? "").replace(typeof forward === "string" ? forward : "\u0000", "");
  const msgAt = err.message ? stack.indexOf(err.message) : -1;
  const ownFrames = msgAt >= 0 ? stack.slice(msgAt + err.message.length) : stack.split("\n").slice(1).join("\n");
  const frames = userFrames(
    ownFrames.split("\n").filter((l) => /^\s+at /.test(l)),
    (pos) => traceback.push(...context(pos.cell, pos.line)),
  );
  if (frames.length) traceback.push(...frames);
  // Anomaly mode's forward traceback (torch prints it as a warning above the error), cell lines only.
  if (typeof forward === "string") traceback.unshift(...cellFramesOnly(forward).split("\n"));
  return { ename, evalue, traceback };
}

/** A message that embeds a stack (anomaly mode's "Traceback of forward call that caused the error")
 *  keeps the frames a student should see (userFrames). */
function cellFramesOnly(message: string): string {
  if (!/\n\s+at /.test(message)) return message;
  const out: string[] = [];
  let stack: string[] = [];
  const flush = () => {
    out.push(...userFrames(stack));
    stack = [];
  };
  for (const line of message.split("\n")) {
    if (/^\s+at /.test(line)) stack.push(line);
    else {
      flush();
      out.push(line);
    }
  }
  flush();
  return out.join("\n");
}

export function syntaxErrorContent(errors: EsbuildMessage[], label: string, source: string): ErrorContent {
  const first = errors[0];
  const line = first?.location?.line ?? 1;
  const col = (first?.location?.column ?? 0) + 1;
  const rec: CellRecord = { label, source, mapJson: null, wrapperLine: 0, jsPosition: (l, c) => ({ line: l, col: c }) };
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
