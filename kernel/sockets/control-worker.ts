// The socket thread: heartbeat, control (interrupt, shutdown) and stdin live here so they keep
// answering while the main thread is busy in a cell, even in `while (true) {}`.
import { parentPort, workerData } from "node:worker_threads";
import * as zmq from "zeromq";
import { makeHeader, parse, serialize, Signer, type Message } from "../wire/message.ts";
import { endpoint, type ConnectionInfo } from "./connection.ts";
import { SendQueue } from "./queue.ts";
import { fromSab, type FromWorker, type ToWorker } from "./shared.ts";
import { log } from "../log.ts";

const { conn, session, sab, kernelInfo } = workerData as {
  conn: ConnectionInfo;
  session: string;
  sab: SharedArrayBuffer;
  kernelInfo: object;
};
const shared = fromSab(sab);
const signer = new Signer(conn.key, conn.signature_scheme);
const post = (m: FromWorker) => parentPort!.postMessage(m);

const hb = new zmq.Reply({ linger: 0 });
const control = new zmq.Router({ linger: 0, sendHighWaterMark: 0 });
const stdin = new zmq.Router({ linger: 0, sendHighWaterMark: 0 });
const controlOut = new SendQueue(control);
const stdinOut = new SendQueue(stdin);

function reply(q: SendQueue, req: Message, type: string, content: object) {
  q.send(serialize(signer, makeHeader(type, session), req.header, {}, content, req.identities));
}

function interrupt() {
  Atomics.store(shared.irq, 0, 1);
  // wake a cell blocked in prompt()
  if (Atomics.load(shared.stdinCtl, 0) === 0) {
    Atomics.store(shared.stdinCtl, 0, 2);
    Atomics.notify(shared.stdinCtl, 0);
  }
  post({ type: "interrupt" });
  // SIGINT breaks synchronous code that runs under vm's breakOnSigint (code without loops).
  process.kill(process.pid, "SIGINT");
}

async function heartbeat() {
  for await (const frames of hb) await hb.send(frames);
}

async function controlLoop() {
  for await (const frames of control) {
    const r = parse(frames, signer);
    if (!r.ok) {
      log(`control: dropped message: ${r.reason}`);
      continue;
    }
    const msg = r.msg;
    const t = msg.header.msg_type;
    post({ type: "control-status", parent: msg.header, state: "busy" });
    if (t === "interrupt_request") {
      interrupt();
      reply(controlOut, msg, "interrupt_reply", { status: "ok" });
    } else if (t === "shutdown_request") {
      const restart = !!msg.content?.restart;
      reply(controlOut, msg, "shutdown_reply", { status: "ok", restart });
      await controlOut.flushed();
      Atomics.store(shared.irq, 0, 1);
      post({ type: "shutdown", restart });
      // If the main thread is stuck in a cell, do not wait for it forever.
      setTimeout(() => process.kill(process.pid, "SIGKILL"), 2000).unref();
      continue;
    } else if (t === "kernel_info_request") {
      reply(controlOut, msg, "kernel_info_reply", kernelInfo);
    } else {
      // anything else (debug_request, unknown types) is handled by the main thread
      post({ type: "control", frames: frames.map((f) => new Uint8Array(f)) });
      continue;
    }
    post({ type: "control-status", parent: msg.header, state: "idle" });
  }
}

async function stdinLoop() {
  for await (const frames of stdin) {
    const r = parse(frames, signer);
    if (!r.ok) {
      log(`stdin: dropped message: ${r.reason}`);
      continue;
    }
    if (r.msg.header.msg_type !== "input_reply") {
      log(`stdin: unexpected ${r.msg.header.msg_type}`);
      continue;
    }
    if (Atomics.load(shared.stdinCtl, 0) !== 0) continue; // nobody is waiting (interrupted)
    const bytes = Buffer.from(String(r.msg.content?.value ?? ""), "utf8");
    const n = Math.min(bytes.length, shared.stdinData.length);
    shared.stdinData.set(bytes.subarray(0, n));
    Atomics.store(shared.stdinCtl, 1, n);
    Atomics.store(shared.stdinCtl, 0, 1);
    Atomics.notify(shared.stdinCtl, 0);
  }
}

parentPort!.on("message", (m: ToWorker) => {
  if (m.type === "input_request") {
    stdinOut.send(
      serialize(signer, makeHeader("input_request", session), m.parent, {}, { prompt: m.prompt, password: m.password },
        m.identities.map((b) => Buffer.from(b))),
    );
  } else if (m.type === "control-send") {
    controlOut.send(m.frames.map((b) => Buffer.from(b)));
  } else if (m.type === "close") {
    void controlOut.flushed().then(() => {
      hb.close();
      control.close();
      stdin.close();
      post({ type: "closed" });
      parentPort!.close();
    });
  }
});

// If the client that started us (jupyter_client and gradlab run set JPY_PARENT_PID) dies without
// shutting us down, go too.
const parentPid = Number(process.env.JPY_PARENT_PID || 0);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
};
if (parentPid > 1) setInterval(() => {
  if (alive(parentPid)) return;
  log(`parent process ${parentPid} is gone; shutting down`);
  Atomics.store(shared.irq, 0, 1);
  post({ type: "shutdown", restart: false });
  setTimeout(() => process.kill(process.pid, "SIGKILL"), 2000).unref();
}, 1000).unref();

await Promise.all([
  hb.bind(endpoint(conn, conn.hb_port)),
  control.bind(endpoint(conn, conn.control_port)),
  stdin.bind(endpoint(conn, conn.stdin_port)),
]);
post({ type: "ready" });
for (const loop of [heartbeat, controlLoop, stdinLoop]) {
  loop().catch((e) => {
    if (!/closed|terminated/i.test(String(e?.message))) log(`socket thread: ${e?.stack ?? e}`);
  });
}
