// The source map of a module the transform changed (kernel/executor/module-hooks.ts): its inserts shift
// the columns of what follows them on a line, so a stack trace read through the input's map (esbuild's,
// from TypeScript) named the wrong column. Each mapping of the input is moved to where the transform
// copied that position (a map file beside a compiled module, tsc's, is read and composed the same way);
// a JavaScript file without a map gets one from its own tokens. Mappings are
// decoded and encoded with @jridgewell/sourcemap-codec (the VLQ codec of the source-map ecosystem).
import { decode, encode, type SourceMapSegment } from "@jridgewell/sourcemap-codec";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

/** The last line's `//# sourceMappingURL=`: inline (esbuild's) or a file beside the module (tsc's sourceMap). */
const LINKED = /\n?\/\/# sourceMappingURL=(\S+)\s*$/;

interface RawMap {
  version: 3;
  sources: string[];
  sourcesContent?: (string | null)[];
  sourceRoot?: string;
  names: string[];
  mappings: string;
}

/** The map `input` names, or null where it names none or it cannot be read. A map file's sources are made
 *  absolute: the map moves into the module, whose URL they would otherwise be read against. */
function mapOf(input: string, file: string): RawMap | null {
  const url = LINKED.exec(input)?.[1];
  if (!url) return null;
  try {
    if (url.startsWith("data:")) return JSON.parse(Buffer.from(url.slice(url.indexOf(",") + 1), "base64").toString("utf8"));
    const at = new URL(url, pathToFileURL(file));
    const map = JSON.parse(readFileSync(at, "utf8")) as RawMap;
    const root = map.sourceRoot ? map.sourceRoot.replace(/\/?$/, "/") : "";
    map.sources = map.sources.map((source) => new URL(root + source, at).href);
    delete map.sourceRoot;
    return map;
  } catch {
    return null;
  }
}

/** Offsets at which each line of `text` starts. */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  return starts;
}

/** The line holding `offset` (binary search over lineStarts). */
function lineOf(starts: number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * `output` (the transform of `input`) with an inline source map to what `input` maps to: `copied` lists
 * where each verbatim piece of `input` lies in `output` ([output offset, input offset, length] triples, in
 * input order). `file` is the module's path, named by a map made for a JavaScript file that had none.
 */
export function withSourceMap(input: string, output: string, copied: number[], file: string): string {
  let map = mapOf(input, file);
  let segments: SourceMapSegment[][];
  if (map) segments = decode(map.mappings);
  else {
    // a JavaScript module: each token maps to itself, where a stack trace's position can fall
    map = { version: 3, sources: [pathToFileURL(file).href], sourcesContent: [input], names: [], mappings: "" };
    segments = input.split("\n").map((line, l) => [...line.matchAll(/[\p{L}\p{N}_$]+|\S/gu)].map((m): SourceMapSegment => [m.index, 0, l, m.index]));
  }
  const inStarts = lineStarts(input);
  const code = output.replace(LINKED, "");
  const outStarts = lineStarts(code);
  const out: SourceMapSegment[][] = outStarts.map(() => []);
  let piece = 0;
  // input segments come line by line, column by column: the pieces are walked once, in step
  for (let l = 0; l < segments.length && l < inStarts.length; l++) {
    for (const seg of segments[l]) {
      const at = inStarts[l] + seg[0];
      while (piece < copied.length && copied[piece + 1] + copied[piece + 2] <= at) piece += 3;
      if (piece >= copied.length || copied[piece + 1] > at) continue; // inside text the transform replaced
      const to = copied[piece] + (at - copied[piece + 1]);
      if (to >= code.length) continue;
      const line = lineOf(outStarts, to);
      out[line].push([to - outStarts[line], ...seg.slice(1)] as SourceMapSegment);
    }
  }
  map.mappings = encode(out);
  return `${code}\n//# sourceMappingURL=data:application/json;base64,${Buffer.from(JSON.stringify(map)).toString("base64")}\n`;
}
