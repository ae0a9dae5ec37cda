// The kernel's transport and process life (issue 22): on ZeroMQ's ipc transport no other account can
// connect to a kernel's channels or read what it publishes; SIGTERM ends a kernel in any state.
import { afterAll, beforeAll, expect, test } from "vitest";
import { join } from "node:path";
import { installedKernel, PYTHON, REPO, run, type Env } from "./helpers.ts";

let e: Env;
beforeAll(async () => {
  e = await installedKernel();
});
afterAll(() => e?.cleanup());

async function scenario(name: string): Promise<any> {
  const r = await run(PYTHON, [join(REPO, "test", "kernel", "transport.py"), name], { env: e.env });
  if (r.code !== 0) throw new Error(`transport.py ${name} failed (${r.code}):\n${r.stderr}\n${r.stdout}`);
  return JSON.parse(r.stdout.trim().split("\n").pop()!);
}

const CHANNELS = ["shell", "iopub", "stdin", "control", "hb"];

test("on the ipc transport the channels are owner-only Unix sockets, no TCP port is open, and another account reaches nothing", async () => {
  const r = await scenario("ipc");
  expect(r.transport).toBe("ipc");
  expect(r.ip_is_absolute).toBe(true);
  // created under umask 000 in a directory anyone may traverse: the kernel itself made them 0600
  expect(r.modes).toEqual(["0o600"]);
  expect(r.tcp_listeners).toBe(0);
  expect(r.status).toBe("ok");
  // the owner's probe shows what reachable looks like (so the other account's failure means something)
  expect(r.owner.connect).toEqual(Object.fromEntries(CHANNELS.map((c) => [c, "ok"])));
  expect(r.owner.hb_echoed).toBe(true);
  expect(r.owner.iopub_messages).toBeGreaterThan(0);
  if (process.getuid?.() === 0) {
    expect(r.other.connect).toEqual(Object.fromEntries(CHANNELS.map((c) => [c, "EACCES"])));
    expect(r.other.hb_echoed).toBe(false);
    expect(r.other.iopub_messages).toBe(0);
  }
  // a clean exit, and zeromq removed its socket files
  expect(r.exit).toBe(0);
  expect(r.left).toEqual([]);
}, 120_000);

test("SIGTERM to the kernel alone, while a cell spins in synchronous code, ends it (it is not left for SIGKILL)", async () => {
  const r = await scenario("sigterm_busy");
  expect(r.exited).toBe(true);
  // the default action of SIGTERM (as ipykernel, whose Python has no SIGTERM handler), or a clean exit
  expect([-15, 0]).toContain(r.returncode);
}, 120_000);

test("SIGTERM while idle: the kernel closes its sockets and exits with status 0", async () => {
  const r = await scenario("sigterm_idle");
  expect(r.status).toBe("ok");
  expect(r.returncode).toBe(0);
}, 120_000);

test("a kernel whose channel cannot be bound exits with a failure (shell on the main thread, heartbeat on the socket thread)", async () => {
  const { createServer } = await import("node:net");
  const { writeFileSync } = await import("node:fs");
  const { kernelArgv } = await import("../../kernel/cli/paths.ts");
  const { freePort } = await import("../../kernel/sockets/connection.ts");
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
  const busy = (taken.address() as { port: number }).port;
  try {
    for (const channel of ["shell_port", "hb_port"]) {
      const ports = await Promise.all([1, 2, 3, 4, 5].map(freePort));
      const conn = {
        transport: "tcp",
        ip: "127.0.0.1",
        key: "k",
        signature_scheme: "hmac-sha256",
        shell_port: ports[0],
        iopub_port: ports[1],
        stdin_port: ports[2],
        control_port: ports[3],
        hb_port: ports[4],
        [channel]: busy,
      };
      const file = join(e.dir, `busy-${channel}.json`);
      writeFileSync(file, JSON.stringify(conn));
      const argv = kernelArgv().map((a) => a.replace("{connection_file}", file));
      const r = await run(argv[0], argv.slice(1), { env: { ...e.env, GRADLAB_WARMUP: "0" }, timeout: 60_000 });
      expect({ channel, failed: r.code !== 0 }).toEqual({ channel, failed: true });
      expect(r.stderr).toMatch(/Address already in use/);
    }
  } finally {
    taken.close();
  }
}, 120_000);
