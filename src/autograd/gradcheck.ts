// torch.autograd.gradcheck: compares the gradients autograd computes (the analytical Jacobian, one
// backward pass per output element) with finite differences (the numerical Jacobian, two evaluations
// per input element), as PyTorch's slow-mode gradcheck does, and raises GradcheckError with PyTorch's
// text on a mismatch. GradLab computes in float32 only, where PyTorch's defaults (made for float64:
// eps 1e-6, atol 1e-5) measure rounding rather than derivatives, so the defaults here are float32's:
// eps 1e-3, atol 1e-3, rtol 1e-2 (PyTorch itself warns that float32 inputs "will likely fail").
// Written by hand: it needs GradLab's own tensors and engine, and is a few loops over them.

import { checkKwargs } from "../kwargs.ts";
import { RuntimeError, ValueError } from "../errors.ts";
import { Tensor } from "../tensor.ts";
import { formatTensor } from "../format.ts";
import { tensor } from "../ops/creation.ts";
import { scope } from "../memory/lifetime.ts";
import { no_grad } from "./grad-mode.ts";
import { run_backward } from "./engine.ts";

/** The error gradcheck raises (PyTorch's torch.autograd.gradcheck.GradcheckError, a RuntimeError). */
export class GradcheckError extends RuntimeError {
  override name = "GradcheckError";
}

interface GradcheckOpts {
  eps?: number;
  atol?: number;
  rtol?: number;
  raise_exception?: boolean;
}

const flat = async (t: Tensor): Promise<number[]> => Array.from(await t.data(), Number);

/**
 * torch.autograd.gradcheck(func, inputs, {eps, atol, rtol, raise_exception}): whether the gradients of
 * func's outputs with respect to every input that requires grad match finite differences. Async, since
 * it reads values from the device.
 */
export async function gradcheck(func: (...inputs: Tensor[]) => Tensor | Tensor[], inputs: Tensor | Tensor[], opts: GradcheckOpts = {}): Promise<boolean> {
  checkKwargs("gradcheck", opts, ["eps", "atol", "rtol", "raise_exception"], {
    nondet_tol: (v) => v === 0,
    check_undefined_grad: (v) => v === true,
    check_grad_dtypes: (v) => v === false,
    check_batched_grad: (v) => v === false,
    check_batched_forward_grad: (v) => v === false,
    check_forward_ad: (v) => v === false,
    check_backward_ad: (v) => v === true,
    fast_mode: (v) => v === false,
  });
  const { eps = 1e-3, atol = 1e-3, rtol = 1e-2, raise_exception = true } = opts;
  const ins = Array.isArray(inputs) ? inputs : [inputs];
  const diff = ins.map((t, i) => ({ t, i })).filter(({ t }) => t instanceof Tensor && t.requires_grad);
  if (diff.length === 0) throw new ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them have requires_grad=True.");
  const outputs = scope(() => {
    const r = func(...ins);
    return Array.isArray(r) ? r : [r];
  });
  try {
    for (const [oi, out] of outputs.entries()) {
      if (!out.requires_grad) continue;
      const n = out.numel();
      // Analytical: row k of input i, column j = d out_j / d in_i[k], from a backward pass per output element.
      const analytical = diff.map(({ t }) => Array.from({ length: t.numel() }, () => new Array<number>(n).fill(0)));
      for (let j = 0; j < n; j++) {
        const onehot = new Array<number>(n).fill(0);
        onehot[j] = 1;
        const go = tensor(onehot).reshape(out.shape);
        const grads = run_backward([out], [go], {
          retain_graph: true,
          create_graph: false,
          inputs: diff.map(({ t }) => t),
          accumulate: false,
          allow_unused: true,
        });
        go.dispose();
        for (const [d, g] of grads.entries()) {
          if (!g) continue;
          (await flat(g)).forEach((v, k) => (analytical[d][k][j] = v));
          g.dispose();
        }
      }
      // Numerical: central differences, each input element moved by ±eps with the others as they are.
      for (const [d, { t, i }] of diff.entries()) {
        const base = await flat(t);
        const numerical = base.map(() => new Array<number>(n).fill(0));
        const evaluate = async (k: number, delta: number) => {
          const moved = [...base];
          moved[k] += delta;
          const args = [...ins];
          const x = tensor(moved).reshape(t.shape);
          args[i] = x;
          const value = no_grad(() =>
            scope(() => {
              const r = func(...args);
              return (Array.isArray(r) ? r : [r])[oi];
            }),
          );
          const v = await flat(value);
          value.dispose();
          x.dispose();
          return v;
        };
        for (let k = 0; k < base.length; k++) {
          const plus = await evaluate(k, eps);
          const minus = await evaluate(k, -eps);
          for (let j = 0; j < n; j++) numerical[k][j] = (plus[j] - minus[j]) / (2 * eps);
        }
        const ok = numerical.every((row, k) => row.every((v, j) => Math.abs(analytical[d][k][j] - v) <= atol + rtol * Math.abs(v)));
        if (!ok) {
          if (!raise_exception) return false;
          const shape = [base.length, n];
          const show = (m: number[][]) => formatTensor(m.flat(), shape, "float32", []);
          throw new GradcheckError(
            `Jacobian mismatch for output ${oi} with respect to input ${i},\nnumerical:${show(numerical)}\nanalytical:${show(analytical[d])}\n`,
          );
        }
      }
    }
  } finally {
    for (const o of outputs) o.dispose();
  }
  return true;
}
