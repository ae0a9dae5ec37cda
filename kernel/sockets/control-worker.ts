// The socket thread: heartbeat, control (interrupt, shutdown), stdin and iopub live here so they keep
// working while the main thread is busy in a cell, even in `while (true) {}`. The main thread posts
// what a cell prints and displays; this thread coalesces the text into stream messages and publishes
// everything in the order it was posted, so output streams while synchronous code runs.
import { parentPort, workerData } from "node:worker_threads";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import * as zmq from "zeromq";
import { makeHeader, parse, serialize, serializeJson, Signer, type Message } from "../wire/message.ts";
import { endpoint, restrictChannel, type ConnectionInfo } from "./connection.ts";
import { SendQueue, toWire, whenReleased } from "./queue.ts";
import { StreamCoalescer } from "./streams.ts";
import { RingReader, STDERR } from "./ring.ts";
import { answerFor, controlTable } from "./control.ts";
import { fromSab, hash32, unpackFrames, type FromWorker, type ToWorker } from "./shared.ts";
import { log } from "../log.ts";
import type { Replies, ReplyType } from "../wire/protocol.ts";
import type { KernelInfo } from "../info.ts";

const { conn, session, sab, ring, kernelInfo } = workerData as {
  conn: ConnectionInfo;
  session: string;
  sab: SharedArrayBuffer;
  ring: SharedArrayBuffer;
  kernelInfo: KernelInfo;
};
const shared = fromSab(sab);
const signer = new Signer(conn.key, conn.signature_scheme);
const post = (m: FromWorker) => parentPort!.postMessage(m);

const hb = new zmq.Reply({ linger: 0 });
const control = new zmq.Router({ linger: 0, sendHighWaterMark: 0, receiveHighWaterMark: 0 });
const stdin = new zmq.Router({ linger: 0, sendHighWaterMark: 0 });
const IOPUB_LINGER_MS = 1000;
const iopub = new zmq.XPublisher({ linger: IOPUB_LINGER_MS, sendHighWaterMark: 0 });
const controlOut = new SendQueue(control);
const stdinOut = new SendQueue(stdin);
// Until a client's SUB socket has subscribed, a PUB socket drops what it sends. A client can believe
// iopub is connected when it is not (after a restart, a message from the old kernel still in its queue
// satisfies jupyter_client's wait_for_ready), and the first cell's output was lost (1 restart in 20 in
// the stress tier). So iopub is an XPUB that holds its messages until the first subscription arrives,
// or 5 s have passed (a client that never subscribes).
let firstSubscriber!: () => void;
const subscribed = new Promise<void>((r) => (firstSubscriber = r));
setTimeout(() => firstSubscriber(), 5000).unref();
const iopubOut = new SendQueue(iopub, subscribed);

// ---- iopub: streams coalesced here, so text leaves within 8 ms whatever the main thread does ----
function topic(type: string): Buffer {
  return Buffer.from(`kernel.${session}.${type}`);
}

const streams = new StreamCoalescer(({ parent, name, text }) => {
  const header = JSON.stringify(makeHeader("stream", session));
  iopubOut.send(serializeJson(signer, [header, parent, "{}", JSON.stringify({ name, text })], [topic("stream")]));
});
// Text arrives in the stream ring; the main thread posts "streams" when it writes to a drained ring.
// The drain waits the coalescer's interval after that, so a burst of writes becomes few messages.
const streamRing = new RingReader(ring);
let drainTimer: ReturnType<typeof setTimeout> | null = null;
const toCoalescer = (kind: number, text: string, parent: string) => streams.write(kind === STDERR ? "stderr" : "stdout", text, parent);
/**
 * Messages the main thread posted after marking the stream ring (ring.ts), in order: each is sent when
 * the reader reaches its mark, so it leaves after exactly the text written before it.
 */
const marked: Array<() => void> = [];
function atMark(): boolean {
  const send = marked.shift();
  if (!send) return false;
  streams.flush();
  send();
  return true;
}
/** Publishes the ring's text (up to a mark whose message has not arrived) and what the coalescer holds. */
function flushStreams(): void {
  const blocked = streamRing.read(toCoalescer, atMark);
  streams.flush();
  // text written while this drained gets its own drain; past a mark, the mark's message drains
  if (!blocked && streamRing.pending) drainSoon();
}
/** Sends a message from the main thread in its place among the texts (unmarked: the ring stayed full). */
function inOrder(m: { marked: boolean }, send: () => void): void {
  if (m.marked) marked.push(send);
  flushStreams();
  if (!m.marked) send();
}
function drainSoon(): void {
  drainTimer ??= setTimeout(() => {
    drainTimer = null;
    flushStreams();
  }, streams.flushMs);
}

function publish(type: string, content: object, parent: object): void {
  flushStreams();
  iopubOut.send(serialize(signer, makeHeader(type, session), parent, {}, content, [topic(type)]));
}

function reply<T extends ReplyType>(q: SendQueue, req: Message, type: T, content: Replies[T]) {
  q.send(serialize(signer, makeHeader(type, session), req.header, {}, content, req.identities));
}

