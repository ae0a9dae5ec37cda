"""The Jupyter kernel conformance suite (jupyter_kernel_test) against the gradlab kernelspec.

Run by test/kernel/conformance.test.ts with JUPYTER_PATH pointing at a freshly installed kernelspec.
Every attribute of KernelTests is set, so no test is skipped.
"""
import unittest

import jupyter_kernel_test


class GradLabKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "gradlab"
    language_name = "typescript"
    file_extension = ".ts"

    code_hello_world = 'console.log("hello, world")'
    code_stderr = 'console.error("something went wrong")'

    completion_samples = [
        {"text": "Math.flo", "matches": {"floor"}},
        {"text": "const greeting: string = 'hi'; greeting.toUpp", "matches": {"toUpperCase"}},
    ]

    complete_code_samples = ["1 + 1", "const x: number = 1", "function f(a: number) { return a }", ""]
    incomplete_code_samples = ["function f(a: number) {", "const s = `abc", "for (const i of [1, 2]) {\n  console.log(i)"]
    invalid_code_samples = ["const = 5", "1 +* 2", "let 5x = 1"]

    code_page_something = "Math.floor?"

    code_generate_error = 'throw new Error("boom")'

    code_execute_result = [
        {"code": "6 * 7", "result": "42"},
        {"code": "'type' + 'script'", "result": "'typescript'"},
        {"code": "[1, 2, 3].map((x: number) => x * 2)", "result": "[ 2, 4, 6 ]"},
        {"code": '({ [Symbol.for("Jupyter.display")]: () => ({ "text/html": "<i>rich</i>" }) })',
         "mime": "text/html", "result": "<i>rich</i>"},
    ]

    code_display_data = [
        {"code": 'display.html("<b>bold</b>")', "mime": "text/html"},
        {"code": "display({ a: 1 })", "mime": "text/plain"},
        {"code": 'display.markdown("# title")', "mime": "text/markdown"},
    ]

    code_history_pattern = "6 ? 7"
    supported_history_operations = ("tail", "range", "search")

    code_inspect_sample = "Math.floor"

    code_clear_output = 'console.log("before"); clear_output()'


if __name__ == "__main__":
    unittest.main(verbosity=2)
