// Kernel responsiveness, in the same run as a reference: GradLab's kernel and Debian's ipykernel, both
// started from their kernelspecs and driven by the same client (Debian's /usr/bin/python3 with
// jupyter_client, bench/kernel_driver.py) on:
//   1. start (KernelManager.start_kernel()) to the first kernel_info_reply, median of STARTS starts;
//   2. a trivial execute (`1 + 1` / `1+1`) to its execute_reply and idle status, median and p95 of EXECS;
//   3. CELLS cells printing LINES lines each, sent back to back as "Run All" does: total time, and a
//      check that every line and every `status: idle` arrived;
//   4. a busy loop (`while (true) {}` / `while True: pass`) interrupted with km.interrupt_kernel() (the
//      kernelspec's interrupt_mode: message for GradLab, signal for ipykernel): interrupt to execute_reply.
// GradLab's kernelspec is the one users get: `gradlab install --prefix <tmp>`, found through JUPYTER_PATH.
// Timings are printed, never asserted. Needs python3-jupyter-client and python3-ipykernel (apt).
// Usage: npm run bench:kernel   (env: STARTS=7 EXECS=300 CELLS=10 LINES=1000 INTERRUPTS=5, PYTHON=/usr/bin/python3)
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const REPO = resolve(import.meta.dirname, "..");
const PYTHON = process.env.PYTHON ?? "/usr/bin/python3";
const DRIVER = join(REPO, "bench", "kernel_driver.py");

