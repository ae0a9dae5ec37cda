// Issue 21: an option GradLab does not support raises a PyTorch-style error; it is never dropped.
// JavaScript ignores an unknown property of an options object and an extra argument, so every entry
// point checks: the op table's ops (declared keywords, src/api/op-def.ts), Tensor's other methods,
// torch.* functions and torch.nn.functional. This file walks the API surface and passes each an
// unknown keyword in the argument patterns a call can take; no call may succeed with it.
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";
import { Tensor } from "../src/index.ts";
import { OP_TABLE } from "../src/api/install.ts";
import { TypeError_ } from "../src/errors.ts";

/** A call with arguments its TypeScript type refuses (what a cell, whose types are stripped, can do). */
const loose = (f: unknown) => f as (...a: unknown[]) => unknown;

const BOGUS = { bogus_kw: 1 };
const x = () => torch.randn(3, 4);
const patterns = (t: Tensor): unknown[][] => [[], [0], [1], [t], [x()], [[3, 4]], [0, 1], [1, 1], [[0]], [0, t], [t, t], [t, 0], [3, 4], [[12]], [-1]];

/** The patterns (printed) under which fn accepted a trailing unknown keyword: none, or it was dropped. */
async function accepting(fn: (...a: unknown[]) => unknown, t: Tensor): Promise<string | null> {
  for (const args of patterns(t)) {
    try {
      const r = fn(...args, { ...BOGUS });
      if (r instanceof Promise) await r;
    } catch {
      continue;
    }
    return JSON.stringify(args.map((a) => (a instanceof Tensor ? "T" : a)));
  }
  return null;
}

/** Functions that take a user callback or are not torch API (their extra arguments are the callback's). */
const NOT_KEYWORD_TAKERS = new Set([
  // runtime helpers with no PyTorch counterpart taking options
  "_save_runtime_state",
  "print",
  "str",
  "repr",
  "promoteTypes",
  "promoteWithScalar",
  "scalarType",
  "f",
  "gc", // torch.gc(): GradLab's own (a full collection), no PyTorch counterpart
]);

