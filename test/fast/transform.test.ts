// The cell transform in process, without a kernel or the runtime: redeclaration across cells,
// top-level await, the interrupt checks in loops and functions, the last expression as the value.
import { beforeAll, describe, expect, it } from "vitest";
import { ownershipUntilLoaded } from "../../kernel/executor/ownership.ts";
import { runInThisContext } from "node:vm";
import { IRQ, RT, transformCell, CellSyntaxError } from "../../kernel/executor/transform.ts";

const g = globalThis as Record<string, any>;
/** For the tests that read the temporaries' arrows: without ownership.ts's calls around them. */
const NO_OWNERSHIP = { ownership: false };
const irq = new Int32Array(new SharedArrayBuffer(4));
class Interrupted extends Error {}

beforeAll(() => {
  g[IRQ] = irq;
  g[RT] = {
    import: (spec: string) => import(spec),
    defaultExport: (m: { default?: unknown }) => (m && "default" in m ? m.default : m),
    namedExport: (m: Record<string, unknown>, name: string) => m[name],
    // as the executor does for the running cell: a set flag stops the cell by throwing
    interrupted: () => {
      if (Atomics.load(irq, 0) !== 0) throw new Interrupted("interrupted");
    },
    ...ownershipUntilLoaded(),
  };
});

let n = 0;
async function cell(source: string): Promise<{ value: unknown; hasValue: boolean }> {
  const t = transformCell(source, `cell${++n}.ts`);
  for (const name of t.names) if (!(name in g)) g[name] = undefined;
  const value = await (runInThisContext(t.code, { filename: `fast-cell${n}.js` }) as Promise<unknown>);
  return { value, hasValue: t.hasTopLevelValue && value !== undefined };
}

