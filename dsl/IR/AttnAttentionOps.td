//===- AttnAttentionOps.td - attn attention primitives -----*- tablegen -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file defines `attn.attention` (quadratic attention with a scalar score
// region, a structural mask and an optional softmax), its terminator
// `attn.yield`, the positional-bias scalar ops used inside the score region,
// and `attn.linear_attn`.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNATTENTIONOPS_TD
#define ATTNC_DSL_IR_ATTNATTENTIONOPS_TD

def Attn_AttentionOp : Attn_Op<"attention", [RecursiveMemoryEffects]> {
  let summary = "quadratic attention with a user-defined score";
  let description = [{
    For q : [..., n, H*dk], k : [..., m, H*dk], v : [..., m, H*dv] and
    H = heads, head h uses feature columns h*dk .. (h+1)*dk-1 of q and k and
    h*dv .. (h+1)*dv-1 of v. Per batch entry and head:

    ```
    S[i, j]   = score(qk = q_h[i] . k_h[j], i, j, n = m)   // the region, in f32
    normalize = none:    A[i, j] = S[i, j] if mask keeps (i, j) else 0
    normalize = softmax: A[i, :] = softmax of S[i, j] over the kept j
                         (masked entries are -inf; a row with no kept key is 0)
    out_h     = A @ v_h
    result    = concat_h(out_h)                            // [..., n, H*dv]
    ```

    The `score` region has one block with arguments
    `(%qk: f32, %i: index, %j: index, %n: index)`: the head's dot product,
    the query position, the key position, and the key sequence length m (the
    runtime sequence length for self-attention, C inside a chunk). It ends in
    `attn.yield` of one f32 and may use `arith`/`math` ops, `attn.rel_pos_bias`,
    `attn.t5_bias` and values defined above the op (weights). No scaling is
    implicit: write `1/sqrt(dk)` or `1/n` in the region. See `#attn.mask` for
    the mask kinds.

    Rules: q, k, v have the same rank >= 2 and compatible batch dims; q and k
    have the same feature dim, k and v the same sequence dim; heads >= 1
    divides the q and v feature dims (when static); the result is
    [..., n, H*dv]; the region is as above.

    Example (GAU: relu(qk / n)^2, causal):

    ```mlir
    %o = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 1
           : tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x1024xf32> -> tensor<?x1024xf32> {
    ^bb0(%qk: f32, %i: index, %j: index, %n: index):
      %ni = arith.index_cast %n : index to i64
      %nf = arith.sitofp %ni : i64 to f32
      %s = arith.divf %qk, %nf : f32
      %zero = arith.constant 0.0 : f32
      %r = arith.maximumf %s, %zero : f32
      %r2 = arith.mulf %r, %r : f32
      attn.yield %r2 : f32
    }
    ```

    C++: `builder.create<AttentionOp>(loc, type, q, k, v, mask, normalize,
    heads)` then `Block *b = op.addScoreBlock();`, set the insertion point
    to the start of `b`, build the maths from `b->getArguments()` and end
    with `builder.create<YieldOp>(loc, value)`.
  }];
  let arguments = (ins Attn_Tensor:$q, Attn_Tensor:$k, Attn_Tensor:$v,
                       Attn_MaskAttr:$mask, Attn_NormalizeAttr:$normalize,
                       Attn_I64Attr:$heads);
  let results = (outs Attn_Tensor:$result);
  let regions = (region AnyRegion:$score);
  let assemblyFormat = [{
    $q `,` $k `,` $v `mask` `=` qualified($mask) `normalize` `=` `` $normalize
    `heads` `=` $heads attr-dict `:` type($q) `,` type($k) `,` type($v) `->`
    type($result) $score
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Creates the entry block of the empty `score` region with the
    /// arguments (qk: f32, i: index, j: index, n: index), located at the op,
    /// and returns it. The caller fills it and ends it with attn.yield.
    ::mlir::Block *addScoreBlock();
  }];
}

