// Run All timings of the course notebooks (issue 14: no cell over 5 s, the whole course under 90 s on the
// 2-core development machine). Each notebook runs in a fresh kernel, as `gradlab run` does, and the
// script prints per cell the wall time and the kernel process's CPU time (user + system, all its
// threads, from /proc/<pid>/stat), plus the kernel's start. CPU time is printed next to wall time because
// the machine is often shared: wall time grows with other people's load, CPU time much less.
// Prints figures only; nothing here is pass/fail.
//
//   npx tsx bench/notebooks.ts                      every notebook in notebooks/ (not smoke.ipynb)
//   npx tsx bench/notebooks.ts 06 09                only those whose name starts with 06 or 09
//   npx tsx bench/notebooks.ts --solutions          notebooks/solutions/ instead
//   npx tsx bench/notebooks.ts --slow 2             list cells over 2 s wall (default 5)
//   npx tsx bench/notebooks.ts --json out.json      also write every figure as JSON
//   npx tsx bench/notebooks.ts --cpu-prof DIR 06    the kernel runs with node --cpu-prof (a .cpuprofile per
//                                                   thread in DIR; open in Chrome DevTools or speedscope)
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { KernelClient } from "../kernel/cli/client.ts";
import { kernelArgv, REPO } from "../kernel/cli/paths.ts";
import type { Message } from "../kernel/wire/message.ts";

interface CellTime {
  index: number;
  first_line: string;
  wall_s: number;
  cpu_s: number;
  status: string /** CLOCK_MONOTONIC µs, the clock of --cpu-prof's timestamps */;
  start_us: number;
  end_us: number;
}
interface NotebookTime {
  notebook: string;
  start_wall_s: number;
  start_cpu_s: number;
  cells: CellTime[];
  total_wall_s: number;
  total_cpu_s: number;
  load_before: number[];
  load_after: number[];
}

const args = process.argv.slice(2);
let dir = join(REPO, "notebooks");
let slow = 5;
let jsonOut = "";
let profDir = "";
const prefixes: string[] = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === "--solutions") dir = join(REPO, "notebooks", "solutions");
  else if (a === "--slow") slow = Number(args[++i]);
  else if (a === "--json") jsonOut = resolve(args[++i]);
  else if (a === "--cpu-prof") profDir = resolve(args[++i]);
  else if (a.startsWith("-")) throw new Error(`unknown option ${a}`);
  else prefixes.push(a);
}
if (!Number.isFinite(slow)) throw new Error("--slow needs a number of seconds");

const files = readdirSync(dir)
  .filter((f) => f.endsWith(".ipynb") && f !== "smoke.ipynb")
  .filter((f) => prefixes.length === 0 || prefixes.some((p) => f.startsWith(p)))
  .sort();
if (files.length === 0) throw new Error(`no notebook in ${dir} matches ${prefixes.join(" ")}`);
// The kernel runs from dist/: rebuild it first if a source changed, as bin/gradlab.js does, so that the
// figures are those of the current sources (and no notebook pays for the build).
if (existsSync(join(REPO, "tsconfig.build.json"))) (await import(pathToFileURL(join(REPO, "bin", "build.mjs")).href)).ensureBuilt();

const TICK = 100; // USER_HZ on Linux; /proc/<pid>/stat counts CPU time in these ticks
/** CPU seconds (user + system, every thread) that process `pid` has used so far. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // the command name (field 2) may contain spaces; the fields after it start at the last ')'
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / TICK; // utime, stime (fields 14, 15)
}
const load = () => loadavg().map((l) => Number(l.toFixed(2)));
const text = (s: string | string[]) => (Array.isArray(s) ? s.join("") : s);

async function timeNotebook(path: string): Promise<NotebookTime> {
  const nb = JSON.parse(readFileSync(path, "utf8"));
  const code: string[] = nb.cells.filter((c: { cell_type: string }) => c.cell_type === "code").map((c: { source: string | string[] }) => text(c.source));
  const client = new KernelClient();
  const load_before = load();
  const t0 = performance.now();
  const argv = kernelArgv();
  // Node refuses --cpu-prof in NODE_OPTIONS: it goes on the kernel's own command line
  if (profDir) argv.splice(1, 0, "--cpu-prof", `--cpu-prof-dir=${profDir}`);
  await client.start(argv, { cwd: dirname(path), env: { NODE_NO_WARNINGS: "1", GRADLAB_KERNEL_QUIET: "1", ...process.env } });
  const pid = client.proc!.pid!;
  const cells: CellTime[] = [];
  let start_wall_s = 0;
  let start_cpu_s = 0;
  try {
    await client.ready();
    start_wall_s = (performance.now() - t0) / 1000;
    start_cpu_s = cpuSeconds(pid);
    for (let i = 0; i < code.length; i++) {
      const src = code[i];
      if (!src.trim()) continue;
      const c0 = cpuSeconds(pid);
      const w0 = performance.now();
      const start_us = Number(process.hrtime.bigint() / 1000n);
      let errorText = "";
      const p = client.execute(src, (m: Message) => {
        if (m.header.msg_type === "error") errorText = `${m.content.ename}: ${m.content.evalue}`;
      });
      const [reply] = await Promise.all([p.reply, p.idle]);
      const wall_s = (performance.now() - w0) / 1000;
      const end_us = Number(process.hrtime.bigint() / 1000n);
      const cpu_s = cpuSeconds(pid) - c0;
      const status = reply.content.status === "ok" ? "ok" : `error ${errorText}`;
      cells.push({
        index: i + 1,
        first_line: src
          .split("\n")
          .find((l) => l.trim())!
          .slice(0, 60),
        wall_s,
        cpu_s,
        status,
        start_us,
        end_us,
      });
      if (status !== "ok") break;
    }
  } finally {
    await client.shutdown().catch(() => client.close());
  }
  const total_wall_s = (performance.now() - t0) / 1000;
  const total_cpu_s = start_cpu_s + cells.reduce((s, c) => s + c.cpu_s, 0);
  return { notebook: basename(path), start_wall_s, start_cpu_s, cells, total_wall_s, total_cpu_s, load_before, load_after: load() };
}

/**
 * With --cpu-prof: for each cell, the profile samples of each kernel thread that fall in the cell's
 * window, by what ran (GC, a package under node_modules, the kernel's own files), so one can see which
 * thread the cell's CPU time went to (the main thread, the language service's worker, tsx's loader).
 * Samples are wall-clock ticks while a thread is not idle: on a loaded machine they include time the
 * thread waited for a core, so compare shares, not seconds.
 */
