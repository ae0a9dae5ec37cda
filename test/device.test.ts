// The device layer: adapter facts, the install hint when no adapter exists, the GLES fallback, and
// recovery from a lost device.
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import * as torch from "../src/index.ts";

/** Runs a snippet against the runtime in a fresh Node process with the given environment. */
function runIsolated(code: string, env: Record<string, string>): string {
  return execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], {
    cwd: new URL("..", import.meta.url).pathname,
    env: { ...process.env, ...env },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 60_000,
  });
}

describe("device", () => {
  it("finds an adapter and reports its facts", async () => {
    expect(await torch.webgpu.is_available()).toBe(true);
    const p = await torch.cuda.get_device_properties();
    expect(["vulkan", "opengles"]).toContain(p.backend);
    expect(p.name.length).toBeGreaterThan(0);
    expect(p.limits.maxStorageBufferBindingSize).toBeGreaterThanOrEqual(128 << 20);
    expect(p.total_memory).toBe(torch.cuda.get_memory_capacity());
    expect(await torch.webgpu.device_count()).toBe(1);
    await torch.webgpu.synchronize();
  });

  it("names the packages to install when no adapter can be found", () => {
    const out = runIsolated(
      `import * as torch from "./src/index.ts";
       try { await torch.webgpu.init(); console.log("UNEXPECTED"); } catch (e) { console.log(String(e)); }
       console.log("available:", await torch.webgpu.is_available());
       const t = torch.tensor([1, 2]).mul(2);   // ops still record; reading says why it cannot
       try { await t.tolist(); } catch (e) { console.log("read:", String(e).slice(0, 60)); }
       console.log("memory:", torch.cuda.memory_allocated());`,
      { VK_ICD_FILENAMES: "/nonexistent.json", VK_DRIVER_FILES: "/nonexistent.json", GRADLAB_WEBGPU_BACKEND: "vulkan" },
    );
    expect(out).toMatch(/RuntimeError: No usable WebGPU adapter was found/);
    expect(out).toMatch(/mesa-vulkan-drivers libvulkan1/);
    expect(out).toMatch(/libegl1 libgles2 libegl-mesa0/);
    expect(out).toMatch(/available: false/);
    expect(out).toMatch(/read: RuntimeError: No usable WebGPU adapter was found/);
  });

  it("runs the same kernels on the GLES fallback (compatibility mode)", () => {
    const out = runIsolated(
      `import * as torch from "./src/index.ts";
       const p = await torch.webgpu.get_device_properties();
       const x = torch.tensor([[1, 2], [3, 4]]);
       console.log(p.backend, p.feature_level, JSON.stringify(await x.matmul(x).sum(1).tolist()));`,
      { GRADLAB_WEBGPU_BACKEND: "opengles" },
    );
    expect(out.trim().split("\n").pop()).toBe("opengles compatibility [17,37]");
  });

  it("a plain script's loop that never awaits reaches the GPU as it runs: the host holds at most 512 commands", () => {
    // Importing acquires the device, so the first op already has one (device/scheduler.ts submits every
    // 512 commands); before, such a loop queued all its work until its first await.
    const out = runIsolated(
      `import * as torch from "./src/index.ts";
       import { pendingCommands } from "./src/device/scheduler.ts";
       let most = 0;
       let y = torch.zeros([64]);
       for (let i = 0; i < 3000; i++) {
         const next = y.add(1);
         y.dispose();
         y = next;
         most = Math.max(most, pendingCommands());
       }
       console.log("most pending:", most, "value:", JSON.stringify((await y.tolist()).slice(0, 2)));`,
      {},
    );
    const [, most, value] = out.match(/most pending: (\d+) value: (.*)/)!;
    expect(Number(most)).toBeLessThan(512);
    expect(value).toBe("[3000,3000]");
  });

  it("a loop that never awaits and first uses its kernels inside the loop keeps a flat heap", () => {
    // Dawn's verdict on a new pipeline arrives only when the event loop turns, so inside this loop the
    // add kernel stays unjudged throughout. Each of its dispatches once got a submit of its own, whose
    // bookkeeping (and Dawn's per-submit state) lived until the loop yielded: the heap grew with the
    // loop's length. Counted in bytes of live heap after full collections, not in time.
    const out = runIsolated(
      `import v8 from "node:v8";
       import vm from "node:vm";
       import * as torch from "./src/index.ts";
       v8.setFlagsFromString("--expose-gc");
       const gc = vm.runInNewContext("gc");
       // memory_allocated() first waits for V8's background compile jobs (memory/lifetime.ts): under
       // load, code for the loop's functions could otherwise land after the first sample and count
       // (271 B per op once at load 12, against under 100 quiet)
       const live = () => (torch.cuda.memory_allocated(), gc(), process.memoryUsage().heapUsed);
       // The first 2,500 ops grow the heap once (V8's feedback and code for the loop, the params slots'
       // bind groups, first used around op 2,000): 640, 148, 30 and 120 B per op in windows of 500, then
       // 0-26 from there on (measured quiet), so the window starts after them. The old fault grew by
       // 2,585 B per op in every window.
       let y = torch.zeros([64]);
       let early = 0;
       for (let i = 1; i <= 6500; i++) {
         const next = y.add(1);
         y.dispose();
         y = next;
         if (i === 2500) early = live();
       }
       const perOp = (live() - early) / 4000;
       console.log("bytes per op:", perOp.toFixed(0), "value:", JSON.stringify((await y.tolist()).slice(0, 2)));`,
      {},
    );
    const [, perOp, value] = out.match(/bytes per op: (-?\d+) value: (.*)/)!;
    expect(value).toBe("[6500,6500]");
    expect(Number(perOp)).toBeLessThan(256);
  });

  it.each([
    ["segments bound whole", ""],
    // Segments larger than one binding may be (here 2 MiB small-pool segments against a 1 MiB limit) are
    // bound a tile at a time.
    ["segments larger than a binding", "_set_max_binding_size(2 ** 20);"],
  ])("a loop that never awaits after a high peak reuses its bind groups wherever its blocks lie (%s)", (_, limit) => {
    // After a 64 MiB tensor is made and freed, the allocator places the loop's blocks at offsets that
    // drift from step to step. Bind groups were keyed by offset: one per dispatch (12,680 in 300 steps),
    // none freed by Dawn until it ticks, which such a loop never lets it do; at ~30,000 lavapipe
    // crashed (SIGSEGV in its descriptor pool allocation). A group now names segments (or tiles of one),
    // and each operand's start goes to the params.
    const out = runIsolated(
      `import * as torch from "./src/index.ts";
       import { _set_max_binding_size, getDevice } from "./src/device/backend.ts";
       import { encodeState } from "./src/device/encode.ts";
       const st = encodeState(await getDevice());
       torch.ones(16 * 2 ** 20).dispose();
       await torch.webgpu.synchronize();
       ${limit}
       const { nn } = torch;
       torch.manual_seed(0);
       const model = new nn.Sequential(new nn.Linear(64, 128), new nn.ReLU(), new nn.Linear(128, 10));
       const opt = new torch.optim.Adam(model.parameters(), { lr: 1e-3 });
       const x = torch.randn(32, 64);
       const y = torch.randn(32, 10);
       let early = 0;
       for (let step = 1; step <= 150; step++) {
         opt.zero_grad();
         const loss = torch.nn.functional.mse_loss(model(x), y);
         loss.backward();
         opt.step();
         if (step === 50) early = st.bindGroupsMade;
       }
       const loss = await torch.nn.functional.mse_loss(model(x), y).item();
       console.log("bind groups made in steps 51-150:", st.bindGroupsMade - early, "loss:", loss);`,
      {},
    );
    const [, made, loss] = out.match(/steps 51-150: (\d+) loss: (.*)/)!;
    expect(Number(made)).toBeLessThan(50);
    expect(Number.isFinite(Number(loss))).toBe(true);
  });

  it("memory that empty_cache() releases leaves the process (lavapipe's device memory is the process's)", () => {
    // Before: Dawn kept released buffers until some later work ran, and pooled small ones for good, so
    // the process stayed as large as with the tensors below after they were gone (allocated and reserved 0).
    const out = runIsolated(
      `import * as torch from "./src/index.ts";
       const rss = () => process.memoryUsage().rss / 2 ** 20;
       const warm = [torch.ones([2 ** 18]), torch.ones([2 ** 24])];  // kernels compiled, pools made
       for (const t of warm) { await t.sum().item(); t.dispose(); }
       torch.cuda.empty_cache();
       await torch.cuda.synchronize();
       const before = rss();
       const big = Array.from({ length: 4 }, () => torch.ones([2 ** 24]));    // 4 x 64 MiB segments
       const small = Array.from({ length: 128 }, () => torch.ones([2 ** 18])); // 128 x 1 MiB: 2 MiB segments
       await torch.cuda.synchronize();
       const held = rss();
       for (const t of [...big, ...small]) t.dispose();
       torch.cuda.empty_cache();
       await torch.cuda.synchronize();
       console.log(JSON.stringify({ before, held, after: rss(), reserved: torch.cuda.memory_reserved() }));`,
      {},
    );
    const { before, held, after, reserved } = JSON.parse(out.trim().split("\n").pop()!);
    expect(reserved).toBe(0);
    expect(held - before).toBeGreaterThan(300); // the 384 MiB were really in the process
    expect(after - before).toBeLessThan(60); // and left it with empty_cache()
  });

  it("rejects an unknown backend name", () => {
    const out = runIsolated(
      `import * as torch from "./src/index.ts";
       try { await torch.webgpu.init(); } catch (e) { console.log(String(e)); }`,
      { GRADLAB_WEBGPU_BACKEND: "metal3" },
    );
    expect(out).toMatch(/GRADLAB_WEBGPU_BACKEND must be vulkan, opengles or auto, not "metal3"/);
  });

  it("after a device loss, old tensors say so and new ops run on a fresh device", async () => {
    const old = torch.tensor([1, 2, 3]);
    expect(await old.tolist()).toEqual([1, 2, 3]);
    await torch.webgpu._simulate_device_loss();
    await expect(old.tolist()).rejects.toThrow(/This tensor's data was lost with the WebGPU device/);
    expect(() => old.add(1)).toThrow(/lost with the WebGPU device/);
    const fresh = torch.tensor([4, 5, 6]).mul(2);
    expect(await fresh.tolist()).toEqual([8, 10, 12]);
    expect(await torch.webgpu.is_available()).toBe(true);
    // memory accounting is untouched by the loss: disposing the old tensor returns its bytes
    const before = torch.cuda.memory_allocated();
    old.dispose();
    expect(torch.cuda.memory_allocated()).toBe(before - 512);
  });
});
