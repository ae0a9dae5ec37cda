// The exercises tier (`npm run test:exercises`). Every exercise has a template in notebooks/ and its solution in
// notebooks/solutions/ (same file name); both run headlessly through the kernel (`gradlab run`), and each check from
// notebooks/check.ts prints one line starting with ✓ or ✗. This tier proves three things:
// 1. Run All, then Run All again in the same kernel (a student re-running cells): the untouched template fails at least
//    one check, the solution passes every check the template has, and the second run gives the same verdicts.
// 2. Every known wrong answer (WRONG below: an edit of the solution) makes the check it names print ✗ (or its cell
//    raise) — a check a wrong answer passes is a broken check.
// 3. Every other correct answer (RIGHT below), including the ones the notebooks themselves recommend, passes.
// Notebooks are copied to a temporary folder with notebooks/check.ts beside them, so the solutions' "../check.ts" and
// the templates' "./check.ts" resolve as in the repository.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const repo = new URL("../..", import.meta.url).pathname;
const solutions = readdirSync(join(repo, "notebooks", "solutions")).filter((f) => f.endsWith(".ipynb"));

interface Output {
  output_type: string;
  text?: string | string[];
  ename?: string;
  evalue?: string;
}
interface Cell {
  cell_type: string;
  source: string | string[];
  outputs?: Output[];
}
interface Notebook {
  cells: Cell[];
}

const text = (s: string | string[] | undefined) => (Array.isArray(s) ? s.join("") : (s ?? ""));
const read = (p: string): Notebook => JSON.parse(readFileSync(p, "utf8"));

/** Runs `nb` (written as `name`, a template at the top of a temporary folder or a solution in its solutions/) and
 * returns, per cell, its ✓/✗ lines and whether it raised. Stops at no failing cell (`gradlab run` stops at the first
 * error, so an error is reported for the cell that raised and nothing after it). */
function run(nb: Notebook, name: string, solution: boolean): { checks: string[][]; errors: string[][] } {
  const dir = mkdtempSync(join(tmpdir(), "gradlab-ex-"));
  copyFileSync(join(repo, "notebooks", "check.ts"), join(dir, "check.ts"));
  const where = solution ? join(dir, "solutions") : dir;
  mkdirSync(where, { recursive: true });
  const input = join(where, name);
  writeFileSync(input, JSON.stringify(nb));
  const out = join(dir, "out.ipynb");
  try {
    execFileSync(process.execPath, [join(repo, "bin", "gradlab.js"), "run", input, "-o", out], {
      cwd: repo,
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 240_000,
    });
  } catch (e) {
    // a cell that raised: gradlab run exits 1 and still writes the executed notebook
    if (!existsSync(out)) throw e;
  }
  const executed = read(out);
  const checks = executed.cells.map((c) =>
    (c.outputs ?? [])
      .filter((o) => o.output_type === "stream")
      .map((o) => text(o.text))
      .join("")
      .split("\n")
      .filter((l) => l.startsWith("✓ ") || l.startsWith("✗ ")),
  );
  const errors = executed.cells.map((c) => (c.outputs ?? []).filter((o) => o.output_type === "error").map((o) => `${o.ename}: ${o.evalue}`));
  return { checks, errors };
}

/** A check line's verdict and name: "✓ name" or "✗ name" (the detail after ':' left out). */
const verdict = (l: string) => l.slice(0, 2) + l.slice(2).split(":")[0];

/** Run All twice in one kernel: the notebook's cells, then the same cells again. */
function twice(nb: Notebook, name: string, solution: boolean) {
  const n = nb.cells.length;
  const r = run({ ...nb, cells: [...nb.cells, ...nb.cells] }, name, solution);
  return {
    first: r.checks.slice(0, n).flat().map(verdict),
    second: r.checks.slice(n).flat().map(verdict),
    errors: r.errors.flat(),
  };
}

describe("exercises: Run All twice — templates fail their checks, solutions pass them, the same verdicts both times", () => {
  it("there is at least one exercise", () => expect(solutions.length).toBeGreaterThan(0));
  for (const nb of solutions) {
    it(`${nb}: template fails, solution passes, re-run agrees`, () => {
      const template = join(repo, "notebooks", nb);
      expect(existsSync(template), `template notebooks/${nb}`).toBe(true);
      const t = twice(read(template), nb, false);
      const s = twice(read(join(repo, "notebooks", "solutions", nb)), nb, true);
      expect(t.errors).toEqual([]);
      expect(s.errors).toEqual([]);
      expect(t.first.length).toBeGreaterThan(0);
      expect(t.first.filter((l) => l.startsWith("✗ ")).length, t.first.join("\n")).toBeGreaterThan(0);
      expect(
        s.first.filter((l) => l.startsWith("✗ ")),
        s.first.join("\n"),
      ).toEqual([]);
      // the same checks, by name, all passing
      const name = (l: string) => l.slice(2);
      expect(s.first.map(name).sort()).toEqual(t.first.map(name).sort());
      // re-running every cell in the same kernel gives the same verdicts
      expect(t.second, "template, second Run All").toEqual(t.first);
      expect(s.second, "solution, second Run All").toEqual(s.first);
    }, 600_000);
  }
});

