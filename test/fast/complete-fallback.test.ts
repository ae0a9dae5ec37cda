// What a Tab offers before the language service has loaded (kernel/language/live.ts namesInCode): the
// names the cell spells that complete the word at the cursor, never after a dot (only a value's own
// members belong there), never the word itself or a keyword.
import { describe, expect, test } from "vitest";
import { namesInCode } from "../../kernel/language/live.ts";

describe("namesInCode", () => {
  test("offers the cell's own names that complete the word being typed", () => {
    const code = "const someLongVariableName = 1;\nconst someOther = 2;\nsomeLongVar";
    expect(namesInCode(code, code.length)).toEqual(["someLongVariableName"]);
    expect(namesInCode("const someA = 1, someB = 2;\nsome", 32)).toEqual(["someA", "someB"]);
  });

  test("nothing after a dot, for an empty word, or for the word alone", () => {
    expect(namesInCode("const lossValue = 1;\nx.loss", 26)).toEqual([]);
    expect(namesInCode("const lossValue = 1;\n", 21)).toEqual([]);
    expect(namesInCode("lossV", 5)).toEqual([]);
  });

  test("keywords are left to the live completions, which list them already", () => {
    expect(namesInCode("const constant = 1;\ncons", 24)).toEqual(["constant"]);
  });

  test("the cursor in the middle of the code completes the word there", () => {
    const code = "let gradNorm = 0;\ngrad\nconsole.log(gradNorm)";
    expect(namesInCode(code, 22)).toEqual(["gradNorm"]);
  });
});
