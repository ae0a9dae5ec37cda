// Driving a GradLab classroom (deploy/jupyterhub_config.py, started by `gradlab classroom`) the way a
// student's browser does: the hub's login form, its REST API, and each student's Jupyter server and kernels
// through the hub's proxy (@jupyterlab/services over the proxied websocket). Used by the classroom test
// tier and by bench/classroom.ts. Only 127.0.0.1; every wait is bounded.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { KernelManager, ServerConnection, SessionManager, type Session, type KernelMessage } from "@jupyterlab/services";
import { freePort } from "../../kernel/sockets/connection.ts";

// ws ships no types; @jupyterlab/services needs a WebSocket implementation in Node 20
export const { WebSocket } = createRequire(import.meta.url)("ws") as { WebSocket: any };
export const REPO = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Classroom {
  base: string;
  port: number;
  password: string;
  students: string[];
  /** The admin service token (--api-token-file), for scripted classes. */
  apiToken: string;
  proc: ChildProcess;
  /** the hub's state directory (database, pid file) */
  state: string;
  log(): string;
  stop(): Promise<void>;
}

export interface ClassroomOptions {
  students: number;
  prefix: string;
  mem?: string;
  cpu?: number;
  deviceMemory?: string;
  maxActive?: number;
  tmpSize?: string;
  homeSize?: string;
  /** start `gradlab classroom` in a process group of its own, as a terminal's foreground job is */
  ownGroup?: boolean;
  /** Remove these students' Unix accounts and homes after stop (tests; never a real class's). */
  removeAccounts?: boolean;
}

/** Waits (bounded) until a student has no process left: the hub stops each server on its way out, but a
 * kernel notices its server is gone only at its next parent check (about a second), and userdel refuses an
 * account that still runs something. What outlives the wait is ended (these are the test's own processes). */
async function drainProcesses(name: string) {
  let uid: number;
  try {
    uid = uidOf(name).uid;
  } catch {
    return; // no account
  }
  for (const [waitMs, signal] of [
    [20_000, "SIGTERM"],
    [5_000, "SIGKILL"],
  ] as const) {
    const deadline = Date.now() + waitMs;
    while (processesOf(uid).length > 0 && Date.now() < deadline) await sleep(200);
    const left = processesOf(uid);
    if (left.length === 0) return;
    for (const pid of left) {
      try {
        process.kill(pid, signal);
      } catch {
        // already gone
      }
    }
  }
}

/** Deletes a test student's account and home (and nothing else: only names with our test prefix). */
function removeAccount(name: string) {
  if (spawnSync("id", ["-u", name]).status === 0) {
    const r = spawnSync("userdel", ["--remove", name], { encoding: "utf8" });
    // userdel warns (status 12) when the mail spool is missing; the account and home are gone anyway
    if (r.status !== 0 && r.status !== 12) throw new Error(`userdel ${name}: ${r.stderr}`);
  }
}

