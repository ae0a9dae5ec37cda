// What a notebook printed in the browser against what the server kernel printed for it, cell by cell
// and line by line, tolerating only float rounding: each number is parsed and compared with a relative
// tolerance (two GPUs round in their own ways: SwiftShader and lavapipe differ in the last digits), every
// other character must be the same. Returns the differences as readable lines (empty: the same text).

/** A number as printed: 3, -0.3409, 1.5e-7, 4.0000e+00 (PyTorch's scientific notation). */
const NUMBER = /[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?/g;

/** Relative tolerance for numbers with a decimal point or an exponent, plus this many units of the last printed decimal (a rounding of the last digit). */
const RTOL = 5e-3;
const LAST_DIGIT_UNITS = 2;

function decimals(s: string): number {
  const m = /\.(\d*)(?:[eE]([-+]?\d+))?$/.exec(s);
  if (!m) return /[eE]([-+]?\d+)$/.test(s) ? -Number(/[eE]([-+]?\d+)$/.exec(s)![1]) : 0;
  return m[1].length - Number(m[2] ?? 0);
}

/** Whether two printed numbers are the same up to float rounding. */
export function closeNumbers(a: string, b: string): boolean {
  if (a === b) return true;
  // integers are counted (bytes, shapes, indices, counts): exact; a float may print as one on one side
  if (!/[.eE]/.test(a) && !/[.eE]/.test(b)) return false;
  const x = Number(a);
  const y = Number(b);
  if (!Number.isFinite(x) || !Number.isFinite(y)) return false;
  const unit = LAST_DIGIT_UNITS * 10 ** -Math.max(decimals(a), decimals(b));
  return Math.abs(x - y) <= RTOL * Math.max(Math.abs(x), Math.abs(y)) + unit;
}

/** A line cut at a number of characters ("[[168.643,-149.751,...,14...."): where the cut falls depends
 *  on how many digits each number printed. */
const CUT = /[-+\d.eE]*\.\.\.$/;

/** Whether two printed lines are the same but for float rounding in their numbers. */
export function sameLine(a: string, b: string): boolean {
  if (a === b) return true;
  if (CUT.test(a) && CUT.test(b)) {
    // both cut: the shorter must be the longer's beginning, numbers up to rounding
    const [x, y] = [a.replace(CUT, ""), b.replace(CUT, "")];
    const [nx, ny] = [x.match(NUMBER) ?? [], y.match(NUMBER) ?? []];
    const n = Math.min(nx.length, ny.length);
    const [sx, sy] = [x.replace(NUMBER, "#"), y.replace(NUMBER, "#")];
    return (sx.startsWith(sy) || sy.startsWith(sx)) && nx.slice(0, n).every((v, i) => closeNumbers(v, ny[i]));
  }
  if (a.replace(NUMBER, "#") !== b.replace(NUMBER, "#")) return false;
  const na = a.match(NUMBER) ?? [];
  const nb = b.match(NUMBER) ?? [];
  return na.length === nb.length && na.every((n, i) => closeNumbers(n, nb[i]));
}

/** Lines of `a` and `b` matched in order (a longest common subsequence under sameLine): a line one side
 *  printed and the other did not (a warning) leaves the lines after it matched. */
function align(a: string[], b: string[]): Array<[number | null, number | null]> {
  const n = a.length;
  const m = b.length;
  const L = Array.from({ length: n + 1 }, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = sameLine(a[i], b[j]) ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const pairs: Array<[number | null, number | null]> = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && sameLine(a[i], b[j])) pairs.push([i++, j++]);
    else if (j >= m || (i < n && L[i + 1][j] >= L[i][j + 1])) pairs.push([i++, null]);
    else pairs.push([null, j++]);
  }
  return pairs;
}

/** The differences between two runs of one notebook: `server` and `browser` hold each code cell's text.
 *  Each difference names the cell (counted among code cells, from 1) and the line on each side. */
export interface Difference {
  /** the code cell, from 0 (-1: the notebooks differ in their number of code cells) */
  cell: number;
  text: string;
}
export function textDifferences(server: string[], browser: string[]): Difference[] {
  const out: Difference[] = [];
  if (server.length !== browser.length) out.push({ cell: -1, text: `${server.length} code cells on the server, ${browser.length} in the browser` });
  for (let c = 0; c < Math.min(server.length, browser.length); c++) {
    const s = server[c].replace(/\n$/, "").split("\n");
    const b = browser[c].replace(/\n$/, "").split("\n");
    const pairs = align(s, b);
    for (let k = 0; k < pairs.length; k++) {
      const [i, j] = pairs[k];
      if (i !== null && j !== null) continue;
      // a server-only line followed by a browser-only one: the same line, printed differently
      const next = pairs[k + 1];
      if (i !== null && next && next[0] === null && next[1] !== null) {
        out.push({
          cell: c,
          text: `cell ${c + 1}: server line ${i + 1}: ${s[i]}\n${" ".repeat(String(c + 1).length + 7)}browser line ${next[1] + 1}: ${b[next[1]]}`,
        });
        k++;
      } else if (i !== null) out.push({ cell: c, text: `cell ${c + 1}: server only, line ${i + 1}: ${s[i]}` });
      else out.push({ cell: c, text: `cell ${c + 1}: browser only, line ${j! + 1}: ${b[j!]}` });
    }
  }
  return out;
}
