"""Measures one Jupyter kernel through Debian's jupyter_client; bench/kernel.ts runs it once per kernel.

usage: /usr/bin/python3 kernel_driver.py KERNEL_NAME   (JUPYTER_PATH decides where the kernelspec comes from)
Env: STARTS (measured starts, default 7), EXECS (trivial executes, default 300), CELLS (default 10),
LINES (per cell, default 1000), INTERRUPTS (default 5). Prints one JSON object of raw samples on stdout.

The kernel is started by jupyter_client's KernelManager from its kernelspec and interrupted with
km.interrupt_kernel() (the kernelspec's interrupt_mode). Messages are sent and received with the
manager's own Session over sockets from km.connect_shell()/connect_iopub(), polled together, so the
client-side cost is the same thin layer for every kernel.
"""
import json
import os
import sys
import tempfile
import time

import zmq
from jupyter_client.manager import KernelManager

NAME = sys.argv[1]
STARTS = int(os.environ.get("STARTS", 7))
EXECS = int(os.environ.get("EXECS", 300))
CELLS = int(os.environ.get("CELLS", 10))
LINES = int(os.environ.get("LINES", 1000))
INTERRUPTS = int(os.environ.get("INTERRUPTS", 5))
TIMEOUT = 60.0

CODE = {
    "python3": {
        "trivial": "1+1",
        "lines": "for i in range(%d): print(i)" % LINES,
        "busy": "while True: pass",
    },
    "gradlab": {
        "trivial": "1 + 1",
        "lines": "for (let i = 0; i < %d; i++) console.log(i)" % LINES,
        "busy": "while (true) {}",
    },
}[NAME if NAME in ("python3", "gradlab") else "gradlab"]

# One context for the manager and our sockets. A short reconnect interval, so a socket connected
# before the kernel has bound its port (the start measurement) retries within 5 ms instead of zmq's
# default 100 ms, which would otherwise dominate and quantize the start time of either kernel.
CTX = zmq.Context()
CTX.setsockopt(zmq.RECONNECT_IVL, 5)
LOG = tempfile.NamedTemporaryFile("w+", prefix="kernel-bench-%s-" % NAME, suffix=".log", delete=False)
now = time.perf_counter


