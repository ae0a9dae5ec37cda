"""Kernel restarts through jupyter_client, GradLab's kernel and ipykernel in the same run (issue 22).

usage: JUPYTER_PATH=<dir with the gradlab kernelspec> python3 bench/restart.py [N] [--no-cell] [--gradlab-only]
Each round: restart_kernel(now=False) (shutdown_request with restart=true, then jupyter_client waits for
the process to exit, SIGTERM/SIGKILL after shutdown_wait_time), then wait_for_ready and one cell. Prints,
per kernel, the median and maximum seconds of a restart and how each old process ended (exit status, or
-signal): anything but 0 is an unclean restart.
"""
import json
import statistics
import sys
import time

from jupyter_client import KernelManager

N = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 20
# --no-cell: restart again as soon as the new kernel is ready (restarts in quick succession)
CELL = "--no-cell" not in sys.argv


def restart_once(km, kc, code):
    """One restart: seconds from restart_kernel(now=False) to the reply of `code` in the new kernel (to
    wait_for_ready when code is None), and the old process's exit status."""
    proc = km.provisioner.process
    t0 = time.perf_counter()
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=60)
    if code is not None:
        r = kc.execute_interactive(code, timeout=60, output_hook=lambda m: None)
        assert r["content"]["status"] == "ok"
    return time.perf_counter() - t0, proc.wait(timeout=10)


def measure(name, code, rounds=N):
    km = KernelManager(kernel_name=name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    times, ends = [], []
    for _ in range(rounds):
        t, end = restart_once(km, kc, code)
        times.append(t)
        ends.append(end)
    kc.stop_channels()
    km.shutdown_kernel()
    return {
        "median_s": round(statistics.median(times), 3),
        "max_s": round(max(times), 3),
        "exits": {str(k): ends.count(k) for k in sorted(set(ends))},
    }


if __name__ == "__main__":
    code = "1 + 1" if CELL else None
    out = {"rounds": N, "cell": CELL, "gradlab": measure("gradlab", code)}
    if "--gradlab-only" not in sys.argv:
        out["ipykernel"] = measure("python3", code)
    print(json.dumps(out))
