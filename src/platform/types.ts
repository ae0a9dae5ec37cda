// What the runtime needs from the machine it runs on, in one interface, so that src/ runs both in Node
// (Dawn through npm `webgpu`, V8 flags for synchronous reclamation, shaders read from kernels-wgsl/)
// and in a browser Web Worker (navigator.gpu, shaders inlined at bundle time, no collector to call).
// current.ts names the implementation; the browser bundle swaps node.ts for browser.ts (bin/lite/).

/** How unreachable tensor handles are reclaimed before memory figures are read. */
export interface EngineHooks {
  /** a full collection, where the engine exposes one */
  gc: (() => void) | null;
  /** a FinalizationRegistry constructor (with cleanupSome where the engine has it) */
  Registry: typeof FinalizationRegistry;
  /** true when a collection and its finalisers can run inside the current job */
  synchronous: boolean;
  /** waits for background compilations that may hold dropped handles (a no-op where unavailable) */
  finishCompiles: () => void;
  /** said once when reclamation cannot be synchronous here */
  unavailable: string;
}

/** The adapter backends a platform can try, in order. */
export type AdapterBackend = "vulkan" | "opengles" | "browser";

export interface Platform {
  readonly name: "node" | "browser";
  /** an environment setting (GRADLAB_*); undefined where the platform has none */
  env(name: string): string | undefined;
  /** a warning for the user, printed at once as "Type: message" (Node: stderr; browser: console.warn) */
  warn(message: string, type: string): void;
  /** the host's memory in bytes, or null where the platform does not say */
  hostMemory(): number | null;
  /** the text of kernels-wgsl/<name>.wgsl */
  shaderText(name: string): string;
  engineHooks(): EngineHooks;
  /** the backends to try for GRADLAB_WEBGPU_BACKEND's choice */
  backends(choice: "vulkan" | "opengles" | "auto"): AdapterBackend[];
  /** an adapter of that backend, or null where there is none */
  requestAdapter(backend: AdapterBackend): Promise<GPUAdapter | null>;
  /** said when no backend gave an adapter: what to install or switch on */
  noAdapterHint(): string;
  /** called when the host starts waiting on the GPU (Dawn's polling back-off) */
  beginWait(): void;
  /** base64 of a string's UTF-8 bytes */
  base64(text: string): string;
  /** writes a file (torch.cuda.memory._dump_snapshot's pickle); throws where there is no file system */
  writeFile(path: string, data: string | Uint8Array | (() => Uint8Array)): void;
  /** a CommonJS package loaded synchronously (resvg, vega), or null where the platform cannot */
  requireSync<T>(name: string): T | null;
  /** whether a font file exists (the PNG fallback's fonts); false where there is no file system */
  fileExists(path: string): boolean;
}
