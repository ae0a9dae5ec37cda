// The kernel's language service: `torch` is a namespace for types and values both, so the
// notebooks' own style (`torch.Tensor` and `torch.nn.Module` as types) type-checks with no warning.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeAnswer } from "../kernel/language/answers.ts";
import { languageService } from "../kernel/language/client.ts";

// A small window of remembered cells, so that the test can push a cell out of it.
process.env.GRADLAB_LS_HISTORY_BYTES = "400";
const ls = languageService();
// Each request has its own bound (GRADLAB_LS_TIMEOUT_MS); loading TypeScript and compiling the
// runtime's types comes first and may take longer on a busy machine: wait for the service to say
// it is ready (bounded), then ask.
beforeAll(async () => {
  ls.warm();
  const end = Date.now() + 90_000;
  while (!ls.loaded) {
    if (Date.now() > end) throw new Error("the language service did not load in 90 s");
    await new Promise((r) => setTimeout(r, 100));
  }
}, 100_000);
afterAll(() => (ls as unknown as { worker?: { terminate(): unknown } }).worker?.terminate());

describe("language service", () => {
  it("knows torch as a namespace (types) and a value", async () => {
    const code = [
      "const x: torch.Tensor = torch.randn(2, 3, { requires_grad: true });",
      "const fn: torch.autograd.Node | null = x.grad_fn;",
      "class M extends torch.nn.Module { forward(t: torch.Tensor): torch.Tensor { return t.relu(); } }",
      "const m: torch.nn.Module = new M();",
      "const n: number = x.numel();",
      "const s: string = torch.f`${x.shape}`;",
    ].join("\n");
    const diags = await ls.diagnostics(code);
    expect(diags).not.toBeNull();
    expect(diags!.map((d) => `${d.line}:${d.col} TS${d.code} ${d.text}`)).toEqual([]);
  }, 60_000);

  it("still reports real type errors", async () => {
    const diags = await ls.diagnostics("const x: torch.Tensor = 3;\nconst y: number = torch.randn(2);");
    expect(diags!.map((d) => d.code)).toEqual([2322, 2322]);
  }, 60_000);

  it("checks against a bounded window of recent cells; older names stay known", async () => {
    ls.addCell("const alpha: number = 1;");
    const filler = (i: number) => `const filler${i}: string = "${"x".repeat(150)}";`;
    for (let i = 0; i < 4; i++) ls.addCell(filler(i)); // 4 × ~180 bytes: alpha falls out of the 400-byte window
    ls.addCell("const beta: string = 'b';");
    const diags = await ls.diagnostics("alpha.toFixed(1);\nbeta.toFixed(1);");
    // alpha is still declared (as any): no TS2304; beta keeps its type from its recent cell
    expect(diags!.map((d) => `${d.line} TS${d.code}`)).toEqual(["2 TS2551"]); // toFixed does not exist on string
  }, 60_000);

  it("lists a tensor's public names before its underscored ones, which an underscore brings forward", async () => {
    const code = "const t = torch.ones(2, { requires_grad: true }).mul(2);\nt.";
    const all = await completeAnswer(ls, code, code.length);
    const first = all.matches.findIndex((m) => m.startsWith("_"));
    expect(all.matches).toContain("backward");
    expect(first).toBeGreaterThan(0);
    expect(all.matches.slice(first).every((m) => m.startsWith("_"))).toBe(true);
    expect(all.metadata._jupyter_types_experimental.map((t) => t.text)).toEqual(all.matches);
    const under = await completeAnswer(ls, `${code}_`, code.length + 1);
    expect(under.matches.length).toBeGreaterThan(0);
    expect(under.matches.every((m) => m.startsWith("_"))).toBe(true);
  }, 60_000);
});