/** An answer: edits of the solution's code, each `[from, to]` replacing text that occurs exactly once in the notebook. */
interface Answer {
  what: string;
  edits: Array<[string, string]>;
}
/** A wrong answer also names the check (a prefix of its name) that must print ✗; its cell may raise instead. */
interface Wrong extends Answer {
  fails: string;
}

const WRONG: Record<string, Wrong[]> = {
  "01_dynamic_graph.ipynb": [{ what: "another node", edits: [['const answer = "ExpBackward0";', 'const answer = "MulBackward0";']], fails: "" }],
  "02_node_and_edge.ipynb": [
    { what: "walks a shared node twice (no Set)", edits: [["    if (seen.has(node)) continue;\n", ""]], fails: "AccumulateGrad nodes" },
  ],
  "06_memory_lifecycle.ipynb": [
    {
      what: "four batch-sized tensors at the peak",
      edits: [["const predicted_peak = 256 * MiB + 6 * 64 * MiB;", "const predicted_peak = 256 * MiB + 4 * 64 * MiB;"]],
      fails: "your predicted peak",
    },
  ],
  "07_inplace_version_counter.ipynb": [
    {
      what: "fix 2 on a detached alias (it shares the version counter)",
      edits: [["const z = y.clone().add_(1.0);", "const z = y.detach().add_(1.0);"]],
      fails: "fix 2",
    },
  ],
  "10_hooks.ipynb": [
    {
      what: "counts elements, not bytes",
      edits: [["sum += output.element_size() * output.numel();", "sum += output.numel();"]],
      fails: "activation bytes reported by the hooks",
    },
  ],
  "13_typescript_for_pytorch_users.ipynb": [
    {
      what: "sum instead of mean",
      edits: [[".pow(2).mean().item();", ".pow(2).sum().item();"]],
      fails: "",
    },
  ],
  "00_overview.ipynb": [
    { what: "forgets the loss", edits: [["const predicted = 512 * 1024 * 4 + 512;", "const predicted = 512 * 1024 * 4;"]], fails: "bytes kept after forward" },
    {
      what: "counts the matmul output too",
      edits: [["const predicted = 512 * 1024 * 4 + 512;", "const predicted = 2 * 512 * 1024 * 4 + 512;"]],
      fails: "bytes kept after forward",
    },
  ],
  "03_accumulate_grad.ipynb": [
    { what: "one call only", edits: [["[12, -24]", "[2, -4]"]], fails: "your prediction of v.grad" },
    { what: "the last call only", edits: [["[12, -24]", "[6, -12]"]], fails: "your prediction of v.grad" },
  ],
  "04_custom_function.ipynb": [
    { what: "ignores grad_output", edits: [["return grad_output.mul(v).mul(2);", "return v.mul(2);"]], fails: "MySquare's gradient" },
    { what: "forgets the 2", edits: [["return grad_output.mul(v).mul(2);", "return grad_output.mul(v);"]], fails: "MySquare's gradient" },
    { what: "forgets v", edits: [["return grad_output.mul(v).mul(2);", "return grad_output.mul(2);"]], fails: "MySquare's gradient" },
  ],
  "05_engine.ipynb": [
    { what: "creation order", edits: [["[4, 3, 2, 1, 0]", "[0, 1, 2, 3, 4]"]], fails: "order of the op nodes" },
    { what: "one release only", edits: [["const freed = 2 * 64 * 1024;", "const freed = 64 * 1024;"]], fails: "bytes freed by releases" },
  ],
  "08_grad_mode.ipynb": [
    {
      what: "fix 1 deletes inference_mode altogether",
      edits: [["const feats1 = torch.no_grad(() => x.matmul(backbone));", "const feats1 = x.matmul(backbone);"]],
      fails: "fix 1: no graph through the frozen backbone",
    },
    {
      what: "fix 2 passes an unrelated tensor",
      edits: [["const usable = feats.clone();", "const usable = torch.randn(64, 128);"]],
      fails: "fix 2: head.grad is right",
    },
    {
      what: "fix 2 drops inference_mode",
      edits: [
        ["const feats = torch.inference_mode(() => x.matmul(backbone));", "const feats = torch.no_grad(() => x.matmul(backbone));"],
        ["const usable = feats.clone();", "const usable = feats;"],
      ],
      fails: "fix 2: feats is still an inference tensor",
    },
    {
      // torch 1.13: a detach() of an inference tensor is an inference tensor, and backward refuses it
      what: "fix 2 detaches (still an inference tensor)",
      edits: [["const usable = feats.clone();", "const usable = feats.detach();"]],
      fails: "fix 2: the head trains",
    },
  ],
  "09_checkpointing.ipynb": [
    {
      what: "the article's rule (keeps both linears' outputs)",
      edits: [
        ['const policy: string[] = ["gelu"];', 'const policy: string[] = ["addmm"];'],
        ["const predicted_MiB = 39 * 64;", "const predicted_MiB = 59 * 64;"],
      ],
      fails: "activations fit in 2.75 GiB",
    },
    {
      what: "full checkpointing",
      edits: [
        ['const policy: string[] = ["gelu"];', "const policy: string[] = [];"],
        ["const predicted_MiB = 39 * 64;", "const predicted_MiB = 19 * 64;"],
      ],
      fails: "the policy keeps some op's outputs",
    },
    { what: "a typo in an op name", edits: [['const policy: string[] = ["gelu"];', 'const policy: string[] = ["gleu"];']], fails: "activations fit" },
    {
      what: "counts x among the kept inputs",
      edits: [["const predicted_MiB = 39 * 64;", "const predicted_MiB = 40 * 64;"]],
      fails: "your prediction of the activations",
    },
  ],
  "11_loss_leak.ipynb": [
    { what: "logs a constant", edits: [["losses.push(await loss.item());", "losses.push(0);"]], fails: "each step's loss value is logged" },
    { what: "keeps the graph", edits: [["losses.push(await loss.item());", "losses.push(loss);"]], fails: "memory stays flat" },
    { what: "a clone keeps the graph", edits: [["losses.push(await loss.item());", "losses.push(loss.clone());"]], fails: "memory stays flat" },
    { what: "forgets await (a Promise)", edits: [["losses.push(await loss.item());", "losses.push(loss.item());"]], fails: "each step's loss value" },
  ],
  "12_summary.ipynb": [
    {
      what: "one line wrong",
      edits: [["const evidence: number[] = [1, 6, 7, 8, 9];", "const evidence: number[] = [1, 6, 7, 8, 8];"]],
      fails: "mnemonic → notebook",
    },
  ],
};

