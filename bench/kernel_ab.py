"""Printed output and round trip of two or more kernels, taking turns cell by cell (issue 22): an A/B of
two GradLab builds (each its own kernelspec: `gradlab install --prefix DIR --name NAME` from its tree),
with ipykernel beside them if named. The kernels start together and settle for SETTLE seconds first.

usage: JUPYTER_PATH=<kernelspecs> [N=15] [T=100] [SETTLE=4] python3 bench/kernel_ab.py NAME [NAME...]
  N: print cells per kernel (10 x 1000 lines, as in versus_ipykernel.py); T: empty cells per kernel.
Prints medians and minimums per kernel, and the load averages before and after.
"""
import os
import statistics
import sys
import time

from jupyter_client import KernelManager

from versus_ipykernel import case, run_until_idle

names = sys.argv[1:]
N = int(os.environ.get("N", "15"))
T = int(os.environ.get("T", "100"))
ks = {}
for n in names:
    km = KernelManager(kernel_name=n)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    kc.execute_interactive("1", timeout=60, output_hook=lambda m: None)
    ks[n] = (km, kc)
time.sleep(float(os.environ.get("SETTLE", "4")))
load_before = os.getloadavg()
prints = {n: [] for n in names}
trips = {n: [] for n in names}
for _ in range(N):
    for n in names:
        t = time.perf_counter()
        assert run_until_idle(ks[n][1], case(n)["print"]) == 10_000
        prints[n].append(time.perf_counter() - t)
for _ in range(T):
    for n in names:
        t = time.perf_counter()
        ks[n][1].execute_interactive("", timeout=60, output_hook=lambda m: None)
        trips[n].append((time.perf_counter() - t) * 1000)
for n in names:
    print(
        f"{n:14s} print median {statistics.median(prints[n]):.3f} s (min {min(prints[n]):.3f})"
        f"  round trip median {statistics.median(trips[n]):.2f} ms (min {min(trips[n]):.2f})"
    )
print("load", [round(x, 2) for x in load_before], "->", [round(x, 2) for x in os.getloadavg()])
for km, kc in ks.values():
    kc.stop_channels()
    km.shutdown_kernel()
