// node:module for the Worker: SourceMap (kernel/executor/errors.ts maps stack frames to cell lines)
// through source-map-js, which reads the same esbuild maps; no require in a browser.
import { SourceMapConsumer } from "source-map-js";

export class SourceMap {
  private readonly consumer: SourceMapConsumer;
  constructor(payload: object) {
    this.consumer = new SourceMapConsumer(payload as never);
  }
  /** Node's shape: 0-based line and column in, 0-based original line and column out ({} when none). */
  findEntry(line: number, column: number): { originalLine?: number; originalColumn?: number } {
    const p = this.consumer.originalPositionFor({ line: line + 1, column, bias: SourceMapConsumer.GREATEST_LOWER_BOUND });
    return p.line == null ? {} : { originalLine: p.line - 1, originalColumn: p.column ?? 0 };
  }
}
export const builtinModules: string[] = [];
export function createRequire(): never {
  throw new Error("require is not available in the browser");
}