const RIGHT: Record<string, Answer[]> = {
  "04_custom_function.ipynb": [
    { what: "another order", edits: [["return grad_output.mul(v).mul(2);", "return v.mul(2).mul(grad_output);"]] },
    { what: "a sum of two", edits: [["return grad_output.mul(v).mul(2);", "return grad_output.mul(v).add(grad_output.mul(v));"]] },
  ],
  "08_grad_mode.ipynb": [
    {
      what: "clone, then detach",
      edits: [["const usable = feats.clone();", "const usable = feats.clone().detach();"]],
    },
  ],
  "11_loss_leak.ipynb": [{ what: "loss.detach() (the notebook's takeaway)", edits: [["losses.push(await loss.item());", "losses.push(loss.detach());"]] }],
};

function edited(nb: string, edits: Array<[string, string]>): Notebook {
  const book = read(join(repo, "notebooks", "solutions", nb));
  for (const [from, to] of edits) {
    const hits = book.cells.filter((c) => c.cell_type === "code" && text(c.source).includes(from));
    expect(hits.length, `"${from}" in exactly one cell of solutions/${nb}`).toBe(1);
    const s = text(hits[0].source);
    expect(s.split(from).length - 1, `"${from}" once`).toBe(1);
    hits[0].source = s.replace(from, to);
  }
  return book;
}

describe("exercises: every known wrong answer fails its check", () => {
  for (const [nb, wrongs] of Object.entries(WRONG)) {
    for (const w of wrongs) {
      it(`${nb}: ${w.what}`, () => {
        const r = run(edited(nb, w.edits), nb, true);
        const lines = r.checks.flat();
        const failed = lines.some((l) => l.startsWith(`✗ ${w.fails}`));
        const raised = r.errors.flat();
        expect(failed || raised.length > 0, `${lines.join("\n")}\n${raised.join("\n")}`).toBe(true);
      }, 300_000);
    }
  }
});

describe("exercises: other correct answers pass", () => {
  for (const [nb, rights] of Object.entries(RIGHT)) {
    for (const a of rights) {
      it(`${nb}: ${a.what}`, () => {
        const r = run(edited(nb, a.edits), nb, true);
        expect(r.errors.flat()).toEqual([]);
        const lines = r.checks.flat();
        expect(lines.length).toBeGreaterThan(0);
        expect(
          lines.filter((l) => l.startsWith("✗ ")),
          lines.join("\n"),
        ).toEqual([]);
      }, 300_000);
    }
  }
});
