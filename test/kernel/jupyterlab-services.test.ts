// @jupyterlab/services (what JupyterLab itself uses) talking to the kernel through Debian's
// jupyter-server: start, execute with iopub, interrupt, restart, shutdown.
import { afterAll, beforeAll, expect, test } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { randomBytes } from "node:crypto";
import { KernelManager, ServerConnection, type Kernel, type KernelMessage } from "@jupyterlab/services";
import { createRequire } from "node:module";
import { installedKernel, PYTHON, type Env } from "./helpers.ts";

// ws ships no types; @jupyterlab/services needs a WebSocket implementation in Node 20
const { WebSocket } = createRequire(import.meta.url)("ws");

let e: Env;
let server: ChildProcess;
let settings: ServerConnection.ISettings;
let manager: KernelManager;
let serverLog = "";

const freePort = () =>
  new Promise<number>((res) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => res(p));
    });
  });

beforeAll(async () => {
  e = await installedKernel({ GRADLAB_KERNEL_QUIET: "1" });
  const port = await freePort();
  const token = randomBytes(16).toString("hex");
  server = spawn(PYTHON, ["-m", "jupyter_server", "--no-browser", `--port=${port}`, "--ServerApp.port_retries=0",
    `--ServerApp.token=${token}`, `--ServerApp.root_dir=${e.dir}`, "--ServerApp.ip=127.0.0.1", ...(process.getuid?.() === 0 ? ["--allow-root"] : [])], { env: e.env, stdio: ["ignore", "pipe", "pipe"] });
  server.stdout!.on("data", (d) => (serverLog += d));
  server.stderr!.on("data", (d) => (serverLog += d));
  const base = `http://127.0.0.1:${port}/`;
  for (let i = 0; ; i++) {
    try {
      const r = await fetch(`${base}api/status?token=${token}`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (i > 300 || server.exitCode !== null) throw new Error(`jupyter-server did not start:\n${serverLog}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  settings = ServerConnection.makeSettings({ baseUrl: base, wsUrl: `ws://127.0.0.1:${port}/`, token, WebSocket, appendToken: true });
  manager = new KernelManager({ serverSettings: settings });
  await manager.ready;
}, 60_000);

afterAll(async () => {
  manager?.dispose();
  server?.kill("SIGTERM");
  await new Promise((r) => (server?.exitCode !== null ? r(null) : server.once("exit", r)));
  e?.cleanup();
});

async function execute(kernel: Kernel.IKernelConnection, code: string) {
  const msgs: KernelMessage.IIOPubMessage[] = [];
  const future = kernel.requestExecute({ code, stop_on_error: false });
  future.onIOPub = (m) => void msgs.push(m);
  const reply = await future.done.catch((r) => r);
  return { reply: reply.content as any, msgs };
}

const resultOf = (msgs: KernelMessage.IIOPubMessage[]) =>
  (msgs.find((m) => m.header.msg_type === "execute_result")?.content as any)?.data?.["text/plain"];

test("start, execute, interrupt, restart and shut down through jupyter-server", async () => {
  const kernel = await manager.startNew({ name: "gradlab" });
  const info = await kernel.info;
  expect(info.language_info.name).toBe("typescript");

  const r1 = await execute(kernel, 'const z: number = 20; console.log("from lab"); z + 1');
  expect(r1.reply.status).toBe("ok");
  expect(r1.msgs.filter((m) => m.header.msg_type === "stream").map((m) => (m.content as any).text).join("")).toBe("from lab\n");
  expect(resultOf(r1.msgs)).toBe("21");
  expect(r1.msgs.at(-1)?.header.msg_type).toBe("status");

  const busy = execute(kernel, "while (true) {}");
  await new Promise((r) => setTimeout(r, 500));
  const t0 = Date.now();
  await kernel.interrupt();
  const r2 = await busy;
  expect(Date.now() - t0).toBeLessThan(1000);
  expect(r2.reply.status).toBe("error");
  expect(r2.reply.ename).toBe("KeyboardInterrupt");
  expect(resultOf((await execute(kernel, "z")).msgs)).toBe("20");

  await kernel.restart();
  const r3 = await execute(kernel, "typeof z");
  expect(resultOf(r3.msgs)).toBe("'undefined'");

  await kernel.shutdown();
  expect(kernel.isDisposed || kernel.status === "dead").toBe(true);
}, 90_000);

test("output and display updates reach JupyterLab's client while a busy loop runs, in order", async () => {
  const kernel = await manager.startNew({ name: "gradlab" });
  try {
    const got: { type: string; t: number; content: any }[] = [];
    const future = kernel.requestExecute({
      code: [
        "const h = display({ step: -1 }, { display_id: 'lab-live' }); let last = 0;",
        "for (let i = 0; i < 8; ) { const now = Date.now(); if (now - last >= 100) { console.log(`tick ${i} ${now}`); h.update({ step: i, now }); last = now; i++ } }",
        "'done'",
      ].join("\n"),
    });
    future.onIOPub = (m) => void got.push({ type: m.header.msg_type, t: Date.now(), content: m.content });
    const reply = (await future.done) as any;
    expect(reply.content.status).toBe("ok");
    const ticks = got.flatMap((m) => (m.type === "stream" ? m.content.text.trim().split("\n").map((l: string) => ({ l, t: m.t })) : []));
    expect(ticks.map((x) => x.l.split(" ")[1])).toEqual(["0", "1", "2", "3", "4", "5", "6", "7"]);
    for (const x of ticks) expect(x.t - Number(x.l.split(" ")[2]), x.l).toBeLessThan(250);
    const updates = got.filter((m) => m.type === "update_display_data");
    expect(updates.map((u) => /step: (\d+)/.exec(u.content.data["text/plain"])![1])).toEqual(["0", "1", "2", "3", "4", "5", "6", "7"]);
    for (const u of updates) expect(u.t - Number(/now: (\d+)/.exec(u.content.data["text/plain"])![1])).toBeLessThan(250);
    const result = got.findIndex((m) => m.type === "execute_result");
    expect(result).toBeGreaterThan(got.findLastIndex((m) => m.type === "stream" || m.type === "update_display_data"));
    expect(got.at(-1)?.type).toBe("status");
    expect(got[result].t - ticks[0].t).toBeGreaterThan(500); // the first line came while the loop still ran
  } finally {
    await kernel.shutdown();
  }
}, 90_000);
