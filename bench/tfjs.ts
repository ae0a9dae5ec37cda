// tfjs-webgpu on the same kind of Dawn instance GradLab uses: the reference the benchmarks compare with.

/** tfjs-core with its WebGPU backend ready, or throws why it cannot be (the benchmarks print it). */
export async function tfjsSetup() {
  // tfjs-backend-webgpu looks for navigator.gpu; give it the same Dawn instance kind GradLab uses.
  const { create, globals } = await import("webgpu");
  Object.assign(globalThis, globals);
  Object.defineProperty(globalThis, "navigator", { value: { gpu: create([]), userAgent: "node" }, configurable: true });
  const tf = await import("@tensorflow/tfjs-core");
  await import("@tensorflow/tfjs-backend-webgpu");
  await tf.setBackend("webgpu");
  await tf.ready();
  return tf;
}
