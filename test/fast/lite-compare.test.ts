// The Lite tier's comparison of a notebook's text in the browser against the server kernel's
// (test/lite/compare.ts): float rounding passes, anything else is listed.
import { describe, expect, it } from "vitest";
import { closeNumbers, sameLine, textDifferences } from "../lite/compare.ts";

describe("Lite text comparison", () => {
  it("tolerates float rounding between two GPUs, and nothing else", () => {
    expect(closeNumbers("-0.340953", "-0.340976")).toBe(true); // randn after the same seed: SwiftShader, lavapipe
    expect(closeNumbers("0.1234", "0.1236")).toBe(true); // two units of the last printed digit
    expect(closeNumbers("1.5000e-07", "1.5001e-07")).toBe(true);
    expect(closeNumbers("0.0001", "0.0004")).toBe(false);
    expect(closeNumbers("17.6", "27.3")).toBe(false); // a memory figure that differs is a difference
    expect(closeNumbers("4194304", "4194816")).toBe(false); // bytes are exact
    expect(closeNumbers("4", "4.000001")).toBe(true); // JavaScript prints a whole float without its point
    expect(closeNumbers("0.30000001192092896", "0.3000000715255737")).toBe(true);
    expect(sameLine("tensor([0.1234, -1.0000])", "tensor([0.1235, -1.0000])")).toBe(true);
    expect(sameLine("tensor([0.1234, -1.0000])", "tensor([0.1234, -1.0000], grad)")).toBe(false);
    expect(sameLine("✓ loss: 0.25", "✗ loss: 0.25")).toBe(false);
    // an exercise check's line, cut at a length: the cut falls elsewhere when the digits differ
    expect(
      sameLine(
        "✗ got null, expected [[168.643,-149.751],[55.5127,-78.1205,190.855,14....",
        "✗ got null, expected [[168.622,-149.715],[55.4941,-78.132,190.805,14.1...",
      ),
    ).toBe(true);
    expect(sameLine("✗ got null, expected [[168.643,-149.751,...", "✗ got null, expected [[-168.643,-149.751,...")).toBe(false);
  });

  it("lists the lines that differ, with the lines around them still matched", () => {
    const server = ["a 1.0000\nb 2\nc 3\n", "same\n"];
    const browser = ["warning\na 1.0001\nb 5\nc 3\n", "same\n"];
    expect(textDifferences(server, browser).map((d) => d.text)).toEqual([
      "cell 1: browser only, line 1: warning",
      "cell 1: server line 2: b 2\n        browser line 3: b 5",
    ]);
    expect(textDifferences(["x\n"], ["x\n", "y\n"])).toEqual([{ cell: -1, text: "1 code cells on the server, 2 in the browser" }]);
  });
});
