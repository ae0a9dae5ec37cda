// Entry point: gradlab install | kernel -f CONN | run NB.ipynb [-o OUT.ipynb] | run SCRIPT.ts | classroom, lite (a checkout)
import { existsSync } from "node:fs";
import { HUB_CONFIG, LITE_WORKER } from "./paths.ts";
const [cmd, ...args] = process.argv.slice(2);
// the kernel replaces process.exit (a cell must not end the session): a kernel that fails to start
// (a channel it cannot bind) must still exit with a failure, through the real one
const exit = process.exit.bind(process);

// `gradlab classroom` needs deploy/ and the course, which a checkout has and the npm package does not
// ship (the hub's prerequisites come from deploy/setup, run as root, not from npm): the packaged CLI does
// not offer it, and says where it lives instead of half-starting a class
const CLASSROOM = existsSync(HUB_CONFIG);
// `gradlab lite` bundles the sources and lite/'s packages: a checkout's command too
const LITE = existsSync(LITE_WORKER);
const USAGE = `usage:
  gradlab install [--user | --sys-prefix | --prefix DIR] [--name NAME]   write the Jupyter kernelspec
  gradlab kernel -f CONNECTION_FILE                                      run the kernel (Jupyter does this)
  gradlab run NOTEBOOK.ipynb [-o OUT.ipynb | --inplace] [--timeout S]    execute a notebook headlessly
  gradlab run SCRIPT.ts [ARGS...]                                        run a script; its tensors are freed as a cell's${
    CLASSROOM ? "\n  gradlab classroom [--users N] [--port N] ...                            a JupyterHub for a class (as root; --help)" : ""
  }${LITE ? "\n  gradlab lite build --out DIR | gradlab lite serve DIR [--port N]        the course as a static site, in the browser (docs/lite.md)" : ""}`;
const NO_CLASSROOM = `gradlab: "classroom" is not part of the npm package: a classroom server runs from a checkout of
GradLab's repository, which has the hub's configuration (deploy/) and the course notebooks; see
docs/classroom.md there. Nothing was changed.`;
const NO_LITE = `gradlab: "lite" is not part of the npm package: \`gradlab lite build\` bundles GradLab's sources and
JupyterLite's packages (lite/), which a checkout of GradLab's repository has; see docs/lite.md there.`;

async function main(): Promise<number> {
  switch (cmd) {
    case "kernel": {
      const i = args.findIndex((a) => a === "-f" || a === "--connection-file");
      const file = i >= 0 ? args[i + 1] : args.find((a) => a.startsWith("--f="))?.slice(4);
      if (!file) throw new Error("gradlab kernel needs -f CONNECTION_FILE");
      const { readConnectionFile } = await import("../sockets/connection.ts");
      const conn = readConnectionFile(file);
      // the socket thread starts loading now, while this thread imports the rest of the kernel
      const [{ SocketServer }, { Signer }, { kernelInfo }, { randomUUID }] = await Promise.all([
        import("../sockets/server.ts"),
        import("../wire/message.ts"),
        import("../info.ts"),
        import("node:crypto"),
      ]);
      const server = new SocketServer(conn, { session: randomUUID(), signer: new Signer(conn.key, conn.signature_scheme), kernelInfo: kernelInfo() });
      let kernel: InstanceType<typeof import("../kernel.ts").Kernel>;
      try {
        kernel = new (await import("../kernel.ts")).Kernel(conn, server);
      } catch (e) {
        await server.close(); // exiting with the socket thread's sockets open aborts the process
        throw e;
      }
      await kernel.start();
      return -1; // keep running
    }
    case "install": {
      const { installKernelspec } = await import("./install.ts");
      console.log(`Installed kernelspec gradlab in ${await installKernelspec(args)}`);
      return 0;
    }
    case "classroom":
      if (!CLASSROOM) {
        console.error(NO_CLASSROOM);
        return 2;
      }
      return (await import("./classroom.ts")).classroomCli(args);
    case "lite":
      if (!LITE) {
        console.error(NO_LITE);
        return 2;
      }
      return (await import("./lite.ts")).liteCli(args);
    case "run": {
      const { SCRIPT, runScript } = await import("./run-script.ts");
      if (args[0] && SCRIPT.test(args[0])) return runScript(args[0], args.slice(1));
      const { runNotebookCli } = await import("./run.ts");
      return runNotebookCli(args);
    }
    case undefined:
    case "-h":
    case "--help":
    case "help":
      console.log(USAGE);
      return cmd ? 0 : 2;
    default:
      console.error(`gradlab: unknown command ${cmd}\n${USAGE}`);
      return 2;
  }
}

main().then(
  (code) => {
    if (code >= 0) exit(code);
  },
  (e) => {
    console.error(`gradlab: ${process.env.GRADLAB_DEBUG ? e?.stack : (e?.message ?? e)}`);
    exit(1);
  },
);
