// The op table (src/api/) is the one place an op is declared: these tests hold the declarations to
// what the runtime does, so a declaration cannot drift from the code and an op cannot be left out.

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";
import { Tensor } from "../src/index.ts";
import { OP_TABLE } from "../src/api/install.ts";
import { NOT_DIFFERENTIABLE, NOT_TWICE_DIFFERENTIABLE } from "../src/api/op-def.ts";
import * as functions from "../src/api/functions.ts";
import { BINARY_KERNELS, REDUCE_KERNELS, UNARY_KERNELS, wgslName } from "../src/ops/kernel-codes.ts";
import { CASES, NOT_DIFFERENTIABLE_CASES, inputs } from "./helpers/op-samples.ts";

const savedNames = (node: object) =>
  Object.getOwnPropertyNames(node)
    .filter((k) => k.startsWith("_saved_"))
    .map((k) => k.slice(7));
const rg = { requires_grad: true } as const;
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

/**
 * Ops whose gradient torch 1.13 does not differentiate (their double backward raises there): none of the
 * table's. An op declared NOT_TWICE_DIFFERENTIABLE that is not listed here fails.
 */
const TORCH_NOT_TWICE_DIFFERENTIABLE: string[] = [];

describe("the op table: second order", () => {
  for (const [name, def] of OP_TABLE) {
    if (def.grad === NOT_DIFFERENTIABLE) continue;
    it(`${name}: declares its double backward, and its gradients are recorded with the nodes it declares`, () => {
      expect(def.gradgrad, `${name} declares no second-order behaviour (gradgrad)`).toBeDefined();
      if (def.gradgrad === NOT_TWICE_DIFFERENTIABLE) {
        expect(TORCH_NOT_TWICE_DIFFERENTIABLE, `${name} is twice differentiable in torch 1.13`).toContain(name);
        return;
      }
      const { x, y, m } = inputs();
      const out = resultOf(CASES[name](x, y, m));
      if (def.grad.length === 0) return; // an alias of its input: no formula of its own
      // An incoming gradient that requires grad, as in a double backward through grad_outputs.
      const u = torch.rand(out.shape, rg);
      const leaves = [x, y, m];
      // The op's own node applied to it (what the engine does under create_graph), so that the gradients'
      // nodes are those its formula records, not those of the sample's other ops.
      const grads = out.grad_fn!.apply([u]);
      const used = grads.flatMap((g) => (g ? [[g] as const] : []));
      expect(used.length, `${name}: no input got a gradient`).toBeGreaterThan(0);
      for (const [g] of used) {
        if (g._meta === u._meta) continue; // the incoming gradient itself
        if (!g.requires_grad && def.gradgrad!.includes("zeros")) continue; // zeros_like(grad), as PyTorch's
        expect(g.requires_grad, `${name}: its gradient is not on the graph under create_graph`).toBe(true);
        expect(def.gradgrad, `${name}: its gradient was recorded by ${g.grad_fn?.name()}`).toContain(g.grad_fn?.name());
      }
      // and it can be differentiated again, to the incoming gradient and to the inputs
      let total = used[0][0].sum();
      for (const [g] of used.slice(1)) total = total.add(g.sum());
      if (!total.requires_grad) return; // every gradient is the incoming one: nothing to differentiate
      const second = torch.autograd.grad([total], [u, ...leaves], { allow_unused: true });
      expect(second.some((g) => g !== null)).toBe(true);
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
    // numbered cases are allowed only where a switch picks a binding by its slot number (ld4/st4)
    for (const name of ["elementwise", "reduce"]) {
      const text = shader(name);
      const bare = [...text.matchAll(/case \d+u/g)].filter((m) => /switch (\w+)/g.exec(text.slice(text.lastIndexOf("switch ", m.index)))?.[1] !== "slot");
      expect(bare.map((m) => `${name}: ${m[0]}`)).toEqual([]);
    }
  });
});
