"""Drives the gradlab kernel through Debian's jupyter_client, one scenario per invocation.

usage: python3 drive.py SCENARIO   (JUPYTER_PATH must contain the gradlab kernelspec)
Prints one JSON object with what the scenario observed; test/kernel/protocol.test.ts asserts on it.
"""
import hashlib
import hmac
import json
import os
import re
import signal
import sys
import tempfile
import time

import zmq
from jupyter_client.manager import start_new_kernel

TIMEOUT = 20


def start(**kw):
    return start_new_kernel(kernel_name="gradlab", startup_timeout=60, **kw)


# iopub messages execute_running() read while waiting for a cell to start, for collect() to see
_read_ahead = []


def next_iopub(kc, timeout):
    if _read_ahead:
        return _read_ahead.pop(0)
    return kc.get_iopub_msg(timeout=timeout)


RUNNING = "<<cell running>>"


def execute_running(kc, code, past_sigint_grace=False, timeout=TIMEOUT):
    """Sends code and returns its msg_id once the cell is seen running: it prints a marker first, and
    this waits for that on iopub. An interrupt that reaches the kernel before the cell starts is for
    no cell and is dropped, so interrupting after a fixed sleep races the kernel (on a loaded machine
    the cell had not started yet). A SIGINT the kernel stamps within 250 ms of a cell's start is taken
    as meant for the cell before (sockets/control-worker.ts), so for SIGINT the cell spins past that
    before printing the marker."""
    prelude = 'console.log("%s");' % RUNNING
    if past_sigint_grace:
        prelude = "{ const t = Date.now() + 300; while (Date.now() < t) {} } " + prelude
    msg_id = kc.execute(prelude + "\n" + code)
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = kc.get_iopub_msg(timeout=timeout)
        _read_ahead.append(m)
        if (m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "stream"
                and RUNNING in m["content"]["text"]):
            return msg_id
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            raise RuntimeError("the cell ended before it was seen running: " + code)
    raise TimeoutError("the cell was never seen running: " + code)


def barrier(km, s):
    """Returns once the kernel has handled everything sent before on the raw socket s: a signed
    kernel_info_request sent after them is answered in order (dropped messages get no reply)."""
    header = header_json("kernel_info_request", "barrier-%d" % id(s))
    parts = [header, b"{}", b"{}", b"{}"]
    sig = hmac.new(km.session.key, digestmod=hashlib.sha256)
    for p in parts:
        sig.update(p)
    s.send_multipart([b"<IDS|MSG>", sig.hexdigest().encode()] + parts)
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        if s.poll(int(TIMEOUT * 1000)) and b"barrier-%d" % id(s) in b"".join(s.recv_multipart()):
            return
    raise TimeoutError("no reply to the barrier request")


def collect(kc, msg_id, timeout=TIMEOUT, on_message=None):
    """iopub messages for msg_id up to and including its idle status; on_message sees each as it arrives."""
    out = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = next_iopub(kc, timeout)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        out.append({"type": m["msg_type"], "content": m["content"]})
        if on_message:
            on_message(m)
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return out
    raise TimeoutError("no idle for " + msg_id)


def reply_for(kc, msg_id, timeout=TIMEOUT):
    while True:
        r = kc.get_shell_msg(timeout=timeout)
        if r["parent_header"].get("msg_id") == msg_id:
            return r["content"]


def run(kc, code, **kw):
    msg_id = kc.execute(code, **kw)
    reply = reply_for(kc, msg_id)
    return reply, collect(kc, msg_id)


def result_text(outs):
    for o in outs:
        if o["type"] == "execute_result":
            return o["content"]["data"]["text/plain"]
    return None


def stdout_text(outs):
    return "".join(o["content"]["text"] for o in outs if o["type"] == "stream" and o["content"]["name"] == "stdout")


def scenario_cells(km, kc):
    res = {}
    run(kc, "const a: number = 1\nlet b = a + 1\nfunction twice(x: number) { return 2 * x }\nclass K { v = 7 }")
    res["persist"] = result_text(run(kc, "[a, b, twice(b), new K().v]")[1])
    run(kc, "const a = 'redeclared'")
    res["redeclare"] = result_text(run(kc, "a")[1])
    res["gc"] = result_text(run(kc, "typeof gc")[1])
    res["cleanup_some"] = result_text(run(kc, "typeof (FinalizationRegistry.prototype as any).cleanupSome")[1])
    res["tla"] = result_text(run(kc, "const t = await new Promise<number>((r) => setTimeout(() => r(5), 20)); t * 2")[1])
    res["import"] = result_text(run(kc, 'import { basename } from "node:path"\nimport os from "node:os"\nbasename("/x/y.ts") + typeof os.cpus')[1])
    reply, outs = run(kc, "const ok = 1\n\nfunction bad(): number {\n  return (undefined as any).boom\n}\nbad()")
    res["error_reply"] = {k: reply.get(k) for k in ("status", "ename", "evalue")}
    res["error_traceback"] = "\n".join(reply.get("traceback", []))
    reply, outs = run(kc, "const x = 1\nconst = 2")
    res["syntax_error"] = {"status": reply["status"], "ename": reply.get("ename"), "traceback": "\n".join(reply.get("traceback", []))}
    reply, outs = run(kc, "console.log('out'); console.error('err'); process.stdout.write('raw\\n'); 3")
    res["streams"] = [(o["content"]["name"], o["content"]["text"]) for o in outs if o["type"] == "stream"]
    res["mixed_result"] = result_text(outs)
    reply, outs = run(kc, "1 + 1", silent=True)
    res["silent"] = {"types": sorted({o["type"] for o in outs}), "count": reply["execution_count"]}
    reply, _ = run(kc, "const hidden = 40", user_expressions={"sum": "hidden + 2", "bad": "nope.nope"})
    res["user_expressions"] = reply["user_expressions"]
    reply, outs = run(kc, "const h = display({ step: 1 }, { display_id: 'progress' }); h.update({ step: 2 }); clear_output({ wait: true }); display.html('<p>x</p>')")
    res["display"] = [{"type": o["type"], "content": o["content"]} for o in outs if o["type"] not in ("status", "execute_input")]
    reply, outs = run(kc, "for (let i = 0; i < 10000; i++) console.log('line ' + i)")
    text = stdout_text(outs)
    res["bulk"] = {"lines": text.count("\n"), "first": text.split("\n")[0], "last": text.split("\n")[-2],
                   "messages": sum(1 for o in outs if o["type"] == "stream"), "idle_last": outs[-1]["content"] == {"execution_state": "idle"}}
    # late output from async work goes to the cell that started it
    id1 = kc.execute("setTimeout(() => console.log('late from cell 1'), 300); 'started'")
    reply_for(kc, id1)
    id2 = kc.execute("await new Promise((r) => setTimeout(r, 700)); 'cell 2 done'")
    reply_for(kc, id2)
    late = []
    # until the late line is seen (however long the machine takes), not for a fixed window
    deadline = time.time() + TIMEOUT
    while time.time() < deadline and not any("late from cell 1" in x["text"] for x in late):
        m = next_iopub(kc, TIMEOUT)
        if m["msg_type"] == "stream":
            late.append({"parent": "cell1" if m["parent_header"].get("msg_id") == id1 else "cell2" if m["parent_header"].get("msg_id") == id2 else "other", "text": m["content"]["text"]})
    res["late"] = late
    id1 = kc.execute("setTimeout(() => { throw new TypeError('async boom') }, 50); Promise.reject(new Error('nobody awaits me')); 'scheduled'")
    reply_for(kc, id1)
    errs = []
    # until both errors are seen (the test checks their text), not for a fixed window
    deadline = time.time() + TIMEOUT
    # (each report names the kind of failure; the cell's source, quoted in both, names both errors)
    while time.time() < deadline and not all(k in re.sub(r"\x1b\[[0-9;]*m", "", "".join(errs)) for k in ("Uncaught:", "Unhandled promise rejection:")):
        m = next_iopub(kc, TIMEOUT)
        if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == id1:
            errs.append(m["content"]["text"])
    res["async_errors"] = "".join(errs)
    reply, _ = run(kc, "process.exit(3)")
    res["exit"] = {"status": reply["status"], "evalue": reply.get("evalue")}
    res["async_errors_alive"] = result_text(run(kc, "'still alive'")[1])
    res["display_protocol"] = [o["content"] for o in run(kc, "torch.tensor([1, 2, 3])")[1] if o["type"] == "execute_result"]
    return res


