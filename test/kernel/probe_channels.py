"""Tries to reach a running kernel's five channels from outside, the way another account on the machine
would: a Unix-socket (or TCP) connect to each channel, a heartbeat ping, and a ZeroMQ SUB on IOPub.

usage: python3 probe_channels.py CONNECTION_JSON   (the connection info, without its key, as JSON text)
Prints one JSON object: for each channel the errno name of a raw connect (or "ok"), whether the heartbeat
echoed a ping, and how many IOPub messages arrived within the listening window. Run it as the kernel's
own user to see what "reachable" looks like, and as another user to see that nothing is.
"""
import errno
import json
import socket
import sys

import zmq

WINDOW_MS = 2000


def endpoint(c, port):
    if c["transport"] == "ipc":
        return "ipc://%s-%d" % (c["ip"], port)
    return "tcp://%s:%d" % (c["ip"], port)


def raw_connect(c, port):
    try:
        if c["transport"] == "ipc":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect("%s-%d" % (c["ip"], port))
        else:
            s = socket.create_connection((c["ip"], port), timeout=2)
        s.close()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def main():
    c = json.loads(sys.argv[1])
    out = {"connect": {}}
    for ch in ("shell", "iopub", "stdin", "control", "hb"):
        out["connect"][ch] = raw_connect(c, c[ch + "_port"])
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.linger = 0
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(endpoint(c, c["iopub_port"]))
    hb = ctx.socket(zmq.REQ)
    hb.linger = 0
    hb.connect(endpoint(c, c["hb_port"]))
    hb.send(b"ping")
    out["hb_echoed"] = bool(hb.poll(WINDOW_MS)) and hb.recv() == b"ping"
    n = 0
    while sub.poll(WINDOW_MS if n == 0 else 200):
        sub.recv_multipart()
        n += 1
    out["iopub_messages"] = n
    ctx.destroy(linger=0)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
