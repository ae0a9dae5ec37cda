"""Printed output in volume (issue 22: text reaches the socket thread through a shared-memory ring):
one cell prints 20,000 lines to stdout, every 7th also to stderr, a display every 1,000 lines, then one
write larger than the ring (multi-byte characters and surrogate pairs across its pieces). Reports the
order in which stdout lines and displays arrived and the texts, for output-order.test.ts to check.

usage: python3 output_order.py   (JUPYTER_PATH must contain the gradlab kernelspec)
"""
import json
import sys

from drive import collect, reply_for, start

CELL = r"""
for (let i = 0; i < 20000; i++) {
  if (i % 1000 === 0) display({ at: i });
  console.log(`o${i}`);
  if (i % 7 === 0) console.error(`e${i}`);
}
process.stdout.write('é😀x'.repeat(400_000) + '\n');
console.log('end');
"""


def main():
    km, kc = start(stderr=sys.stderr)
    try:
        msg_id = kc.execute(CELL)
        reply = reply_for(kc, msg_id, timeout=120)
        outs = collect(kc, msg_id, timeout=120)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    stdout, stderr, displays = [], [], []
    for o in outs:
        if o["type"] == "stream":
            (stdout if o["content"]["name"] == "stdout" else stderr).append(o["content"]["text"])
        elif o["type"] == "display_data":
            # how many stdout lines had arrived when this display did
            displays.append([o["content"]["data"]["text/plain"], "".join(stdout).count("\n")])
    print(json.dumps({
        "status": reply["status"],
        "stdout": "".join(stdout),
        "stderr": "".join(stderr),
        "displays": displays,
        "stream_messages": sum(o["type"] == "stream" for o in outs),
        "types": [o["type"] for o in outs if o["type"] != "stream"],
    }))


if __name__ == "__main__":
    main()
