// torch.nn.init: fills tensors in place under no_grad from the seeded generator (torch.rand /
// torch.randn, then scaled), with PyTorch's fan and gain rules.

import type { Tensor } from "../tensor.ts";
import { ValueError } from "../errors.ts";
import { draw, rand, randn } from "../ops/creation.ts";
import { scope } from "../memory/lifetime.ts";
import { no_grad } from "../autograd/grad-mode.ts";

function fill(t: Tensor, make: () => Tensor): Tensor {
  no_grad(() => scope(() => void t.copy_(make())));
  return t;
}

/**
 * Draws straight into t's memory when it is a contiguous float tensor, as PyTorch's uniform_/normal_
 * kernels do: no temporary the size of the weight (building nn.Linear(4096, 1024) used to peak at
 * three extra weights). Otherwise draws a fresh tensor and copies it in.
 */
function drawInto(t: Tensor, dist: 0 | 1, a: number, b: number, make: () => Tensor): Tensor {
  if (t.dtype !== "float32" || !t.is_contiguous() || t.numel() === 0) return fill(t, make);
  t.check();
  draw(dist, t, a, b);
  t._bump_version();
  return t;
}

export function uniform_(t: Tensor, a = 0, b = 1): Tensor {
  return drawInto(t, 0, a, b, () =>
    rand(t.shape)
      .mul(b - a)
      .add(a),
  );
}

export function normal_(t: Tensor, mean = 0, std = 1): Tensor {
  return drawInto(t, 1, mean, std, () => randn(t.shape).mul(std).add(mean));
}

export function constant_(t: Tensor, val: number): Tensor {
  no_grad(() => t.fill_(val));
  return t;
}
export const zeros_ = (t: Tensor) => constant_(t, 0);
export const ones_ = (t: Tensor) => constant_(t, 1);

export function _calculate_fan_in_and_fan_out(t: Tensor): [number, number] {
  if (t.ndim < 2) throw new ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  const receptive = t.shape.slice(2).reduce((a, b) => a * b, 1);
  return [t.shape[1] * receptive, t.shape[0] * receptive];
}

function fan(t: Tensor, mode: "fan_in" | "fan_out"): number {
  if (mode !== "fan_in" && mode !== "fan_out") throw new ValueError(`Mode ${mode} not supported, please use one of fan_in, fan_out`);
  const [fanIn, fanOut] = _calculate_fan_in_and_fan_out(t);
  return mode === "fan_in" ? fanIn : fanOut;
}

export function calculate_gain(nonlinearity: string, param?: number): number {
  const linear = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid"];
  if (linear.includes(nonlinearity)) return 1;
  if (nonlinearity === "tanh") return 5 / 3;
  if (nonlinearity === "relu") return Math.SQRT2;
  if (nonlinearity === "leaky_relu") {
    const slope = param ?? 0.01;
    return Math.sqrt(2 / (1 + slope ** 2));
  }
  if (nonlinearity === "selu") return 3 / 4;
  throw new ValueError(`Unsupported nonlinearity ${nonlinearity}`);
}

type KaimingOpts = { a?: number; mode?: "fan_in" | "fan_out"; nonlinearity?: string };

/** He initialisation, uniform: bound = gain * sqrt(3 / fan). With a = sqrt(5) this is 1/sqrt(fan_in). */
export function kaiming_uniform_(t: Tensor, opts: KaimingOpts = {}): Tensor {
  const std = calculate_gain(opts.nonlinearity ?? "leaky_relu", opts.a ?? 0) / Math.sqrt(fan(t, opts.mode ?? "fan_in"));
  const bound = Math.sqrt(3) * std;
  return uniform_(t, -bound, bound);
}

export function kaiming_normal_(t: Tensor, opts: KaimingOpts = {}): Tensor {
  const std = calculate_gain(opts.nonlinearity ?? "leaky_relu", opts.a ?? 0) / Math.sqrt(fan(t, opts.mode ?? "fan_in"));
  return normal_(t, 0, std);
}

/** Glorot initialisation, uniform: bound = gain * sqrt(6 / (fan_in + fan_out)). */
export function xavier_uniform_(t: Tensor, gain = 1): Tensor {
  const [fanIn, fanOut] = _calculate_fan_in_and_fan_out(t);
  const a = Math.sqrt(3) * gain * Math.sqrt(2 / (fanIn + fanOut));
  return uniform_(t, -a, a);
}

export function xavier_normal_(t: Tensor, gain = 1): Tensor {
  const [fanIn, fanOut] = _calculate_fan_in_and_fan_out(t);
  return normal_(t, 0, gain * Math.sqrt(2 / (fanIn + fanOut)));
}
