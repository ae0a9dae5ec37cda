// GradLab Lite's stand-in for node:util's inspect (lite/src/shims/inspect.ts): a value a cell returns
// must print in the browser as the server kernel prints it (with util.inspect, kernel/display/bundle.ts).
import { inspect as nodeInspect } from "node:util";
import { describe, expect, it } from "vitest";
import { format, inspect } from "../../lite/src/shims/inspect.ts";

class Point {
  constructor(
    public x: number,
    public y: number,
  ) {}
}
const custom = { [Symbol.for("nodejs.util.inspect.custom")]: () => "tensor([1., 2.])" };

describe("the Worker's inspect", () => {
  const opts = { depth: 4, colors: false, maxArrayLength: 100, breakLength: 100 };
  it.each([
    ["a number", 42],
    ["negative zero", -0],
    ["a string", "a/b"],
    ["a string with a quote", "it's"],
    ["null", null],
    ["undefined", undefined],
    ["a bigint", 12n],
    ["a boolean", true],
    ["an array", [1, 2, 3]],
    ["an empty array", []],
    ["nested", { a: 1, b: "x", c: [true, null] }],
    ["an empty object", {}],
    ["a class instance", new Point(3, 4)],
    ["a Map", new Map([["a", 1]])],
    ["a Set", new Set([1, 2])],
    ["a function", function named() {}],
    ["a class", Point],
    ["an object printing itself", custom],
    ["an array of those", [custom, custom]],
    ["a typed array", new Float32Array([1, 2])],
    ["a string with both quotes", `it's "x"`],
  ])("%s prints as util.inspect prints it", (_name, value) => {
    expect(inspect(value, opts)).toBe(nodeInspect(value, opts));
  });

  it("keeps every element of a long array, one per line (Node groups them in columns: a known difference)", () => {
    const long = Array.from({ length: 120 }, (_, i) => i % 3);
    const lines = inspect(long, opts).split("\n");
    expect(lines).toHaveLength(100 + 3); // the brackets and "... 20 more items"
    expect(lines.at(-2)?.trim()).toBe("... 20 more items");
  });

  it("formats console.log's arguments as Node does", () => {
    expect(format("hypot", 5, { a: [1] }, "x")).toBe("hypot 5 { a: [ 1 ] } x");
  });
});
