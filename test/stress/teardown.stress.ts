// Kernel teardown (issue 22): a kernel that has run a cell on the GPU and is shut down must exit cleanly,
// every time. It used to abort at exit now and then (glibc "corrupted double-linked list", a core dump
// showed the heap corruption caught in a worker isolate's teardown during process.exit): 4 of 80
// `gradlab run`s without the runtime, 3 of 80 with it, more under load. Now every worker thread is ended
// and joined before exit (the socket thread ends by itself once zeromq has let go of its sockets).
// `gradlab run` fails on a signal death, so each run's status is the check.
import { expect, test } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const REPO = resolve(import.meta.dirname, "../..");
const RUNS = Number(process.env.GRADLAB_TEARDOWN_RUNS ?? 60);

test(`${RUNS} notebook runs that initialise the device: every kernel exits cleanly`, () => {
  const dir = mkdtempSync(join(tmpdir(), "gradlab-teardown-"));
  try {
    const nb = join(dir, "nb.ipynb");
    const source = "const x = torch.ones([64, 64], {requires_grad: true});\nconst y = x.matmul(x).sum();\ny.backward();\nawait y.item()";
    writeFileSync(
      nb,
      JSON.stringify({
        cells: [{ cell_type: "code", metadata: {}, execution_count: null, outputs: [], source }],
        metadata: {},
        nbformat: 4,
        nbformat_minor: 5,
      }),
    );
    const failures: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      const r = spawnSync(process.execPath, [join(REPO, "bin", "gradlab.js"), "run", nb], { cwd: dir, encoding: "utf8", timeout: 120_000 });
      if (r.status !== 0)
        failures.push(
          `run ${i + 1}: status ${r.status ?? r.signal}: ${r.stderr
            .split("\n")
            .filter((l) => /killed|corrupt|malloc|tcache|status/.test(l))
            .join(" | ")}`,
        );
    }
    expect(failures).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 900_000);
