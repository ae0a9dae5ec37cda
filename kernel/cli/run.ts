// gradlab run NOTEBOOK.ipynb [-o OUT.ipynb | --inplace] [--timeout SECONDS]
// Executes every code cell through a real kernel over the protocol, writes outputs in nbformat 4,
// prints progress and text outputs; a failing cell stops the run with its traceback and status 1.
import { readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { describeExit, exitedCleanly, startKernel, type KernelClient } from "./client.ts";
import { kernelArgv } from "./paths.ts";
import type { Message } from "../wire/message.ts";

interface Output {
  output_type: string;
  [k: string]: unknown;
}
interface Cell {
  cell_type: string;
  source: string | string[];
  outputs?: Output[];
  execution_count?: number | null;
  metadata?: object;
  id?: string;
}
interface Notebook {
  cells: Cell[];
  metadata: Record<string, unknown>;
  nbformat: number;
  nbformat_minor: number;
}

interface RunOptions {
  notebook: string;
  output?: string;
  timeoutS?: number;
  /** where progress and text outputs go (default: the terminal) */
  out?: (s: string) => void;
  err?: (s: string) => void;
}

export async function runNotebookCli(args: string[]): Promise<number> {
  const opts: RunOptions = { notebook: "" };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "-o" || a === "--output") opts.output = args[++i];
    else if (a === "--inplace") opts.output = "";
    else if (a === "--timeout") opts.timeoutS = Number(args[++i]);
    else if (!a.startsWith("-") && !opts.notebook) opts.notebook = a;
    else throw new Error(`unknown argument ${a}\nusage: gradlab run NOTEBOOK.ipynb [-o OUT.ipynb | --inplace] [--timeout SECONDS]`);
  }
  if (!opts.notebook) throw new Error("usage: gradlab run NOTEBOOK.ipynb [-o OUT.ipynb | --inplace] [--timeout SECONDS]");
  if (opts.output === "") opts.output = opts.notebook;
  return runNotebook(opts);
}

const dim = (s: string) => (process.stderr.isTTY ? `\x1b[2m${s}\x1b[0m` : s);
const text = (s: string | string[]) => (Array.isArray(s) ? s.join("") : s);
const lines = (s: string) => s.split(/(?<=\n)/);

