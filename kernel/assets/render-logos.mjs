// Regenerates the kernelspec's PNG logos from logo-svg.svg: node kernel/assets/render-logos.mjs
import { readFileSync, writeFileSync } from "node:fs";
import { Resvg } from "@resvg/resvg-js";

const dir = new URL(".", import.meta.url);
const svg = readFileSync(new URL("logo-svg.svg", dir), "utf8");
for (const size of [32, 64]) {
  const png = new Resvg(svg, { fitTo: { mode: "width", value: size } }).render().asPng();
  writeFileSync(new URL(`logo-${size}x${size}.png`, dir), png);
}