def scenario_imports(km, kc):
    res = {}
    res["relative_ts"] = result_text(run(kc, 'import { greet } from "./helper.ts"\ngreet("notebook")')[1])
    res["esm_only"] = result_text(run(kc, 'import esm, { named } from "esm-only-pkg"\n[esm, named]')[1])
    res["cjs"] = result_text(run(kc, 'import cjs from "cjs-pkg"\nimport { add } from "cjs-pkg"\n[cjs.add(1, 2), add(2, 3)]')[1])
    res["gradlab"] = result_text(run(kc, 'import * as g from "gradlab"\ng === torch')[1])
    res["cwd"] = result_text(run(kc, "process.cwd()")[1])
    return res


def scenario_language(km, kc):
    res = {}
    run(kc, "/** Doubles a number. */\nfunction dbl(x: number): number { return 2 * x }\nconst bag: any = {}; bag.dynamicProp = 1")
    # the language service loads TypeScript and the runtime's types in its own thread: on a loaded
    # machine that can outlast one request's bound, so ask until it answers (at most a minute)
    deadline = time.time() + 60
    while True:
        mid = kc.complete("dbl(3).toFix", 12)
        res["complete_types"] = reply_for(kc, mid, timeout=60)
        if res["complete_types"]["matches"] or time.time() > deadline:
            break
    mid = kc.complete("bag.dyn", 7)
    res["complete_live"] = reply_for(kc, mid)["matches"]
    mid = kc.inspect("dbl", 3)
    res["inspect"] = reply_for(kc, mid)
    mid = kc.inspect("const y = dbl(3, ", 17)
    res["inspect_callee"] = reply_for(kc, mid)
    reply, outs = run(kc, "const n: number = 'not a number'\nn")
    res["typed"] = {"status": reply["status"], "result": result_text(outs),
                    "stderr": "".join(o["content"]["text"] for o in outs if o["type"] == "stream" and o["content"]["name"] == "stderr")}
    return res


def scenario_no_runtime(km, kc):
    reply, outs = run(kc, "torch.tensor([1])")
    after = result_text(run(kc, "1 + 1")[1])
    return {"status": reply["status"], "evalue": reply.get("evalue"), "after": after}


def scenario_abort(km, kc):
    res = {}
    ids = [kc.execute("throw new Error('first')"), kc.execute("globalThis.ran2 = true"), kc.execute("globalThis.ran3 = true")]
    res["stop"] = [reply_for(kc, i)["status"] for i in ids]
    res["after_stop"] = result_text(run(kc, "[globalThis.ran2 ?? false, globalThis.ran3 ?? false]")[1])
    ids = [kc.execute("throw new Error('again')", stop_on_error=False), kc.execute("globalThis.ran4 = true")]
    res["no_stop"] = [reply_for(kc, i)["status"] for i in ids]
    return res


def heartbeat_ok(km):
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.REQ)
    s.linger = 0
    s.connect("tcp://%s:%d" % (km.ip, km.hb_port))
    s.send(b"ping")
    # any answer proves the point: the cell that holds the main thread ends only when interrupted,
    # which happens after this; so no tight window (a loaded machine answers late, not never)
    ok = s.poll(TIMEOUT * 1000) != 0 and s.recv() == b"ping"
    s.close()
    return ok


def interrupt_case(km, kc, code, sigint=False):
    msg_id = execute_running(kc, code, past_sigint_grace=sigint)
    hb = heartbeat_ok(km)
    info = kc.session.msg("kernel_info_request", {})
    kc.control_channel.send(info)
    control_reply = kc.get_control_msg(timeout=TIMEOUT)  # as for the heartbeat: answered while busy
    control_ok = control_reply["parent_header"]["msg_id"] == info["header"]["msg_id"] and control_reply["content"]["status"] == "ok"
    t0 = time.time()
    if sigint:
        km.signal_kernel(signal.SIGINT)
    else:
        km.interrupt_kernel()
    reply = reply_for(kc, msg_id)
    latency = time.time() - t0
    collect(kc, msg_id)
    return {"status": reply["status"], "ename": reply.get("ename"), "latency": latency, "heartbeat_while_busy": hb, "control_while_busy": control_ok}


