// The platform this build of the runtime runs on: Node's. The browser bundle (bin/lite/bundle.mjs)
// resolves "./node.ts" here to "./browser.ts", so nothing else in src/ knows which one it got.
export { platform } from "./node.ts";
