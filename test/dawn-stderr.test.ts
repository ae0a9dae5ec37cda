// Dawn's own warnings ("maxDynamicUniformBuffersPerPipelineLayout artificially reduced ...") are
// printed by native code straight to file descriptor 2 while an adapter is requested; they must not
// reach the user (gradlab run showed them among a cell's output), and stderr must work afterwards.
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const REPO = join(import.meta.dirname, "..");
const script = `
import * as torch from ${JSON.stringify(join(REPO, "src/index.ts"))};
const x = torch.randn(4, 4, { requires_grad: true });
x.matmul(x).relu().sum().backward();
const g = x.grad; console.log("grad", Number.isFinite(await g.sum().item()));
console.error("stderr still works");
process.stderr.write("and again\\n");
`;

describe("Dawn's native warnings", () => {
  // stdout and stderr on files, as a terminal or Jupyter's pipes would be (libuv's own "pipes" are
  // socket pairs, whose descriptor cannot be reopened through /proc: see withoutNativeStderr).
  it("do not reach stdout or stderr, and stderr keeps working", () => {
    const dir = mkdtempSync(join(tmpdir(), "gradlab-dawn-"));
    const [out, err] = [openSync(join(dir, "out"), "w"), openSync(join(dir, "err"), "w")];
    const p = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: REPO,
      stdio: ["ignore", out, err],
      timeout: 120_000,
    });
    closeSync(out);
    closeSync(err);
    const r = { status: p.status, stdout: readFileSync(join(dir, "out"), "utf8"), stderr: readFileSync(join(dir, "err"), "utf8") };
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("grad true");
    expect(r.stdout + r.stderr).not.toMatch(/artificially reduced|^Warning:/m);
    expect(r.stderr).toBe("stderr still works\nand again\n");
  }, 130_000);
});