def scenario_interrupt(km, kc):
    res = {}
    run(kc, "let kept = 41")
    res["loop"] = interrupt_case(km, kc, "while (true) {}")
    res["await"] = interrupt_case(km, kc, "await new Promise(() => {})")
    res["async_loop"] = interrupt_case(km, kc, "await null; let n = 0; for (;;) { n++ }")
    res["display_await"] = interrupt_case(km, kc, '({ [Symbol.for("Jupyter.display")]: () => new Promise(() => {}) })')
    res["sigint_loop"] = interrupt_case(km, kc, "while (true) {}", sigint=True)
    res["sigint_await"] = interrupt_case(km, kc, "await new Promise(() => {})", sigint=True)
    res["kept"] = result_text(run(kc, "kept + 1")[1])
    return res


def scenario_stdin(km, kc):
    msg_id = kc.execute("const who = prompt('Who?'); `hello ${who}`", allow_stdin=True)
    req = kc.get_stdin_msg(timeout=TIMEOUT)
    kc.input("Ada")
    reply = reply_for(kc, msg_id)
    outs = collect(kc, msg_id)
    parent_ok = req["parent_header"]["msg_id"] == msg_id
    msg_id = kc.execute("prompt('x')", allow_stdin=False)
    denied = reply_for(kc, msg_id)
    collect(kc, msg_id)
    # an unanswered prompt is interrupted like any other wait
    msg_id = kc.execute("const never = prompt('no answer'); 'after'", allow_stdin=True)
    kc.get_stdin_msg(timeout=TIMEOUT)
    t0 = time.time()
    km.interrupt_kernel()
    waiting = reply_for(kc, msg_id)
    waiting_latency = time.time() - t0
    collect(kc, msg_id)
    return {"prompt": req["content"]["prompt"], "password": req["content"]["password"], "parent_ok": parent_ok,
            "status": reply["status"], "result": result_text(outs), "denied": denied["status"], "denied_evalue": denied.get("evalue"),
            "interrupted": waiting.get("ename"), "interrupted_latency": waiting_latency}


def send_shell(kc, msg_type, content):
    msg = kc.session.msg(msg_type, content)
    kc.shell_channel.send(msg)
    return msg["header"]["msg_id"]


def scenario_comms(km, kc):
    res = {}
    run(kc, "comms.registerTarget('echo', (comm, open) => { comm.send({ opened: open.data }); comm.onMsg((d, m) => comm.send({ echo: d }, {}, m.buffers)); comm.onClose((d) => console.log('closed', JSON.stringify(d))) })")
    mid = send_shell(kc, "comm_open", {"comm_id": "c1", "target_name": "echo", "data": {"hi": 1}})
    res["on_open"] = [o["content"] for o in collect(kc, mid) if o["type"] == "comm_msg"]
    mid = send_shell(kc, "comm_msg", {"comm_id": "c1", "data": {"n": 2}})
    res["on_msg"] = [o["content"] for o in collect(kc, mid) if o["type"] == "comm_msg"]
    # binary buffers both ways, byte for byte: over zeromq's 128-byte copy limit as UTF-8 text and as
    # bytes that are not UTF-8 (sent by reference), and a short one
    sent = [bytes(range(256)) * 3, ("é" * 200).encode(), b"\xff\x00"]
    msg = kc.session.msg("comm_msg", {"comm_id": "c1", "data": {"n": 3}})
    kc.session.send(kc.shell_channel.socket, msg, buffers=sent)
    echoed = []
    collect(kc, msg["header"]["msg_id"], on_message=lambda m: m["msg_type"] == "comm_msg" and echoed.append([bytes(b) for b in m["buffers"]]))
    res["buffers_echoed"] = echoed == [sent]
    mid = kc.comm_info(target_name="echo")
    res["info"] = reply_for(kc, mid)["comms"]
    mid = send_shell(kc, "comm_close", {"comm_id": "c1", "data": {"bye": True}})
    res["on_close"] = [o["content"]["text"] for o in collect(kc, mid) if o["type"] == "stream"]
    mid = send_shell(kc, "comm_open", {"comm_id": "c2", "target_name": "missing", "data": {}})
    res["unknown_target"] = [o["content"] for o in collect(kc, mid) if o["type"] == "comm_close"]
    reply, outs = run(kc, "const mine = comms.open('from_kernel', { hello: 1 }); mine.send({ n: 1 }); mine.comm_id.length")
    res["kernel_open"] = [{"type": o["type"], "target": o["content"].get("target_name"), "data": o["content"]["data"]} for o in outs if o["type"].startswith("comm_")]
    return res


def scenario_history(km, kc):
    marker = "'history marker %d'" % os.getpid()
    run(kc, marker)
    mid = kc.history(hist_access_type="tail", n=1, output=True, raw=True)
    first = reply_for(kc, mid)["history"]
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=60)
    mid = kc.history(hist_access_type="search", pattern="'history marker*", n=5, output=False, raw=True)
    after = reply_for(kc, mid)["history"]
    run(kc, "1")
    mid = kc.history(hist_access_type="tail", n=1, raw=True)
    new = reply_for(kc, mid)["history"]
    return {"first": first, "after_restart": after, "new_session": new, "marker": marker}


def scenario_security(km, kc):
    res = {}
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.DEALER)
    s.linger = 0
    s.connect("tcp://%s:%d" % (km.ip, km.shell_port))
    header = json.dumps({"msg_id": "forged", "session": "x", "username": "u", "date": "", "msg_type": "execute_request", "version": "5.3"}).encode()
    parts = [header, b"{}", b"{}", json.dumps({"code": "globalThis.forged = true", "silent": False}).encode()]
    good = hmac.new(km.session.key, digestmod=hashlib.sha256)
    for p in parts:
        good.update(p)
    res["expected_signature"] = good.hexdigest()
    s.send_multipart([b"<IDS|MSG>", b"0" * 64] + parts)  # wrong signature
    s.send_multipart([b"<IDS|MSG>", good.hexdigest().encode(), parts[0]])  # truncated
    s.send_multipart([b"<IDS|MSG>"] + [b"garbage"] * 5)  # malformed
    barrier(km, s)
    s.close()
    res["forged_ran"] = result_text(run(kc, "globalThis.forged ?? false")[1])
    mid = send_shell(kc, "no_such_request", {})
    res["unknown_reply"] = reply_for(kc, mid)
    mid = kc.kernel_info()
    res["kernel_info"] = reply_for(kc, mid)
    return res


