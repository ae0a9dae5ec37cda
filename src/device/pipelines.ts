// WGSL lives in kernels-wgsl/*.wgsl. Each file is compiled with prelude.wgsl in front (shared helpers:
// bindings, loads and stores by slot, dtype conversion, dispatch indexing). Pipelines are specialised
// with WGSL `override` constants (op codes, dtypes, binding slots, tile sizes) instead of text
// templates, so every shader stays a plain, valid WGSL file; they are cached per device.
// Kernels share explicit pipeline layouts: group 0 = params, group 1 = the n storage buffers a dispatch
// binds (n = its distinct bindings, at most MAX_BINDINGS). A prelude declares all MAX_BINDINGS; for n < 6
// the declarations past n become private placeholders (bindingsOf), never reached since the operands'
// bindings (S<k> & 7) are 1..n: each dispatch then binds only its own memory, where binding all six (the
// unused ones to a dummy buffer) cost Dawn and lavapipe ~1 µs per dispatch on the host and as much on
// lavapipe's threads.

import { platform } from "../platform/current.ts";

const MAX_BINDINGS = 6;
/** Group 2's uniform bindings (matmul_tiles.wgsl: 6 tiles of A, 6 of B), each TILE_BYTES long: as many as
 *  llvmpipe allows (maxUniformBuffersPerShaderStage 12; maxDynamicUniformBuffersPerPipelineLayout 16,
 *  requested by device/backend.ts). More k per dispatch means fewer passes over C: one chunk of 64 k per
 *  dispatch ran a 1024^2 product at 19 GFLOP/s, two at 26, four at 29.4. */
export const TILE_BINDINGS = 12;
export const TILE_BYTES = 65536;
const sources = new Map<string, string>();
const shaderConstants = new Map<string, Record<string, number>>();

/**
 * Module-scope `const NAME: u32 = N;` declarations put in front of a shader: the op codes its switches
 * name, declared by the op layer (ops/kernel-codes.ts) so that the numbers live in one place.
 */
export function defineShaderConstants(name: string, consts: Record<string, number>): void {
  if (sources.has(name)) throw new Error(`internal: shader ${name} was compiled before its constants were defined`);
  shaderConstants.set(name, consts);
}

interface PerDevice {
  paramsLayout: GPUBindGroupLayout;
  /** Group 1's layout with n storage bindings (1..n), by n (0..MAX_BINDINGS). */
  layouts: GPUBindGroupLayout[];
  pipelineLayouts: GPUPipelineLayout[];
  /** Group 2's layout and, by n, the layouts of shaders that declare it: made when first needed (only a
   *  device with the limits they need, llvmpipe, runs such shaders). */
  tiles?: { layout: GPUBindGroupLayout; pipelineLayouts: GPUPipelineLayout[] };
  /** Shader modules by shader and binding count (`name#n`). */
  modules: Map<string, GPUShaderModule>;
  pipelines: Map<string, GPUComputePipeline>;
  /** The same pipelines by kernel and binding slots: found per dispatch without building a key string. */
  byKernel: Map<Kernel, Map<number, PipelineEntry>>;
}
const cache = new WeakMap<GPUDevice, PerDevice>();

function shaderSource(name: string): string {
  let src = sources.get(name);
  if (src === undefined) {
    const own = platform.shaderText(name);
    // A kernel may ask for another prelude (vec4 views of the bindings) on its first line; directives
    // (`enable`, `requires`) must precede every declaration, so they move to the top.
    const prelude = /^\/\/ gradlab: prelude (\w+)/.exec(own)?.[1] ?? "prelude";
    const directive = (l: string) => l.startsWith("enable ") || l.startsWith("requires ");
    const enables = own.split("\n").filter(directive);
    const body = own
      .split("\n")
      .filter((l) => !directive(l))
      .join("\n");
    const consts = Object.entries(shaderConstants.get(name) ?? {}).map(([k, v]) => `const ${k}: u32 = ${v}u;`);
    src = [...enables, platform.shaderText(prelude), ...consts, body].join("\n");
    sources.set(name, src);
  }
  return src;
}

/**
 * The shader with its first n storage bindings (1..n) kept: the later ones become private arrays of one
 * element, so that the module needs only n bindings. Their names stay, for the prelude's load and store
 * switches, whose cases past n are never taken (a dispatch's slots are 1..n). Not cached: the text is
 * needed once per module (modules are cached per device), and keeping a copy per n held ~30 KiB each.
 */
function bindingsOf(name: string, n: number): string {
  return shaderSource(name)
    .split("\n")
    .map((line) => {
      const m = /^@group\(1\) @binding\((\d+)\) var<storage, read_write> (\w+): array<(.*)>;\s*$/.exec(line);
      return m && Number(m[1]) > n ? `var<private> ${m[2]}: array<${m[3]}, 1>;` : line;
    })
    .join("\n");
}

