// Displays that travel: GradLab's plot views rendered by a host that knows nothing of GradLab (a fake
// of what Deno's Jupyter kernel does with a cell's value), and the kernel's own display() against a
// fake DisplayHost: always a promise, published at once when the bundle is ready at once.
import { describe, expect, it } from "vitest";
import { memory_stages, memory_timeline, compare_runs } from "../../src/viz/memory-plots.ts";
import { installGlobals, type DisplayHost } from "../../kernel/display/globals.ts";
import { CommManager } from "../../kernel/comms.ts";

const JUPYTER_DISPLAY = Symbol.for("Jupyter.display");
const VEGALITE = "application/vnd.vegalite.v5+json";

/** A host written from Deno's documented duck typing: an object's Jupyter.display method wins
 *  (sync or async); otherwise an object with toSpec() is a Vega or Vega-Lite chart, its media type
 *  chosen by the spec's $schema; otherwise text. */
async function foreignHost(value: unknown, opts: { ignoreDisplaySymbol?: boolean } = {}): Promise<Record<string, unknown>> {
  const o = value as Record<PropertyKey, unknown> | null;
  if (!opts.ignoreDisplaySymbol && o && typeof o === "object" && typeof o[JUPYTER_DISPLAY] === "function") {
    return (await (o[JUPYTER_DISPLAY] as () => unknown)()) as Record<string, unknown>;
  }
  if (o && typeof o === "object" && "toSpec" in o) {
    const spec = (o.toSpec as () => Record<string, unknown>)();
    if (typeof spec === "object" && "$schema" in spec) {
      const m = /vega-lite\/v(\d)\.json$/.exec(String(spec.$schema));
      return { [m ? `application/vnd.vegalite.v${m[1]}+json` : "application/vnd.vega.v5+json"]: spec };
    }
  }
  return { "text/plain": String(value) };
}

const EVENTS = [
  { action: "alloc", addr: 1, size: 4096, category: "parameter", phase: "forward" },
  { action: "alloc", addr: 2, size: 8192, category: "activation", phase: "forward" },
  { action: "free_completed", addr: 2, size: 8192, category: "activation", phase: "backward" },
];

describe("plot views in a foreign host", () => {
  const views = {
    memory_stages: () =>
      memory_stages([
        ["model", 4096],
        ["forward", "12 KiB", "16 KiB"],
      ]),
    memory_timeline: () => memory_timeline(EVENTS as never),
    compare_runs: () => compare_runs({ a: EVENTS as never, b: EVENTS.slice(0, 1) as never }),
  };
  for (const [name, make] of Object.entries(views)) {
    it(`${name}: the display symbol gives the full bundle; toSpec() alone gives the same Vega-Lite spec`, async () => {
      const v = make();
      const full = await foreignHost(v);
      // compared as JSON, as the host sends it (vega tags the data rows it rendered with a symbol)
      const json = (x: unknown) => JSON.parse(JSON.stringify(x));
      expect(json(full[VEGALITE])).toEqual(json(v.spec));
      expect(typeof full["text/plain"]).toBe("string");
      expect(String(full["image/svg+xml"])).toMatch(/<svg/);
      const bySpec = await foreignHost(v, { ignoreDisplaySymbol: true });
      expect(Object.keys(bySpec)).toEqual([VEGALITE]);
      expect(bySpec[VEGALITE]).toEqual(v.toSpec());
      expect(json(v.toSpec())).toEqual(v.toSpec()); // plain JSON: nothing a host would lose
    });
  }
});

describe("the kernel's display() against a fake host", () => {
  function fakeHost() {
    const sent: { type: string; content: any; parent: object }[] = [];
    const host: DisplayHost = {
      publish: (type, content, parent) => void sent.push({ type, content, parent }),
      currentParent: () => ({ msg_id: "cell-1" }),
      prompt: () => null,
      comms: new CommManager(),
      cellEndHooks: [],
      pendingDisplays: [],
    };
    installGlobals(host);
    return { sent, display: (globalThis as any).display };
  }

  it("always returns a promise; a bundle built at once is published before display() returns", async () => {
    const { sent, display } = fakeHost();
    const p = display({ [JUPYTER_DISPLAY]: () => ({ "text/html": "<b>hi</b>" }) });
    expect(p).toBeInstanceOf(Promise);
    expect(sent).toHaveLength(1); // not waiting for the promise
    expect(sent[0]).toMatchObject({ type: "display_data", parent: { msg_id: "cell-1" }, content: { data: { "text/html": "<b>hi</b>" }, transient: {} } });
    await expect(p).resolves.toBeUndefined();
    await expect(display(42)).resolves.toBeUndefined();
    expect(sent[1].content.data["text/plain"]).toBe("42");
  });

  it("an async display method publishes when its bundle resolves; a display_id handle is there at once", async () => {
    const { sent, display } = fakeHost();
    const p = display({ [JUPYTER_DISPLAY]: async () => ({ "text/markdown": "# later" }) }, { display_id: "d1", metadata: { m: 1 } });
    expect(p.display_id).toBe("d1");
    expect(sent).toHaveLength(0);
    const h = await p;
    expect(h.display_id).toBe("d1");
    expect(sent[0]).toMatchObject({
      type: "display_data",
      content: { data: { "text/markdown": "# later" }, metadata: { m: 1 }, transient: { display_id: "d1" } },
    });
    p.update("now text"); // the handle carried by the promise updates without awaiting
    expect(sent[1]).toMatchObject({ type: "update_display_data", content: { data: { "text/plain": "'now text'" }, transient: { display_id: "d1" } } });
    expect(() => display(1, { update: true })).toThrow(/needs a display_id/);
  });

  it("a live plot shown with display() redraws from a loop that never awaits", () => {
    const { sent } = fakeHost();
    const plot = memory_timeline([] as never).show();
    plot.throttle_ms = 0;
    for (let i = 1; i <= 3; i++) plot.update(EVENTS.slice(0, i) as never);
    expect(sent.map((m) => m.type)).toEqual(["display_data", "update_display_data", "update_display_data", "update_display_data"]);
  });
});