/** The helper stamps a SIGINT when it gets to run, which under load can be milliseconds after the
 *  signal was sent: a SIGINT stamped this soon after a cell started is taken as meant for the cell
 *  before (a person does not interrupt a cell within its first quarter second; a script racing cell
 *  ends would otherwise hit the next one). interrupt_request carries the client's own date and needs
 *  no such allowance. */
const SIGNAL_GRACE_US = Number(process.env.GRADLAB_SIGINT_GRACE_MS ?? 250) * 1000;

/** Interrupts the cell running now, if any. An interrupt that arrives between cells is dropped, and so
 *  is one requested (`requestedUs`: the interrupt_request's date) before the running cell was
 *  requested, or a SIGINT received (`signalUs`) before it started: those were for an earlier cell. */
function interrupt(when: { requestedUs?: number; session?: string; signalUs?: number } = {}) {
  const cell = Atomics.load(shared.cell, 0);
  if (cell === 0) return;
  const [cellRequested, cellStarted] = shared.cellTimes;
  let stale = (when.signalUs ?? NaN) < cellStarted + SIGNAL_GRACE_US;
  if (when.requestedUs !== undefined) {
    if (hash32(when.session) === Atomics.load(shared.cellSession, 0)) {
      // the client that sent the cell: both dates are on its clock
      stale = when.requestedUs < cellRequested;
    } else if (Math.abs(when.requestedUs - Date.now() * 1000) < 2e6) {
      // another client (jupyter-server interrupting for a browser) whose clock agrees with ours
      stale = when.requestedUs < cellStarted;
    }
  }
  if (stale) {
    log(`dropped an interrupt meant for an earlier cell`);
    return;
  }
  Atomics.store(shared.irq, 0, cell);
  // wake a cell blocked in prompt()
  if (Atomics.compareExchange(shared.stdinCtl, 0, 0, 2) === 0) Atomics.notify(shared.stdinCtl, 0);
  if (process.env.GRADLAB_DEBUG_IRQ)
    log(
      `interrupt cell ${cell} signal ${when.signalUs} req ${when.requestedUs} cellStarted ${cellStarted} cellRequested ${cellRequested} now ${Date.now() * 1000}`,
    );
  post({ type: "interrupt", cell });
}

async function heartbeat() {
  for await (const frames of hb) await hb.send(toWire(frames));
}

/** Hands each verified message of a socket to its handler (a forged or malformed one is dropped and
 *  logged); a handler that throws costs that message, not the loop. */
async function serve(name: string, sock: AsyncIterable<Buffer[]>, handle: (msg: Message, frames: Buffer[]) => void) {
  for await (const frames of sock) {
    try {
      const r = parse(frames, signer);
      if (r.ok) handle(r.msg, frames);
      else log(`${name}: dropped message: ${r.reason}`);
    } catch (e) {
      log(`${name}: failed to handle a message: ${(e as Error)?.message ?? e}`);
    }
  }
}
const controlLoop = () => serve("control", control, onControl);

const ANSWERED_WHILE_BUSY = controlTable({
  reply: (req, type, content) => reply(controlOut, req, type, content),
  interrupt,
  flushed: () => controlOut.flushed(),
  shutdown(restart) {
    post({ type: "shutdown", restart });
    // If the main thread is stuck in a cell, do not wait for it forever.
    setTimeout(() => process.kill(process.pid, "SIGKILL"), 2000).unref();
  },
  kernelInfo,
});

function onControl(msg: Message, frames: Buffer[]) {
  const type = msg.header.msg_type;
  const answer = answerFor(ANSWERED_WHILE_BUSY, type);
  if (!answer) {
    post({ type: "control", frames: frames.map((f) => new Uint8Array(f)) });
    return;
  }
  publish("status", { execution_state: "busy" }, msg.header);
  if (answer(msg)) publish("status", { execution_state: "idle" }, msg.header);
}

const stdinLoop = () => serve("stdin", stdin, onStdin);

function onStdin(msg: Message) {
  if (msg.header.msg_type !== "input_reply") {
    log(`stdin: unexpected ${msg.header.msg_type}`);
    return;
  }
  if (Atomics.load(shared.stdinCtl, 0) !== 0) return; // nobody is waiting (interrupted)
  const bytes = Buffer.from(String(msg.content?.value ?? ""), "utf8");
  const n = Math.min(bytes.length, shared.stdinData.length);
  shared.stdinData.set(bytes.subarray(0, n));
  Atomics.store(shared.stdinCtl, 1, n);
  if (Atomics.compareExchange(shared.stdinCtl, 0, 0, 1) === 0) Atomics.notify(shared.stdinCtl, 0);
}

// Messages that arrive while the sockets are still binding wait (zeromq refuses sends meanwhile).
let early: ToWorker[] | null = [];
parentPort!.on("message", (m: ToWorker) => {
  if (early) early.push(m);
  else fromMain(m);
});