# A busy loop (no await) that calls f(i, now) every 100 ms, n times.
BUSY = "function every100(n: number, f: (i: number, now: number) => void) { let last = 0; for (let i = 0; i < n; ) { const now = Date.now(); if (now - last >= 100) { f(i, now); last = now; i++ } } }\n"
# Spins (never yielding to the event loop) until a file exists: a cell that waits for the driver.
WAIT_FOR = ('import { existsSync as __exists } from "node:fs";\n'
            "function waitFor(path: string) { const until = Date.now() + 15_000; while (!__exists(path)) if (Date.now() > until) throw new Error(`${path} never came: the output before it did not reach the client`) }\n")


def scenario_streaming(km, kc):
    """Output leaves the kernel while a cell runs synchronous code: after each line (or display update)
    the cell spins until the driver, having received it, creates a file. The cell can only finish if
    every message reached the client while it was still busy; no timings are compared."""
    res = {}
    run(kc, BUSY + WAIT_FOR)
    go = tempfile.mkdtemp(prefix="gradlab-go-")
    def release(m):
        # the file for each step whose message arrived
        text = m["content"].get("text", "") if m["msg_type"] == "stream" else m["content"].get("data", {}).get("text/plain", "")
        for step in re.findall(r"(?:tick|step:) (\d+)", text):
            open(os.path.join(go, m["msg_type"] + "-" + step), "w").close()
    msg_id = kc.execute("for (let i = 0; i < 12; i++) { console.log(`tick ${i}`); waitFor(%s + `/stream-${i}`) } 'done'" % json.dumps(go))
    outs = collect(kc, msg_id, on_message=release)
    res["print"] = {"texts": [o["content"]["text"] for o in outs if o["type"] == "stream"], "types": [o["type"] for o in outs]}
    # display_id updates and clear_output while the loop runs
    msg_id = kc.execute("const h = display({ step: -1 }, { display_id: 'live' });\n"
                        "for (let i = 0; i < 6; i++) { h.update({ step: i }); waitFor(%s + `/update_display_data-${i}`) }\n"
                        "clear_output({ wait: true }); console.log('after clear'); 'end'" % json.dumps(go))
    outs = collect(kc, msg_id, on_message=release)
    res["display"] = [{"type": o["type"], "data": o["content"].get("data", {}).get("text/plain"),
                       "text": o["content"].get("text")} for o in outs if o["type"] != "status"]
    # display.on_cell_end: a throttled plot's last redraw lands before the cell's result
    msg_id = kc.execute("const h2 = display('first', { display_id: 'd2' }); display.on_cell_end(() => h2.update('last')); 'r'")
    res["cell_end"] = [{"type": o["type"], "data": o["content"].get("data", {}).get("text/plain")} for o in collect(kc, msg_id)
                       if o["type"] not in ("status", "execute_input")]
    # interrupted mid-loop: everything printed before the interrupt still arrives, in order
    msg_id = kc.execute("let n = 0; for (;;) { every100(1, () => console.log(`line ${n++}`)) }")
    seen = []
    deadline = time.time() + TIMEOUT
    while len(seen) < 4 and time.time() < deadline:
        m = kc.get_iopub_msg(timeout=TIMEOUT)
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "stream":
            seen += m["content"]["text"].splitlines()
    km.interrupt_kernel()
    reply = reply_for(kc, msg_id)
    rest = collect(kc, msg_id)
    lines = seen + [l for o in rest if o["type"] == "stream" for l in o["content"]["text"].splitlines()]
    printed = result_text(run(kc, "n")[1])
    res["interrupted"] = {"ename": reply.get("ename"), "lines": lines, "n": printed,
                          "after": [o["type"] for o in rest if o["type"] != "stream"]}
    return res


def wait_idle_and_reply(kc, msg_id):
    reply = reply_for(kc, msg_id)
    outs = collect(kc, msg_id)
    return reply, outs


def scenario_interrupt_races(km, kc):
    """Interrupts at random moments around cell boundaries; none may stop a later cell or kill us."""
    import random
    rounds = int(os.environ.get("DRIVE_ROUNDS", "40"))
    rng = random.Random(int(os.environ.get("DRIVE_SEED", "1")))
    res = {"wrong": [], "interrupted": 0, "completed": 0, "deaths": 0}
    run(kc, "function spin(ms: number) { const end = Date.now() + ms; while (Date.now() < end) {} return ms }")
    for i in range(rounds):
        # a short cell, interrupted (or not) close to its end, by message or by SIGINT to the group
        ms = rng.choice([0, 5, 20, 50])
        mid = kc.execute("spin(%d)" % ms)
        time.sleep(rng.random() * (ms + 20) / 1000)
        how = "message" if rng.random() < 0.5 else "SIGINT"
        if how == "message":
            km.interrupt_kernel()
        else:
            km.signal_kernel(signal.SIGINT)
        reply, _ = wait_idle_and_reply(kc, mid)
        if reply["status"] == "error":
            res["interrupted"] += 1
        # the innocent cell after it: long enough for a stale interrupt to land
        reply, outs = wait_idle_and_reply(kc, kc.execute("spin(150); 'innocent %d'" % i))
        if reply["status"] != "ok" or result_text(outs) != "'innocent %d'" % i:
            res["wrong"].append({"round": i, "how": how, "ms": ms, "status": reply["status"], "ename": reply.get("ename")})
        else:
            res["completed"] += 1
        if not km.is_alive():
            res["deaths"] += 1
            break
    # interrupts and SIGINTs while idle are dropped
    for _ in range(10):
        km.interrupt_kernel()
        km.signal_kernel(signal.SIGINT)
    # The one sleep left before a cell: a SIGINT's arrival at the kernel shows in no message (the
    # signal helper stamps it and the socket thread drops it while idle), so nothing can be waited on.
    # The interrupt_requests need no wait: they are dated before the next cell was requested.
    time.sleep(0.3)
    reply, outs = wait_idle_and_reply(kc, kc.execute("spin(300); 'after idle interrupts'"))
    res["after_idle"] = result_text(outs)
    res["alive"] = km.is_alive()
    return res