interface Result {
  kernel: string;
  spec: { resource_dir: string; argv: string[]; interrupt_mode: string };
  implementation: string;
  code: Record<string, string>;
  start_s: number[];
  exec: { reply_s: number[]; done_s: number[]; not_ok: number };
  lines: { total_s: number; cells: number; lines_expected: number; lines_delivered: number; cells_exact: number; idles: number; replies_ok: number };
  interrupt: { latency_s: number[]; enames: string[]; alive_after: number; after: string[]; count: number };
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => {
  const s = sorted(xs);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const p95 = (xs: number[]) => sorted(xs)[Math.max(0, Math.ceil(0.95 * xs.length) - 1)];

function driver(kernel: string, env: NodeJS.ProcessEnv): Promise<Result> {
  return new Promise((res, rej) => {
    execFile(PYTHON, [DRIVER, kernel], { env, cwd: REPO, timeout: 600_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) return rej(new Error(`kernel_driver.py ${kernel} failed: ${err.message}\n${String(stderr).slice(-4000)}`));
      try {
        res(JSON.parse(String(stdout).trim().split("\n").pop()!));
      } catch (e) {
        rej(new Error(`kernel_driver.py ${kernel}: no JSON result (${e})\n${stdout}\n${String(stderr).slice(-4000)}`));
      }
    });
  });
}

function hasModule(mod: string): boolean {
  try {
    execFileSync(PYTHON, ["-c", `import ${mod}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

async function main() {
  if (!hasModule("jupyter_client")) throw new Error(`${PYTHON} has no jupyter_client: apt-get install python3-jupyter-client`);
  const withReference = hasModule("ipykernel");
  if (!withReference) console.error(`warning: ${PYTHON} has no ipykernel (apt-get install python3-ipykernel); measuring GradLab only`);

  const dir = mkdtempSync(join(tmpdir(), "gradlab-bench-kernel-"));
  try {
    const prefix = join(dir, "prefix");
    execFileSync(process.execPath, [join(REPO, "bin", "gradlab.js"), "install", "--prefix", prefix], { stdio: ["ignore", "ignore", "inherit"] });
    const specDir = join(prefix, "share", "jupyter", "kernels", "gradlab");
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      JUPYTER_PATH: join(prefix, "share", "jupyter"),
      JUPYTER_DATA_DIR: join(dir, "data"),
      JUPYTER_RUNTIME_DIR: join(dir, "runtime"),
      IPYTHONDIR: join(dir, "ipython"),
      GRADLAB_HISTORY_FILE: join(dir, "history.jsonl"),
    };
    // one kernel at a time, so neither competes with the other for the CPUs
    const g = await driver("gradlab", env);
    if (resolve(g.spec.resource_dir) !== resolve(specDir))
      throw new Error(`measured the kernelspec in ${g.spec.resource_dir}, not the one installed in ${specDir}`);
    const p = withReference ? await driver("python3", env) : null;
    report(g, p);
    const l = g.lines;
    if (
      l.lines_delivered !== l.lines_expected ||
      l.cells_exact !== l.cells ||
      l.idles !== l.cells ||
      g.exec.not_ok ||
      g.interrupt.alive_after !== g.interrupt.count
    )
      process.exitCode = 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function report(g: Result, p: Result | null) {
  const ms = (s: number) => `${(s * 1000).toFixed(2)} ms`;
  const sec = (s: number) => `${s.toFixed(3)} s`;
  type Row = { metric: string; get: (r: Result) => number; fmt: (v: number) => string; target?: number; targetText?: string };
  const rows: Row[] = [
    { metric: `start → first kernel_info_reply (median of ${g.start_s.length})`, get: (r) => median(r.start_s), fmt: sec, target: 0.5, targetText: "≤ 0.5 s" },
    {
      metric: `execute 1+1 → reply + idle, median (n=${g.exec.done_s.length})`,
      get: (r) => median(r.exec.done_s),
      fmt: ms,
      target: 0.003,
      targetText: "≤ 3 ms",
    },
    { metric: `execute 1+1 → reply + idle, p95`, get: (r) => p95(r.exec.done_s), fmt: ms },
    { metric: `execute 1+1 → execute_reply only, median`, get: (r) => median(r.exec.reply_s), fmt: ms },
    {
      metric: `${g.lines.cells} cells × ${g.lines.lines_expected / g.lines.cells} printed lines, total (Run All)`,
      get: (r) => r.lines.total_s,
      fmt: sec,
      target: 0.25,
      targetText: "≤ 0.25 s",
    },
    { metric: `interrupt busy loop → execute_reply, median of ${g.interrupt.count}`, get: (r) => median(r.interrupt.latency_s), fmt: ms },
    { metric: `interrupt busy loop → execute_reply, max`, get: (r) => Math.max(...r.interrupt.latency_s), fmt: ms },
  ];
  const table: string[][] = [["metric", "GradLab", "ipykernel", "ratio", "target", "GradLab meets"]];
  for (const row of rows) {
    const gv = row.get(g);
    const pv = p ? row.get(p) : NaN;
    table.push([
      row.metric,
      row.fmt(gv),
      p ? row.fmt(pv) : "n/a",
      p ? `${(gv / pv).toFixed(2)}×` : "n/a",
      row.targetText ?? "—",
      row.target === undefined ? "—" : gv <= row.target ? "yes" : "NO",
    ]);
  }
  const delivered = (r: Result) => {
    const l = r.lines;
    const garbled = l.cells - l.cells_exact;
    return `${l.lines_delivered}/${l.lines_expected} lines, ${l.idles}/${l.cells} idle${garbled ? `, ${garbled} cells garbled` : ""}`;
  };
  const allDelivered = (r: Result) =>
    r.lines.lines_delivered === r.lines.lines_expected && r.lines.cells_exact === r.lines.cells && r.lines.idles === r.lines.cells;
  table.push(["printed lines: every line and idle delivered", delivered(g), p ? delivered(p) : "n/a", "", "all", allDelivered(g) ? "yes" : "NO"]);
  const interrupted = (r: Result) => `${r.interrupt.enames.join(",")}; ${r.interrupt.alive_after}/${r.interrupt.count} ok`;
  table.push(["interrupt: ename; next execute ok", interrupted(g), p ? interrupted(p) : "n/a", "", "", "—"]);

  const widths = table[0].map((_, i) => Math.max(...table.map((r) => [...r[i]].length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  console.log(`GradLab:   ${g.implementation}, kernelspec ${g.spec.resource_dir} (interrupt_mode ${g.spec.interrupt_mode})`);
  if (p) console.log(`ipykernel: ${p.implementation}, kernelspec ${p.spec.resource_dir} (interrupt_mode ${p.spec.interrupt_mode})`);
  console.log(`client:    jupyter_client from ${PYTHON}; ratio = GradLab / ipykernel (below 1: GradLab faster)\n`);
  console.log(line(table[0]));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of table.slice(1)) console.log(line(r));
  const range = (xs: number[]) => `${sec(Math.min(...xs))}–${sec(Math.max(...xs))}`;
  console.log(`\nstarts: GradLab ${range(g.start_s)}${p ? `, ipykernel ${range(p.start_s)}` : ""}`);
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(2);
});
