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
const any = (...res: RegExp[]) => (line: string) => res.some((re) => re.test(line));
/** A memory line where GradLab's change is `more` than torch's by a positive multiple of 512 bytes. */
const moreMemory = (line: string) => {
  const m = /memory_allocated changed by (-?\d+), torch (-?\d+)/.exec(line);
  return !!m && Number(m[1]) > Number(m[2]);
};
const memoryLine = (re: RegExp) => (line: string) => /memory_allocated changed by/.test(line) && re.test(line);
/** backward() called directly on a leaf: one made by torch.tensor(...), or what torch returns as that
 * leaf itself (dropout(x, 0.0), x.flatten(d, d)). */
const backwardOnLeaf = (p: Program) => {
  const leaves = new Set<string>();
  for (const s of p.statements) {
    const made = /^(v\d+) = torch\.tensor\(/.exec(s.ts)?.[1];
    if (made) leaves.add(made);
    const same = /^(v\d+) = (?:torch\.nn\.functional\.dropout\((v\d+), 0\.0\)|(v\d+)\.flatten\((-?\d+), \4\))/.exec(s.ts);
    if (same && leaves.has(same[2] ?? same[3])) leaves.add(same[1]);
  }
  return p.statements.some((s) => leaves.has(/^(v\d+)\.backward\(\)/.exec(s.ts)?.[1] ?? ""));
};

/** Known differences. Each names the issue-11 item where there is one. */
export const KNOWN: Record<string, Known> = {
  dropout: {
    reason:
      "issue 11 item 9 (runtime: src/autograd/functions/reductions.ts dropout): torch returns x itself for p = 0 (no copy, no node, " +
      "same _version counter) and records MulBackward0 for p = 1; GradLab copies (CloneBackward0) and records NativeDropoutBackward0 " +
      "with a saved mask, so memory per statement, backward's frees, grad_fn names and leafness differ",
    when: has(/dropout\(/),
    explains: any(/dropout.*memory_allocated/, /NativeDropoutBackward0/, /CloneBackward0/, /`v\d+\.backward\(\)`: memory_allocated/,
      /_version \d+, torch \d+/, /is_leaf false, torch true/, /grad None, torch set/, /grad_fn \w+\(torch::autograd::AccumulateGrad:0\), torch None/,
      /MulBackward0/, /a view of a leaf Variable that requires grad is being used in an in-place operation\., torch raised RuntimeError: a leaf Variable/),
  },
  matmulDecomposition: {
    reason:
      "runtime: src/autograd/functions/linalg.ts matmul. torch 1.13's at::matmul computes 1-D/2-D @ >=3-D as (b^T @ a^T)^T viewed " +
      "back (TransposeBackward0 of UnsafeViewBackward0, no copy) and squeezes a 1-D @ 2-D result in place (squeeze_ bumps _version to 1); " +
      "GradLab transposes then clones (CloneBackward0, an extra output-size block) and leaves _version 0",
    when: has(/torch\.matmul\(/),
    explains: any(/UnsafeViewBackward0/, /grad_fn .*CloneBackward0.*, torch .*TransposeBackward0/, /torch\.matmul.*memory_allocated/,
      /_version 0, torch 1/),
  },
  leafBackwardLeak: {
    reason:
      "runtime (src/autograd/tensor-autograd.ts / meta.ts): backward() called directly on a leaf (x = tensor(..., requires_grad); " +
      "x.backward()) leaves 1024 bytes allocated after every handle is disposed (torch frees x and x.grad with the last reference)",
    when: backwardOnLeaf,
    explains: any(/^cleanup: 1024 bytes/),
  },
  flattenSameHandle: {
    reason:
      "runtime (src/autograd/functions/shape.ts flatten, as changed in the working tree): x.flatten(d, d) now returns x's own handle " +
      "object, so torch.del(flat) disposes x too (Python's `del flat` only unbinds the name; GradLab must return x._alias()), and " +
      "backward on it allocates no new .grad block where torch's does",
    when: has(/\.flatten\((-?\d+), \1\)/),
    explains: any(/was disposed \(by dispose\(\), torch\.del/, /`v\d+\.backward\(\)`: memory_allocated changed by 0, torch 512/, /^cleanup: 1024 bytes/),
  },
  inplaceSelfOnViewLeak: {
    reason:
      "runtime (src/autograd/functions/inplace.ts, CopySlices): v.mul_(v) on a view v of a non-leaf leaves 1536 bytes allocated " +
      "after every handle is disposed. Repro: x = tensor([[1.86], [-0.23]], rg); a = x.pow(0.5); v = a.view([2]); v.mul_(v); dispose all",
    when: has(/(v\d+)\.mul_\(\1\)/),
    explains: any(/^cleanup: 1536 bytes/),
  },
  matmulVectorBatchLeak: {
    reason:
      "runtime (not yet reduced further): program 656 (1-D @ 3-D matmul, backward through sum) leaves 1024 bytes allocated after " +
      "every handle is disposed, or (depending on what the GC has collected before) backward frees 512 bytes torch keeps; torch " +
      "frees everything at the end. A figure that depends on GC timing is itself the defect",
    when: (p) => p.id === 656,
    explains: any(/^cleanup: 1024 bytes/, /`v6\.backward\(\)`: memory_allocated changed by 0, torch 512/),
  },
  emptyTensors: {
    reason:
      "issue 11 item 11 (runtime: src/memory/storage.ts Storage constructor mallocs max(nbytes, 1)): a tensor with no elements takes " +
      "a 512-byte block in GradLab, none in torch (CUDA's allocator gives no block for 0 bytes)",
    when: (p) => /narrow\([^)]*, 0\)|torch\.tensor\(\[\]/.test(p.typescript) || Object.values(p.final).some((f) => f.shape.includes(0)),
    explains: moreMemory,
  },
  copySlicesBase: {
    reason:
      "issue 11 item 3 (runtime: view + in-place rules): an in-place op on a view records CopySlices over the base's own view node in " +
      "torch (ViewBackward0, ...); GradLab puts AsStridedBackward0 there",
    when: has(/\.(mul_|add_|sub_|div_|relu_|clamp_|zero_|fill_|setitem)\(/),
    explains: any(/CopySlices\(\w+:0, AsStridedBackward0:0\), torch torch::autograd::CopySlices\(\w+:0, \w+Backward\d:0\)/,
      /`v\d+\.(mul_|add_|sub_|div_)\(v\d+\)`: memory_allocated/),
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