describe("no entry point drops an unknown option (issue 21)", () => {
  it("every op in the op table raises PyTorch's TypeError for an unknown keyword, as a method and as torch.*", () => {
    const t = x();
    for (const [name, def] of OP_TABLE) {
      if (def.method === "getter") continue;
      const method = (t as unknown as Record<string, (...a: unknown[]) => unknown>)[name];
      expect(() => method.call(t, { ...BOGUS }), name).toThrow(new RegExp(`^${name}\\(\\) got an unexpected keyword argument 'bogus_kw'`));
      expect(() => method.call(t, 1, { ...BOGUS }), name).toThrow(TypeError_);
      const fn = (torch as unknown as Record<string, unknown>)[name];
      if (typeof fn === "function")
        expect(() => (fn as (...a: unknown[]) => unknown)(t, 1, { ...BOGUS }), `torch.${name}`).toThrow(/unexpected keyword argument 'bogus_kw'/);
    }
  });

  it("a PyTorch keyword GradLab takes positionally is named, not dropped: x.softmax({dim: 1}), x.transpose({dim0: 0, dim1: 1})", () => {
    const t = x();
    expect(() => t.softmax({ dim: 1 } as never)).toThrow(
      /softmax\(\) got an unexpected keyword argument 'dim' \(GradLab takes dim positionally: softmax\(dim\)\)/,
    );
    expect(() => loose(t.transpose).call(t, { dim0: 0, dim1: 1 })).toThrow(TypeError_);
    expect(() => loose(t.max).call(t, { dim: 0 })).toThrow(/GradLab takes dim positionally: max\(dim\)/);
  });

  it("declared keywords reach the op, unsupported PyTorch keywords raise unless at their default", async () => {
    const t = torch.tensor([
      [1, 2],
      [3, 5],
    ]);
    expect(await t.sum({ dim: 1, keepdim: true }).tolist()).toEqual([[3], [8]]);
    expect(await t.add(1, { alpha: 2 }).tolist()).toEqual([
      [3, 4],
      [5, 7],
    ]);
    expect(await t.std(1, { correction: 0 }).tolist()).toEqual([0.5, 1]);
    expect(await (loose(t.div).call(t, 2, { rounding_mode: null }) as Tensor).tolist()).toEqual([
      [0.5, 1],
      [1.5, 2.5],
    ]);
    expect(() => loose(t.div).call(t, 2, { rounding_mode: "floor" })).toThrow(/GradLab's div\(\) does not support rounding_mode=floor/);
    expect(await t.sum({ dtype: "float32" } as never).tolist()).toBe(11);
    expect(() => loose(t.sum).call(t, { out: torch.zeros([]) })).toThrow(/GradLab's sum\(\) does not support out=/);
    expect(await t.clamp({ min: 2, max: 4 }).tolist()).toEqual([
      [2, 2],
      [3, 4],
    ]);
    expect(() => loose(t.clamp).call(t, { min: 2, bogus_kw: 1 })).toThrow(/clamp\(\) got an unexpected keyword argument 'bogus_kw'/);
  });

  it("Tensor's other methods: an options object or extra argument raises", async () => {
    const t = x();
    const skip = new Set(["constructor", "dispose", "check", "toString", "backward", "register_hook", "retain_grad", "is_inference"]);
    const names = new Set<string>();
    for (let p = Tensor.prototype; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) for (const k of Object.getOwnPropertyNames(p)) names.add(k);
    const accepted: Record<string, string> = {};
    for (const name of [...names].sort()) {
      if (name.startsWith("_") || skip.has(name) || OP_TABLE.has(name)) continue;
      const d = Object.getOwnPropertyDescriptor(Tensor.prototype, name) ?? Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Tensor.prototype), name);
      if (!d || typeof d.value !== "function") continue;
      const got = await accepting((...a) => d.value.apply(x(), a), t);
      if (got) accepted[name] = got;
    }
    expect(accepted).toEqual({});
  });

  it("requires_grad_({requires_grad: false}) clears the flag (it set it to the object)", () => {
    const t = torch.ones(2, { requires_grad: true });
    t.requires_grad_({ requires_grad: false });
    expect(t.requires_grad).toBe(false);
    expect(() => loose(t.requires_grad_).call(t, 1)).toThrow(/requires_grad_\(\): argument 'requires_grad' must be bool, not int/);
  });

  it("torch.* and torch.nn.functional functions: an unknown keyword raises", async () => {
    const t = x();
    const accepted: Record<string, string> = {};
    const walk = async (ns: Record<string, unknown>, prefix: string) => {
      for (const name of Object.keys(ns).sort()) {
        const f = ns[name];
        if (typeof f !== "function" || /^[A-Z]/.test(name) || NOT_KEYWORD_TAKERS.has(name) || OP_TABLE.has(name)) continue;
        const got = await accepting(f as (...a: unknown[]) => unknown, t);
        if (got) accepted[prefix + name] = got;
      }
    };
    await walk(torch as unknown as Record<string, unknown>, "torch.");
    await walk(torch.nn.functional as unknown as Record<string, unknown>, "F.");
    torch.manual_seed(0); // the walk called manual_seed / set_rng_state with junk: they must have refused it
    expect(accepted).toEqual({});
  });

  it("arange finds its options object wherever it stands (arange(3, {dtype}) gave an empty tensor)", async () => {
    expect(await torch.arange(3, { dtype: "float32" }).tolist()).toEqual([0, 1, 2]);
    expect(await (loose(torch.arange)({ end: 3 }) as Tensor).tolist()).toEqual([0, 1, 2]);
    expect(await (loose(torch.arange)(1, 7, { step: 2 }) as Tensor).tolist()).toEqual([1, 3, 5]);
    expect(() => loose(torch.arange)(3, BOGUS)).toThrow(/arange\(\) got an unexpected keyword argument 'bogus_kw'/);
  });
});
