// `gradlab install` ships the kernelspec's logos (JupyterLab's Launcher tile, the kernel picker).
import { mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { installKernelspec } from "../kernel/cli/install.ts";

describe("kernelspec", () => {
  it("is installed with logo-32x32.png, logo-64x64.png and logo-svg.svg", async () => {
    const prefix = mkdtempSync(join(tmpdir(), "gradlab-spec-"));
    const dir = await installKernelspec(["--prefix", prefix]);
    expect(readdirSync(dir).sort()).toEqual(["kernel.json", "logo-32x32.png", "logo-64x64.png", "logo-svg.svg"]);
    for (const n of [32, 64]) {
      const png = readFileSync(join(dir, `logo-${n}x${n}.png`));
      expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
      expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([n, n]);
    }
    expect(readFileSync(join(dir, "logo-svg.svg"), "utf8")).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  }, 120_000);
});
