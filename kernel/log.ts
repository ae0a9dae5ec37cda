// Kernel diagnostics go to the real stderr (the terminal that started the kernel), never to a cell.
const realWrite = process.stderr.write.bind(process.stderr);
const quiet = process.env.GRADLAB_KERNEL_QUIET === "1";

export function log(...parts: unknown[]): void {
  if (quiet) return;
  realWrite(`[gradlab ${new Date().toISOString().slice(11, 23)}] ${parts.map(String).join(" ")}\n`);
}