def scenario_interrupt_state(km, kc):
    """Runtime state after interrupted cells (real runtime): grad mode, anomaly mode; try/finally runs."""
    res = {}
    def interrupted(code, sig=False):
        mid = execute_running(kc, code, past_sigint_grace=sig)
        if sig:
            km.signal_kernel(signal.SIGINT)
        else:
            km.interrupt_kernel()
        reply, _ = wait_idle_and_reply(kc, mid)
        return reply.get("ename")
    res["loop_ename"] = interrupted("for (;;) torch.no_grad(() => {})")
    res["loop_grad"] = result_text(run(kc, "torch.is_grad_enabled()")[1])
    res["await_ename"] = interrupted("await torch.no_grad(async () => { await new Promise(() => {}) })")
    res["await_grad"] = result_text(run(kc, "torch.is_grad_enabled()")[1])
    res["anomaly_ename"] = interrupted("torch.autograd.set_detect_anomaly(true); await new Promise(() => {})")
    res["anomaly"] = result_text(run(kc, "torch.autograd.is_anomaly_enabled()")[1])
    res["finally_ename"] = interrupted("globalThis.cleaned = false; try { while (true) {} } finally { globalThis.cleaned = true }", sig=True)
    res["finally"] = result_text(run(kc, "globalThis.cleaned")[1])
    res["recursion_ename"] = interrupted("function fib(n: number): number { return n < 2 ? n : fib(n - 1) + fib(n - 2) } fib(60)")
    res["caught_ename"] = interrupted("for (;;) { try { while (true) {} } catch {} }")
    res["alive"] = result_text(run(kc, "'alive'")[1])
    return res


def raw_send(km, port, parts, identity=None):
    """Signs and sends the four JSON parts (bytes) as a message on a fresh DEALER socket."""
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.DEALER)
    s.linger = 1000
    if identity:
        s.identity = identity
    s.connect("tcp://%s:%d" % (km.ip, port))
    sig = hmac.new(km.session.key, digestmod=hashlib.sha256)
    for p in parts:
        sig.update(p)
    s.send_multipart([b"<IDS|MSG>", sig.hexdigest().encode()] + parts)
    return s


def header_json(msg_type, msg_id, extra=""):
    return ('{"msg_id": "%s", "session": "hostile", "username": "u", "date": "2020-01-01T00:00:00Z", "msg_type": "%s", "version": "5.3"%s}'
            % (msg_id, msg_type, extra)).encode()


def timed_reply(kc, getter, msg_id, timeout=10):
    t0 = time.time()
    deadline = t0 + timeout
    while time.time() < deadline:
        try:
            r = getter(timeout=max(0.01, deadline - time.time()))
        except Exception:
            break
        if r["parent_header"].get("msg_id") == msg_id:
            return {"type": r["msg_type"], "content": r["content"], "s": time.time() - t0}
    return None


def scenario_hostile(km, kc):
    res = {}
    # a header nested 10,000 deep on shell and 100,000 deep on control
    deep = lambda n: ', "deep": ' + "[" * n + "]" * n
    socks = [raw_send(km, km.shell_port, [header_json("kernel_info_request", "deep-shell", deep(10000)), b"{}", b"{}", b"{}"]),
             raw_send(km, km.control_port, [header_json("kernel_info_request", "deep-control", deep(100000)), b"{}", b"{}", b"{}"])]
    # deep content and parent_header too
    socks.append(raw_send(km, km.shell_port, [header_json("execute_request", "deep-content"), b"{}", b"{}", ('{"code": "1", "x": ' + "{\"a\":" * 50000 + "1" + "}" * 50000 + "}").encode()]))
    socks.append(raw_send(km, km.shell_port, [header_json("kernel_info_request", "deep-parent"), ("[" * 20000 + "]" * 20000).encode(), b"{}", b"{}"]))
    for s in socks:
        barrier(km, s)
    for s in socks:
        s.close()
    mid = kc.kernel_info()
    res["shell_after_deep"] = timed_reply(kc, kc.get_shell_msg, mid)
    info = kc.session.msg("kernel_info_request", {})
    kc.control_channel.send(info)
    res["control_after_deep"] = timed_reply(kc, kc.get_control_msg, info["header"]["msg_id"])
    # huge cursor positions
    for name, pos in (("complete_big", 1e308), ("complete_neg", -5), ("complete_str", "x"), ("complete_inf", "Infinity")):
        mid = send_shell(kc, "complete_request", {"code": "Math.ma", "cursor_pos": pos})
        res[name] = timed_reply(kc, kc.get_shell_msg, mid, timeout=30)
    mid = send_shell(kc, "inspect_request", {"code": "Math.max", "cursor_pos": 1e308, "detail_level": 0})
    res["inspect_big"] = timed_reply(kc, kc.get_shell_msg, mid, timeout=30)
    # msg_type names that are properties of Object.prototype
    res["proto_names"] = {}
    for t in ("constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"):
        mid = send_shell(kc, t, {})
        r = timed_reply(kc, kc.get_shell_msg, mid)
        res["proto_names"][t] = r and {"type": r["type"], "status": r["content"].get("status")}
    # is_complete: bounded in time whatever the size; an open comment is incomplete
    mid = kc.is_complete("{\n" * 100000)
    res["is_complete_huge"] = timed_reply(kc, kc.get_shell_msg, mid)
    mid = kc.is_complete("/* comment")
    res["is_complete_comment"] = timed_reply(kc, kc.get_shell_msg, mid)
    # a history search pattern that would backtrack exponentially as a regular expression
    run(kc, "const longA = '" + "a" * 3000 + "'")
    mid = kc.history(hist_access_type="search", pattern="*a" * 30 + "*b", n=5, raw=True)
    res["history_redos"] = timed_reply(kc, kc.get_shell_msg, mid)
    # wrong types in content
    mid = send_shell(kc, "execute_request", {"code": {"not": "a string"}, "silent": "yes", "user_expressions": [1, 2]})
    res["execute_wrong_types"] = timed_reply(kc, kc.get_shell_msg, mid)
    # diagnostics about dropped messages go to the kernel log, never to a cell's output
    mid = kc.execute("'a cell'")
    reply_for(kc, mid)
    collect(kc, mid)
    s = raw_send(km, km.control_port, [header_json("kernel_info_request", "badsig"), b"{}", b"{}", b"{}"])
    s.send_multipart([b"<IDS|MSG>", b"0" * 64, b"{}", b"{}", b"{}", b"{}"])
    s2 = raw_send(km, km.shell_port, [b"not json", b"{}", b"{}", b"{}"])
    barrier(km, s)
    barrier(km, s2)
    s.close()
    s2.close()
    leaked = []
    while True:
        try:
            m = kc.get_iopub_msg(timeout=0.3)
        except Exception:
            break
        if m["msg_type"] == "stream":
            leaked.append(m["content"]["text"])
    res["leaked_to_cells"] = leaked
    # still fully working: execute and interrupt
    res["alive"] = result_text(run(kc, "'alive'")[1])
    mid = execute_running(kc, "while (true) {}")
    km.interrupt_kernel()
    res["interrupt_after"] = reply_for(kc, mid).get("ename")
    return res