function profileByCell(dir: string, cells: CellTime[], since: number): void {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith(".cpuprofile"))
    .sort();
  for (const f of files) {
    const p = JSON.parse(readFileSync(join(dir, f), "utf8")) as {
      nodes: Array<{ id: number; callFrame: { functionName: string; url: string } }>;
      samples: number[];
      timeDeltas: number[];
      startTime: number;
    };
    if (p.startTime < since) continue; // an earlier notebook's kernel
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const per = cells.map(() => new Map<string, number>());
    let t = p.startTime;
    for (let i = 0; i < p.samples.length; i++) {
      t += p.timeDeltas[i];
      const n = byId.get(p.samples[i])!;
      const fn = n.callFrame.functionName;
      if (fn === "(idle)") continue;
      const c = cells.findIndex((x) => t >= x.start_us && t < x.end_us);
      if (c < 0) continue;
      const m = n.callFrame.url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
      const what =
        fn === "(garbage collector)"
          ? "GC"
          : m
            ? m[1]
            : n.callFrame.url.includes("/dist/")
              ? "gradlab"
              : n.callFrame.url.startsWith("node:")
                ? "node"
                : "other";
      per[c].set(what, (per[c].get(what) ?? 0) + (p.timeDeltas[i + 1] ?? 0));
    }
    const total = per.reduce((s, m) => s + [...m.values()].reduce((a, b) => a + b, 0), 0);
    if (total < 50_000) continue;
    console.log(`  thread ${f.split(".").slice(-3, -1).join(".")}: ${(total / 1e6).toFixed(2)} s of samples in cells`);
    per.forEach((m, i) => {
      const sum = [...m.values()].reduce((a, b) => a + b, 0);
      if (sum < 50_000) return;
      const top = [...m]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 4)
        .map(([k, v]) => `${k} ${(v / 1e6).toFixed(2)}`)
        .join(", ");
      console.log(`    #${cells[i].index}: ${(sum / 1e6).toFixed(2)} s (${top})`);
    });
  }
}

const f1 = (x: number) => x.toFixed(1).padStart(5);
const f2 = (x: number) => x.toFixed(2).padStart(6);
console.log(`notebooks in ${dir}; load average (1, 5, 15 min) ${load().join(", ")}; ${new Date().toISOString()}`);
console.log(
  `${"notebook".padEnd(40)} ${"start".padStart(6)} ${"cells".padStart(6)} ${"total".padStart(6)}  ${"cpu".padStart(6)}  slowest cell (wall / cpu)      load 1-min before→after`,
);
const results: NotebookTime[] = [];
for (const f of files) {
  const since = Number(process.hrtime.bigint() / 1000n);
  const r = await timeNotebook(join(dir, f));
  results.push(r);
  const worst = [...r.cells].sort((a, b) => b.wall_s - a.wall_s)[0];
  const failed = r.cells.find((c) => c.status !== "ok");
  console.log(
    `${r.notebook.padEnd(40)} ${f2(r.start_wall_s)} ${f2(r.cells.reduce((s, c) => s + c.wall_s, 0))} ${f2(r.total_wall_s)}  ${f2(r.total_cpu_s)}  ` +
      `#${String(worst?.index ?? "-").padEnd(3)} ${f1(worst?.wall_s ?? 0)} s / ${f1(worst?.cpu_s ?? 0)} s   ` +
      `${r.load_before[0]}→${r.load_after[0]}${failed ? `   FAILED at cell ${failed.index}: ${failed.status}` : ""}`,
  );
  if (profDir) profileByCell(profDir, r.cells, since);
}
const wall = results.reduce((s, r) => s + r.total_wall_s, 0);
const cpu = results.reduce((s, r) => s + r.total_cpu_s, 0);
console.log(`${"total".padEnd(40)} ${" ".repeat(6)} ${" ".repeat(6)} ${f2(wall)}  ${f2(cpu)}`);
const slowCells = results.flatMap((r) => r.cells.filter((c) => c.wall_s > slow).map((c) => ({ nb: r.notebook, ...c })));
if (slowCells.length) {
  console.log(`\ncells over ${slow} s wall:`);
  for (const c of slowCells) console.log(`  ${c.nb} #${c.index}: ${c.wall_s.toFixed(2)} s wall, ${c.cpu_s.toFixed(2)} s cpu   ${c.first_line}`);
}
console.log(`load average after: ${load().join(", ")}`);
if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify({ dir, date: new Date().toISOString(), results }, null, 1)}\n`);
