// Issue 21: what a differential run on an unused seed found (gen_diff.py 1100 9173), against torch 1.13's
// texts (test/fixtures/gen_fresh_seed.py). A view saved for backward and then written in place (itself
// or its base) is named in the unpack error by its regenerated grad_fn, AsStridedBackward0, as torch
// names it; GradLab named the node the view had when it was saved (SliceBackward0).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";

const fx = JSON.parse(readFileSync(new URL("./fixtures/fresh-seed.json", import.meta.url), "utf8"));

function raised(fn: () => void): string | null {
  try {
    fn();
  } catch (e) {
    return (e as Error).message;
  }
  return null;
}

describe("a saved view written in place: torch 1.13's error text", () => {
  it("the view itself written (v3.mul_(v3))", () => {
    const v1 = torch.tensor([[-0.24], [0.96]], { requires_grad: true });
    const v2 = v1.exp();
    const v3 = v2.narrow(0, 0, 1);
    v3.mul_(v3);
    expect(raised(() => v2.sum().backward())).toBe(fx.saved_view_self);
  });
  it("its base written (v2.add_(1))", () => {
    const v1 = torch.tensor([[-0.24], [0.96]], { requires_grad: true });
    const v2 = v1.exp();
    const v3 = v2.narrow(0, 0, 1);
    const v4 = v3.mul(v3);
    v2.add_(1);
    expect(raised(() => v4.sum().backward())).toBe(fx.saved_view_base);
  });
});
