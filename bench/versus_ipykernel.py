"""GradLab's kernel and ipykernel through jupyter_client in the same run (issue 22): the first completion
after start, printed output, and the round trip of an empty cell.

usage: JUPYTER_PATH=<dir with the gradlab kernelspec>:<ipykernel's> python3 bench/versus_ipykernel.py
- first_tab_s: from the first kernel_info_reply (wait_for_ready) to the reply of a complete_request sent
  at once (GradLab's language service loads TypeScript in a worker; a reply with no matches means it was
  not ready in time);
- print_s: a cell printing 10 x 1000 lines, request to idle (median of 5);
- roundtrip_ms: an empty cell, request to reply (median of 50).
"""
import json
import statistics
import time

from jupyter_client import KernelManager

CASES = {
    "gradlab": {
        "complete": ("const someLongVariableName = 1;\nsomeLongVar", None),
        "print": "for (let k = 0; k < 10; k++) { for (let i = 0; i < 1000; i++) console.log('line ' + i); }",
        "empty": "",
    },
    "python3": {
        "complete": ("someLongVariableName = 1\nsomeLongVar", None),
        "print": "for k in range(10):\n    for i in range(1000):\n        print('line', i)",
        "empty": "",
    },
}


def run_until_idle(kc, code):
    msg_id = kc.execute(code)
    while True:
        m = kc.get_iopub_msg(timeout=60)
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return


def measure(name):
    c = CASES[name]
    km = KernelManager(kernel_name=name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    t0 = time.perf_counter()
    code, _ = c["complete"]
    kc.complete(code, len(code))
    reply = kc.get_shell_msg(timeout=60)
    first_tab = time.perf_counter() - t0
    matches = reply["content"].get("matches", [])
    prints = []
    for _ in range(5):
        t = time.perf_counter()
        run_until_idle(kc, c["print"])
        prints.append(time.perf_counter() - t)
    trips = []
    for _ in range(50):
        t = time.perf_counter()
        kc.execute_interactive(c["empty"], timeout=60, output_hook=lambda m: None)
        trips.append((time.perf_counter() - t) * 1000)
    kc.stop_channels()
    km.shutdown_kernel()
    return {
        "first_tab_s": round(first_tab, 3),
        "first_tab_matched": "someLongVariableName" in matches,
        "print_s": round(statistics.median(prints), 3),
        "roundtrip_ms": round(statistics.median(trips), 2),
    }


print(json.dumps({"gradlab": measure("gradlab"), "ipykernel": measure("python3")}))
