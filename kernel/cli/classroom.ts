// gradlab classroom: a JupyterHub for a workshop on this machine (deploy/jupyterhub_config.py does the
// configuring; this command checks the prerequisites, installs the kernelspec where every student sees it,
// picks ports, and runs the hub in the foreground until Ctrl-C). See docs/classroom.md.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { HUB_CONFIG, REPO } from "./paths.ts";
import { freePort } from "../sockets/connection.ts";

export const CLASSROOM_USAGE = `usage: gradlab classroom [options]        (as root; see docs/classroom.md)
  --users N | --users a,b,c   students: student01..studentNN (default 30), or these user names
  --prefix NAME               user name prefix for --users N (default "student")
  --password P                the class's shared password (default: $GRADLAB_CLASS_PASSWORD, which
                              students cannot read in \`ps\` as they can a command line; else generated)
  --ip ADDR                   address the hub listens on (default 127.0.0.1; put TLS in front otherwise)
  --port N                    port of the hub (default 8000; 0 picks a free one)
  --mem SIZE                  memory cap per student, server + kernels (default 1.5G)
  --cpu CORES                 CPU limit per student (default 1)
  --device-memory SIZE        GradLab device capacity per kernel (default a quarter of --mem)
  --kernel-idle S             shut a kernel down after S idle seconds (default 1800)
  --server-idle S             stop a student's server after S idle seconds (default 3600)
  --max-active N              at most N servers at once; the next student is told the class is full
                              (default: machine memory minus --reserve, over 1G per student)
  --reserve SIZE              memory kept for the hub, proxy and system (default 1G)
  --tmp-size SIZE             each student's private /tmp and /dev/shm (tmpfs, charged to their
                              memory cap; default 256M; 0 shares the machine's /tmp)
  --home-size SIZE            disk limit of each student's home (an ext4 image of its own,
                              loop-mounted on it; default 1G; 0: no limit)
  --state DIR                 hub database and secrets (default /var/lib/gradlab-classroom)
  --api-token-file FILE       register an admin API service whose token is in FILE (made if missing)
  --admin NAME[,NAME]         students who are also hub admins`;

export interface ClassroomOptions {
  users: string;
  prefix: string;
  password: string | null;
  ip: string;
  port: number;
  mem: number;
  cpu: number;
  deviceMemory: number | null;
  kernelIdle: number;
  serverIdle: number;
  maxActive: number | null;
  reserve: number;
  tmpSize: number;
  homeSize: number;
  state: string;
  apiTokenFile: string | null;
  admins: string;
}

const SIZE_UNITS: Record<string, number> = { "": 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40 };

/** "1.5G", "512M", "1073741824" (binary units, as Kubernetes' Gi/Mi and JupyterHub's mem_limit). */
export function parseSize(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B?)?$/i.exec(text.trim());
  if (!m) throw new Error(`${flag} ${JSON.stringify(text)}: expected a size such as 512M or 1.5G`);
  const bytes = Math.floor(Number(m[1]) * SIZE_UNITS[m[2].toUpperCase()]);
  if (bytes <= 0) throw new Error(`${flag} must be positive`);
  return bytes;
}

function parseNumber(text: string | undefined, flag: string, { integer = false, min = 0 } = {}): number {
  const n = Number(text);
  if (text === undefined || text === "" || !Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min) {
    throw new Error(`${flag} needs ${integer ? "an integer" : "a number"} >= ${min}, got ${JSON.stringify(text)}`);
  }
  return n;
}