function perDevice(device: GPUDevice): PerDevice {
  let d = cache.get(device);
  if (!d) {
    const paramsLayout = device.createBindGroupLayout({
      entries: [{ binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: "read-only-storage" } }],
    });
    const layouts: GPUBindGroupLayout[] = [];
    for (let n = 0; n <= MAX_BINDINGS; n++) {
      const entries: GPUBindGroupLayoutEntry[] = [];
      for (let i = 1; i <= n; i++) entries.push({ binding: i, visibility: GPUShaderStage.COMPUTE, buffer: { type: "storage" } });
      layouts.push(device.createBindGroupLayout({ entries }));
    }
    d = {
      paramsLayout,
      layouts,
      pipelineLayouts: layouts.map((layout) => device.createPipelineLayout({ bindGroupLayouts: [paramsLayout, layout] })),
      modules: new Map(),
      pipelines: new Map(),
      byKernel: new Map(),
    };
    cache.set(device, d);
  }
  return d;
}

/** Group 1's layout for a dispatch with n bindings. */
export const bindGroupLayout = (device: GPUDevice, n: number) => perDevice(device).layouts[n];
export const paramsLayout = (device: GPUDevice) => perDevice(device).paramsLayout;
/** Group 2's layouts (shaders that read tiles from uniform buffers). */
function tilesOf(device: GPUDevice): NonNullable<PerDevice["tiles"]> {
  const d = perDevice(device);
  if (!d.tiles) {
    const layout = device.createBindGroupLayout({
      entries: Array.from({ length: TILE_BINDINGS }, (_, i) => ({
        binding: i,
        visibility: GPUShaderStage.COMPUTE,
        buffer: { type: "uniform" as const, hasDynamicOffset: true },
      })),
    });
    d.tiles = { layout, pipelineLayouts: d.layouts.map((l) => device.createPipelineLayout({ bindGroupLayouts: [d.paramsLayout, l, layout] })) };
  }
  return d.tiles;
}
export const tilesLayout = (device: GPUDevice) => tilesOf(device).layout;

/**
 * A shader entry point with its override constants, interned (equal ones are one object), so that an op
 * that dispatches the same kernel again finds its pipeline by identity instead of by a key string.
 */
export interface Kernel {
  readonly shader: string;
  readonly entry: string;
  readonly constants: Readonly<Record<string, number>> | undefined;
  /** The constants' part of the pipeline's key. */
  readonly suffix: string;
}
const kernels = new Map<string, Kernel>();

export function kernelOf(shader: string, entry: string, constants: Record<string, number> | undefined): Kernel {
  let suffix = "";
  if (constants) for (const k in constants) suffix += `:${k}=${constants[k]}`;
  const id = `${shader}:${entry}${suffix}`;
  let k = kernels.get(id);
  if (!k) kernels.set(id, (k = { shader, entry, constants: constants && { ...constants }, suffix }));
  return k;
}

/** A pipeline, its cache key, and (when it was created just now) the verdict on it still to come. */
export interface PipelineEntry {
  readonly pipeline: GPUComputePipeline;
  readonly key: string;
  readonly check: Promise<GPUError | null> | null;
}

/**
 * The pipeline of `kernel` with operand k bound at binding slot slots[k], given as `slotsCode`: the
 * slots as the digits of a base-8 number (slots are 1..MAX_BINDINGS), operand 0 first.
 */
export function pipelineEntry(device: GPUDevice, kernel: Kernel, slotsCode: number): PipelineEntry {
  const d = perDevice(device);
  let bySlots = d.byKernel.get(kernel);
  if (!bySlots) d.byKernel.set(kernel, (bySlots = new Map()));
  const known = bySlots.get(slotsCode);
  if (known) return known;
  const { shader, entry } = kernel;
  const slots: number[] = [];
  for (let c = slotsCode; c > 0; c = Math.floor(c / 8)) slots.unshift(c % 8);
  const key = `${shader}:${entry}:${slots.join("")}${kernel.suffix}`;
  let p = d.pipelines.get(key);
  if (p) {
    const e = { pipeline: p, key, check: null };
    bySlots.set(slotsCode, e);
    return e;
  }
  // A new pipeline comes with Dawn's verdict on it (compiling the shader, checking it against the layout).
  device.pushErrorScope("validation");
  const constants: Record<string, number> = { ...kernel.constants };
  // S<k>: operand k's binding and k itself, which names where its block starts (prelude.wgsl).
  slots.forEach((s, k) => (constants[`S${k}`] = s + 8 * k));
  // The slots are 1..n in order of first use, so the largest is the number of bindings.
  const n = slots.length > 0 ? Math.max(...slots) : 0;
  let module = d.modules.get(`${shader}#${n}`);
  if (!module) d.modules.set(`${shader}#${n}`, (module = device.createShaderModule({ code: bindingsOf(shader, n), label: shader })));
  const layout = /^@group\(2\)/m.test(shaderSource(shader)) ? tilesOf(device).pipelineLayouts[n] : d.pipelineLayouts[n];
  p = device.createComputePipeline({ layout, label: key, compute: { module, entryPoint: entry, constants } });
  d.pipelines.set(key, p);
  bySlots.set(slotsCode, { pipeline: p, key, check: null });
  return { pipeline: p, key, check: device.popErrorScope() };
}

/** Drops a cached pipeline (and its shader module, so both are made again and re-validated). */
export function forgetPipeline(device: GPUDevice, key: string): void {
  const d = perDevice(device);
  d.pipelines.delete(key);
  d.byKernel.clear();
  const shader = key.slice(0, key.indexOf(":"));
  for (const m of [...d.modules.keys()]) if (m.startsWith(`${shader}#`)) d.modules.delete(m);
}
