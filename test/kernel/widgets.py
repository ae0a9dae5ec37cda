"""Plays a widget front end against the gradlab kernel through Debian's jupyter_client: what
jupyterlab_widgets does over the Jupyter protocol (comm_open from the kernel, comm_msg updates both
ways, echo_update, request_state, the jupyter.widget.control comm, custom click messages, Output
capture, comm_info) and a kernel restart. Prints one JSON object; test/kernel/widgets.test.ts asserts.

usage: python3 widgets.py   (JUPYTER_PATH must contain the gradlab kernelspec; the real runtime)
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from drive import collect, reply_for, run, result_text, run_scenario, send_shell, stdout_text  # noqa: E402


def comm_opens(outs):
    return [o["content"] for o in outs if o["type"] == "comm_open"]


def comm_msgs(outs):
    return [o["content"] for o in outs if o["type"] == "comm_msg"]


def collect_with_metadata(kc, msg_id):
    """collect(), keeping each message's metadata as well."""
    full = []
    collect(kc, msg_id, on_message=lambda m: full.append({"type": m["msg_type"], "content": m["content"], "metadata": m["metadata"]}))
    return full


def front_end_update(kc, comm_id, state):
    mid = send_shell(kc, "comm_msg", {"comm_id": comm_id, "data": {"method": "update", "state": state, "buffer_paths": []}})
    return mid, collect(kc, mid)


