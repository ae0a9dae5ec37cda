// Fast kernel start (what the kernelspec runs): `node --expose-gc --harmony-weak-refs-with-cleanup-some kernel/cli/start.mjs kernel -f CONN`.
// Starting Node with the tsx loader costs ~0.6 s before any kernel code runs, so the kernel's own
// TypeScript is bundled once by esbuild into node_modules/.cache/gradlab-kernel (rebuilt whenever a
// source under kernel/ changes) and tsx is registered later, when a cell first imports TypeScript.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const REPO = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const OUT = join(REPO, "node_modules", ".cache", "gradlab-kernel");
const ENTRIES = {
  main: "kernel/cli/main.ts",
  "control-worker": "kernel/sockets/control-worker.ts",
  "service-worker": "kernel/language/service-worker.ts",
};

function sources(dir = join(REPO, "kernel")) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (e.name.endsWith(".ts")) out.push(p);
  }
  return out;
}

function stamp() {
  return sources().sort().map((p) => {
    const s = statSync(p);
    return `${p}:${s.size}:${s.mtimeMs}`;
  }).join("\n") + `\n${process.version}`;
}

/** Builds the bundle unless it matches the current sources; returns the entry to import. */
export async function ensureBundle() {
  const want = stamp();
  try {
    if (readFileSync(join(OUT, "stamp.txt"), "utf8") === want) return join(OUT, "main.js");
  } catch {
    // no bundle yet
  }
  const { build } = await import("esbuild");
  const tmp = `${OUT}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  await build({
    entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([k, v]) => [k, join(REPO, v)])),
    outdir: tmp,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    packages: "external",
    sourcemap: "linked",
    define: { __GRADLAB_REPO__: JSON.stringify(REPO) },
    logLevel: "error",
  });
  writeFileSync(join(tmp, "stamp.txt"), want);
  mkdirSync(dirname(OUT), { recursive: true });
  // swap in atomically, so kernels starting at the same time never see half a bundle
  const old = `${OUT}.old-${process.pid}`;
  try {
    renameSync(OUT, old);
  } catch {
    // first build
  }
  try {
    renameSync(tmp, OUT);
  } catch {
    rmSync(tmp, { recursive: true, force: true }); // another process won the race with the same sources
  }
  rmSync(old, { recursive: true, force: true });
  return join(OUT, "main.js");
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) {
  let entry = null;
  try {
    if (process.env.GRADLAB_NO_BUNDLE === "1") throw new Error("GRADLAB_NO_BUNDLE=1");
    entry = await ensureBundle();
  } catch (e) {
    // e.g. a read-only node_modules: run from the TypeScript sources instead (slower to start)
    process.stderr.write(`[gradlab] cannot build the kernel bundle (${e?.message ?? e}); starting from sources\n`);
  }
  if (entry) await import(pathToFileURL(entry).href);
  else {
    const { createRequire } = await import("node:module");
    const tsx = dirname(createRequire(join(REPO, "package.json")).resolve("tsx/package.json"));
    for (const api of ["dist/esm/api/index.mjs", "dist/cjs/api/index.mjs"]) (await import(pathToFileURL(join(tsx, api)).href)).register();
    await import(pathToFileURL(join(REPO, "kernel", "cli", "main.ts")).href);
  }
}
