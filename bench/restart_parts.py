"""Where a restart's time goes (issue 22), GradLab's kernel and ipykernel in the same run: restart_kernel
(shutdown_request with restart=true, the old process's exit, the new one's start), then wait_for_ready,
then the first cell. Twice each: with an empty-ish cell ("1 + 1"), and with a first cell that uses the
tensor library (GradLab: `torch.ones([3]).sum().item()`; ipykernel: `import torch` and the same, on a
kernelspec named python3-torch whose Python has PyTorch, e.g. Debian's /usr/bin/python3 here).
Medians of N rounds, with the load averages before and after.

usage: JUPYTER_PATH=<kernelspecs: gradlab, python3, python3-torch> python3 bench/restart_parts.py [N]
"""
import json
import os
import statistics
import sys
import time

from jupyter_client import KernelManager

N = int(sys.argv[1]) if len(sys.argv) > 1 else 5


def parts(name, code):
    km = KernelManager(kernel_name=name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    kc.execute_interactive(code, timeout=60, output_hook=lambda m: None)
    rows = []
    for _ in range(N):
        t0 = time.perf_counter()
        km.restart_kernel(now=False)
        t1 = time.perf_counter()
        kc.wait_for_ready(timeout=60)
        t2 = time.perf_counter()
        r = kc.execute_interactive(code, timeout=60, output_hook=lambda m: None)
        assert r["content"]["status"] == "ok", r["content"]
        rows.append((t1 - t0, t2 - t1, time.perf_counter() - t2))
    kc.stop_channels()
    km.shutdown_kernel()
    keys = ("shutdown_and_start_s", "to_ready_s", "first_cell_s")
    out = {k: round(statistics.median(r[i] for r in rows), 3) for i, k in enumerate(keys)}
    out["total_s"] = round(statistics.median(sum(r) for r in rows), 3)
    return out


load_before = os.getloadavg()
print(
    json.dumps(
        {
            "rounds": N,
            "gradlab": parts("gradlab", "1 + 1"),
            "ipykernel": parts("python3", "1 + 1"),
            "gradlab_torch_cell": parts("gradlab", "torch.ones([3]).sum().item()"),
            "ipykernel_import_torch_cell": parts("python3-torch", "import torch; torch.ones(3).sum().item()"),
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()],
        }
    )
)
