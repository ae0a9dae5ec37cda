// path-browserify ships no types: it is Node's posix path module, so it has node:path's.
declare module "path-browserify" {
  import path from "node:path";
  export = path;
}
