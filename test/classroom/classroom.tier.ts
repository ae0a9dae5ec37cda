// The classroom tier (npm run test:classroom, in .ci/run; as root, after deploy/setup): `gradlab classroom`
// brings a real JupyterHub up on 127.0.0.1; two students log in through the hub's login form, get API
// tokens, start their servers and run notebook 01 cell by cell over the proxied kernel websocket; then
// one student tries to reach the other's server, kernel, home and connection files, and fails.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import {
  codeCells,
  execute,
  homeOf,
  hubApi,
  login,
  loginCookies,
  openNotebook,
  processesOf,
  REPO,
  serverSettings,
  startClassroom,
  startServer,
  stopServer,
  uidOf,
  userApi,
  WebSocket,
  type Classroom,
} from "./hub.ts";

const NB = "01_dynamic_graph.ipynb";
const DEVICE_MEMORY = 256 * 2 ** 20;
const MEM = 1536 * 2 ** 20;

let cls: Classroom;
let a: string;
let b: string;
/** a third student, past the class's size (--max-active 2) */
let c: string;
const TMP = 64 * 2 ** 20;
const HOME = 64 * 2 ** 20;
const tokens: Record<string, string> = {};
const notebooks: Record<string, Awaited<ReturnType<typeof openNotebook>>> = {};

/** the venv's own kernelspec before the class started (a class must not repoint it) */
let venvSpec: string | null = null;
const VENV_SPEC = "/opt/gradlab-classroom/venv/share/jupyter/kernels/gradlab/kernel.json";

beforeAll(async () => {
  venvSpec = existsSync(VENV_SPEC) ? readFileSync(VENV_SPEC, "utf8") : null;
  cls = await startClassroom({
    students: 3,
    prefix: "gltest",
    mem: "1536M",
    deviceMemory: "256M",
    maxActive: 2,
    tmpSize: "64M",
    homeSize: "64M",
    removeAccounts: true,
  });
  [a, b, c] = cls.students;
}, 180_000);

afterAll(async () => {
  for (const nb of Object.values(notebooks)) await nb.close().catch(() => {});
  await cls?.stop();
}, 120_000);