describe("cell transform", () => {
  it("top-level declarations persist across cells and may be declared again, const included", async () => {
    await cell("const a: number = 1; let b = 2; function f() { return 'f1' } class C { v = 1 }");
    expect([g.a, g.b, g.f(), new g.C().v]).toEqual([1, 2, "f1", 1]);
    await cell("const a = 'again'; let b: string = 'b2'; function f() { return 'f2' } class C { v = 2 }");
    expect([g.a, g.b, g.f(), new g.C().v]).toEqual(["again", "b2", "f2", 2]);
    // destructuring declares each name
    await cell("const { p, q: [r] } = { p: 1, q: [2] }");
    expect([g.p, g.r]).toEqual([1, 2]);
  });

  it("the last expression is the cell's value; a declaration, an empty cell or a trailing `;` statement has none", async () => {
    expect(await cell("const v = 20\nv + 1")).toEqual({ value: 21, hasValue: true });
    expect(await cell("'a' + 'b'")).toEqual({ value: "ab", hasValue: true }); // esbuild would drop it
    expect((await cell("const w = 3")).hasValue).toBe(false);
    expect((await cell("// nothing")).hasValue).toBe(false);
    expect(await cell("if (true) { 5 }")).toMatchObject({ hasValue: false });
  });

  it("top-level await works, in expressions and declarations, and the value is awaited", async () => {
    const r = await cell("const t = await new Promise<number>((res) => setTimeout(() => res(5), 1)); t * 2");
    expect(r).toEqual({ value: 10, hasValue: true });
    expect(g.t).toBe(5);
    expect((await cell("await Promise.resolve('done')")).value).toBe("done");
  });

  it("every loop body and function entry checks the interrupt flag", async () => {
    // trip() sets the flag on its third call, from inside the loop or function: only a check in the
    // loop body or at function entry can stop these (without one they never end)
    let calls = 0;
    g.trip = () => void (++calls === 3 && Atomics.store(irq, 0, 1));
    const loops = {
      for: "for (;;) { trip() }",
      while: "while (true) trip()",
      doWhile: "do { trip() } while (true)",
      forOf: "for (const x of (function* () { for (;;) yield 1 })()) trip()",
      forIn: "const big: Record<string, number> = {}; for (let i = 0; i < 10; i++) big['k' + i] = i; for (const k in big) trip(); throw new Error('ran out')",
      recursion: "function down(k: number): number { trip(); return down(k + 1) } down(0)",
      arrow: "const spin = (): void => { trip(); spin() }; spin()",
      method: "const o = { m(): void { trip(); this.m() } }; o.m()",
    };
    for (const [name, src] of Object.entries(loops)) {
      calls = 0;
      try {
        await expect(cell(src), name).rejects.toBeInstanceOf(Interrupted);
        expect(calls, name).toBe(3);
      } finally {
        Atomics.store(irq, 0, 0);
      }
    }
    // and with the flag clear, the checks change nothing
    expect((await cell("let s = 0; for (let i = 0; i < 5; i++) { s += i } s")).value).toBe(10);
  });

  it("a syntax error is a CellSyntaxError with esbuild's message", () => {
    expect(() => transformCell("const = 1", "bad.ts")).toThrow(CellSyntaxError);
  });

  it("statement arrows take uncaptured locals as arguments, and leave captured or written ones to closures", async () => {
    const code = transformCell(
      "function f(x) { let h = x; for (const b of [1, 2]) { const g = (t) => t + b; h = g(h); } return h }",
      "t.ts",
      NO_OWNERSHIP,
    ).code;
    // h and g are read only by f itself: passed in, so the closure g (made in the loop) cannot keep h
    expect(code).toContain("h = (((g, h) => (g(h)))(g, h))");
    // same results as plain JavaScript, where a closure reads or writes a local between the reads
    const fns = `
      function flow(x) { let h = x; for (const b of [1, 2]) { const g = (t) => t + b; h = g(h); } return h }
      function counter() { let n = 0; const inc = () => n++; const r = [inc(), n, inc() + n]; return r }
      function swap() { let a = 1, b = 2; [a, b] = [b, Math.max(a, 0)]; let c = 0; c += Math.abs(a - 10); c = c + (c++, Math.abs(c)); return [a, b, c] }
      function nested() { let hits = 0; [1, 2, 3].forEach((v) => { hits += v }); const later = [4].map((v) => v + hits); return [hits, later[0]] }`;
    const expected = new Function(`${fns}; return [flow(0), counter(), swap(), nested()]`)();
    expect(expected).toEqual([3, [0, 1, 3], [2, 1, 17], [6, 10]]);
    await cell(`${fns}\nres = [flow(0), counter(), swap(), nested()]`);
    expect(g.res).toEqual(expected);
  });

  it("a call's operands that make temporaries get their own frames, and compute what plain JavaScript does", async () => {
    const code = transformCell("function fwd(x) { return l2(act(l1(x))).add(x) }", "t.ts", NO_OWNERSHIP).code;
    // act's argument is linear1's output, freed in Python once act returns: it lives in an arrow's frame;
    // and add's receiver is l2's output alone (act's is freed in Python once l2 returns)
    expect(code).toContain("return ((() => (l2(((() => (act(l1(x))))()))))()).add(x)");
    // a single call is the operand itself (held in Python too): not wrapped
    expect(code).not.toContain("((() => (l1(x)))())");
    // evaluation order, `this`, `arguments`, spread, optional chains, getters, await and super all behave
    // as without the transform
    const fns = `
      const log = [];
      const t = (v) => (log.push(v), v);
      class Box { constructor(v) { this.v = v } add(o) { return new Box(this.v + (o instanceof Box ? o.v : o)) } twice() { return new Box(this.v * 2) } get val() { return t(this.v) } }
      class Sub extends Box { add(o) { return super.add(new Box(t(1)).twice()).twice() } }
      function order() { log.length = 0; const r = Math.max(t(1), Math.min(t(2), t(3)), Math.abs(t(-4))); return [r, log.join()] }
      function self() { return new Box(1).twice().add(new Box(2).twice().twice()).twice().val }
      function args() { return Math.max(...[t(1), t(2)].map((v) => v * 2), Math.abs(arguments.length)) }
      function optional(o) { return [o?.b().twice().v, o?.b?.().twice().add(new Box(1).twice()).v] }
      async function awaited() { return Math.max(await Promise.resolve(t(5)), Math.abs(await Promise.resolve(-6))) }
      function derived() { return new Sub(3).add(0).v }
      function params() { return String(JSON.stringify([[1, 2], [3]].map((row) => row.filter((b) => b > 1).map((b) => b * 2)))) }`;
    const run = `[order(), self(), args(1, 2, 3), optional(null), optional({ b: () => new Box(2) }), await awaited(), derived(), params()]`;
    const expected = await new Function(`return (async () => { ${fns}; return ${run} })()`)();
    expect(expected).toEqual([[4, "1,2,3,-4"], 20, 4, [undefined, undefined], [4, 6], 6, 10, "[[4],[6]]"]);
    await cell(`${fns}\nres = ${run}`);
    expect(g.res).toEqual(expected);
  });

  it("jsPosition maps a line and column of the transformed code back to the cell (the inserts shift columns)", () => {
    const src = "let q = 0\nfunction sq(t) {\n  const s = Math.abs(t) * 2\n  return s\n}\nq = sq(3) + sq(4)\n";
    const t = transformCell(src, "cols.js");
    const lines = t.code.split("\n");
    // every identifier of the cell found in the code maps back to where it is in the cell
    for (const [name, line, col] of [
      ["abs", 3, 18],
      ["sq", 6, 5],
      ["sq", 6, 13],
      ["return", 4, 3],
    ] as const) {
      let from = 0;
      if (name === "sq" && col === 13) from = lines[line - 1].indexOf("sq(") + 1;
      // (a call's name also appears in what the transform inserts: `"abs"` for the policy that lends its arguments)
      const at = lines[line - 1].indexOf(name === "return" ? name : `${name}(`, from);
      expect(at).toBeGreaterThanOrEqual(0);
      expect(t.jsPosition(line, at + 1)).toEqual({ line, col });
    }
  });
});
