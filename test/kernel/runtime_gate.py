"""A kernel whose runtime is still loading (issue 22; fixtures/gated-runtime.ts: its import ends when the
driver creates a file). A cell that cannot reach the runtime is answered meanwhile; one that uses torch
waits for the import and then has it; one that prints streams as usual.

usage: GRADLAB_TEST_RUNTIME_GATE=<path> python3 runtime_gate.py   (JUPYTER_PATH: the gradlab kernelspec)
"""
import json
import os
import sys

from drive import collect, reply_for, result_text, start


def run(kc, code, timeout=60):
    msg_id = kc.execute(code)
    reply = reply_for(kc, msg_id, timeout=timeout)
    return reply, collect(kc, msg_id, timeout=timeout)


def main():
    gate = os.environ["GRADLAB_TEST_RUNTIME_GATE"]
    km, kc = start(stderr=sys.stderr)
    res = {}
    try:
        # the runtime cannot have loaded: the gate does not exist yet
        reply, outs = run(kc, "1 + 1")
        res["plain"] = [reply["status"], result_text(outs), os.path.exists(gate)]
        reply, outs = run(kc, "const xs = [1, 2, 3]; console.log('sum', xs.reduce((a, b) => a + b)); xs.length")
        res["print"] = [reply["status"], [o["content"]["text"] for o in outs if o["type"] == "stream"], result_text(outs)]
        # a cell that uses torch: sent before the gate opens, answered after, with the runtime
        msg_id = kc.execute("torch.ready")
        open(gate, "w").close()
        reply = reply_for(kc, msg_id, timeout=60)
        res["torch"] = [reply["status"], result_text(collect(kc, msg_id, timeout=60))]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
