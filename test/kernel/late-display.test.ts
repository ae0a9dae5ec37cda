// Every display of a cell is published before its execute_reply and idle (issue 23): a display whose
// bundle is built asynchronously (torch.viz.graph renders with Graphviz's WebAssembly) used to arrive
// seconds after idle, so `gradlab run` and any client that stops at idle lost it. Driven by Debian's
// jupyter_client (drive.py's scenario_late_display), with the real runtime.
import { afterAll, beforeAll, expect, test } from "vitest";
import { installedKernel, drive, type Env } from "./helpers.ts";

let e: Env;
let r: any;
beforeAll(async () => {
  e = await installedKernel({ GRADLAB_RUNTIME: "" });
  r = await drive(e, "late_display");
}, 180_000);
afterAll(() => e?.cleanup());

test("a display built after the cell's last line is published before idle", () => {
  expect(r.late.status).toBe("ok");
  expect(r.late.types).toEqual(["status", "execute_input", "stream", "display_data", "status"]);
  expect(r.late.html).toEqual(["<b>late</b>"]);
});

test("displays started by display.on_cell_end hooks are waited for too", () => {
  expect(r.hook).toEqual(["<b>first</b>", "<b>hook</b>"]);
});

test("display(torch.viz.graph(loss)) followed by more code: the drawing is in the cell's output", () => {
  expect(r.graph.status).toBe("ok");
  expect(r.graph.types.slice(-2)).toEqual(["display_data", "status"]);
  expect(r.graph.mimes).toEqual([["image/svg+xml", "text/html", "text/plain", "text/vnd.graphviz"]]);
});

test("waiting for a display that never finishes can be interrupted, and the kernel carries on", () => {
  expect(r.stuck_ename).toBe("KeyboardInterrupt");
  expect(r.alive).toBe("'alive'");
});
