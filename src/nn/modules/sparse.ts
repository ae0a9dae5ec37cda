// nn.Embedding: a lookup table initialised N(0, 1), the padding row zeroed.

import { Module } from "../module.ts";
import { emptyParameter, type Parameter } from "../parameter.ts";
import type { Tensor } from "../../tensor.ts";
import { owned } from "../../memory/lifetime.ts";
import { no_grad } from "../../autograd/grad-mode.ts";
import * as F from "../functional.ts";
import * as init from "../init.ts";
import { factoryKwargs } from "./linear.ts";
import { RuntimeError } from "../../errors.ts";

export class Embedding extends Module {
  num_embeddings: number;
  embedding_dim: number;
  padding_idx: number | null;
  weight: Parameter;

  constructor(
    num_embeddings: number,
    embedding_dim: number,
    opts: {
      padding_idx?: number | null;
      max_norm?: null;
      norm_type?: number;
      scale_grad_by_freq?: boolean;
      sparse?: boolean;
      device?: string;
      dtype?: "float32";
    } = {},
  ) {
    super();
    factoryKwargs("Embedding.__init__", opts, ["padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse"]);
    const unsupported: Record<string, unknown> = { max_norm: null, norm_type: 2, scale_grad_by_freq: false, sparse: false };
    for (const [k, dflt] of Object.entries(unsupported)) {
      const v = (opts as Record<string, unknown>)[k];
      if (v !== undefined && v !== dflt) throw new RuntimeError(`GradLab's Embedding does not support ${k}=${String(v)} (only its default)`);
    }
    this.num_embeddings = num_embeddings;
    this.embedding_dim = embedding_dim;
    let pad = opts.padding_idx ?? null;
    if (pad !== null) {
      if (pad >= num_embeddings || pad < -num_embeddings) throw new RuntimeError("Padding_idx must be within num_embeddings");
      if (pad < 0) pad += num_embeddings;
    }
    this.padding_idx = pad;
    // Runtime code making its own tensors: no user code runs in between, so the allocator need not look
    // for garbage at each of them (memory/lifetime.ts, reclaimBeforeGrowth).
    this.weight = emptyParameter([num_embeddings, embedding_dim]);
    owned(() => this.reset_parameters());
  }

  reset_parameters(): void {
    init.normal_(this.weight);
    if (this.padding_idx !== null) no_grad(() => this.weight.select(0, this.padding_idx!).fill_(0));
  }

  override forward(input: Tensor): Tensor {
    return F.embedding(input, this.weight, this.padding_idx);
  }
  override extra_repr(): string {
    return `${this.num_embeddings}, ${this.embedding_dim}${this.padding_idx !== null ? `, padding_idx=${this.padding_idx}` : ""}`;
  }
}
