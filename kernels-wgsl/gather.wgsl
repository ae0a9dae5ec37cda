// Row gathers and scatter-adds over int32 indices, for embedding and nll_loss (index_select /
// index_add_ along dim 0, and the per-row pick of one class). Indices out of [0, rows) read as 0 and
// are skipped on write: the host cannot raise PyTorch's "index out of range" without a readback.

// out[i, c] = src[idx[i], c]. Operands: 0 out (contiguous [N, D]), 1 src ([V, D] rows contiguous),
// 2 idx (int32). Params: [0] N*D, [1] D, [2] src offset, [3] idx offset, [4] V, [5] [6] the rows of src
// this pass reads, [7] 1 on the pass that zeroes out-of-range indices (a src larger than one binding
// is read in several passes over row ranges, each bound as a window).
@compute @workgroup_size(64)
fn index_select(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let k = linear_id(g, nwg, 64u);
  if (k >= P[0]) { return; }
  let d = P[1];
  let row = bitcast<i32>(ld(S2, P[3] + k / d));
  if (row < 0 || u32(row) >= P[4]) { if (P[7] == 1u) { st(S0, k, 0u); } return; }
  if (u32(row) < P[5] || u32(row) >= P[6]) { return; }
  st(S0, k, ld(S1, P[2] + u32(row) * d + k % d));
}

// out[idx[i], c] += src[i, c], one invocation per column walking i in order, so repeated indices add
// up without atomics and in the same order every run. Operands: 0 out ([V, D], zeroed, contiguous),
// 1 src (contiguous [N, D]), 2 idx. Params: [0] D, [1] N, [2] src offset, [3] idx offset, [4] V,
// [5] padding_idx as i32 (-1: none; its row gets no gradient, as PyTorch's embedding_backward),
// [6] [7] the rows of out this pass writes (an out larger than one binding is written in passes).
@compute @workgroup_size(64)
fn index_add(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let c = linear_id(g, nwg, 64u);
  let d = P[0];
  if (c >= d) { return; }
  let pad = bitcast<i32>(P[5]);
  for (var i = 0u; i < P[1]; i++) {
    let row = bitcast<i32>(ld(S2, P[3] + i));
    if (row < 0 || u32(row) >= P[4] || row == pad || u32(row) < P[6] || u32(row) >= P[7]) { continue; }
    let o = u32(row) * d + c;
    stf(S0, o, ldf(S0, o) + ldf(S1, P[2] + i * d + c));
  }
}

// nll_loss's pick: out[i] = -src[i, idx[i]], or 0 where idx[i] == ignore_index.
// Operands: 0 out ([N]), 1 src (contiguous [N, C]), 2 idx. Params: [0] N, [1] C, [2] src offset,
// [3] idx offset, [4] ignore_index as i32.
@compute @workgroup_size(64)
fn nll_pick(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = linear_id(g, nwg, 64u);
  if (i >= P[0]) { return; }
  let t = bitcast<i32>(ld(S2, P[3] + i));
  if (t == bitcast<i32>(P[4]) || t < 0 || u32(t) >= P[1]) { stf(S0, i, 0.0); return; }
  stf(S0, i, -ldf(S1, P[2] + i * P[1] + u32(t)));
}

// nll_loss's backward: out[i, idx[i]] = -coef[i] into a zeroed [N, C] (one writer per row).
// Operands: 0 out, 1 coef ([N], or one value read by every row), 2 idx, 3 total weight (read when
// [6] is 1: the coefficient is divided by it, reduction='mean'). Params: [0] N, [1] C, [2] coef offset,
// [3] idx offset, [4] ignore_index as i32, [5] coef stride (0: one value), [6] divide, [7] total offset.
@compute @workgroup_size(64)
fn nll_scatter(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = linear_id(g, nwg, 64u);
  if (i >= P[0]) { return; }
  let t = bitcast<i32>(ld(S2, P[3] + i));
  if (t == bitcast<i32>(P[4]) || t < 0 || u32(t) >= P[1]) { return; }
  var c = ldf(S1, P[2] + i * P[5]);
  if (P[6] == 1u) { c = c / ldf(S3, P[7]); }
  stf(S0, i * P[1] + u32(t), -c);
}

// nll_loss's forward with a reduction, as ATen's nll_loss_forward (the loss and the total weight, two
// 0-dim outputs, no per-row temporary): one invocation sums -src[i, idx[i]] over the rows not ignored.
// Operands: 0 total weight, 1 out (written when [6] is 1), 2 src (contiguous [N, C]), 3 idx.
// Params: [0] N, [1] C, [2] src offset, [3] idx offset, [4] ignore_index as i32, [5] mean, [6] write out.
@compute @workgroup_size(64)
fn nll_reduce(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = linear_id(g, nwg, 64u);
  if (i > 0u) { return; }
  var s = 0.0;
  var cnt = 0.0;
  for (var r = 0u; r < P[0]; r++) {
    let t = bitcast<i32>(ld(S3, P[3] + r));
    if (t == bitcast<i32>(P[4]) || t < 0 || u32(t) >= P[1]) { continue; }
    s -= ldf(S2, P[2] + r * P[1] + u32(t));
    cnt += 1.0;
  }
  stf(S0, 0u, cnt);
  if (P[6] == 1u) { stf(S1, 0u, select(s, s / cnt, P[5] == 1u)); }
}
