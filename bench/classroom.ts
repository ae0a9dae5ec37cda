// A class, simulated (issue 15): N students on one `gradlab classroom` hub. Each student arrives within
// the first --arrival seconds, logs in through the hub's login form, starts their server, opens the course
// notebooks as JupyterLab does (a session per notebook, over the proxied kernel websocket) and runs them
// cell by cell with a think time before each cell. Reported per class size: per-student memory (server +
// kernels, RSS sampled every 2 s, and the peak of the student's memory cgroup), CPU seconds per student,
// p50/p95 cell latency (execute_request to execute_reply, as the student waits), time to first kernel
// (arrival to the first notebook's kernel ready: login + server start + kernel start), and failures.
// Prints figures only; nothing here is pass/fail. As root (it runs a real classroom); only 127.0.0.1.
//
//   npx tsx bench/classroom.ts                         N = 1, 10, 20, 30; notebooks 01 and 02
//   npx tsx bench/classroom.ts --students 1,2          other class sizes
//   npx tsx bench/classroom.ts --think 5-15            seconds of think time before each cell (uniform)
//   npx tsx bench/classroom.ts --arrival 30            students arrive over the first 30 s
//   npx tsx bench/classroom.ts --notebooks 01,02,06    which course notebooks each student works through
//   npx tsx bench/classroom.ts --notebooks all         the whole course, 00 to 13
//   npx tsx bench/classroom.ts --open 3                notebooks a student keeps open (a kernel each, as
//                                                      JupyterLab keeps them): the oldest closes when the
//                                                      next opens past 3 (default 1)
//   npx tsx bench/classroom.ts --json out.json         also write every figure as JSON
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg, cpus, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { codeCells, execute, login, openNotebook, processesOf, REPO, serverSettings, startClassroom, startServer, uidOf } from "../test/classroom/hub.ts";

const args = process.argv.slice(2);
let sizes = [1, 10, 20, 30];
let think: [number, number] = [5, 15];
let arrival = 30;
let notebookPrefixes = ["01", "02"];
let jsonOut = "";
let keepOpen = 1;
let mem = "1536M";
const PER_RUN_LIMIT_S = 20 * 60; // a class that has not finished in 20 minutes is reported as failed
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const v = () => {
    const x = args[++i];
    if (x === undefined) throw new Error(`${a} needs a value`);
    return x;
  };
  if (a === "--students")
    sizes = v()
      .split(",")
      .map((s) => Number(s));
  else if (a === "--think") think = v().split("-").map(Number) as [number, number];
  else if (a === "--arrival") arrival = Number(v());
  else if (a === "--notebooks") notebookPrefixes = v().split(",");
  else if (a === "--open") keepOpen = Number(v());
  else if (a === "--json") jsonOut = resolve(v());
  else if (a === "--mem") mem = v();
  else throw new Error(`unknown option ${a}`);
}
if (!sizes.every((n) => Number.isInteger(n) && n > 0 && n <= 99)) throw new Error("--students: class sizes from 1 to 99");
if (think.length !== 2 || !think.every((t) => Number.isFinite(t) && t >= 0) || think[0] > think[1]) throw new Error("--think needs MIN-MAX seconds");
if (!Number.isFinite(arrival) || arrival < 0) throw new Error("--arrival needs seconds");
if (!Number.isInteger(keepOpen) || keepOpen < 1) throw new Error("--open needs a count of notebooks >= 1");

