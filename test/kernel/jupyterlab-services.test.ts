// @jupyterlab/services (what JupyterLab itself uses) talking to the kernel through Debian's
// jupyter-server: start, execute with iopub, interrupt, restart, shutdown.
import { afterAll, beforeAll, expect, test } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { KernelManager, ServerConnection, type Kernel, type KernelMessage } from "@jupyterlab/services";
import { createRequire } from "node:module";
import { installedKernel, PYTHON, type Env } from "./helpers.ts";
import { freePort } from "../../kernel/sockets/connection.ts";

// ws ships no types; @jupyterlab/services needs a WebSocket implementation in Node 20
const { WebSocket } = createRequire(import.meta.url)("ws");

let e: Env;
let server: ChildProcess;
let settings: ServerConnection.ISettings;
let manager: KernelManager;
let serverLog = "";

beforeAll(async () => {
  e = await installedKernel({ GRADLAB_KERNEL_QUIET: "1" });
  const port = await freePort();
  const token = randomBytes(16).toString("hex");
  server = spawn(
    PYTHON,
    [
      "-m",
      "jupyter_server",
      "--no-browser",
      `--port=${port}`,
      "--ServerApp.port_retries=0",
      `--ServerApp.token=${token}`,
      `--ServerApp.root_dir=${e.dir}`,
      "--ServerApp.ip=127.0.0.1",
      ...(process.getuid?.() === 0 ? ["--allow-root"] : []),
    ],
    { env: e.env, stdio: ["ignore", "pipe", "pipe"] },
  );
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

/** Runs code; `onMessage` sees each iopub message of the request as it arrives. */
async function execute(kernel: Kernel.IKernelConnection, code: string, onMessage: (m: KernelMessage.IIOPubMessage) => void = () => {}) {
  const msgs: KernelMessage.IIOPubMessage[] = [];
  const future = kernel.requestExecute({ code, stop_on_error: false });
  future.onIOPub = (m) => {
    msgs.push(m);
    onMessage(m);
  };
  const reply = await future.done.catch((r) => r);
  return { reply: reply.content as any, msgs };
}

const resultOf = (msgs: KernelMessage.IIOPubMessage[]) => (msgs.find((m) => m.header.msg_type === "execute_result")?.content as any)?.data?.["text/plain"];
const streamText = (m: KernelMessage.IIOPubMessage) => (m.header.msg_type === "stream" ? String((m.content as any).text) : "");
/** What a request published, for a failure message. */
const listing = (msgs: KernelMessage.IIOPubMessage[]) => msgs.map((m) => `${m.header.msg_type} ${JSON.stringify(m.content).slice(0, 200)}`).join("\n");

test("start, execute, interrupt, restart and shut down through jupyter-server", async () => {
  const kernel = await manager.startNew({ name: "gradlab" });
  const info = await kernel.info;
  expect(info.language_info.name).toBe("typescript");

  const r1 = await execute(kernel, 'const z: number = 20; console.log("from lab"); z + 1');
  expect(r1.reply.status).toBe("ok");
  expect(
    r1.msgs
      .filter((m) => m.header.msg_type === "stream")
      .map((m) => (m.content as any).text)
      .join(""),
  ).toBe("from lab\n");
  expect(resultOf(r1.msgs)).toBe("21");
  expect(r1.msgs.at(-1)?.header.msg_type).toBe("status");

  // interrupt once the loop is seen running (an interrupt that reaches the kernel before the cell
  // starts is for no cell, and is dropped)
  let running!: () => void;
  const looping = new Promise<void>((r) => (running = r));
  const busy = execute(kernel, 'console.log("looping"); while (true) {}', (m) => streamText(m).includes("looping") && running());
  await looping;
  await kernel.interrupt();
  const r2 = await busy;
  expect(r2.reply.status, listing(r2.msgs)).toBe("error");
  expect(r2.reply.ename).toBe("KeyboardInterrupt");
  const r3 = await execute(kernel, "z");
  expect(r3.reply.status, listing(r3.msgs)).toBe("ok");
  expect(resultOf(r3.msgs), listing(r3.msgs)).toBe("20");

  await kernel.restart();
  const r4 = await execute(kernel, "typeof z");
  expect(resultOf(r4.msgs)).toBe("'undefined'");

  await kernel.shutdown();
  expect(kernel.isDisposed || kernel.status === "dead").toBe(true);
}, 90_000);

test("output and display updates reach JupyterLab's client while a busy loop runs, in order", async () => {
  const kernel = await manager.startNew({ name: "gradlab" });
  try {
    // Each step prints, updates the display, then spins (never yielding) until this test, having
    // received both, creates the step's file: the cell can finish only if its output left the
    // kernel while it was still running synchronous code.
    const go = join(e.dir, `go-${randomBytes(4).toString("hex")}`);
    const got: { type: string; content: any }[] = [];
    const seen = new Map<number, number>();
    const future = kernel.requestExecute({
      code: [
        'import { existsSync } from "node:fs";',
        "const h = display({ step: -1 }, { display_id: 'lab-live' });",
        "for (let i = 0; i < 8; i++) {",
        "  console.log(`tick ${i}`); h.update({ step: i });",
        `  const until = Date.now() + 60_000; while (!existsSync(${JSON.stringify(go)} + '-' + i)) if (Date.now() > until) throw new Error('step ' + i + ' output never reached the client');`,
        "}",
        "'done'",
      ].join("\n"),
    });
    future.onIOPub = (m) => {
      got.push({ type: m.header.msg_type, content: m.content });
      const step =
        m.header.msg_type === "stream"
          ? /tick (\d+)/.exec(streamText(m))?.[1]
          : m.header.msg_type === "update_display_data"
            ? /step: (\d+)/.exec((m.content as any).data["text/plain"])?.[1]
            : undefined;
      if (step === undefined) return;
      // a stream message may hold several ticks only if the test fell behind; count each
      for (const s of m.header.msg_type === "stream" ? [...streamText(m).matchAll(/tick (\d+)/g)].map((x) => Number(x[1])) : [Number(step)]) {
        seen.set(s, (seen.get(s) ?? 0) + 1);
        if (seen.get(s) === 2) writeFileSync(`${go}-${s}`, "");
      }
    };
    const reply = (await future.done.catch((r) => r)) as any;
    expect(reply.content.status, got.map((m) => `${m.type} ${JSON.stringify(m.content).slice(0, 300)}`).join("\n")).toBe("ok");
    const ticks = got.flatMap((m) => (m.type === "stream" ? [...String(m.content.text).matchAll(/tick (\d+)/g)].map((x) => x[1]) : []));
    expect(ticks).toEqual(["0", "1", "2", "3", "4", "5", "6", "7"]);
    const updates = got.filter((m) => m.type === "update_display_data");
    expect(updates.map((u) => /step: (\d+)/.exec(u.content.data["text/plain"])![1])).toEqual(["0", "1", "2", "3", "4", "5", "6", "7"]);
    const result = got.findIndex((m) => m.type === "execute_result");
    expect(result).toBeGreaterThan(got.findLastIndex((m) => m.type === "stream" || m.type === "update_display_data"));
    expect(got.at(-1)?.type).toBe("status");
  } finally {
    await kernel.shutdown();
  }
}, 90_000);