class Client:
    def __init__(self, km):
        self.km = km
        self.session = km.session
        self.shell = km.connect_shell()
        self.iopub = km.connect_iopub()
        self.poller = zmq.Poller()
        self.poller.register(self.shell, zmq.POLLIN)
        self.poller.register(self.iopub, zmq.POLLIN)

    def close(self):
        self.shell.close(linger=0)
        self.iopub.close(linger=0)

    def request(self, msg_type, content):
        return self.session.send(self.shell, msg_type, content)["header"]["msg_id"]

    def execute(self, code):
        return self.request("execute_request", {"code": code, "silent": False, "store_history": True,
                                                "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})

    def events(self, timeout=TIMEOUT):
        """Yields (channel, message, time received) until the caller stops; raises on timeout."""
        deadline = now() + timeout
        while True:
            left = deadline - now()
            if left <= 0:
                raise TimeoutError("no message from %s within %.0f s (kernel log: %s)" % (NAME, timeout, LOG.name))
            ready = dict(self.poller.poll(left * 1000))
            for sock, chan in ((self.shell, "shell"), (self.iopub, "iopub")):
                if sock in ready:
                    while True:
                        _, msg = self.session.recv(sock, mode=zmq.NOBLOCK)
                        if msg is None:
                            break
                        yield chan, msg, now()

    def reply(self, msg_id, timeout=TIMEOUT):
        for chan, msg, t in self.events(timeout):
            if chan == "shell" and msg["parent_header"].get("msg_id") == msg_id:
                return msg, t

    def finish(self, msg_ids, on_iopub=None, got_reply=None):
        """Waits for the execute_reply and the idle status of every id; returns {id: (reply, t_reply, t_idle)}."""
        pending = {m: [None, None, None] for m in msg_ids}
        left = 2 * len(msg_ids)
        for chan, msg, t in self.events():
            mid = msg["parent_header"].get("msg_id")
            if mid not in pending:
                continue
            if chan == "shell":
                pending[mid][0], pending[mid][1] = msg, t
                left -= 1
                if got_reply:
                    got_reply(mid, msg, t)
            else:
                if on_iopub:
                    on_iopub(mid, msg)
                if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                    pending[mid][2] = t
                    left -= 1
            if left == 0:
                return pending

    def wait_iopub(self):
        """Until iopub is subscribed (zmq drops what a SUB misses while joining): nudge with kernel_info."""
        for _ in range(50):
            mid = self.request("kernel_info_request", {})
            seen = False
            try:
                for chan, msg, _ in self.events(0.2):
                    if chan == "iopub" and msg["parent_header"].get("msg_id") == mid:
                        seen = True
                    if seen and msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                        break
            except TimeoutError:
                pass
            if seen:
                return
        raise TimeoutError("iopub of %s never delivered a message" % NAME)


def start():
    """Starts the kernel; returns (manager, client, seconds from start_kernel() to the first kernel_info_reply, reply)."""
    km = KernelManager(kernel_name=NAME, context=CTX)
    t0 = now()
    km.start_kernel(stdout=LOG, stderr=LOG)
    c = Client(km)
    mid = c.request("kernel_info_request", {})
    msg, t = c.reply(mid)
    return km, c, t - t0, msg["content"]


def stop(km, c):
    c.close()
    km.shutdown_kernel(now=False)
    km.cleanup_resources()


def main():
    res = {"kernel": NAME, "code": CODE}
    km = KernelManager(kernel_name=NAME, context=CTX)
    spec = km.kernel_spec
    res["spec"] = {"resource_dir": spec.resource_dir, "argv": spec.argv, "interrupt_mode": spec.interrupt_mode}

    # 1. start to first kernel_info_reply: one unmeasured start (caches, bytecode, profile dirs), then STARTS
    km, c, _, info = start()
    res["implementation"] = "%s %s" % (info.get("implementation"), info.get("implementation_version"))
    stop(km, c)
    res["start_s"] = []
    for _ in range(STARTS):
        km, c, dt, _ = start()
        res["start_s"].append(dt)
        stop(km, c)

    km, c, _, _ = start()
    try:
        c.wait_iopub()

        # 2. trivial execute round trip: to the execute_reply, and to the idle status (whichever is later)
        for _ in range(20):
            c.finish([c.execute(CODE["trivial"])])
        reply_s, idle_s, wrong = [], [], 0
        for _ in range(EXECS):
            t0 = now()
            mid = c.execute(CODE["trivial"])
            (reply, t_reply, t_idle), = c.finish([mid]).values()
            if reply["content"]["status"] != "ok":
                wrong += 1
            reply_s.append(t_reply - t0)
            idle_s.append(max(t_reply, t_idle) - t0)
        res["exec"] = {"reply_s": reply_s, "done_s": idle_s, "not_ok": wrong}

        # 3. CELLS cells of LINES printed lines, sent back to back as "Run All" does
        for _ in range(2):
            c.finish([c.execute(CODE["lines"])])  # warm-up
        text = {}

        def on_iopub(mid, msg):
            if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
                text[mid] = text.get(mid, "") + msg["content"]["text"]

        t0 = now()
        ids = [c.execute(CODE["lines"]) for _ in range(CELLS)]
        done = c.finish(ids, on_iopub=on_iopub)
        t_end = max(max(r[1], r[2]) for r in done.values())
        expect = "".join("%d\n" % i for i in range(LINES))
        res["lines"] = {
            "total_s": t_end - t0,
            "cells": CELLS,
            "lines_expected": CELLS * LINES,
            "lines_delivered": sum(t.count("\n") for t in text.values()),
            "cells_exact": sum(1 for m in ids if text.get(m) == expect),
            "idles": sum(1 for r in done.values() if r[2] is not None),
            "replies_ok": sum(1 for r in done.values() if r[0]["content"]["status"] == "ok"),
        }

        # 4. interrupt latency: km.interrupt_kernel() to the execute_reply of a busy loop
        lat, enames, alive, after_st = [], [], 0, []
        for _ in range(INTERRUPTS):
            mid = c.execute(CODE["busy"])
            for chan, msg, _ in c.events():
                if chan == "iopub" and msg["msg_type"] == "execute_input" and msg["parent_header"].get("msg_id") == mid:
                    break
            time.sleep(0.3)  # well inside the loop
            t0 = now()
            km.interrupt_kernel()
            (reply, t_reply, _), = c.finish([mid]).values()
            lat.append(t_reply - t0)
            enames.append(reply["content"].get("ename") or reply["content"]["status"])
            after, = c.finish([c.execute(CODE["trivial"])]).values()
            alive += after[0]["content"]["status"] == "ok"
            after_st.append(after[0]["content"].get("ename") or after[0]["content"]["status"])
        res["interrupt"] = {"latency_s": lat, "enames": sorted(set(enames)), "alive_after": alive, "after": after_st, "count": INTERRUPTS}
    finally:
        stop(km, c)
    LOG.close()
    os.unlink(LOG.name)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
