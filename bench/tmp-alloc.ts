import { Session } from "node:inspector/promises";
import * as torch from "../src/index.ts";
let y = torch.ones(256);
for (let i = 0; i < 2000; i++) { const z = y.add(1); y.dispose(); y = z; }
await torch.webgpu.synchronize();
const s = new Session(); s.connect();
await s.post("HeapProfiler.startSampling", { samplingInterval: 64, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
const N = 20000;
for (let i = 0; i < N; i++) { const z = y.add(1); y.dispose(); y = z; }
const { profile } = await s.post("HeapProfiler.stopSampling");
await torch.webgpu.synchronize();
const self = new Map<string, number>();
let total = 0;
const walk = (n: any) => { const k = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.split("/").slice(-2).join("/")}`; const b = n.selfSize; total += b; self.set(k, (self.get(k) ?? 0) + b); n.children.forEach(walk); };
// sampled allocations: samples' sizes estimate total allocated (size-weighted by interval)
const samples = new Map<number, number>();
for (const smp of profile.samples) samples.set(smp.nodeId, (samples.get(smp.nodeId) ?? 0) + smp.size);
const byNode = new Map<number, any>();
const idx = (n: any) => { byNode.set(n.id, n); n.children.forEach(idx); }; idx(profile.head);
const agg = new Map<string, number>(); let tot = 0;
for (const [id, size] of samples) { const n = byNode.get(id); const k = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.split("/").slice(-2).join("/")}`; agg.set(k, (agg.get(k) ?? 0) + size); tot += size; }
console.log("sampled bytes per op (live-at-sample estimate):", (tot / N).toFixed(0));
for (const [k, v] of [...agg].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log((v / N).toFixed(0).padStart(6), k);
process.exit(0);
