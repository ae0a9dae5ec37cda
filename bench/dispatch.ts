// µs per small elementwise op when many are batched into one submit (DESIGN.md: ~20 µs/dispatch
// batched on lavapipe, 30–90 µs with a submit each). Reference in the same run: the same ops, each
// followed by synchronize() (one submit per op).
import * as torch from "../src/index.ts";

const N = Number(process.env.N ?? 2000);
const x = torch.ones(256);
await torch.webgpu.synchronize();

async function run(label: string, syncEach: boolean): Promise<number> {
  let y = x.mul(1);
  // warm-up: pipelines compiled, blocks cached
  for (let i = 0; i < 50; i++) { const z = y.add(1); y.dispose(); y = z; }
  await torch.webgpu.synchronize();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const z = y.add(1);
    y.dispose();
    y = z;
    if (syncEach) await torch.webgpu.synchronize();
  }
  await torch.webgpu.synchronize();
  const us = ((performance.now() - t0) * 1000) / N;
  y.dispose();
  console.log(`${label.padEnd(34)} ${us.toFixed(1).padStart(7)} µs/op`);
  return us;
}

console.log(`device: ${await torch.webgpu.get_device_name()}; ${N} dependent add ops on a 256-element tensor`);
const batched = await run("batched (one encoder, few submits)", false);
const each = await run("synchronize after every op", true);
console.log(`ratio: batched is ${(each / batched).toFixed(1)}x cheaper per op than submit-and-wait`);