export function parseClassroomArgs(args: string[]): ClassroomOptions {
  const o: ClassroomOptions = {
    users: "30",
    prefix: "student",
    password: null,
    ip: "127.0.0.1",
    port: 8000,
    mem: 1.5 * 2 ** 30,
    cpu: 1,
    deviceMemory: null,
    kernelIdle: 1800,
    serverIdle: 3600,
    maxActive: null,
    reserve: 2 ** 30,
    tmpSize: 256 * 2 ** 20,
    homeSize: 2 ** 30,
    state: "/var/lib/gradlab-classroom",
    apiTokenFile: null,
    admins: "",
  };
  for (let i = 0; i < args.length; i++) {
    let flag = args[i];
    let value: string | undefined;
    const eq = flag.indexOf("=");
    if (flag.startsWith("--") && eq > 0) [flag, value] = [flag.slice(0, eq), flag.slice(eq + 1)];
    const next = () => {
      const v = value ?? args[++i];
      if (v === undefined || (value === undefined && v.startsWith("--"))) throw new Error(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case "--users": {
        const v = next();
        if (/^\d+$/.test(v)) parseNumber(v, flag, { integer: true, min: 1 });
        else if (!/^[a-z][a-z0-9_-]*(,[a-z][a-z0-9_-]*)*$/.test(v))
          throw new Error(`--users ${JSON.stringify(v)}: a count or comma-separated lower-case user names`);
        o.users = v;
        break;
      }
      case "--prefix":
        o.prefix = next();
        if (!/^[a-z][a-z0-9_-]{0,29}$/.test(o.prefix))
          throw new Error(`--prefix ${JSON.stringify(o.prefix)}: lower-case letters, digits, '-' or '_', starting with a letter`);
        break;
      case "--password":
        o.password = next();
        if (o.password.length < 8) throw new Error("--password needs at least 8 characters");
        break;
      case "--ip":
        o.ip = next();
        break;
      case "--port":
        o.port = parseNumber(next(), flag, { integer: true, min: 0 });
        break;
      case "--mem":
        o.mem = parseSize(next(), flag);
        break;
      case "--cpu":
        o.cpu = parseNumber(next(), flag, { min: 0.01 });
        break;
      case "--device-memory":
        o.deviceMemory = parseSize(next(), flag);
        break;
      case "--kernel-idle":
        o.kernelIdle = parseNumber(next(), flag, { integer: true, min: 1 });
        break;
      case "--server-idle":
        o.serverIdle = parseNumber(next(), flag, { integer: true, min: 1 });
        break;
      case "--max-active":
        o.maxActive = parseNumber(next(), flag, { integer: true, min: 1 });
        break;
      case "--reserve":
        o.reserve = parseSize(next(), flag);
        break;
      case "--tmp-size": {
        const v = next();
        o.tmpSize = v === "0" ? 0 : parseSize(v, flag);
        break;
      }
      case "--home-size": {
        const v = next();
        o.homeSize = v === "0" ? 0 : parseSize(v, flag);
        if (o.homeSize && o.homeSize < 16 * 2 ** 20) throw new Error("--home-size must be at least 16M (ext4's journal and the course)");
        break;
      }
      case "--state":
        o.state = resolve(next());
        break;
      case "--api-token-file":
        o.apiTokenFile = resolve(next());
        break;
      case "--admin":
        o.admins = next();
        break;
      default:
        throw new Error(`unknown option ${flag}\n${CLASSROOM_USAGE}`);
    }
  }
  if (o.deviceMemory !== null && o.deviceMemory >= o.mem) throw new Error("--device-memory must be below --mem (the kernel needs memory of its own)");
  return o;
}

export const VENV = process.env.GRADLAB_CLASSROOM_VENV || "/opt/gradlab-classroom/venv";
export const CHP = process.env.GRADLAB_CLASS_PROXY || "/opt/gradlab-classroom/chp/node_modules/.bin/configurable-http-proxy";
/** each running class's kernelspec, in a directory named by the class's port */
const CLASS_KERNELS = process.env.GRADLAB_CLASS_KERNELS || join(dirname(VENV), "kernels");
export const JUPYTERHUB = process.env.GRADLAB_JUPYTERHUB || "/usr/bin/jupyterhub";

export async function classroomCli(args: string[]): Promise<number> {
  if (args.includes("-h") || args.includes("--help")) {
    console.log(CLASSROOM_USAGE);
    return 0;
  }
  const o = parseClassroomArgs(args);
  if (process.getuid?.() !== 0) throw new Error("classroom must run as root: it creates the students' Unix accounts and starts each server as its student");
  const missing = [
    [JUPYTERHUB, "Debian's jupyterhub"],
    [CHP, "configurable-http-proxy"],
    [join(VENV, "bin", "jupyterhub-singleuser"), "jupyterhub-singleuser in the JupyterLab venv"],
  ].filter(([p]) => !existsSync(p));
  if (missing.length) throw new Error(`missing ${missing.map(([p, what]) => `${what} (${p})`).join(", ")}: run \`bash deploy/setup\` (as root) first`);

  const port = o.port || (await freePort());
  // This class's own kernelspec, naming the GradLab this command runs from (a checkout's dist/, or an
  // installed package), in a directory of its own that the students' servers search first
  // (JUPYTER_PATH). Another class, from another checkout or package, writes its own: it never
  // repoints the kernels of a class that is running.
  const kernels = join(CLASS_KERNELS, String(port));
  const { installKernelspec } = await import("./install.ts");
  await installKernelspec(["--prefix", kernels]);

  const fromEnv = process.env.GRADLAB_CLASS_PASSWORD;
  if (o.password === null && fromEnv !== undefined && fromEnv.length < 8) throw new Error("GRADLAB_CLASS_PASSWORD needs at least 8 characters");
  const password = o.password ?? fromEnv ?? randomBytes(9).toString("base64url");
  let apiToken: string | undefined;
  if (o.apiTokenFile) {
    if (!existsSync(o.apiTokenFile)) writeFileSync(o.apiTokenFile, `${randomBytes(32).toString("hex")}\n`, { mode: 0o600 });
    apiToken = readFileSync(o.apiTokenFile, "utf8").trim();
    if (apiToken.length < 32) throw new Error(`${o.apiTokenFile}: an API token needs at least 32 characters`);
  }
  mkdirSync(o.state, { recursive: true, mode: 0o700 });

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GRADLAB_REPO: REPO,
    GRADLAB_CLASSROOM_VENV: VENV,
    GRADLAB_CLASS_PROXY: CHP,
    GRADLAB_CLASS_STATE: o.state,
    GRADLAB_CLASS_USERS: o.users,
    GRADLAB_CLASS_PREFIX: o.prefix,
    GRADLAB_CLASS_PASSWORD: password,
    GRADLAB_CLASS_IP: o.ip,
    GRADLAB_CLASS_PORT: String(port),
    // two more ports of our own choosing, so two classrooms (or a test beside a class) never collide
    GRADLAB_CLASS_HUB_PORT: String(await freePort()),
    GRADLAB_CLASS_PROXY_API_PORT: String(await freePort()),
    GRADLAB_CLASS_MEM: String(o.mem),
    GRADLAB_CLASS_CPU: String(o.cpu),
    GRADLAB_CLASS_KERNEL_IDLE: String(o.kernelIdle),
    GRADLAB_CLASS_SERVER_IDLE: String(o.serverIdle),
    GRADLAB_CLASS_ADMINS: o.admins,
    GRADLAB_CLASS_RESERVE: String(o.reserve),
    GRADLAB_CLASS_TMP_SIZE: String(o.tmpSize),
    GRADLAB_CLASS_HOME_SIZE: String(o.homeSize),
    GRADLAB_CLASS_JUPYTER_PATH: join(kernels, "share", "jupyter"),
  };
  if (o.maxActive !== null) env.GRADLAB_CLASS_MAX_ACTIVE = String(o.maxActive);
  if (o.deviceMemory !== null) env.GRADLAB_CLASS_DEVICE_MEMORY = String(o.deviceMemory);
  if (apiToken) env.GRADLAB_CLASS_API_TOKEN = apiToken;

  // The hub in a process group of its own: a terminal's Ctrl-C reaches this process only, which asks
  // the hub to stop once (SIGTERM: it stops every student's server, then exits). In our group, the
  // hub and the students' servers also got the terminal's SIGINT directly: a second SIGINT to the
  // hub, tracebacks from the servers, "Failed to stop user".
  const hub = spawn(JUPYTERHUB, ["-f", HUB_CONFIG], { cwd: o.state, env, stdio: "inherit", detached: true });
  let stopping = false;
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const)
    process.on(sig, () => {
      if (stopping) {
        console.log("GradLab classroom: still stopping (each student's server is being shut down)…");
        return;
      }
      stopping = true;
      console.log("GradLab classroom: stopping the hub and every student's server…");
      hub.kill("SIGTERM");
    });
  const host = o.ip === "0.0.0.0" || o.ip === "" ? "this machine's address" : o.ip;
  console.log(
    `GradLab classroom: http://${host}:${port}/  students: ${o.users === String(Number(o.users)) ? `${o.prefix}01..${o.prefix}${o.users.padStart(2, "0")}` : o.users}  password: ${o.password || fromEnv ? "(as given)" : password}`,
  );
  return await new Promise<number>((res, rej) => {
    hub.once("error", rej);
    hub.once("exit", (code, signal) => {
      rmSync(kernels, { recursive: true, force: true });
      res(code ?? (signal === "SIGINT" || signal === "SIGTERM" ? 0 : 1));
    });
  });
}
