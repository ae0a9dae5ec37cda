// kernel_info_reply content, shared by the shell handler and the socket thread (control channel).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { KernelMessage } from "@jupyterlab/services";
import { PROTOCOL_VERSION } from "./wire/message.ts";
import { join } from "node:path";
import { REPO } from "./repo.ts";

const require = createRequire(join(REPO, "package.json"));
const pkgVersion = (name: string) => {
  try {
    return JSON.parse(readFileSync(require.resolve(`${name}/package.json`), "utf8")).version as string;
  } catch {
    return "unknown";
  }
};

const KERNEL_VERSION = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")).version as string;

export type KernelInfo = KernelMessage.IInfoReply & { debugger: boolean };

export function kernelInfo(): KernelInfo {
  const ts = pkgVersion("typescript");
  return {
    status: "ok",
    protocol_version: PROTOCOL_VERSION,
    implementation: "gradlab",
    implementation_version: KERNEL_VERSION,
    language_info: {
      name: "typescript",
      version: ts,
      mimetype: "text/typescript",
      file_extension: ".ts",
      pygments_lexer: "typescript",
      codemirror_mode: { name: "javascript", typescript: true },
      nbconvert_exporter: "script",
    },
    banner: `GradLab ${KERNEL_VERSION} — TypeScript ${ts} on Node ${process.version}, with a PyTorch-like autograd runtime on WebGPU preloaded as \`torch\`.`,
    help_links: [
      { text: "GradLab", url: "https://github.com/gradlab/gradlab#readme" },
      { text: "TypeScript handbook", url: "https://www.typescriptlang.org/docs/handbook/intro.html" },
      { text: "Node.js API", url: "https://nodejs.org/docs/latest-v20.x/api/" },
    ],
    debugger: false,
  };
}
