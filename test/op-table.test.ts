// The op table (src/api/) is the one place an op is declared: these tests hold the declarations to
// what the runtime does, so a declaration cannot drift from the code and an op cannot be left out.

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";
import { Tensor } from "../src/index.ts";
import { OP_TABLE } from "../src/api/install.ts";
import { NOT_DIFFERENTIABLE } from "../src/api/op-def.ts";
import * as functions from "../src/api/functions.ts";
import { BINARY_KERNELS, REDUCE_KERNELS, UNARY_KERNELS, wgslName } from "../src/ops/kernel-codes.ts";
import { CASES, NOT_DIFFERENTIABLE_CASES, inputs } from "./helpers/op-samples.ts";

const savedNames = (node: object) =>
  Object.getOwnPropertyNames(node)
    .filter((k) => k.startsWith("_saved_"))
    .map((k) => k.slice(7));
const resultOf = (r: unknown): Tensor => (r instanceof Tensor ? r : Array.isArray(r) ? r[0] : (r as { values: Tensor }).values);

describe("the op table", () => {
  it("declares every Tensor op method once, and every one is installed", () => {
    for (const [name, def] of OP_TABLE) {
      const d = Object.getOwnPropertyDescriptor(Tensor.prototype, name);
      expect(d, name).toBeDefined();
      expect(def.method === "getter" ? typeof d!.get : typeof d!.value, name).toBe("function");
    }
  });

  it("gives each declared function its torch.* form", () => {
    for (const name of Object.keys(functions)) expect(typeof (torch as Record<string, unknown>)[name], name).toBe("function");
    expect(torch.var).toBe(functions.var);
  });

  it("has a sample call for every op", () => {
    const missing = [...OP_TABLE.keys()].filter((k) => !(k in CASES) && !(k in NOT_DIFFERENTIABLE_CASES));
    expect(missing).toEqual([]);
  });

  for (const [name, def] of OP_TABLE) {
    if (def.grad === NOT_DIFFERENTIABLE) {
      it(`${name}: declared not differentiable, and its result never requires grad`, () => {
        const { x, y, m } = inputs();
        const out = resultOf(NOT_DIFFERENTIABLE_CASES[name](x, y, m));
        expect(out.requires_grad).toBe(false);
        expect(out.grad_fn).toBeNull();
      });
      continue;
    }
    it(`${name}: records a node it declares (${def.grad.join(", ") || "none: an alias"}) and saves only what it declares`, () => {
      const { x, y, m } = inputs();
      const out = resultOf(CASES[name](x, y, m));
      const node = out.grad_fn;
      if (def.grad.length === 0) {
        // Declared to record nothing of its own: the result is the input itself, another handle.
        expect(out._meta).toBe(x._meta);
        return;
      }
      expect(node, `${name} recorded no node`).not.toBeNull();
      expect(def.grad).toContain(node!.name());
      for (const s of savedNames(node!)) expect(def.saves ?? [], `${name} saves ${s}`).toContain(s);
    });
  }
});

describe("kernel codes", () => {
  const shader = (name: string) => readFileSync(new URL(`../kernels-wgsl/${name}.wgsl`, import.meta.url), "utf8");
  /** The op-code constants a shader names (its own `override`s, such as B_SCALAR, are not op codes). */
  const cases = (src: string, prefix: string) => {
    const overrides = new Set([...src.matchAll(/override (\w+)/g)].map((m) => m[1]));
    return new Set([...src.matchAll(new RegExp(`\\b${prefix}_[A-Z0-9_]+\\b`, "g"))].map((m) => m[0]).filter((k) => !overrides.has(k)));
  };

  it("every listed kernel has its case in the shader, and the shader names no other", () => {
    const ew = shader("elementwise");
    expect(cases(ew, "U")).toEqual(new Set(UNARY_KERNELS.map((k) => wgslName("U", k))));
    expect(cases(ew, "B")).toEqual(new Set(BINARY_KERNELS.map((k) => wgslName("B", k))));
    expect(cases(shader("reduce"), "R")).toEqual(new Set(REDUCE_KERNELS.map((k) => wgslName("R", k))));
  });

  it("no switch in the shaders uses a bare number for an op code", () => {
    for (const name of ["elementwise", "reduce"]) expect(shader(name)).not.toMatch(/case \d+u/);
  });
});