function fromMain(m: ToWorker): void {
  try {
    if (m.type === "streams") drainSoon();
    else if (m.type === "iopub") {
      inOrder(m, () => iopubOut.send(unpackFrames(m.frames)));
    } else if (m.type === "input_request") {
      // what the cell printed before asking comes first, as in ipykernel
      inOrder(m, () =>
        stdinOut.send(
          serialize(
            signer,
            makeHeader("input_request", session),
            m.parent,
            {},
            { prompt: m.prompt, password: m.password },
            m.identities.map((b) => Buffer.from(b)),
          ),
        ),
      );
    } else if (m.type === "control-send") {
      controlOut.send(unpackFrames(m.frames));
    } else if (m.type === "close") {
      inOrder(m, () => {
        if (drainTimer) clearTimeout(drainTimer);
        // the bound on flushing must not keep this thread alive once it is done (unref)
        void Promise.race([Promise.all([controlOut.flushed(), iopubOut.flushed()]), new Promise((r) => setTimeout(r, 500).unref())]).then(async () => {
          for (const s of [hb, control, stdin, iopub]) s.close();
          post({ type: "closed" });
          // this thread's zeromq state must outlive every frame it sent by reference (see queue.ts)
          if (!(await whenReleased(IOPUB_LINGER_MS + 1000))) log("socket thread: zeromq still held a binary frame when the thread ended");
          parentPort!.close();
        });
      });
    }
  } catch (e) {
    log(`socket thread: failed to handle ${m?.type}: ${(e as Error)?.message ?? e}`);
  }
}

// SIGINT for a cell in synchronous code: Node runs the main thread's SIGINT listener only when that
// thread is free, and a worker cannot listen for signals. Clients signal the kernel's process group
// (jupyter_client's killpg, a terminal's Ctrl-C), so a tiny shell in our group traps SIGINT and tells
// this thread, which sets the interrupt flag the cell polls. It exits when the kernel is gone.
function startSignalHelper(): void {
  try {
    // each SIGINT prints the time it arrived (µs), so one that lands before a cell started is dropped
    // (bash's $EPOCHREALTIME reads the clock without a fork; plain sh runs date)
    const bash = existsSync("/bin/bash");
    const stamp = bash ? "echo ${EPOCHREALTIME/[.,]/}" : "date +%s%6N";
    const helper = spawn(bash ? "/bin/bash" : "/bin/sh", ["-c", `trap '${stamp}' INT; while kill -0 $PPID 2>/dev/null; do sleep 1 & wait $!; done`], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    helper.on("error", (e) => {
      Atomics.store(shared.helper, 0, 0);
      log(`SIGINT helper unavailable (${e.message}); SIGINT then stops only cells that await`);
    });
    helper.on("exit", () => Atomics.store(shared.helper, 0, 0));
    helper.stdout!.setEncoding("utf8");
    helper.stdout!.on("data", (d: string) => {
      for (const line of d.split("\n")) {
        if (!line.trim()) continue;
        const us = Number(line.trim());
        interrupt({ signalUs: Number.isFinite(us) && us > 1e15 ? us : undefined });
      }
    });
    Atomics.store(shared.helper, 0, 1);
    helper.unref();
    (helper.stdout as unknown as { unref?: () => void }).unref?.();
  } catch (e) {
    log(`SIGINT helper unavailable: ${(e as Error)?.message ?? e}`);
  }
}
if (process.platform !== "win32" && process.env.GRADLAB_SIGINT_HELPER !== "0") startSignalHelper();

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
if (parentPid > 1)
  setInterval(() => {
    if (alive(parentPid)) return;
    log(`parent process ${parentPid} is gone; shutting down`);
    interrupt();
    post({ type: "shutdown", restart: false });
    setTimeout(() => process.kill(process.pid, "SIGKILL"), 2000).unref();
  }, 1000).unref();

const bound = await Promise.allSettled([
  hb.bind(endpoint(conn, conn.hb_port)),
  control.bind(endpoint(conn, conn.control_port)),
  stdin.bind(endpoint(conn, conn.stdin_port)),
  iopub.bind(endpoint(conn, conn.iopub_port)),
]);
const bindFailure = bound.find((r) => r.status === "rejected");
if (bindFailure) {
  // close what did bind (a thread that ends with zeromq sockets open aborts the process), then fail:
  // the main thread's start() rejects and the kernel exits with a failure
  for (const s of [hb, control, stdin, iopub]) s.close();
  throw (bindFailure as PromiseRejectedResult).reason;
}
for (const port of [conn.hb_port, conn.control_port, conn.stdin_port, conn.iopub_port]) restrictChannel(conn, port);
void (async () => {
  for await (const [m] of iopub) if (m[0] === 1) firstSubscriber();
})().catch(() => {});
publish("status", { execution_state: "starting" }, {});
for (const m of early!) fromMain(m);
early = null;
post({ type: "ready" });
for (const [name, loop] of [
  ["heartbeat", heartbeat],
  ["control", controlLoop],
  ["stdin", stdinLoop],
] as const) {
  loop().catch((e) => {
    if (!/closed|terminated/i.test(String(e?.message))) log(`socket thread: ${name} loop ended: ${e?.stack ?? e}`);
  });
}
