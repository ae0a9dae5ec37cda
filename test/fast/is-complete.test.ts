// is_complete in process: what a console frontend asks before running what was typed.
import { describe, expect, it } from "vitest";
import { isComplete, IS_COMPLETE_MAX_LINES } from "../../kernel/handlers/misc.ts";

describe("is_complete", () => {
  it("complete statements, TypeScript included", () => {
    expect(isComplete("const x: number = 1")).toEqual({ status: "complete" });
    expect(isComplete("for (let i = 0; i < 3; i++) {\n  console.log(i)\n}")).toEqual({ status: "complete" });
    expect(isComplete("")).toEqual({ status: "complete" });
  });

  it("an open block, call, array or template is incomplete, with the indent to continue at", () => {
    expect(isComplete("for (let i = 0; i < 3; i++) {")).toEqual({ status: "incomplete", indent: "  " });
    expect(isComplete("function f() {\n    return [")).toEqual({ status: "incomplete", indent: "      " });
    expect(isComplete("foo(1,")).toEqual({ status: "incomplete", indent: "" });
    expect(isComplete("const s = `line one")).toEqual({ status: "incomplete", indent: "" });
    expect(isComplete("/* a comment")).toEqual({ status: "incomplete", indent: "" });
  });

  it("code that no more typing can fix is invalid", () => {
    expect(isComplete("const = 5")).toEqual({ status: "invalid" });
    expect(isComplete("1 +* 2")).toEqual({ status: "invalid" });
    expect(isComplete("const s = 'unterminated\nx")).toEqual({ status: "invalid" });
  });

  it("answers unknown past its bounds (the frontend then runs the code as typed)", () => {
    expect(isComplete("x\n".repeat(IS_COMPLETE_MAX_LINES + 1))).toEqual({ status: "unknown" });
    expect(isComplete("x".repeat((1 << 20) + 1))).toEqual({ status: "unknown" });
  });
});