describe("classroom", () => {
  test("the hub listens on 127.0.0.1 only", async () => {
    expect((await fetch(`${cls.base}/hub/api`)).status).toBe(200);
    const outside = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && i.family === "IPv4" && !i.internal);
    if (outside) {
      const err = await fetch(`http://${outside.address}:${cls.port}/hub/api`).then(
        () => null,
        (e) => e,
      );
      expect(err?.cause?.code).toBe("ECONNREFUSED");
    }
  });

  test("the login takes the shared password, and only for students on the list", async () => {
    await expect(login(cls.base, a, "not-the-password")).rejects.toThrow(/login of gltest01 failed/);
    await expect(login(cls.base, "gltest99", cls.password)).rejects.toThrow(/login of gltest99 failed/);
    for (const s of cls.students) tokens[s] = await login(cls.base, s, cls.password);
    expect(tokens[a]).not.toBe(tokens[b]);
  });

  test("each student gets a private home with the course, and a server of their own in their own cgroups", async () => {
    await Promise.all([a, b].map((s) => startServer(cls.base, tokens[s], s)));
    for (const s of [a, b]) {
      const home = homeOf(s);
      const { uid } = uidOf(s);
      const st = spawnSync("stat", ["-c", "%a %u", home], { encoding: "utf8" }).stdout.trim();
      expect(st).toBe(`700 ${uid}`);
      const course = readdirSync(join(home, "course"));
      expect(course).toContain(NB);
      expect(course).toContain("check.ts");
      let checked = 0;
      for (const pid of processesOf(uid)) {
        let cg: string;
        try {
          cg = readFileSync(`/proc/${pid}/cgroup`, "utf8");
        } catch {
          continue; // a short-lived child that exited after ps listed it
        }
        const mem = /:memory:(.*)$/m.exec(cg)?.[1];
        expect(mem?.endsWith(`/gradlab-classroom/${s}`)).toBe(true);
        expect(Number(readFileSync(`/sys/fs/cgroup/memory${mem}/memory.limit_in_bytes`, "utf8"))).toBe(MEM);
        checked++;
      }
      expect(checked).toBeGreaterThan(0); // at least the server itself
    }
  }, 300_000);

  test("both students run notebook 01 cell by cell through the hub", async () => {
    await Promise.all(
      [a, b].map(async (s) => {
        const cells = await codeCells(cls.base, tokens[s], s, NB);
        expect(cells.length).toBeGreaterThan(3);
        notebooks[s] = await openNotebook(serverSettings(cls.base, tokens[s], s), NB);
        for (const [i, code] of cells.entries()) {
          const r = await execute(notebooks[s].session, code);
          expect({ student: s, cell: i, error: r.error }).toEqual({ student: s, cell: i, error: undefined });
        }
      }),
    );
  }, 400_000);

  test("each kernel has the per-student device capacity and its own HMAC key, in a file only its student can read", async () => {
    const keys = new Set<string>();
    for (const s of [a, b]) {
      const r = await execute(notebooks[s].session, "(await torch.cuda.get_device_properties(0)).total_memory");
      const result = r.outputs.find((m) => m.header.msg_type === "execute_result")?.content as { data: Record<string, string> };
      expect(result.data["text/plain"]).toBe(String(DEVICE_MEMORY));
      const id = notebooks[s].session.kernel!.id;
      const file = join(homeOf(s), ".local/share/jupyter/runtime", `kernel-${id}.json`);
      const conn = JSON.parse(readFileSync(file, "utf8")) as { key: string; signature_scheme: string };
      expect(conn.signature_scheme).toBe("hmac-sha256");
      expect(conn.key.length).toBeGreaterThanOrEqual(32);
      keys.add(conn.key);
      expect(spawnSync("stat", ["-c", "%a %U", file], { encoding: "utf8" }).stdout.trim()).toBe(`600 ${s}`);
    }
    expect(keys.size).toBe(2);
  });

  test("student A cannot reach B's server, kernel or hub record", async () => {
    const t = tokens[a];
    for (const path of ["/api/contents", `/api/contents/${NB}`, "/api/kernels", "/lab"]) {
      const r = await fetch(`${cls.base}/user/${b}${path}`, { headers: { authorization: `token ${t}` }, redirect: "manual" });
      // the server sends A's token to the hub, which says it is not B's: 403 (a browser gets a redirect to login)
      expect([403, 302]).toContain(r.status);
      if (r.status === 302) expect(r.headers.get("location")).not.toContain(`/user/${b}/api`);
    }
    // the hub answers 404 or 403 depending on whether the scope lets A know B exists; never 2xx
    for (const [path, method] of [
      [`/users/${b}`, "GET"],
      [`/users/${b}/server`, "DELETE"],
      [`/users/${b}/server`, "POST"],
      [`/users/${b}/tokens`, "POST"],
    ]) {
      expect([403, 404]).toContain((await hubApi(cls.base, t, path, { method, body: method === "POST" ? "{}" : undefined })).status);
    }
    // B's kernel's websocket with A's token
    const kid = notebooks[b].session.kernel!.id;
    const status = await new Promise<number>((res) => {
      const ws = new WebSocket(`${cls.base.replace("http", "ws")}/user/${b}/api/kernels/${kid}/channels?token=${t}`);
      ws.on("unexpected-response", (_req: unknown, resp: { statusCode: number }) => {
        res(resp.statusCode);
        ws.terminate();
      });
      ws.on("open", () => {
        res(101);
        ws.close();
      });
      ws.on("error", () => {});
    });
    expect(status).toBe(403);
    // A's own server is still A's
    expect((await userApi(cls.base, t, a, "/contents")).status).toBe(200);
  });

  test("code in A's kernel cannot read B's home or B's kernel connection file", async () => {
    const bHome = homeOf(b);
    const bConn = join(bHome, ".local/share/jupyter/runtime", `kernel-${notebooks[b].session.kernel!.id}.json`);
    for (const target of [bConn, join(bHome, "course", NB)]) {
      const r = await execute(notebooks[a].session, `import { readFileSync } from "node:fs";\nreadFileSync(${JSON.stringify(target)}, "utf8")`);
      expect(r.status).toBe("error");
      expect(r.error).toMatch(/EACCES/);
    }
    const ls = await execute(notebooks[a].session, `import { readdirSync } from "node:fs";\nreaddirSync(${JSON.stringify(bHome)})`);
    expect(ls.error).toMatch(/EACCES/);
    // and outside any kernel, as A's Unix user
    const { uid, gid } = uidOf(a);
    const cat = spawnSync("cat", [bConn], { uid, gid, encoding: "utf8" });
    expect(cat.status).not.toBe(0);
    expect(cat.stderr).toMatch(/Permission denied/);
  });

  test("another student cannot connect to a kernel's channels: no TCP port, owner-only Unix sockets (IOPub, heartbeat, shell, control, stdin)", async () => {
    const id = notebooks[b].session.kernel!.id;
    const runtime = join(homeOf(b), ".local/share/jupyter/runtime");
    const conn = JSON.parse(readFileSync(join(runtime, `kernel-${id}.json`), "utf8")) as Record<string, unknown>;
    expect(conn.transport).toBe("ipc");
    delete conn.key;
    // B's kernel process holds no listening TCP socket (what /proc/net/tcp and ps would show A)
    const kernelPid = processesOf(uidOf(b).uid).find((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(`kernel-${id}.json`);
      } catch {
        return false;
      }
    });
    expect(kernelPid).toBeDefined();
    expect(tcpListeners(kernelPid!)).toBe(0);
    // B's kernel prints while A (and then B, to show what reachable looks like) try every channel
    const printing = execute(
      notebooks[b].session,
      "for (let i = 0; i < 80; i++) { console.log('secret ' + i); await new Promise((r) => setTimeout(r, 100)); }",
    );
    await new Promise((r) => setTimeout(r, 500));
    const probe = (who: string) => {
      const { uid, gid } = uidOf(who);
      const src = readFileSync(join(REPO, "test", "kernel", "probe_channels.py"), "utf8");
      const r = spawnSync("/usr/bin/python3", ["-c", src, JSON.stringify(conn)], { uid, gid, cwd: "/", encoding: "utf8", timeout: 60_000 });
      if (r.status !== 0) throw new Error(`probe as ${who}: ${r.stderr}`);
      return JSON.parse(r.stdout.trim().split("\n").pop()!);
    };
    const fromA = probe(a);
    const fromB = probe(b);
    await printing;
    const channels = ["shell", "iopub", "stdin", "control", "hb"];
    expect(fromB.connect).toEqual(Object.fromEntries(channels.map((ch) => [ch, "ok"])));
    expect(fromB.hb_echoed).toBe(true);
    expect(fromB.iopub_messages).toBeGreaterThan(0);
    expect(fromA.connect).toEqual(Object.fromEntries(channels.map((ch) => [ch, "EACCES"])));
    expect(fromA.hb_echoed).toBe(false);
    expect(fromA.iopub_messages).toBe(0);
  }, 120_000);

  test("students see the GradLab kernel only: this class's own kernelspec, naming the GradLab the class runs from", async () => {
    const specs = (await (await userApi(cls.base, tokens[a], a, "/kernelspecs")).json()) as {
      default: string;
      kernelspecs: Record<string, { spec: { argv: string[] }; resources: Record<string, string> }>;
    };
    expect(specs.default).toBe("gradlab");
    expect(Object.keys(specs.kernelspecs)).toEqual(["gradlab"]);
    expect(specs.kernelspecs.gradlab.spec.argv).toContain(join(REPO, "dist", "kernel", "cli", "main.js"));
    // and starting this class left the venv's kernelspec (another class's default) as it was
    expect(existsSync(VENV_SPEC) ? readFileSync(VENV_SPEC, "utf8") : null).toBe(venvSpec);
  });

  test("each student's /tmp is private and size-limited: a full /tmp is theirs alone", async () => {
    const fill = await execute(
      notebooks[a].session,
      `import { writeFileSync, statfsSync } from "node:fs";
const st = statfsSync("/tmp");
writeFileSync("/tmp/mine.txt", "A's file");
let err = "";
try { writeFileSync("/tmp/fill", Buffer.alloc(${TMP + 16 * 2 ** 20})); } catch (e) { err = e.code; }
console.log(JSON.stringify({ size: st.blocks * st.bsize, err }));`,
    );
    expect(fill.error).toBeUndefined();
    const r = JSON.parse((fill.outputs.find((m) => m.header.msg_type === "stream")!.content as { text: string }).text);
    expect(r).toEqual({ size: TMP, err: "ENOSPC" });
    // B still writes to its own /tmp, and sees nothing of A's
    const other = await execute(
      notebooks[b].session,
      `import { existsSync, writeFileSync } from "node:fs";
writeFileSync("/tmp/b.txt", "x".repeat(1 << 20));
existsSync("/tmp/mine.txt")`,
    );
    expect(other.error).toBeUndefined();
    expect((other.outputs.find((m) => m.header.msg_type === "execute_result")!.content as any).data["text/plain"]).toBe("false");
    // nor does the machine's /tmp
    expect(spawnSync("test", ["-e", "/tmp/mine.txt"]).status).not.toBe(0);
    await execute(notebooks[a].session, `import { rmSync } from "node:fs";\nrmSync("/tmp/fill")`);
  }, 120_000);

  test("each student's home has a disk limit of its own: a student who fills theirs gets ENOSPC, another writes on", async () => {
    // the home is an ext4 image of its own, loop-mounted (the machine's file system under /home is not it)
    for (const s of [a, b]) {
      const m = spawnSync("findmnt", ["--noheadings", "--output", "SOURCE,FSTYPE", "--target", homeOf(s)], { encoding: "utf8" });
      expect(m.stdout.trim()).toMatch(/^\/dev\/loop\d+\s+ext4$/);
    }
    const fill = await execute(
      notebooks[a].session,
      `import { writeFileSync, statfsSync, openSync, writeSync, closeSync } from "node:fs";
import { homedir } from "node:os";
const st = statfsSync(homedir());
let err = "";
let written = 0;
// a student's loop that writes until it fails, as a runaway cell would
const fd = openSync(homedir() + "/fill.bin", "w");
try { for (const chunk = Buffer.alloc(1 << 20, 1); written < ${2 * HOME}; written += writeSync(fd, chunk)); } catch (e) { err = e.code; }
closeSync(fd);
console.log(JSON.stringify({ size: st.blocks * st.bsize, err, written }));`,
    );
    expect(fill.error).toBeUndefined();
    const r = JSON.parse((fill.outputs.find((m) => m.header.msg_type === "stream")!.content as { text: string }).text);
    expect(["ENOSPC", "EDQUOT"]).toContain(r.err);
    expect(r.size).toBeLessThanOrEqual(HOME);
    expect(r.written).toBeLessThanOrEqual(HOME);
    expect(r.written).toBeGreaterThan(HOME / 2);
    // B, at the same moment, still saves a notebook-sized file in their own home
    const other = await execute(
      notebooks[b].session,
      `import { writeFileSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
writeFileSync(homedir() + "/b.bin", Buffer.alloc(8 << 20, 2));
readFileSync(homedir() + "/b.bin").length`,
    );
    expect(other.error).toBeUndefined();
    expect((other.outputs.find((m) => m.header.msg_type === "execute_result")!.content as any).data["text/plain"]).toBe(String(8 << 20));
    // and A's server still answers (its own files API on the full home), and works again once A deletes
    expect((await userApi(cls.base, tokens[a], a, `/contents/${NB}`)).status).toBe(200);
    const freed = await execute(
      notebooks[a].session,
      `import { rmSync, writeFileSync } from "node:fs";\nimport { homedir } from "node:os";\nrmSync(homedir() + "/fill.bin");\nwriteFileSync(homedir() + "/after.txt", "ok")`,
    );
    expect(freed.error).toBeUndefined();
  }, 120_000);

  test("the hub and proxy are the OOM killer's last choice, students' servers its first; students together leave memory for the hub", async () => {
    // -900 where the hub may lower its score (CAP_SYS_RESOURCE); in a container without it, 0 (and the
    // hub's log says so): either way below every student's
    const hubPid = Number(readFileSync(join(cls.state, "jupyterhub.pid"), "utf8"));
    const hubScore = Number(readFileSync(`/proc/${hubPid}/oom_score_adj`, "utf8"));
    expect([-900, 0]).toContain(hubScore);
    if (hubScore === 0) expect(cls.log()).toContain("cannot lower the hub's OOM score");
    const proxy = spawnSync("pgrep", ["-P", String(hubPid), "-f", "configurable-http-proxy"], { encoding: "utf8" })
      .stdout.trim()
      .split(/\s+/)[0];
    expect(Number(readFileSync(`/proc/${proxy}/oom_score_adj`, "utf8"))).toBe(hubScore);
    for (const s of [a, b]) {
      const pids = processesOf(uidOf(s).uid);
      expect(pids.length).toBeGreaterThan(0);
      for (const pid of pids) expect(Number(readFileSync(`/proc/${pid}/oom_score_adj`, "utf8"))).toBe(500);
    }
    const cg = /:memory:(.*)$/m.exec(readFileSync(`/proc/${processesOf(uidOf(a).uid)[0]}/cgroup`, "utf8"))![1];
    const parent = cg.replace(/\/[^/]+$/, "");
    const total = Number(/^MemTotal:\s+(\d+)/m.exec(readFileSync("/proc/meminfo", "utf8"))![1]) * 1024;
    expect(Number(readFileSync(`/sys/fs/cgroup/memory${parent}/memory.limit_in_bytes`, "utf8"))).toBe(Math.floor((total - 2 ** 30) / 4096) * 4096);
  });

  test("a student past the class's size is told the class is full", async () => {
    tokens[c] = await login(cls.base, c, cls.password);
    const api = await hubApi(cls.base, tokens[c], `/users/${c}/server`, { method: "POST" });
    expect(api.status).toBe(429);
    // what the student's browser gets after logging in
    const cookie = await loginCookies(cls.base, c, cls.password);
    const page = await fetch(`${cls.base}/hub/spawn`, { headers: { cookie }, redirect: "manual" });
    expect(page.status).toBe(429);
    const html = await page.text();
    expect(html).toContain("The class is full");
    expect(html).toContain("All 2 places");
    expect(processesOf(uidOf(c).uid)).toEqual([]);
  });

  test("one student's out-of-memory stays theirs: A's kernel reports it, B's kernel carries on", async () => {
    const floats = Math.ceil((DEVICE_MEMORY * 1.5) / 4);
    const oom = await execute(notebooks[a].session, `const big = torch.zeros([${floats}]);`);
    expect(oom.status).toBe("error");
    expect(oom.error).toMatch(/out of memory/);
    const after = await execute(notebooks[a].session, "1 + 1");
    expect(after.status).toBe("ok");
    const other = await execute(notebooks[b].session, "torch.ones([4]).sum().item()");
    expect(other.error).toBeUndefined();
  });

  test("a restart keeps the student's edits and brings back a deleted notebook fresh", async () => {
    const t = tokens[a];
    await notebooks[a].close();
    delete notebooks[a];
    const nb = (await (await userApi(cls.base, t, a, `/contents/${NB}?content=1`)).json()) as { content: { cells: { source: string }[] } };
    nb.content.cells[0].source = "# my own notes";
    const put = await userApi(cls.base, t, a, `/contents/${NB}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: "notebook", format: "json", content: nb.content }),
    });
    expect(put.status).toBe(200);
    expect((await userApi(cls.base, t, a, "/contents/00_overview.ipynb", { method: "DELETE" })).status).toBe(204);
    await stopServer(cls.base, t, a);
    await startServer(cls.base, t, a);
    const again = (await (await userApi(cls.base, t, a, `/contents/${NB}?content=1`)).json()) as { content: { cells: { source: string }[] } };
    expect(again.content.cells[0].source).toBe("# my own notes");
    expect((await userApi(cls.base, t, a, "/contents/00_overview.ipynb")).status).toBe(200);
  }, 300_000);
});

/** Listening TCP sockets held by a process (its fds matched against /proc/PID/net/tcp{,6}). */
function tcpListeners(pid: number): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  let n = 0;
  for (const table of ["tcp", "tcp6"]) {
    for (const line of readFileSync(`/proc/${pid}/net/${table}`, "utf8").split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] === "0A" && inodes.has(cols[9])) n++;
    }
  }
  return n;
}

describe("stopping a class", () => {
  test("Ctrl-C in the terminal of `gradlab classroom` stops the hub and every student's server once, cleanly", async () => {
    const one = await startClassroom({ students: 1, prefix: "glstop", ownGroup: true, removeAccounts: true });
    try {
      const [s] = one.students;
      await startServer(one.base, await login(one.base, s, one.password), s);
      const { uid } = uidOf(s);
      expect(processesOf(uid).length).toBeGreaterThan(0);
      // a terminal's Ctrl-C: SIGINT to the whole foreground process group
      process.kill(-one.proc.pid!, "SIGINT");
      const code = await new Promise<number | null>((r) => one.proc.once("exit", (c) => r(c)));
      expect(code).toBe(0);
      const log = one.log();
      expect(log).toContain("stopping the hub and every student's server");
      for (const bad of ["Traceback", "Failed to stop user", "Task was destroyed", "KeyboardInterrupt"]) expect(log).not.toContain(bad);
      // the student's server went with the hub (bounded wait: its kernel notices within a second or two)
      const deadline = Date.now() + 20_000;
      while (processesOf(uid).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      expect(processesOf(uid)).toEqual([]);
    } finally {
      await one.stop();
    }
  }, 240_000);
});

describe("the image's server configuration (deploy/jupyter_server_config.json)", () => {
  test("JupyterLab reads it: kernels on the ipc transport, the GradLab kernel only and as default, idle kernels culled", () => {
    const dir = mkdtempSync(join(tmpdir(), "gradlab-image-config-"));
    try {
      copyFileSync(join(REPO, "deploy", "jupyter_server_config.json"), join(dir, "jupyter_server_config.json"));
      const script = [
        "import json",
        "from jupyter_server.serverapp import ServerApp",
        "a = ServerApp()",
        "a.initialize(argv=['--port=0', '--no-browser'])",
        "km = a.kernel_manager",
        "print(json.dumps({'transport': a.config.KernelManager.transport, 'allowed': sorted(a.kernel_spec_manager.allowed_kernelspecs),",
        "  'default': km.default_kernel_name, 'cull': km.cull_idle_timeout, 'terminals': a.terminals_enabled}))",
      ].join("\n");
      const r = spawnSync("/opt/gradlab-classroom/venv/bin/python", ["-c", script], {
        cwd: dir,
        encoding: "utf8",
        env: { ...process.env, JUPYTER_CONFIG_PATH: dir, JUPYTER_RUNTIME_DIR: join(dir, "runtime"), JUPYTER_DATA_DIR: join(dir, "data") },
        timeout: 120_000,
      });
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout.trim().split("\n").pop()!)).toEqual({
        transport: "ipc",
        allowed: ["gradlab"],
        default: "gradlab",
        cull: 1800,
        terminals: false,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
