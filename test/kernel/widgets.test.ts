// torch.widgets and torch.viz.stepper in the real kernel, driven by Debian's jupyter_client playing the
// part of a widget front end (test/kernel/widgets.py): comms opened with protocol 2.1, updates in both
// directions with the echo, observe callbacks, request_state and the control comm, a click captured
// by an Output widget, the stepper redrawn when its slider moves, and a restart.
import { afterAll, beforeAll, expect, test } from "vitest";
import { join } from "node:path";
import { installedKernel, run, PYTHON, REPO, type Env } from "./helpers.ts";

let e: Env;
let r: any;
beforeAll(async () => {
  e = await installedKernel({ GRADLAB_RUNTIME: "" }); // the real runtime: torch.widgets is part of it
  const out = await run(PYTHON, [join(REPO, "test", "kernel", "widgets.py")], { env: e.env, timeout: 180_000 });
  if (out.code !== 0) throw new Error(`widgets.py failed (${out.code}):\n${out.stderr}\n${out.stdout}`);
  r = JSON.parse(out.stdout.trim().split("\n").pop()!);
}, 200_000);
afterAll(() => e?.cleanup());

test("a widget's comms open with protocol 2.1 and the cell shows a view of it", () => {
  expect(r.slider_status).toBe("ok");
  expect(r.opens).toEqual([
    { target: "jupyter.widget", model: "LayoutModel" },
    { target: "jupyter.widget", model: "SliderStyleModel" },
    { target: "jupyter.widget", model: "IntSliderModel" },
  ]);
  expect(r.open_metadata.map((m: string) => JSON.parse(m))).toEqual([{ version: "2.1.0" }]);
  expect(r.view).toEqual({ version_major: 2, version_minor: 0, model_id: r.slider_id });
  expect(r.text).toBe("IntSlider(value=0, description='n', max=10)");
});

test("front-end updates are echoed and observed; a clamped value and kernel changes go back", () => {
  expect(r.echo).toEqual([{ method: "echo_update", state: { value: 4 }, buffer_paths: [] }]);
  expect(r.seen).toBe("[4,[4]]");
  expect(r.clamped).toEqual([
    { method: "echo_update", state: { value: 99 }, buffer_paths: [] },
    { method: "update", state: { value: 10 }, buffer_paths: [] },
  ]);
  expect(r.kernel_update).toEqual([{ method: "update", state: { value: 7 }, buffer_paths: [] }]);
});

test("a reconnecting front end gets the state back: request_state, the control comm, comm_info", () => {
  expect(r.request_state).toHaveLength(1);
  expect(r.request_state[0].method).toBe("update");
  expect(r.request_state[0].state).toMatchObject({ _model_name: "IntSliderModel", value: 7, max: 10 });
  expect(r.control.method).toBe("update_states");
  expect(r.control.slider).toMatchObject({ model_name: "IntSliderModel", model_module: "@jupyter-widgets/controls", model_module_version: "2.0.0" });
  expect(r.control.slider.state.value).toBe(7);
  expect(r.comm_info_has_slider).toBe(true);
});

test("a click runs on_click; Output.capture routes its print to the widget by the click's msg_id", () => {
  expect(r.click.msg_ids).toEqual([r.click.request, ""]);
  expect(r.click.stdout).toBe("clicked 1\n");
  expect(r.clicks).toBe("1");
});

test("the stepper: a widget with a static fallback; its slider redraws caption, memory bar and graph", () => {
  expect(r.stepper_status).toBe("ok");
  expect(r.stepper_mimes).toEqual(["application/vnd.jupyter.widget-view+json", "text/html", "text/plain"]);
  expect(r.stepper_slider).toEqual({ min: 0, max: r.stepper_expected.steps, value: 0 });
  expect(r.stepper_expected.steps).toBe(7);
  const [source, target, play, slider] = r.stepper_link;
  expect([source, target]).toEqual([
    [play, "value"],
    [slider, "value"],
  ]);
  const updates = r.stepper_updates;
  expect(updates[0]).toEqual({ comm: false, method: "echo_update", value: 3 });
  const html = updates.filter((u: any) => u.comm && u.method === "update").map((u: any) => u.value as string);
  expect(html).toHaveLength(3);
  const [caption, bar, drawing] = html;
  expect(caption).toContain('data-frame="3"');
  expect(caption).toContain(r.stepper_expected.caption.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"));
  expect(bar).toContain(`data-bytes="${r.stepper_expected.mem}"`);
  expect(drawing).toContain('data-frame="3"');
  expect(drawing).toContain("<svg");
  // the drawing at step 3 differs from the one before backward, and highlights one node
  const before = Object.values(r.stepper_before as Record<string, string>).find((v) => v.includes("gradlab-stepper-graph"))!;
  expect(before).toContain('data-frame="0"');
  expect(drawing).not.toBe(before);
  expect(drawing.match(/fill="#ffd54f"/g)).toHaveLength(1);
  expect(before.match(/fill="#ffd54f"/g)).toBeNull();
  expect(r.stepper_expected.slider).toBe(3);
});

test("a wrong value raises in the cell, in traitlets' words", () => {
  expect(r.bad_value).toBe("The 'value' trait of an IntSlider instance expected an int, not the str '3'.");
});

test("after a restart the kernel reports no widgets, and a new one works", () => {
  expect(r.after_restart_comms).toEqual({});
  expect(r.after_restart).toEqual({ status: "ok", opens: 3, view: true });
});