export async function startClassroom(o: ClassroomOptions): Promise<Classroom> {
  if (process.getuid?.() !== 0) throw new Error("the classroom runs as root (it creates Unix accounts); run this as root, as CI does");
  const students = Array.from({ length: o.students }, (_, i) => `${o.prefix}${String(i + 1).padStart(2, "0")}`);
  if (o.removeAccounts) {
    // a previous run's leftovers would keep old files
    await Promise.all(students.map(drainProcesses));
    students.forEach(removeAccount);
  }
  const state = mkdtempSync(join(tmpdir(), "gradlab-classroom-"));
  const password = randomBytes(12).toString("base64url");
  const port = await freePort();
  const args = [
    "bin/gradlab.js",
    "classroom",
    "--users",
    String(o.students),
    "--prefix",
    o.prefix,
    "--port",
    String(port),
    "--state",
    state,
    "--api-token-file",
    join(state, "api-token"),
  ];
  if (o.mem) args.push("--mem", o.mem);
  if (o.cpu) args.push("--cpu", String(o.cpu));
  if (o.deviceMemory) args.push("--device-memory", o.deviceMemory);
  if (o.maxActive) args.push("--max-active", String(o.maxActive));
  if (o.tmpSize) args.push("--tmp-size", o.tmpSize);
  if (o.homeSize) args.push("--home-size", o.homeSize);
  let log = "";
  // the password in the environment, as docs/classroom.md advises (a command line is visible in ps)
  const proc = spawn(process.execPath, args, {
    cwd: REPO,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, GRADLAB_CLASS_PASSWORD: password },
    detached: o.ownGroup ?? false,
  });
  proc.stdout!.on("data", (d) => (log += d));
  proc.stderr!.on("data", (d) => (log += d));
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill("SIGTERM"); // the hub stops every student's server on the way out (cleanup_servers)
      const exited = new Promise((r) => proc.once("exit", r));
      if (!(await Promise.race([exited.then(() => true), sleep(60_000).then(() => false)]))) proc.kill("SIGKILL");
    }
    if (o.removeAccounts) {
      await Promise.all(students.map(drainProcesses));
      students.forEach(removeAccount);
    }
    rmSync(state, { recursive: true, force: true });
  };
  // up when the proxy routes /hub/ to the hub: the proxy alone answers 404 for a moment before that
  for (let i = 0; ; i++) {
    try {
      const r = await fetch(`${base}/hub/api`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (proc.exitCode !== null || i >= 600) {
      await stop();
      throw new Error(`the classroom did not come up:\n${log}`);
    }
    await sleep(200);
  }
  const apiToken = readFileSync(join(state, "api-token"), "utf8").trim();
  return { base, port, password, students, apiToken, proc, state, log: () => log, stop };
}

/** Logs a student in through the hub's login form (the shared-password authenticator), then makes an API
 * token with that session, as the hub's own token page does. */
export async function login(base: string, name: string, password: string): Promise<string> {
  const cookies = await loginCookies(base, name, password);
  // the hub accepts a cookie on its API only from its own pages (Referer) and only with a JSON body
  const r = await fetch(`${base}/hub/api/users/${name}/tokens`, {
    method: "POST",
    headers: { cookie: cookies, referer: `${base}/hub/token`, "content-type": "application/json" },
    body: JSON.stringify({ note: "classroom client", expires_in: 3600 }),
  });
  if (r.status !== 201 && r.status !== 200) throw new Error(`token for ${name}: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { token: string }).token;
}

/** The hub's login form, as a browser submits it: the session cookies it sets. */
export async function loginCookies(base: string, name: string, password: string): Promise<string> {
  const form = await fetch(`${base}/hub/login`, {
    method: "POST",
    body: new URLSearchParams({ username: name, password }),
    redirect: "manual",
  });
  if (form.status !== 302) throw new Error(`login of ${name} failed: ${form.status}`);
  return form.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
}

export const hubApi = (base: string, token: string, path: string, init: RequestInit = {}) =>
  fetch(`${base}/hub/api${path}`, { ...init, headers: { authorization: `token ${token}`, ...(init.headers ?? {}) } });

/** Starts the student's server (if it is not running) and waits, bounded, until the hub reports it ready. */
export async function startServer(base: string, token: string, name: string, timeoutMs = 240_000): Promise<void> {
  const r = await hubApi(base, token, `/users/${name}/server`, { method: "POST" });
  // 201: started; 202: spawn pending; 400: already running
  if (![201, 202, 400].includes(r.status)) throw new Error(`starting ${name}'s server: ${r.status} ${await r.text()}`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const u = (await (await hubApi(base, token, `/users/${name}`)).json()) as { servers?: Record<string, { ready: boolean }> };
    if (u.servers?.[""]?.ready) return;
    if (Date.now() > deadline) throw new Error(`${name}'s server was not ready within ${timeoutMs / 1000} s`);
    await sleep(500);
  }
}

export async function stopServer(base: string, token: string, name: string, timeoutMs = 60_000): Promise<void> {
  const r = await hubApi(base, token, `/users/${name}/server`, { method: "DELETE" });
  if (![202, 204].includes(r.status)) throw new Error(`stopping ${name}'s server: ${r.status} ${await r.text()}`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const u = (await (await hubApi(base, token, `/users/${name}`)).json()) as { servers?: Record<string, unknown> };
    if (!u.servers?.[""]) return;
    if (Date.now() > deadline) throw new Error(`${name}'s server did not stop within ${timeoutMs / 1000} s`);
    await sleep(300);
  }
}

/** @jupyterlab/services settings for a student's server behind the hub's proxy. */
export function serverSettings(base: string, token: string, name: string): ServerConnection.ISettings {
  return ServerConnection.makeSettings({
    baseUrl: `${base}/user/${name}/`,
    wsUrl: `${base.replace(/^http/, "ws")}/user/${name}/`,
    token,
    appendToken: true,
    WebSocket,
  });
}

/** GET/PUT on a student's server (Jupyter's REST API) through the proxy. */
export async function userApi(base: string, token: string, name: string, path: string, init: RequestInit = {}): Promise<Response> {
  const go = () => fetch(`${base}/user/${name}/api${path}`, { ...init, headers: { authorization: `token ${token}`, ...(init.headers ?? {}) } });
  try {
    return await go();
  } catch (e) {
    // a kept-alive connection the proxy had closed meanwhile ("other side closed"): once more, on a new
    // one, for requests that can be repeated
    if ((init.method ?? "GET") !== "GET") throw e;
    return go();
  }
}

export interface CellRun {
  status: string;
  ms: number;
  error?: string;
  outputs: KernelMessage.IIOPubMessage[];
}

/** Opens a notebook as JupyterLab does (a session for its path, with the GradLab kernel). */
export async function openNotebook(settings: ServerConnection.ISettings, path: string) {
  const kernels = new KernelManager({ serverSettings: settings });
  const sessions = new SessionManager({ serverSettings: settings, kernelManager: kernels });
  await sessions.ready;
  const session = await sessions.startNew({ path, type: "notebook", name: path, kernel: { name: "gradlab" } });
  return {
    session,
    async close() {
      await session.shutdown(); // the kernel too, as closing a notebook and shutting its kernel down
      sessions.dispose();
      kernels.dispose();
    },
  };
}

export async function execute(session: Session.ISessionConnection, code: string): Promise<CellRun> {
  const kernel = session.kernel;
  if (!kernel) throw new Error("the session has no kernel");
  const outputs: KernelMessage.IIOPubMessage[] = [];
  const t0 = performance.now();
  const future = kernel.requestExecute({ code, stop_on_error: false });
  future.onIOPub = (m) => void outputs.push(m);
  const reply = (await future.done).content as { status: string; ename?: string; evalue?: string };
  return { status: reply.status, ms: performance.now() - t0, error: reply.status === "ok" ? undefined : `${reply.ename}: ${reply.evalue}`, outputs };
}

/** The code cells of a notebook in the student's own copy, read through the contents API. */
export async function codeCells(base: string, token: string, name: string, path: string): Promise<string[]> {
  const r = await userApi(base, token, name, `/contents/${encodeURIComponent(path)}?content=1&type=notebook`);
  if (!r.ok) throw new Error(`reading ${name}'s ${path}: ${r.status}`);
  const nb = (await r.json()) as { content: { cells: { cell_type: string; source: string | string[] }[] } };
  return nb.content.cells.filter((c) => c.cell_type === "code").map((c) => (Array.isArray(c.source) ? c.source.join("") : c.source));
}

export const homeOf = (name: string) => {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${name}:`));
  if (!line) throw new Error(`no account ${name}`);
  return line.split(":")[5];
};

export const uidOf = (name: string) => {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${name}:`));
  if (!line) throw new Error(`no account ${name}`);
  const f = line.split(":");
  return { uid: Number(f[2]), gid: Number(f[3]) };
};

/** The processes running as a student (server, kernels, their helpers). */
export function processesOf(uid: number): number[] {
  const out = spawnSync("ps", ["-o", "pid=", "-u", String(uid)], { encoding: "utf8" }).stdout;
  return out
    .split("\n")
    .map((s) => Number(s.trim()))
    .filter((n) => n > 0 && existsSync(`/proc/${n}`));
}