def stream_text(outs, name):
    return "".join(o["content"]["text"] for o in outs if o["type"] == "stream" and o["content"]["name"] == name)


def scenario_promises_anomaly(km, kc):
    res = {}
    reply, outs = run(kc, "console.log(new Promise(() => {})); console.log(new Promise(() => {})); const p2 = Promise.resolve('x'); await p2; console.log(p2)")
    res["console"] = {"stdout": stream_text(outs, "stdout"), "stderr": stream_text(outs, "stderr")}
    reply, outs = run(kc, "[Promise.resolve(42), new Promise(() => {})]")
    res["nested"] = result_text(outs)
    res["awaited_last"] = result_text(run(kc, "Promise.resolve(7)")[1])
    reply, outs = run(kc, "torch.tensor([1, 2, 3], { requires_grad: true }).sum()")
    res["not_a_promise_stderr"] = stream_text(outs, "stderr")
    code = ("torch.autograd.set_detect_anomaly(true)\n"
            "const a = torch.tensor([1, 2, 3], { requires_grad: true })\n"
            "const b = a.sigmoid()\n"
            "b.mul_(2)\n"
            "b.sum().backward()")
    reply, outs = run(kc, code)
    res["anomaly"] = {"status": reply["status"], "evalue": reply.get("evalue"), "traceback": "\n".join(reply.get("traceback", []))}
    # what a student prints: the forward's traceback kept on the node, and a caught error's message,
    # for a forward that ran in a function of an earlier cell, from a TypeScript cell and a later line
    run(kc, "function squash(t: torch.Tensor): torch.Tensor {\n  const s: torch.Tensor = t.sigmoid()\n  return s\n}")
    reply, outs = run(kc, "const x: torch.Tensor = torch.tensor([1, 2, 3], { requires_grad: true })\n"
                          "const y = squash(x)\n"
                          "console.log(y.grad_fn!.metadata.traceback_)\n"
                          "y.mul_(2)\n"
                          "try { y.sum().backward() } catch (e) { console.log((e as { forward_traceback: string }).forward_traceback); console.log((e as Error).message) }")
    res["anomaly_printed"] = stream_text(outs, "stdout")
    return res


def scenario_late_display(km, kc):
    """Displays whose bundle is built asynchronously, followed by more code: each is published before
    the cell's reply and idle (issue 23)."""
    res = {}
    late = "{ [Symbol.for('Jupyter.display')]: () => new Promise((r) => setTimeout(() => r({ 'text/html': '<b>%s</b>' }), 300)) }"
    reply, outs = run(kc, "display(%s)\nconsole.log('after')" % (late % "late"))
    res["late"] = {"status": reply["status"], "types": [o["type"] for o in outs],
                   "html": [o["content"]["data"].get("text/html") for o in outs if o["type"] == "display_data"]}
    # one that finishes only after a hook of display.on_cell_end started another one
    reply, outs = run(kc, "display.on_cell_end(() => display(%s))\ndisplay(%s)" % (late % "hook", late % "first"))
    res["hook"] = [o["content"]["data"].get("text/html") for o in outs if o["type"] == "display_data"]
    # the real runtime's graph drawing (the case)
    reply, outs = run(kc, "const a = torch.tensor([1, 2], { requires_grad: true })\nconst l = a.mul(2).sum()\ndisplay(torch.viz.graph(l))\nconsole.log('after')")
    res["graph"] = {"status": reply["status"], "types": [o["type"] for o in outs],
                    "mimes": [sorted(o["content"]["data"]) for o in outs if o["type"] == "display_data"]}
    # a display that never finishes: the wait for it is interruptible, and the kernel carries on
    mid = execute_running(kc, "display({ [Symbol.for('Jupyter.display')]: () => new Promise(() => {}) })")
    km.interrupt_kernel()
    reply, _ = wait_idle_and_reply(kc, mid)
    res["stuck_ename"] = reply.get("ename")
    res["alive"] = result_text(run(kc, "'alive'")[1])
    return res


def scenario_storm(km, kc):
    """Cells of every kind with interrupts (message and SIGINT) sent at random while they run, for
    DRIVE_SECONDS. A cell may be interrupted only if an interrupt was sent while it ran."""
    import random
    rng = random.Random(int(os.environ.get("DRIVE_SEED", "1")))
    seconds = float(os.environ.get("DRIVE_SECONDS", "60"))
    run(kc, "function spin(ms: number) { const end = Date.now() + ms; while (Date.now() < end) {} return ms }")
    kinds = ["spin(%d)", "await new Promise((r) => setTimeout(r, %d))", "{ let n = 0; const end = Date.now() + %d; for (;;) { if (Date.now() > end) break; n++ } n > 0 }",
             "(function rec(k: number): number { return k <= 0 ? 0 : 1 + rec(k - 1) })(%d)", "console.log('x'.repeat(%d))"]
    res = {"cells": 0, "interrupted": 0, "wrong": [], "deaths": 0, "other_errors": [], "interrupts_sent": 0}
    end = time.time() + seconds
    while time.time() < end:
        code = rng.choice(kinds) % rng.choice([0, 5, 30, 100, 400])
        sent_at = time.time()
        mid = kc.execute(code)
        targeted = rng.random() < 0.6
        if targeted:
            time.sleep(rng.random() * 0.3)
            if rng.random() < 0.8:
                km.interrupt_kernel()
            else:
                km.signal_kernel(signal.SIGINT)
            res["interrupts_sent"] += 1
        reply = reply_for(kc, mid, timeout=30)
        collect(kc, mid, timeout=30)
        res["cells"] += 1
        if reply["status"] == "error":
            if reply.get("ename") == "KeyboardInterrupt":
                res["interrupted"] += 1
                if not targeted:
                    res["wrong"].append(code)
            else:
                res["other_errors"].append([code, reply.get("ename"), reply.get("evalue")])
        if not km.is_alive():
            res["deaths"] += 1
            break
    res["alive"] = result_text(run(kc, "'alive'")[1])
    return res


