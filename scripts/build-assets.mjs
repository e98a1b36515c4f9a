// Bundles each entry in dashboard/assets/ (one file per front-end library the
// pages use, installed from the npm registry by `npm ci`) into one ES module
// in dashboard/static/dashboard/vendor/, which Django serves; a CSS file an
// entry imports lands beside it. Run by `make assets`; the output is not
// committed. A new library needs only a new entry file.
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const source = join(root, "dashboard", "assets");
const entryPoints = readdirSync(source)
  .filter((name) => name.endsWith(".js"))
  .sort()
  .map((name) => join(source, name));

await build({
  entryPoints,
  outdir: join(root, "dashboard", "static", "dashboard", "vendor"),
  bundle: true,
  format: "esm",
  minify: true,
  target: "es2020",
  legalComments: "linked",
  logLevel: "warning",
});
console.log(`assets: bundled ${entryPoints.length} entries into dashboard/static/dashboard/vendor/`);
