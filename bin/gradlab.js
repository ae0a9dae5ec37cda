#!/usr/bin/env node
// The `gradlab` command: runs the built CLI (dist/kernel/cli/main.js). In a checkout (tsconfig.build.json
// is there; an installed package ships only dist/), it first rebuilds dist/ if a source changed since
// the last build, so `gradlab install` and `gradlab run` never use a stale kernel.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
if (existsSync(join(root, "tsconfig.build.json"))) (await import("./build.mjs")).ensureBuilt();
// for the kernels `gradlab run` starts (this process has read its own flags already)
process.env.NODE_NO_WARNINGS ??= "1";
await import(pathToFileURL(join(root, "dist", "kernel", "cli", "main.js")).href);
