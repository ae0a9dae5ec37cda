// The students' image (the Dockerfile), as Zero to JupyterHub or `docker run` would start it: PID 1 is
// tini, the user is jovyan (uid 1000), nothing of the test tiers is inside, and a student's server
// started from it runs the course's notebook 01 cell by cell over its kernel websocket, on the image's
// own server configuration (the GradLab kernel only, on the ipc transport), then stops on SIGTERM without
// waiting for the engine's SIGKILL. Building the image takes minutes, so this tier does not build it:
// `deploy/build-image` does (docs/classroom.md); without an image named by GRADLAB_IMAGE, it is skipped.
//
//   GRADLAB_IMAGE=localhost/gradlab:latest [GRADLAB_IMAGE_ENGINE=podman] \
//   [GRADLAB_IMAGE_RUN_ARGS="--runtime runc --ulimit nofile=4096:4096 --ulimit nproc=4096:4096"] \
//     npx vitest run --config test/classroom/vitest.config.ts test/classroom/image.tier.ts
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ServerConnection } from "@jupyterlab/services";
import { freePort } from "../../kernel/sockets/connection.ts";
import { execute, openNotebook, REPO, WebSocket } from "./hub.ts";

const IMAGE = process.env.GRADLAB_IMAGE ?? "";
const ENGINE = process.env.GRADLAB_IMAGE_ENGINE ?? "podman";
// what this machine's engine needs (docs/classroom.md: crun cannot run on its hybrid cgroups, and the
// sandbox may not raise rlimits), empty elsewhere
const RUN_ARGS = (process.env.GRADLAB_IMAGE_RUN_ARGS ?? "").split(/\s+/).filter(Boolean);
const present = IMAGE !== "" && spawnSync(ENGINE, ["image", "exists", IMAGE]).status === 0;
const NB = "01_dynamic_graph.ipynb";

function engine(args: string[], timeout = 120_000) {
  const r = spawnSync(ENGINE, args, { encoding: "utf8", timeout, maxBuffer: 16 << 20 });
  if (r.status !== 0) throw new Error(`${ENGINE} ${args.join(" ")} exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}
const inImage = (script: string) => engine(["run", "--rm", ...RUN_ARGS, "--network", "host", IMAGE, "sh", "-c", script]);

describe.skipIf(!present)(`the image ${IMAGE || "(set GRADLAB_IMAGE)"}`, () => {
  let name = "";
  let base = "";
  const token = randomBytes(16).toString("hex");

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    name = `gradlab-image-test-${process.pid}`;
    // the image's own command line, on a free port of this machine's loopback (--network host: no
    // container network to set up), with a token of the test's
    engine([
      "run",
      "--detach",
      "--name",
      name,
      ...RUN_ARGS,
      "--network",
      "host",
      IMAGE,
      "sh",
      "-c",
      `exec jupyter lab --ip=127.0.0.1 --port=${port} --no-browser --IdentityProvider.token=${token} --ServerApp.root_dir="$HOME/course"`,
    ]);
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${base}/api/status?token=${token}`)).ok) break;
      } catch {
        // not listening yet
      }
      if (i > 300) throw new Error(`the image's server did not come up:\n${spawnSync(ENGINE, ["logs", name], { encoding: "utf8" }).stderr}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }, 180_000);

  afterAll(() => {
    if (name) spawnSync(ENGINE, ["rm", "--force", name]);
  });

  test("PID 1 is tini, the user is jovyan (uid 1000), and none of the test tiers is in it", () => {
    const out = inImage(
      'tr "\\0" " " < /proc/1/cmdline; echo; id -u; id -un; ls -d /usr/lib/chromium /opt/gradlab-jupyter /usr/lib/python3/dist-packages/jupyterhub 2>/dev/null; cd "$(npm root -g)/gradlab/node_modules" && ls -d * @*/*',
    ).split("\n");
    expect(out[0]).toMatch(/^\/usr\/bin\/tini -- /);
    expect(out.slice(1, 3)).toEqual(["1000", "jovyan"]);
    // no Chromium, no browser-tier venv, no Debian hub stack; of the packages, runtime dependencies only
    const rest = out.slice(3).filter(Boolean);
    expect(rest.filter((l) => l.startsWith("/"))).toEqual([]);
    const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { devDependencies: Record<string, string> };
    expect(rest.filter((m) => m in pkg.devDependencies)).toEqual([]);
    expect(rest).toContain("typescript"); // the language service's, a runtime dependency
  });

  test("a student's server from the image lists the GradLab kernel only, and runs notebook 01 cell by cell", async () => {
    const specs = (await (await fetch(`${base}/api/kernelspecs?token=${token}`)).json()) as { default: string; kernelspecs: Record<string, unknown> };
    expect(specs.default).toBe("gradlab");
    expect(Object.keys(specs.kernelspecs)).toEqual(["gradlab"]);
    const settings = ServerConnection.makeSettings({ baseUrl: `${base}/`, wsUrl: `${base.replace(/^http/, "ws")}/`, token, appendToken: true, WebSocket });
    const nb = JSON.parse(readFileSync(join(REPO, "notebooks", NB), "utf8")) as { cells: { cell_type: string; source: string | string[] }[] };
    const cells = nb.cells.filter((c) => c.cell_type === "code").map((c) => (Array.isArray(c.source) ? c.source.join("") : c.source));
    const opened = await openNotebook(settings, NB);
    try {
      for (const [i, code] of cells.entries()) {
        const r = await execute(opened.session, code);
        expect({ cell: i, error: r.error }).toEqual({ cell: i, error: undefined });
      }
      const r = await execute(opened.session, "torch.ones([3]).sum().item()");
      expect((r.outputs.find((m) => m.header.msg_type === "execute_result")!.content as any).data["text/plain"]).toBe("3");
      // the kernel's channels are Unix sockets in jovyan's runtime directory (the image's server config)
      const conn = engine(["exec", name, "sh", "-c", `cat "$(jupyter --runtime-dir)/kernel-${opened.session.kernel!.id}.json"`]);
      expect(JSON.parse(conn).transport).toBe("ipc");
    } finally {
      await opened.close();
    }
  }, 300_000);

  test("`stop` ends the server through tini's SIGTERM, not the engine's SIGKILL", () => {
    // a grace period far longer than a clean stop needs: a server that ignored SIGTERM would be killed
    // at its end, with exit status 137
    engine(["stop", "--time", "60", name], 90_000);
    const code = Number(engine(["inspect", "--format", "{{.State.ExitCode}}", name]).trim());
    expect(code).not.toBe(137);
    expect([0, 143]).toContain(code);
  });
});