def Attn_YieldOp : Attn_Op<"yield",
    [Pure, Terminator, ReturnLike, HasParent<"AttentionOp">]> {
  let summary = "yields the score of attn.attention";
  let description = [{
    Terminates the `score` region of `attn.attention` with the f32 score of
    one (i, j) pair.

    Example:

    ```mlir
    attn.yield %s : f32
    ```
  }];
  let arguments = (ins AnyType:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

def Attn_RelPosBiasOp : Attn_Op<"rel_pos_bias", [Pure]> {
  let summary = "learned Toeplitz relative position bias for one (i, j)";
  let description = [{
    `result = w[clamp(j - i, -(M-1), M-1) + M - 1]` with M = max_len: entry
    M - 1 is the diagonal, M - 1 + delta the key delta positions after the
    query; distances beyond M - 1 clamp. Used inside a `score` region.

    Rules: max_len >= 1; w is [2*max_len-1].

    Example:

    ```mlir
    %b = attn.rel_pos_bias %w[%i, %j] max_len = 512 : tensor<1023xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$w, Index:$i, Index:$j,
                       Attn_I64Attr:$max_len);
  let results = (outs F32:$result);
  let assemblyFormat = [{
    $w `[` $i `,` $j `]` `max_len` `=` $max_len attr-dict `:` type($w)
  }];
  let hasVerifier = 1;
}

def Attn_T5BiasOp : Attn_Op<"t5_bias", [Pure]> {
  let summary = "T5 bucketed relative position bias for one (i, j)";
  let description = [{
    `result = emb[bucket(j - i)] * scale` with the T5 bucketing (as in the
    reference T5 code, relative position rp = j - i):

    ```
    causal:     nb = num_buckets,     ret = 0,              r = max(-rp, 0)
    not causal: nb = num_buckets / 2, ret = (rp > 0) * nb,  r = |rp|
    exact = nb / 2
    bucket = ret + r                                                   if r < exact
           = ret + min(exact + floor(log(r / exact) / log(max_distance / exact)
                                     * (nb - exact)), nb - 1)          otherwise
    ```

    Rules: emb is [num_buckets]; num_buckets >= 2 when causal, even and >= 4
    otherwise; max_distance > exact.

    Example:

    ```mlir
    %b = attn.t5_bias %emb[%i, %j] causal = true num_buckets = 32 max_distance = 128 scale = 1.0 : tensor<32xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$emb, Index:$i, Index:$j, BoolAttr:$causal,
                       Attn_I64Attr:$num_buckets, Attn_I64Attr:$max_distance,
                       Attn_F64Attr:$scale);
  let results = (outs F32:$result);
  let assemblyFormat = [{
    $emb `[` $i `,` $j `]` `causal` `=` $causal `num_buckets` `=` $num_buckets
    `max_distance` `=` $max_distance `scale` `=` $scale attr-dict `:`
    type($emb)
  }];
  let hasVerifier = 1;
}

def Attn_LinearAttnOp : Attn_Op<"linear_attn", [Pure, Attn_RowwiseStageTrait]> {
  let summary = "kernelised linear attention, causal or not";
  let description = [{
    For q : [..., n, s], k : [..., m, s], v : [..., m, e] and phi = feature:

    ```
    num[i] = sum_j phi(q[i]) . phi(k[j]) * v[j]      // = phi(q[i]) @ (phi(K)^T V)
    den[i] = sum_j phi(q[i]) . phi(k[j])
    result[i] = scale * num[i] / den[i]   if normalize (0 where den[i] == 0)
              = scale * num[i]            otherwise
    ```

    A row with den = 0 gives no key any weight (relu features that miss
    every key's): it is 0, as a softmax row with no kept key, not 0 / 0.

    The sums run over all keys, or over j <= i (inclusive, the RNN form)
    when causal. `attn-chunk` rewrites the causal form into chunks of 128
    rows (FLASH's local and global parts, linear in n), and the non-causal
    form, when queries and keys are the same rows, into the total of
    chunks' states.

    Rules: q, k, v have the same rank >= 2 and compatible batch dims; q and k
    have the same feature dim, k and v the same sequence dim; causal needs
    n == m; the result is [..., n, e].

    Example:

    ```mlir
    %o = attn.linear_attn %q, %k, %v feature = elu1 causal = true normalize = true scale = 1.0
           : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$q, Attn_Tensor:$k, Attn_Tensor:$v,
                       Attn_FeatureMapAttr:$feature, BoolAttr:$causal,
                       BoolAttr:$normalize, Attn_F64Attr:$scale);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v `feature` `=` `` $feature `causal` `=` $causal
    `normalize` `=` $normalize `scale` `=` $scale attr-dict `:` type($q) `,`
    type($k) `,` type($v) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Attn_ChunkedLinearOp : Attn_Op<"chunked_linear",
    [Pure, Attn_RowwiseStageTrait]> {
  let summary = "FLASH's global linear term at chunk granularity";
  let description = [{
    The global (linear) part of FLASH mixed chunk attention (spec §3.1-3.2),
    in sequence form. For q : [..., n, s], k : [..., n, s], v : [..., n, e]
    and C = chunk, with g(t) = t / C the chunk of position t:

    ```
    causal:     result[i] = scale * q[i] @ sum_{j : g(j) < g(i)} k[j]^T v[j]   // exclusive over chunks
    not causal: result[i] = scale * q[i] @ sum_{all j}            k[j]^T v[j]
    ```

    FLASH uses scale = 1/C (a constant, also in the last, partial chunk).
    With `divide_by_length` (not causal only), the sum is also divided by
    n, the sequence length (FLASH-pytorch's non-causal FLASH, scale 1).
    There is no feature map and no normalisation. A partial last chunk
    simply has fewer tokens: this is the same as FLASH's zero padding after
    the projections (padded k and v are 0 and add nothing). `attn-chunk`
    rewrites it into per-chunk K^T V states and a prefix over chunks.

    Rules: q, k, v have the same rank >= 2 and compatible batch dims; q and k
    have the same feature dim; q, k and v the same sequence dim; chunk >= 1;
    the result is [..., n, e].

    Example:

    ```mlir
    %g = attn.chunked_linear %ql, %kl, %v chunk = 256 causal = true scale = 3.906250e-03
           : tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x1024xf32> -> tensor<?x1024xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$q, Attn_Tensor:$k, Attn_Tensor:$v,
                       Attn_I64Attr:$chunk, BoolAttr:$causal,
                       Attn_F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$divide_by_length);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v `chunk` `=` $chunk `causal` `=` $causal
    `scale` `=` $scale attr-dict `:` type($q) `,` type($k) `,` type($v) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

#endif // ATTNC_DSL_IR_ATTNATTENTIONOPS_TD
