// Kernel diagnostics go to the real stderr (file descriptor 2: the terminal or log file of whoever
// started the kernel), never to a cell: writing to fd 2 directly bypasses the cell output capture on
// the main thread and the stderr forwarding of worker threads (which would land in the last cell).
import { writeSync } from "node:fs";

const quiet = process.env.GRADLAB_KERNEL_QUIET === "1";

export function log(...parts: unknown[]): void {
  if (quiet) return;
  const line = `[gradlab ${new Date().toISOString().slice(11, 23)}] ${parts.map(String).join(" ")}\n`;
  try {
    writeSync(2, line);
  } catch {
    // stderr closed or full: a diagnostic is not worth blocking or dying for
  }
}
