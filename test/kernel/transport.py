"""The kernel's transport and process life, driven through Debian's jupyter_client.

usage: python3 transport.py SCENARIO   (JUPYTER_PATH must contain the gradlab kernelspec)
Prints one JSON object with what the scenario observed; test/kernel/transport.test.ts asserts on it.
"""
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time

from jupyter_client import KernelManager

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "probe_channels.py")
OTHER_UID = 65534  # nobody: an account that is not the kernel's


def probe(conn, uid=None):
    """probe_channels.py as this process's user, or as `uid`."""
    public = {k: v for k, v in conn.items() if k != "key"}
    kw = {}
    if uid is not None:
        kw = {"user": uid, "group": uid, "extra_groups": [], "cwd": "/"}
    with open(PROBE) as f:
        src = f.read()
    r = subprocess.run([sys.executable, "-c", src, json.dumps(public)], capture_output=True, text=True, timeout=60, **kw)
    if r.returncode != 0:
        raise RuntimeError("probe failed: " + r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def kernel_tcp_listeners(pid):
    """How many TCP sockets in LISTEN state the process (any thread) holds."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if t.startswith("socket:["):
            inodes.add(t[8:-1])
    n = 0
    for table in ("tcp", "tcp6"):
        with open("/proc/%d/net/%s" % (pid, table)) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in inodes:
                    n += 1
    return n


def start(**kw):
    km = KernelManager(kernel_name="gradlab", **kw)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc


def scenario_ipc():
    """A kernel on the ipc transport: its channels are owner-only Unix sockets, and it listens on no
    TCP port. Another account (when we are root) can neither connect nor read IOPub, while the owner
    can: the same probe, run both ways."""
    d = tempfile.mkdtemp(prefix="gradlab-ipc-")
    # a directory anyone may traverse: what keeps others out is then the sockets' own mode
    os.chmod(d, 0o711)
    # and a umask that would leave a new socket open to all (0777): the kernel must restrict it itself
    old_umask = os.umask(0)
    try:
        km, kc = start(transport="ipc", connection_file=os.path.join(d, "kernel-test.json"))
    finally:
        os.umask(old_umask)
    out = {}
    try:
        conn = km.get_connection_info(session=False)
        conn = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in conn.items()}
        out["transport"] = conn["transport"]
        out["ip_is_absolute"] = os.path.isabs(conn["ip"])
        out["modes"] = sorted({oct(stat.S_IMODE(os.stat("%s-%d" % (conn["ip"], conn[ch + "_port"])).st_mode))
                               for ch in ("shell", "iopub", "stdin", "control", "hb")})
        out["tcp_listeners"] = kernel_tcp_listeners(km.provisioner.process.pid)
        r = kc.execute_interactive("6 * 7", timeout=60, output_hook=lambda m: None)
        out["status"] = r["content"]["status"]
        # a cell that prints for a while, so a subscriber has something to receive
        kc.execute("for (let i = 0; i < 60; i++) { console.log('secret ' + i); await new Promise((r) => setTimeout(r, 100)); }")
        time.sleep(0.5)
        if os.getuid() == 0:
            out["other"] = probe(conn, OTHER_UID)
        out["owner"] = probe(conn)
        kc.stop_channels()
        proc = km.provisioner.process
        km.shutdown_kernel(now=False)
        out["exit"] = proc.wait(timeout=10)
        out["left"] = sorted(f for f in os.listdir(d) if "-ipc-" in f)
    finally:
        if km.is_alive():
            km.shutdown_kernel(now=True)
    return out


def scenario_sigterm_busy():
    """SIGTERM to the kernel's process alone (what docker stop, a culler or a supervisor send) while a
    cell spins in synchronous code: the kernel must go, without being killed."""
    km, kc = start()
    pid = km.provisioner.process.pid
    kc.execute("console.log('spinning'); while (true) {}")
    deadline = time.time() + 30
    while time.time() < deadline:
        m = kc.get_iopub_msg(timeout=30)
        if m["msg_type"] == "stream" and "spinning" in m["content"]["text"]:
            break
    time.sleep(0.3)
    t0 = time.time()
    os.kill(pid, signal.SIGTERM)
    code = None
    while time.time() - t0 < 5:
        code = km.provisioner.process.poll()
        if code is not None:
            break
        time.sleep(0.02)
    out = {"exited": code is not None, "seconds": round(time.time() - t0, 3), "returncode": code}
    kc.stop_channels()
    if km.is_alive():
        km.shutdown_kernel(now=True)
    return out


def scenario_sigterm_idle():
    """SIGTERM while idle: a clean exit (status 0), after closing its sockets."""
    km, kc = start()
    r = kc.execute_interactive("1 + 1", timeout=60, output_hook=lambda m: None)
    t0 = time.time()
    km.provisioner.process.send_signal(signal.SIGTERM)
    code = None
    while time.time() - t0 < 5:
        code = km.provisioner.process.poll()
        if code is not None:
            break
        time.sleep(0.02)
    kc.stop_channels()
    if km.is_alive():
        km.shutdown_kernel(now=True)
    return {"status": r["content"]["status"], "returncode": code, "seconds": round(time.time() - t0, 3)}


if __name__ == "__main__":
    print(json.dumps(globals()["scenario_" + sys.argv[1]]()))
