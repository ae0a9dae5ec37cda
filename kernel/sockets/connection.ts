// Connection file (written by the client that starts the kernel) and endpoint helpers.
import { chmodSync, readFileSync } from "node:fs";
import { createServer } from "node:net";

/** A TCP port free on 127.0.0.1 now (the OS picks it; whoever binds it next should do so soon). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface ConnectionInfo {
  transport: string;
  ip: string;
  key: string;
  signature_scheme: string;
  shell_port: number;
  iopub_port: number;
  stdin_port: number;
  control_port: number;
  hb_port: number;
  kernel_name?: string;
}

export function readConnectionFile(path: string): ConnectionInfo {
  const c = JSON.parse(readFileSync(path, "utf8"));
  return { transport: "tcp", ip: "127.0.0.1", signature_scheme: "hmac-sha256", key: "", ...c };
}

export function endpoint(c: ConnectionInfo, port: number): string {
  return c.transport === "ipc" ? `ipc://${ipcPath(c, port)}` : `tcp://${c.ip}:${port}`;
}

/** The Unix socket path of an `ipc` channel (Jupyter's convention: `<ip>-<port>`, where `ip` is a path
 *  prefix, relative to the kernel's working directory when not absolute, as in jupyter_client). */
function ipcPath(c: ConnectionInfo, port: number): string {
  return `${c.ip}-${port}`;
}

/** After binding: an `ipc` channel's socket file is made owner-only (0600), so no other account can
 *  connect to it even if the directory it lives in is more open than Jupyter's 0700 runtime directory
 *  (connecting to a Unix socket needs write permission on its file). Over `tcp` there is nothing to
 *  restrict: every local account can reach 127.0.0.1. */
export function restrictChannel(c: ConnectionInfo, port: number): void {
  if (c.transport === "ipc") chmodSync(ipcPath(c, port), 0o600);
}