def scenario_interrupt_memory(km, kc):
    """Interrupts inside no_grad and tensor loops (real runtime): grad mode and memory after each."""
    rounds = int(os.environ.get("DRIVE_ROUNDS", "20"))
    res = {"grad": [], "allocated": [], "errors": []}
    run(kc, "await torch.gc(); const base = torch.cuda.memory_allocated(); const keep = torch.ones([1000])")
    res["base"] = result_text(run(kc, "await torch.gc(); torch.cuda.memory_allocated()")[1])
    for i in range(rounds):
        code = ("for (;;) torch.no_grad(() => torch.ones([4]).add(1).dispose())" if i % 2 == 0 else
                "for (;;) { const t = torch.ones([256], { requires_grad: true }).mul(2).sum(); t.backward() }")
        mid = execute_running(kc, code)
        time.sleep((i % 5) * 0.05)  # a different point in the loop each round
        km.interrupt_kernel()
        reply = reply_for(kc, mid, timeout=30)
        collect(kc, mid)
        if reply.get("ename") != "KeyboardInterrupt":
            res["errors"].append([reply["status"], reply.get("ename"), reply.get("evalue")])
        res["grad"].append(result_text(run(kc, "torch.is_grad_enabled()")[1]))
        res["allocated"].append(result_text(run(kc, "await torch.gc(); torch.cuda.memory_allocated()")[1]))
    return res


def scenario_soak(km, kc):
    """DRIVE_CELLS cells of ordinary work: latency, RSS and memory_allocated every 100 cells."""
    n = int(os.environ.get("DRIVE_CELLS", "1000"))
    pid = int(result_text(run(kc, "process.pid")[1]))
    samples = []
    lat = []
    for i in range(n):
        code = ("const x%d: number = %d\nconst t%d = torch.ones([64]).mul(%d)\nconst s%d = (await t%d.sum().item()) + x%d\ns%d" % ((i % 50,) * 2 + (i % 50,) * 2 + (i % 50,) * 4))
        t0 = time.time()
        reply, outs = run(kc, code)
        lat.append((time.time() - t0) * 1000)
        if reply["status"] != "ok":
            samples.append({"error": [i, reply.get("ename"), reply.get("evalue")]})
            break
        if (i + 1) % 100 == 0:
            rss = 0
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss = int(line.split()[1]) * 1024
            alloc, heap = json.loads(result_text(run(kc, "await torch.gc(); gc(); JSON.stringify([torch.cuda.memory_allocated(), process.memoryUsage().heapUsed])")[1])[1:-1])
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu_s = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
            window = sorted(lat[-100:])
            samples.append({"cells": i + 1, "median_ms": window[50], "p90_ms": window[90], "cpu_s": cpu_s, "rss": rss, "heap": heap, "allocated": alloc})
    return {"samples": samples}


def scenario_restarts(km, kc):
    n = int(os.environ.get("DRIVE_ROUNDS", "20"))
    res = {"ok": 0, "times": []}
    for i in range(n):
        t0 = time.time()
        km.restart_kernel(now=False)
        kc.wait_for_ready(timeout=60)
        r = result_text(run(kc, "'restart %d'" % i)[1])
        res["times"].append(time.time() - t0)
        if r == "'restart %d'" % i:
            res["ok"] += 1
    return res


def scenario_ooms(km, kc):
    """Out-of-memory errors with and without a recorded graph (real runtime): memory comes back."""
    n = int(os.environ.get("DRIVE_ROUNDS", "20"))
    res = {"errors": [], "allocated": [], "other": []}
    res["base"] = int(result_text(run(kc, "await torch.gc(); torch.cuda.memory_allocated()")[1]))
    run(kc, "torch.cuda.set_memory_capacity(64 * 2 ** 20)")
    for i in range(n):
        if i % 2 == 0:  # a forward pass recording a graph that outgrows the device
            code = ("{ const w = torch.randn([1024, 1024], { requires_grad: true }); let h = torch.randn([1024, 1024]);"
                    " for (let s = 0; s < 24; s++) h = h.matmul(w).tanh() }")
        else:  # no graph: one allocation too big
            code = "{ const keep = torch.randn([1024, 1024]); const big = torch.empty([8192, 8192]) }"
        reply, _ = run(kc, code)
        res["errors"].append(reply.get("ename"))
        if reply.get("ename") != "OutOfMemoryError":
            res["other"].append(reply.get("evalue"))
        res["allocated"].append(int(result_text(run(kc, "await torch.gc(); torch.cuda.memory_allocated()")[1])))
    return res


def json_depth(b):
    depth = best = 0
    in_str = esc = False
    for c in b:
        if in_str:
            if esc:
                esc = False
            elif c == 0x5c:
                esc = True
            elif c == 0x22:
                in_str = False
        elif c == 0x22:
            in_str = True
        elif c in (0x5b, 0x7b):
            depth += 1
            best = max(best, depth)
        elif c in (0x5d, 0x7d):
            depth -= 1
    return best


