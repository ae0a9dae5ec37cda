// tfjs-webgpu on the same kind of Dawn instance GradLab uses: the reference the benchmarks compare with.
import { withoutNativeStderr } from "../src/platform/node.ts";

/** tfjs-core with its WebGPU backend ready, or throws why it cannot be (the benchmarks print it). */
export async function tfjsSetup() {
  // tfjs-backend-webgpu looks for navigator.gpu; give it the same Dawn instance kind GradLab uses.
  const { create, globals } = await import("webgpu");
  Object.assign(globalThis, globals);
  const gpu = create([]);
  // Dawn's own warnings at requestAdapter are silenced as GradLab's runtime silences them
  const requestAdapter = gpu.requestAdapter.bind(gpu);
  gpu.requestAdapter = (options) => withoutNativeStderr(() => requestAdapter(options));
  Object.defineProperty(globalThis, "navigator", { value: { gpu, userAgent: "node" }, configurable: true });
  const tf = await import("@tensorflow/tfjs-core");
  await import("@tensorflow/tfjs-backend-webgpu");
  await tf.setBackend("webgpu");
  await tf.ready();
  // tfjs sets no handler for Dawn's validation errors (at 256 MiB its bindings exceed the binding limit:
  // every dispatch is rejected), and Dawn's default prints each one in full: hundreds of lines between
  // a benchmark's rows. Print each distinct error once; the benchmarks check tfjs's results themselves.
  const device = (tf.backend() as unknown as { device: GPUDevice }).device;
  const seen = new Set<string>();
  device.onuncapturederror = (ev) => {
    ev.preventDefault(); // (Dawn's default print)
    const first = ev.error.message.split("\n")[0];
    if (seen.has(first)) return;
    seen.add(first);
    console.log(`tfjs-webgpu: Dawn rejected its work (${ev.error.constructor.name}): ${first} (the same again is not shown)`);
  };
  return tf;
}
