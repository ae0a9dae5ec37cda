"""GradLab's kernel and ipykernel through jupyter_client in the same run (issue 22): the first completion
after start, printed output, the round trip of an empty cell, and restarts; with each metric's ratio
(GradLab / ipykernel: above 1 means GradLab is slower) and the load averages before and after, since
a shared machine's figures mean little without them.

usage: JUPYTER_PATH=<dir with the gradlab kernelspec>:<ipykernel's> python3 bench/versus_ipykernel.py [ROUNDS] [--also NAME]
  --also NAME: another GradLab kernelspec (another build, `gradlab install --name NAME` from its tree),
  measured in the same run, its first Tab interleaved with the others' round by round (an A/B on a
  machine whose load changes by the minute).
- first_tab_s: from the first kernel_info_reply (wait_for_ready) to the reply of a complete_request sent
  at once (GradLab's language service loads TypeScript in a worker; a reply with no matches means it was
  not ready in time);
- print_s: a cell printing 10 x 1000 lines, request to idle (median of 5);
- roundtrip_ms: an empty cell, request to reply (median of 50);
- restart_s: restart_kernel(now=False) to the reply of a cell in the new kernel (median of ROUNDS,
  default 10; bench/restart.py), and how each old process ended (anything but exit 0 is unclean).
Printed output, round trips and restarts are measured with the kernels taking turns, cell by cell.
The first-Tab figure is measured for ROUNDS fresh kernels too (median and max), since one start says
little on a loaded machine.
"""
import json
import os
import statistics
import sys
import time

from jupyter_client import KernelManager

from restart import restart_once

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 10
KERNELS = ["gradlab", "python3"] + ([sys.argv[sys.argv.index("--also") + 1]] if "--also" in sys.argv else [])


def case(name):
    return CASES["python3" if name == "python3" else "gradlab"]

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
    """Runs a cell; returns the number of lines it printed (seen on IOPub before its idle status)."""
    msg_id = kc.execute(code)
    lines = 0
    while True:
        m = kc.get_iopub_msg(timeout=60)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "stream":
            lines += m["content"]["text"].count("\n")
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return lines


def first_tab(name):
    """A fresh kernel: seconds from its first kernel_info_reply to the reply of a completion sent at
    once, whether that reply had the match, and the started kernel (for the other measurements)."""
    km = KernelManager(kernel_name=name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    t0 = time.perf_counter()
    code, _ = case(name)["complete"]
    msg_id = kc.complete(code, len(code))
    # wait_for_ready may leave further kernel_info_replies on the shell channel: skip to ours
    while (reply := kc.get_shell_msg(timeout=60))["parent_header"].get("msg_id") != msg_id:
        pass
    return time.perf_counter() - t0, "someLongVariableName" in reply["content"].get("matches", []), km, kc


def first_tabs():
    """ROUNDS fresh kernels of each kind, interleaved; the last of each stays up for the other figures."""
    tabs = {n: [] for n in KERNELS}
    matched = {n: [] for n in KERNELS}
    kept = {}
    for r in range(ROUNDS):
        for name in KERNELS:
            t, ok, km, kc = first_tab(name)
            tabs[name].append(t)
            matched[name].append(ok)
            if r < ROUNDS - 1:
                kc.stop_channels()
                km.shutdown_kernel()
            else:
                kept[name] = (km, kc)
    return tabs, matched, kept


def interleaved(kept):
    """Printed output, round trips and restarts, the kernels taking turns cell by cell (and restart by
    restart), so that a machine whose load changes by the minute weighs on each kernel alike."""
    prints = {n: [] for n in kept}
    trips = {n: [] for n in kept}
    for _ in range(5):
        for name, (km, kc) in kept.items():
            t = time.perf_counter()
            printed = run_until_idle(kc, case(name)["print"])
            # a figure only for a cell that printed everything (an error would be fast, and wrong)
            assert printed == 10_000, f"{name} printed {printed} lines, not 10000"
            prints[name].append(time.perf_counter() - t)
    for _ in range(50):
        for name, (km, kc) in kept.items():
            t = time.perf_counter()
            kc.execute_interactive(case(name)["empty"], timeout=60, output_hook=lambda m: None)
            trips[name].append((time.perf_counter() - t) * 1000)
    restarts = {n: [] for n in kept}
    ends = {n: [] for n in kept}
    for _ in range(ROUNDS):
        for name, (km, kc) in kept.items():
            t, end = restart_once(km, kc, "1 + 1")
            restarts[name].append(t)
            ends[name].append(end)
    for km, kc in kept.values():
        kc.stop_channels()
        km.shutdown_kernel()
    return prints, trips, restarts, ends


def figures(tabs, matched, prints, trips, restarts, ends):
    return {
        "first_tab_s": round(statistics.median(tabs), 3),
        "first_tab_max_s": round(max(tabs), 3),
        "first_tab_matched": f"{matched.count(True)}/{len(matched)}",
        "print_s": round(statistics.median(prints), 3),
        "roundtrip_ms": round(statistics.median(trips), 2),
        "restart_s": round(statistics.median(restarts), 3),
        "restart_max_s": round(max(restarts), 3),
        "restart_exits": {str(k): ends.count(k) for k in sorted(set(ends))},
    }


if __name__ == "__main__":
    load_before = os.getloadavg()
    tabs, matched, kept = first_tabs()
    prints, trips, restarts, ends = interleaved(kept)
    out = {"rounds": ROUNDS}
    for name in KERNELS:
        out["ipykernel" if name == "python3" else name] = figures(tabs[name], matched[name], prints[name], trips[name], restarts[name], ends[name])
    metrics = ("first_tab_s", "first_tab_max_s", "print_s", "roundtrip_ms", "restart_s")
    for name in KERNELS:
        if name != "python3":
            key = "ratio" if name == "gradlab" else f"ratio_{name}"
            out[key] = {k: round(out[name][k] / out["ipykernel"][k], 2) for k in metrics if out["ipykernel"][k]}
    out["load_before"] = [round(x, 2) for x in load_before]
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    out["cores"] = os.cpu_count()
    print(json.dumps(out))