// the course notebooks each student works through, by prefix ("01" -> 01_dynamic_graph.ipynb)
const course = readdirSync(join(REPO, "notebooks")).filter((f) => f.endsWith(".ipynb"));
if (notebookPrefixes.join() === "all") notebookPrefixes = course.filter((f) => /^\d\d_/.test(f)).map((f) => f.slice(0, 2));
const nbNames = notebookPrefixes.map((p) => {
  const f = course.find((x) => x.startsWith(p));
  if (!f) throw new Error(`--notebooks: no course notebook starts with ${p}`);
  return f;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A deterministic generator (mulberry32), so two runs give every student the same think times. */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TICK = 100; // USER_HZ: /proc/<pid>/stat counts CPU time in these ticks
const PAGE = 4096;
function procStat(pid: number): { cpu: number; rss: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    // fields after the name, 0-based from state: utime 11, stime 12, cutime 13, cstime 14, rss 21
    return { cpu: (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / TICK, rss: Number(f[21]) * PAGE };
  } catch {
    return null; // exited between listing and reading
  }
}

function memoryCgroup(name: string): string | null {
  for (const pid of processesOf(uidOf(name).uid)) {
    try {
      const path = /:memory:(.*)$/m.exec(readFileSync(`/proc/${pid}/cgroup`, "utf8"))?.[1];
      // the student's own cgroup only: a process of theirs seen elsewhere (one that is starting, or
      // exiting) would report another cgroup's peak (a whole-class run once read 18 GiB for one student)
      if (path?.endsWith(`/gradlab-classroom/${name}`)) return `/sys/fs/cgroup/memory${path}`;
    } catch {
      // exited
    }
  }
  return null;
}

const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const mib = (b: number) => b / 2 ** 20;

interface StudentResult {
  name: string;
  first_kernel_s: number | null;
  /** arrival to the last cell's reply */
  session_s: number;
  cells: number[];
  failures: string[];
  peak_rss: number;
  cgroup_peak: number;
  cpu_s: number;
}

// @jupyterlab/services re-sends kernel_info when a kernel restarts, and rejects that internal request's
// promise when the connection is torn down, with nobody awaiting it: counted as a failure of the run in
// progress, not a crash of the simulation (which would leave a classroom running)
let strayRejections = 0;
process.on("unhandledRejection", (e) => {
  strayRejections++;
  console.error(`  unawaited rejection: ${(e as Error)?.message ?? e}`);
});

async function runClass(n: number) {
  const loadBefore = loadavg();
  const t0 = Date.now();
  const cls = await startClassroom({ students: n, prefix: "glbench", mem, removeAccounts: true });
  strayRejections = 0;
  const stopOnSignal = () => void cls.stop().then(() => process.exit(130));
  process.once("SIGINT", stopOnSignal);
  try {
    return await drive(n, cls, t0, loadBefore);
  } finally {
    process.off("SIGINT", stopOnSignal);
    await cls.stop();
  }
}

async function drive(n: number, cls: Awaited<ReturnType<typeof startClassroom>>, t0: number, loadBefore: number[]) {
  const peakRss = new Map<string, number>();
  let sampling = true;
  // memory sampler: RSS of each student's processes (server + kernels + their helpers), every 2 s
  const sampler = (async () => {
    while (sampling) {
      for (const s of cls.students) {
        let rss = 0;
        for (const pid of processesOf(uidOf(s).uid)) rss += procStat(pid)?.rss ?? 0;
        peakRss.set(s, Math.max(peakRss.get(s) ?? 0, rss));
      }
      await sleep(2000);
    }
  })();
  const deadline = Date.now() + PER_RUN_LIMIT_S * 1000;

  const results: StudentResult[] = await Promise.all(
    cls.students.map(async (name, i) => {
      const r: StudentResult = { name, first_kernel_s: null, session_s: 0, cells: [], failures: [], peak_rss: 0, cgroup_peak: 0, cpu_s: 0 };
      const rand = rng(1000 + i);
      await sleep(rand() * arrival * 1000);
      const arrived = Date.now();
      try {
        const token = await login(cls.base, name, cls.password);
        await startServer(cls.base, token, name, 300_000);
        const settings = serverSettings(cls.base, token, name);
        // the notebooks still open (each with its kernel), oldest first
        const open: Awaited<ReturnType<typeof openNotebook>>[] = [];
        try {
          for (const nb of nbNames) {
            const cells = await codeCells(cls.base, token, name, nb);
            if (open.length >= keepOpen) await open.shift()!.close();
            const opened = await openNotebook(settings, nb);
            open.push(opened);
            await opened.session.kernel!.info; // kernel_info answered: the kernel is ready for the first cell
            if (r.first_kernel_s === null) r.first_kernel_s = (Date.now() - arrived) / 1000;
            for (const code of cells) {
              if (Date.now() > deadline) throw new Error("ran past the run's time limit");
              await sleep((think[0] + rand() * (think[1] - think[0])) * 1000);
              const run = await execute(opened.session, code);
              r.cells.push(run.ms);
              if (run.status !== "ok") r.failures.push(`${nb}: ${run.error}`);
            }
          }
        } finally {
          for (const o of open) await o.close();
        }
      } catch (e) {
        r.failures.push(String((e as Error)?.message ?? e));
      }
      r.session_s = (Date.now() - arrived) / 1000;
      return r;
    }),
  );
  sampling = false;
  await sampler;
  for (const r of results) {
    r.peak_rss = peakRss.get(r.name) ?? 0;
    const cg = memoryCgroup(r.name);
    r.cgroup_peak = cg ? Number(readFileSync(`${cg}/memory.max_usage_in_bytes`, "utf8")) : NaN;
    // the server is still up, and a kernel it shut down and reaped is in its cutime/cstime: the sum over
    // the student's live processes is all the CPU the student used
    r.cpu_s = processesOf(uidOf(r.name).uid).reduce((t, pid) => t + (procStat(pid)?.cpu ?? 0), 0);
  }
  const loadAfter = loadavg();
  return { n, results, stray_rejections: strayRejections, wall_s: (Date.now() - t0) / 1000, load_before: loadBefore, load_after: loadAfter };
}

console.log(
  `classroom simulation: ${cpus().length} CPUs, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM; notebooks ${notebookPrefixes.join(", ")}, ${keepOpen} open at a time; think ${think[0]}–${think[1]} s; arrivals over ${arrival} s; memory cap ${mem} per student`,
);
const all = [];
for (const n of sizes) {
  const run = await runClass(n);
  all.push(run);
  const rs = run.results;
  const cells = rs.flatMap((r) => r.cells);
  const firsts = rs.map((r) => r.first_kernel_s).filter((x): x is number => x !== null);
  const failures = rs.flatMap((r) => r.failures.map((f) => `${r.name}: ${f}`));
  const row = {
    students: n,
    rss_mean_mib: mib(rs.reduce((t, r) => t + r.peak_rss, 0) / n),
    rss_max_mib: mib(Math.max(...rs.map((r) => r.peak_rss))),
    cgroup_peak_max_mib: mib(Math.max(...rs.map((r) => r.cgroup_peak))),
    cpu_s_mean: rs.reduce((t, r) => t + r.cpu_s, 0) / n,
    session_s_mean: rs.reduce((t, r) => t + r.session_s, 0) / n,
    // average cores one student kept busy over their session (server + kernels)
    cores_per_student: rs.reduce((t, r) => t + r.cpu_s / Math.max(r.session_s, 1e-9), 0) / n,
    cell_p50_ms: pct(cells, 50),
    cell_p95_ms: pct(cells, 95),
    first_kernel_p50_s: pct(firsts, 50),
    first_kernel_max_s: Math.max(...firsts),
    cells: cells.length,
    failures: failures.length + run.stray_rejections,
    wall_s: run.wall_s,
    load_before: run.load_before.map((x) => x.toFixed(2)).join(" "),
    load_after: run.load_after.map((x) => x.toFixed(2)).join(" "),
  };
  console.log(JSON.stringify(row));
  for (const f of failures.slice(0, 10)) console.log(`  failure: ${f}`);
}
if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify(all, null, 2)}\n`);

// every class is stopped and its accounts removed by now; what still holds the event loop (a session's
// websocket or timer inside @jupyterlab/services, as the 2026-12-03 run showed: it sat idle after its
// JSON was written) must not keep a finished simulation alive
process.exit(0);
