// Keyword arguments: GradLab spells Python's keywords as a trailing options object. JavaScript drops
// unknown properties silently, so every options object a public function takes is checked here: a key
// the function does not take raises Python's TypeError, and a keyword PyTorch has but GradLab does not
// support raises a RuntimeError that names it (never a silently different computation).

import { RuntimeError, TypeError_ } from "./errors.ts";

/** A plain options object (`{inplace: true}`), as opposed to a tensor, an array, a number or null. */
export function isOpts(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * Checks `opts` against the keywords `fn` takes. `supported` are the keywords GradLab implements;
 * `unsupported` maps a PyTorch keyword GradLab does not implement to a predicate telling whether the
 * given value is its default (harmless: accepted) or asks for the missing feature (raises).
 */
export function checkKwargs(
  fn: string,
  opts: object | null | undefined,
  supported: readonly string[],
  unsupported: Readonly<Record<string, (v: unknown) => boolean>> = {},
): void {
  if (opts === undefined || opts === null) return;
  if (!isOpts(opts)) throw new TypeError_(`${fn}(): expected an options object, got ${Array.isArray(opts) ? "a list" : typeof opts}`);
  for (const [k, v] of Object.entries(opts)) {
    if (supported.includes(k)) continue;
    const isDefault = unsupported[k];
    if (isDefault) {
      if (v === undefined || isDefault(v)) continue;
      throw new RuntimeError(`GradLab's ${fn}() does not support ${k}=${String(v)} (only its default)`);
    }
    throw new TypeError_(`${fn}() got an unexpected keyword argument '${k}'`);
  }
}

/** The default of an unsupported keyword is None/null. */
export const isNone = (v: unknown) => v === null;
/** The default of an unsupported keyword is False. */
export const isFalse = (v: unknown) => v === false;

/** Python's bool() check for a flag argument passed positionally or by keyword. */
export function flag(fn: string, name: string, v: unknown): boolean {
  if (v === undefined) return false;
  if (typeof v !== "boolean")
    throw new TypeError_(
      `${fn}(): argument '${name}' must be bool, not ${v === null ? "NoneType" : typeof v === "number" ? (Number.isInteger(v) ? "int" : "float") : typeof v}`,
    );
  return v;
}

/** A method that takes no arguments: one given (an options object with a key included) raises, as PyTorch's do. */
export function noArgs(fn: string, args: readonly unknown[]): void {
  const [first] = args;
  if (args.length === 0 || (args.length === 1 && (first === undefined || (isOpts(first) && Object.keys(first).length === 0)))) return;
  if (isOpts(first)) throw new TypeError_(`${fn}() got an unexpected keyword argument '${Object.keys(first)[0]}'`);
  throw new TypeError_(`${fn}() takes no arguments (${args.length} given)`);
}

/** A dim argument given positionally or as {dim} (size, stride): the options object checked. */
export function dimArg(fn: string, dim: unknown): unknown {
  if (!isOpts(dim)) return dim;
  checkKwargs(fn, dim, ["dim"]);
  return dim.dim;
}
