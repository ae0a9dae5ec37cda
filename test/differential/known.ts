// Known differences between GradLab and torch 1.13 in the differential tier: each explains some
// mismatch lines of some programs, with the reason and who owns the fix.
import type { Program } from "./replay.ts";

export interface Known {
  /** Who must change what (GradLab on purpose, or the file that needs the fix). */
  reason: string;
  /** Programs this difference can show in. */
  when: (p: Program) => boolean;
  /** The mismatch lines it explains. */
  explains: (line: string) => boolean;
}

const has = (re: RegExp) => (p: Program) => re.test(p.typescript);
const any =
  (...res: RegExp[]) =>
  (line: string) =>
    res.some((re) => re.test(line));
/** Known differences. Each names the issue-11 item where there is one. */
const KNOWN: Record<string, Known> = {
  matmulDecomposition: {
    reason:
      "runtime: src/autograd/functions/linalg.ts matmul. For 2-D @ >=3-D, torch 1.13's at::matmul computes (b^T @ a^T)^T and, " +
      "depending on the shapes, returns it either as a copy (CloneBackward0 of TransposeBackward0, what GradLab always does) or as a " +
      "transposed view of the folded product (TransposeBackward0 of UnsafeViewBackward0, no extra output-size block); GradLab does " +
      "not reproduce the shape rule that picks the view, so those programs differ in grad_fn names and one block of memory",
    when: has(/torch\.matmul\(/),
    explains: any(/UnsafeViewBackward0/, /grad_fn .*CloneBackward0.*, torch .*TransposeBackward0/, /torch\.matmul.*memory_allocated/),
  },

  matmulVectorBatchLeak: {
    reason:
      "runtime (not yet reduced further): program 656 (1-D @ 3-D matmul, backward through sum) leaves 1024 bytes allocated after " +
      "every handle is disposed, or (depending on what the GC has collected before) backward frees 512 bytes torch keeps; torch " +
      "frees everything at the end. A figure that depends on GC timing is itself the defect",
    when: (p) => p.id === 656,
    explains: any(/^cleanup: 1024 bytes/, /`v6\.backward\(\)`: memory_allocated changed by 0, torch 512/),
  },

  layerNormOneElement: {
    reason:
      "GradLab on purpose: layer_norm over one element gives exactly 0 (x - mean is exact), torch's vectorised mean leaves ~1e-5 " +
      "after rounding, so y / y is 1 in torch and NaN in GradLab (and gradients through it follow)",
    when: has(/layer_norm\([^)]*\[1\]/),
    explains: any(/values differ: .*NaN vs torch/, /grad differs: .*NaN vs torch/),
  },
  layerNormBackwardRounding: {
    reason:
      "runtime: src/autograd/functions/reductions.ts NativeLayerNormBackward0. The gradient of sum(layer_norm(x)) is 0; torch's " +
      "fused backward gives exactly 0, GradLab's composite formula leaves ~2e-4 of cancellation error on two-element rows",
    when: has(/layer_norm\(/),
    explains: (line) => {
      const m = /grad differs: (.*)/.exec(line);
      return !!m && [...m[1].matchAll(/(-?[\d.e-]+) vs torch (-?[\d.e-]+)/g)].every(([, g, w]) => Math.abs(Number(g) - Number(w)) < 1e-3);
    },
  },
};

/** The known difference that explains this mismatch line of program p, if any. */
export const explain = (p: Program, line: string) => Object.entries(KNOWN).find(([, k]) => k.when(p) && k.explains(line))?.[0];