async function runNotebook(opts: RunOptions): Promise<number> {
  const out = opts.out ?? ((s: string) => process.stdout.write(s));
  const err = opts.err ?? ((s: string) => process.stderr.write(s));
  const path = resolve(opts.notebook);
  const nb: Notebook = JSON.parse(readFileSync(path, "utf8"));
  const code = nb.cells.filter((c) => c.cell_type === "code");
  let client: KernelClient | null = null;
  const started = Date.now();
  err(`gradlab run: ${basename(path)} (${code.length} code cells)\n`);
  let status = 0;
  let onSigint: (() => void) | null = null;
  const displays: Displays = new Map();
  try {
    const started = await startKernel(kernelArgv(), {
      cwd: dirname(path),
      env: { NODE_NO_WARNINGS: "1", GRADLAB_KERNEL_QUIET: "1", ...process.env },
    });
    client = started.client;
    const info = started.info;
    const kernel = client;
    // Ctrl-C interrupts the running cell (which then fails the run) instead of orphaning the kernel
    process.on("SIGINT", (onSigint = () => void kernel.interrupt()));
    nb.metadata.kernelspec = { name: "gradlab", display_name: "GradLab (TypeScript · WebGPU)", language: "typescript" };
    nb.metadata.language_info = info.content.language_info;
    for (const c of code) {
      c.outputs = [];
      c.execution_count = null;
    }
    for (let i = 0; i < code.length; i++) {
      const cell = code[i];
      const src = text(cell.source);
      const first = src.split("\n").find((l) => l.trim()) ?? "";
      err(`${dim(`[${i + 1}/${code.length}] ${first.slice(0, 70)}`)}\n`);
      if (!src.trim()) continue;
      const r = await executeCell(client, cell, displays, src, opts.timeoutS, out, err);
      if (r === "error") {
        err(`\ngradlab run: cell ${i + 1} of ${code.length} failed; stopping.\n`);
        status = 1;
        break;
      }
      if (r === "timeout") {
        err(`\ngradlab run: cell ${i + 1} timed out after ${opts.timeoutS} s; stopping.\n`);
        status = 1;
        break;
      }
    }
  } catch (e) {
    err(`gradlab run: ${(e as Error).message}\n`);
    status = 1;
  } finally {
    if (onSigint) process.off("SIGINT", onSigint);
    if (client) {
      const kernel = client;
      await kernel.shutdown().catch(() => kernel.close());
      // a kernel that aborted (a signal) or failed while shutting down fails the run, even when every
      // cell was ok: its last outputs may be missing, and the crash must not go unseen
      const exit = await kernel.exited;
      if (!exitedCleanly(exit)) {
        err(`gradlab run: the kernel ${describeExit(exit)} at shutdown\n`);
        status = 1;
      }
    }
  }
  if (opts.output) {
    writeFileSync(resolve(opts.output), `${JSON.stringify(nb, null, 1)}\n`);
    err(`gradlab run: wrote ${opts.output}\n`);
  }
  if (status === 0) err(`gradlab run: ${code.length} cells ok in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return status;
}

type Displays = Map<string, { outputs: Output[]; output: Output }[]>;

async function executeCell(
  client: KernelClient,
  cell: Cell,
  displays: Displays,
  src: string,
  timeoutS: number | undefined,
  out: (s: string) => void,
  err: (s: string) => void,
): Promise<"ok" | "error" | "timeout"> {
  const outputs: Output[] = (cell.outputs = []);
  let clearPending = false;
  const add = (o: Output, displayId?: string) => {
    if (clearPending) {
      outputs.length = 0;
      clearPending = false;
    }
    if (displayId) displays.set(displayId, [...(displays.get(displayId) ?? []), { outputs, output: o }]);
    outputs.push(o);
  };
  const onIopub = (m: Message) => {
    const c = m.content;
    switch (m.header.msg_type) {
      case "stream": {
        (c.name === "stderr" ? err : out)(c.text);
        const last = outputs[outputs.length - 1];
        if (!clearPending && last?.output_type === "stream" && last.name === c.name) last.text = [...(last.text as string[]), ...lines(c.text)];
        else add({ output_type: "stream", name: c.name, text: lines(c.text) });
        break;
      }
      case "display_data":
      case "execute_result": {
        const plain = c.data?.["text/plain"];
        if (plain !== undefined) out(`${m.header.msg_type === "execute_result" ? `Out[${c.execution_count}]: ` : ""}${plain}\n`);
        const o: Output =
          m.header.msg_type === "execute_result"
            ? { output_type: "execute_result", execution_count: c.execution_count, data: nbData(c.data), metadata: c.metadata ?? {} }
            : { output_type: "display_data", data: nbData(c.data), metadata: c.metadata ?? {} };
        add(o, c.transient?.display_id);
        break;
      }
      case "update_display_data":
        // wherever that display is in the notebook, as long as it was not cleared since
        for (const d of displays.get(c.transient?.display_id) ?? []) {
          const i = d.outputs.indexOf(d.output);
          if (i >= 0) d.outputs[i] = d.output = { ...d.output, data: nbData(c.data), metadata: c.metadata ?? {} };
        }
        break;
      case "clear_output":
        if (c.wait) clearPending = true;
        else {
          outputs.length = 0;
        }
        break;
      case "error":
        err(`${(c.traceback as string[]).join("\n")}\n`);
        add({ output_type: "error", ename: c.ename, evalue: c.evalue, traceback: c.traceback });
        break;
    }
  };
  const p = client.execute(src, onIopub);
  const work = Promise.all([p.reply, p.idle]);
  let timer: NodeJS.Timeout | undefined;
  const timeout = timeoutS ? new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), timeoutS * 1000))) : null;
  const r = await (timeout ? Promise.race([work, timeout]) : work);
  clearTimeout(timer);
  if (r === "timeout") {
    const i = client.interrupt();
    await Promise.race([Promise.all([p.reply, p.idle]), new Promise((res) => setTimeout(res, 2000))]);
    void i;
    return "timeout";
  }
  const reply = r[0];
  cell.execution_count = reply.content.execution_count ?? null;
  return reply.content.status === "ok" ? "ok" : "error";
}

/** nbformat stores multi-line text MIME types as lists of lines. */
function nbData(data: Record<string, unknown> = {}): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(data)) {
    o[k] = typeof v === "string" && (k.startsWith("text/") || k === "image/svg+xml") ? lines(v) : v;
  }
  return o;
}