def scenario_fuzz(km, kc):
    """DRIVE_MESSAGES fuzzed messages on shell and control in batches, with a liveness check after each.
    Every signed message with a well-formed header gets a reply; nothing stops a loop."""
    import random
    rng = random.Random(int(os.environ.get("DRIVE_SEED", "1")))
    total = int(os.environ.get("DRIVE_MESSAGES", "2000"))
    batch = 100
    ctx = zmq.Context.instance()
    socks = {}
    for name, port in (("shell", km.shell_port), ("control", km.control_port)):
        so = ctx.socket(zmq.DEALER)
        so.linger = 0
        so.identity = ("fuzz-" + name).encode()
        so.connect("tcp://%s:%d" % (km.ip, port))
        socks[name] = so
    key = km.session.key

    def sign(parts):
        h = hmac.new(key, digestmod=hashlib.sha256)
        for p in parts:
            h.update(p)
        return h.hexdigest().encode()

    types = ["kernel_info_request", "complete_request", "inspect_request", "is_complete_request", "history_request",
             "comm_info_request", "execute_request", "no_such_request", "constructor", "toString", "__proto__",
             "hasOwnProperty", "valueOf", "isPrototypeOf", "interrupt_request", "debug_request"]
    values = [None, True, 0, -1, 1e308, -1e308, "x", "", [], {}, [1, [2, [3]]], {"a": {"b": None}}, "\u0000\ud800", 2 ** 63]
    safe_code = lambda: "".join(rng.choice("0123456789 +-*/().") for _ in range(rng.randint(0, 30)))

    def content_for(t):
        c = {"code": safe_code() if t == "execute_request" else rng.choice(["Math.ma", "torch.", "x = ", "/* c", "if (a) {"]),
             "cursor_pos": rng.choice([0, 3, 1e308, -5, "7", None]), "detail_level": rng.choice([0, 1, "x"]),
             "hist_access_type": rng.choice(["tail", "range", "search", "bogus"]), "n": rng.choice([1, 1e308, -1, "x"]),
             "pattern": rng.choice(["*", "*a" * 20 + "*b", "?" * 50]), "silent": rng.choice([True, False]), "store_history": False}
        for k in list(c):
            r = rng.random()
            if r < 0.2:
                c[k] = rng.choice(values)
            elif r < 0.3:
                del c[k]
        if t == "execute_request" and not isinstance(c.get("code"), str):
            c["code"] = "1"  # whatever else is mutated, never run unbounded code
        if t == "execute_request":
            c["user_expressions"] = rng.choice([{}, {"a": "1+1"}, [1], None])
        return c

    sent = {}  # msg_id -> channel, for messages that must be answered
    kinds = {}
    for i in range(total):
        ch = "shell" if i % 2 == 0 else "control"
        kind = rng.choice(["valid", "valid", "bad_json", "truncated", "no_msg_type", "deep", "huge", "random_frames",
                           "mutated", "bad_sig", "wrong_header_type"])
        kinds[kind] = kinds.get(kind, 0) + 1
        t = rng.choice(types)
        mid = "fuzz-%d" % i
        header = {"msg_id": mid, "session": "fuzz", "username": "f", "date": "2020-01-01T00:00:00Z", "msg_type": t, "version": "5.3"}
        content = content_for(t)
        parts = [json.dumps(header).encode(), b"{}", b"{}", json.dumps(content).encode()]
        frames = None
        if kind == "bad_json":
            parts[rng.randrange(4)] = b"{not json"
        elif kind == "truncated":
            frames = [b"<IDS|MSG>", sign(parts)] + parts[: rng.randrange(4)]
        elif kind == "no_msg_type":
            del header["msg_type"]
            parts[0] = json.dumps(header).encode()
        elif kind == "deep":
            n = rng.choice([300, 5000, 50000])
            parts[rng.randrange(1, 4)] = ("[" * n + "]" * n).encode()
        elif kind == "huge":
            t = rng.choice(["is_complete_request", "complete_request", "inspect_request"])
            header["msg_type"] = t
            parts[0] = json.dumps(header).encode()
            parts[3] = json.dumps({"code": "x\n" * rng.choice([100000, 2000000]), "cursor_pos": 5}).encode()
        elif kind == "random_frames":
            frames = [bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 40))) for _ in range(rng.randint(1, 9))]
            if rng.random() < 0.5:
                frames.insert(0, b"<IDS|MSG>")
        elif kind == "mutated":
            b = bytearray(parts[3])
            for _ in range(rng.randint(1, 5)):
                if b:
                    b[rng.randrange(len(b))] = rng.getrandbits(8)
            parts[3] = bytes(b)
        elif kind == "wrong_header_type":
            parts[0] = json.dumps(rng.choice([[], 5, "str", None, {"msg_type": 5}])).encode()
        if frames is None:
            sig = sign(parts) if kind != "bad_sig" else b"0" * 64
            frames = [b"<IDS|MSG>", sig] + parts
            try:
                ok = all(json_depth(p) <= 256 for p in parts)
                dec = [json.loads(p) for p in parts] if ok else None
            except Exception:
                dec = None
            if kind != "bad_sig" and dec and isinstance(dec[0], dict) and isinstance(dec[0].get("msg_type"), str):
                sent[mid] = ch
        socks[ch].send_multipart(frames)
        if (i + 1) % batch == 0:
            # answers for this batch, then liveness: heartbeat, kernel_info on shell and on control
            deadline = time.time() + 60
            while time.time() < deadline and any(m in sent and not isinstance(sent[m], dict) for m in list(sent)):
                for name, so in socks.items():
                    while so.poll(50):
                        fr = so.recv_multipart()
                        try:
                            j = fr.index(b"<IDS|MSG>")
                            ph = json.loads(fr[j + 3])
                            if ph.get("msg_id") in sent:
                                sent[ph["msg_id"]] = {"answered": True}
                        except Exception:
                            pass
            if not heartbeat_ok(km):
                return {"dead_after": i + 1, "kinds": kinds}
            mid2 = kc.kernel_info()
            if not timed_reply(kc, kc.get_shell_msg, mid2, timeout=30):
                return {"shell_silent_after": i + 1, "kinds": kinds}
            info = kc.session.msg("kernel_info_request", {})
            kc.control_channel.send(info)
            if not timed_reply(kc, kc.get_control_msg, info["header"]["msg_id"], timeout=30):
                return {"control_silent_after": i + 1, "kinds": kinds}
    unanswered = [m for m, v in sent.items() if not isinstance(v, dict)]
    res = {"sent": total, "expected_replies": len(sent), "unanswered": unanswered[:20], "kinds": kinds}
    res["alive"] = result_text(run(kc, "'alive'")[1])
    mid = execute_running(kc, "while (true) {}")
    km.interrupt_kernel()
    res["interrupt_after"] = reply_for(kc, mid).get("ename")
    return res


def run_scenario(scenario, **kw):
    """Runs scenario(km, kc) on a fresh kernel and prints its result as JSON, with the kernel's log."""
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
    km, kc = start(stderr=log, **kw)
    proc = km.provisioner.process
    try:
        res = scenario(km, kc)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    # how the kernel ended: 0 after a shutdown_request (a signal's death is negative)
    res["kernel_exit"] = proc.wait(timeout=10)
    log.seek(0)
    res["kernel_log"] = open(log.name).read()
    os.unlink(log.name)
    print(json.dumps(res))


def main():
    kw = {"cwd": os.environ["DRIVE_CWD"]} if os.environ.get("DRIVE_CWD") else {}
    run_scenario(globals()["scenario_" + sys.argv[1]], **kw)


if __name__ == "__main__":
    main()
