// The course's check.memory verdicts where memory figures are exact (Node: the runtime reclaims before every
// figure) and where they may still count tensors not yet collected (a browser: GradLab Lite). The browser
// itself runs these lines in the Lite tier (test/lite/lite.browser.ts); here each side of each figure kind.
import { afterEach, describe, expect, it, vi } from "vitest";
import { check } from "../notebooks/check.ts";

const MiB = 2 ** 20;
/** What check.memory prints, with the runtime's reclaim.synchronous statistic as given. */
function verdict(synchronous: 0 | 1, ...args: Parameters<typeof check.memory>): string {
  const torch = { cuda: { memory_stats: () => ({ "reclaim.synchronous": synchronous }) } };
  vi.stubGlobal("torch", torch);
  const lines: string[] = [];
  const log = vi.spyOn(console, "log").mockImplementation((...a: unknown[]) => void lines.push(a.join(" ")));
  try {
    check.memory(...args);
  } finally {
    log.mockRestore();
  }
  return lines.join("\n").slice(0, 1);
}
afterEach(() => vi.unstubAllGlobals());

describe("check.memory", () => {
  it("judges every answer where figures are exact (the server kernel)", () => {
    expect(verdict(1, "right", MiB, MiB)).toBe("✓");
    expect(verdict(1, "too low", 0, MiB)).toBe("✗");
    expect(verdict(1, "too high", 2 * MiB, MiB)).toBe("✗");
    expect(verdict(1, "freed, too high", 2 * MiB, MiB, undefined, { figure: "freed" })).toBe("✗");
    expect(verdict(1, "within tol_bytes", MiB + 512, MiB, undefined, { tol_bytes: 1024 })).toBe("✓");
  });

  it("in a browser, gives ✗ only where the browser's figure cannot be the one that is off", () => {
    // allocated bytes (the default): the browser's figure is at least PyTorch's
    expect(verdict(0, "right", MiB, MiB)).toBe("✓");
    expect(verdict(0, "above the figure", 2 * MiB, MiB)).toBe("✗");
    expect(verdict(0, "above, beyond tol_bytes", MiB + 2048, MiB, undefined, { tol_bytes: 1024 })).toBe("✗");
    expect(verdict(0, "below the figure", 0, MiB)).toBe("?");
    // freed bytes: the browser's figure is at most PyTorch's
    expect(verdict(0, "freed, below", 0, MiB, undefined, { figure: "freed" })).toBe("✗");
    expect(verdict(0, "freed, above", 2 * MiB, MiB, undefined, { figure: "freed" })).toBe("?");
    // a figure no collection changes
    expect(verdict(0, "exact, below", 0, MiB, undefined, { figure: "exact" })).toBe("✗");
    expect(verdict(0, "exact, above", 2 * MiB, MiB, undefined, { figure: "exact" })).toBe("✗");
    // no number at all is wrong everywhere
    expect(verdict(0, "no answer", undefined, MiB)).toBe("✗");
  });
});
