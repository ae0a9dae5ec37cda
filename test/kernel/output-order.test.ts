// Printed output in volume through the kernel's stream ring (kernel/sockets/ring.ts), driven by
// Debian's jupyter_client: every line arrives, once, in order; stdout and stderr keep their own
// order; a display arrives after exactly the lines printed before it; a write larger than the ring
// (cut into pieces) arrives whole, multi-byte characters and surrogate pairs included.
import { afterAll, beforeAll, expect, test } from "vitest";
import { join } from "node:path";
import { installedKernel, run, PYTHON, REPO, type Env } from "./helpers.ts";

let e: Env;
let r: any;
beforeAll(async () => {
  e = await installedKernel();
  const out = await run(PYTHON, [join(REPO, "test", "kernel", "output_order.py")], { env: e.env, cwd: join(REPO, "test", "kernel") });
  if (out.code !== 0) throw new Error(`output_order.py failed (${out.code}):\n${out.stderr}`);
  r = JSON.parse(out.stdout.trim().split("\n").pop()!);
}, 180_000);
afterAll(() => e?.cleanup());

const N = 20_000;

test("every stdout line, once and in order, then the large write whole", () => {
  expect(r.status).toBe("ok");
  const lines = Array.from({ length: N }, (_, i) => `o${i}\n`).join("");
  expect(r.stdout.length).toBe(lines.length + "é😀x".length * 400_000 + 1 + "end\n".length);
  expect(r.stdout).toBe(`${lines}${"é😀x".repeat(400_000)}\nend\n`);
});

test("stderr keeps its own order, none lost", () => {
  const expected = Array.from({ length: N }, (_, i) => i)
    .filter((i) => i % 7 === 0)
    .map((i) => `e${i}\n`)
    .join("");
  expect(r.stderr).toBe(expected);
});

test("each display arrives after exactly the lines printed before it", () => {
  expect(r.displays).toEqual(Array.from({ length: N / 1000 }, (_, k) => [`{ at: ${k * 1000} }`, k * 1000]));
  expect(r.types.slice(-1)).toEqual(["status"]);
});

test("consecutive writes to one stream are joined: fewer messages than writes", () => {
  // 22,878 writes; stdout and stderr alternate 5,716 times, and each alternation starts a message (order
  // across the two streams is kept), so about 5,740 messages: a message per write would be 22,878
  expect(r.stream_messages).toBeLessThan(N);
});