def scenario(km, kc):
    res = {}
    # 1. a slider from a cell: its comms open, and the cell's value is a view of it
    mid = kc.execute('const s = new torch.widgets.IntSlider({ max: 10, description: "n" });\n'
                     'const seen: number[] = [];\n'
                     's.observe((c) => seen.push(c.new as number), "value");\n'
                     's')
    reply = reply_for(kc, mid)
    outs = collect_with_metadata(kc, mid)
    res["open_metadata"] = sorted({json.dumps(o["metadata"]) for o in outs if o["type"] == "comm_open"})
    res["slider_status"] = reply["status"]
    opens = comm_opens(outs)
    res["opens"] = [{"target": o["target_name"], "model": o["data"]["state"]["_model_name"]} for o in opens]
    slider = next(o for o in opens if o["data"]["state"]["_model_name"] == "IntSliderModel")
    res["slider_state"] = slider["data"]["state"]
    result = next(o for o in outs if o["type"] == "execute_result")["content"]["data"]
    res["view"] = result.get("application/vnd.jupyter.widget-view+json")
    res["slider_id"] = slider["comm_id"]
    res["text"] = result["text/plain"]

    # 2. the front end moves it: echoed under the front end's message, observed in the kernel
    mid, outs = front_end_update(kc, slider["comm_id"], {"value": 4})
    res["echo"] = [m["data"] for m in comm_msgs(outs)]
    res["seen"] = stdout_text(run(kc, "console.log(JSON.stringify([s.value, seen]))")[1]).strip()
    # a value past max is clamped, and the clamped value goes back
    mid, outs = front_end_update(kc, slider["comm_id"], {"value": 99})
    res["clamped"] = [m["data"] for m in comm_msgs(outs)]

    # 3. the kernel moves it: one update
    reply, outs = run(kc, "s.value = 7")
    res["kernel_update"] = [m["data"] for m in comm_msgs(outs) if m["comm_id"] == slider["comm_id"]]

    # 4. request_state (a reloaded page) and the control comm (a front end that reconnects)
    mid = send_shell(kc, "comm_msg", {"comm_id": slider["comm_id"], "data": {"method": "request_state"}})
    res["request_state"] = [m["data"] for m in comm_msgs(collect(kc, mid))]
    ctl = "control-1"
    # as jupyterlab_widgets opens it: the control protocol's version in the metadata
    msg = kc.session.msg("comm_open", {"comm_id": ctl, "target_name": "jupyter.widget.control", "data": {}}, metadata={"version": "1.0.0"})
    kc.shell_channel.send(msg)
    collect(kc, msg["header"]["msg_id"])
    mid = send_shell(kc, "comm_msg", {"comm_id": ctl, "data": {"method": "request_states"}})
    states = [m["data"] for m in comm_msgs(collect(kc, mid)) if m["comm_id"] == ctl]
    res["control"] = {"method": states[0]["method"], "slider": states[0]["states"].get(slider["comm_id"])} if states else None
    mid = kc.comm_info(target_name="jupyter.widget")
    res["comm_info_has_slider"] = slider["comm_id"] in reply_for(kc, mid)["comms"]

    # 5. a button whose click handler captures its output into an Output widget
    reply, outs = run(kc, 'const out = new torch.widgets.Output();\n'
                          'const b = new torch.widgets.Button({ description: "go" });\n'
                          'let clicks = 0;\n'
                          'b.on_click(() => out.capture(() => { clicks++; console.log("clicked", clicks); }));\n'
                          'new torch.widgets.VBox([b, out])')
    opens = comm_opens(outs)
    button = next(o for o in opens if o["data"]["state"]["_model_name"] == "ButtonModel")
    output = next(o for o in opens if o["data"]["state"]["_model_name"] == "OutputModel")
    mid = send_shell(kc, "comm_msg", {"comm_id": button["comm_id"], "data": {"method": "custom", "content": {"event": "click"}}})
    outs = collect(kc, mid)
    res["click"] = {
        "msg_ids": [m["data"]["state"]["msg_id"] for m in comm_msgs(outs) if m["comm_id"] == output["comm_id"]],
        "request": mid,
        "stdout": stdout_text(outs),
    }
    res["clicks"] = result_text(run(kc, "clicks")[1])

    # 6. the stepper: moving its slider redraws the caption, the memory bar and the graph
    reply, outs = run(kc, "const x = torch.randn(64, 256);\n"
                          "const W1 = torch.randn(256, 256, { requires_grad: true });\n"
                          "const W2 = torch.randn(256, 256, { requires_grad: true });\n"
                          "const loss = x.matmul(W1).relu().matmul(W2).relu().sum();\n"
                          "const st = torch.viz.stepper(loss, { params: { W1, W2 } });\n"
                          "st")
    res["stepper_status"] = reply["status"]
    result = next(o for o in outs if o["type"] == "execute_result")["content"]["data"]
    res["stepper_mimes"] = sorted(result.keys())
    opens = comm_opens(outs)
    sl = next(o for o in opens if o["data"]["state"]["_model_name"] == "IntSliderModel")
    play = next(o for o in opens if o["data"]["state"]["_model_name"] == "PlayModel")
    link = next(o for o in opens if o["data"]["state"]["_model_name"] == "LinkModel")
    htmls = {o["comm_id"]: o["data"]["state"]["value"] for o in opens if o["data"]["state"]["_model_name"] == "HTMLModel"}
    res["stepper_slider"] = {k: sl["data"]["state"][k] for k in ("min", "max", "value")}
    res["stepper_link"] = [link["data"]["state"]["source"], link["data"]["state"]["target"], "IPY_MODEL_" + play["comm_id"], "IPY_MODEL_" + sl["comm_id"]]
    mid, outs = front_end_update(kc, sl["comm_id"], {"value": 3})
    res["stepper_updates"] = [{"comm": m["comm_id"] in htmls, "method": m["data"]["method"], "value": m["data"]["state"].get("value")} for m in comm_msgs(outs)]
    res["stepper_before"] = htmls
    res["stepper_expected"] = json.loads(stdout_text(run(kc, "console.log(JSON.stringify({ mem: st.memory_allocated(3), caption: st.caption(3), steps: st.steps, slider: st.slider?.value }))")[1]))

    # 7. a widget a student misuses: the error reaches the cell
    reply, outs = run(kc, 's.value = "3" as any')
    res["bad_value"] = reply.get("evalue")

    # 8. restart: the new kernel knows no widget; a new one works
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=60)
    mid = kc.comm_info(target_name="jupyter.widget")
    res["after_restart_comms"] = reply_for(kc, mid)["comms"]
    reply, outs = run(kc, "new torch.widgets.IntSlider({ value: 2 })")
    res["after_restart"] = {"status": reply["status"], "opens": len(comm_opens(outs)),
                            "view": "application/vnd.jupyter.widget-view+json" in next(o for o in outs if o["type"] == "execute_result")["content"]["data"]}
    return res


def main():
    run_scenario(scenario)


if __name__ == "__main__":
    main()
