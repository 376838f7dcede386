//===- AttnLayerOps.td - attn layer-level operations -------*- tablegen -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file defines the layer ops of the attn dialect: one op per `.attn`
// layer template (gau, flash, mhsa, linear_attention, local_attention,
// glu_ffn). Each takes x : [..., n, d], returns the same type, and names its
// weights `<layer_name>.<part>`; `attn-expand-layers` turns it into
// primitive ops with `attn.weight` ops for the weights.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNLAYEROPS_TD
#define ATTNC_DSL_IR_ATTNLAYEROPS_TD

/// Rules and weights shared by all layer ops, appended to each description.
def Attn_LayerCommonDoc {
  string rules = [{

    Common rules of layer ops: x has rank >= 2 (`[..., n, d]`, sequence axis
    -2, feature axis -1), d is static and >= 1, the result has the type of x,
    `layer_name` is not empty and `eps` > 0. The norm weights are
    `L.norm.weight [d]` and `L.norm.bias [d]` for `layer_norm`,
    `L.norm.weight [1]` for `scale_norm` and `L.norm.weight [d]` for
    `rms_norm`; stacked layers are named `L.0`, `L.1`, ... by MLIRGen.
  }];
}

/// A layer op: pre-norm, residual, one input and one result of the same
/// type. The verifier checks the rules shared by all layers (rank >= 2,
/// static feature dim d >= 1, non-empty layer_name, eps > 0) and then the
/// op's own attributes.
class Attn_LayerOp<string mnemonic, list<Trait> traits = []>
    : Attn_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType, Attn_LayerTrait])> {
  let results = (outs Attn_Tensor:$result);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The static feature dim d of the input.
    int64_t getFeatureDim() { return getX().getType().getShape().back(); }
  }];
}

def Attn_GauOp : Attn_LayerOp<"gau"> {
  let summary = "one GAU (FLASH-Quad) layer, pre-norm with residual";
  let description = !strconcat([{
    The gated attention unit of the FLASH paper (spec/flash.md §2.2), one
    head, for x : [..., n, d]:

    ```
    h        = Norm(x)                                  // norm, eps
    u, v, z  = split(silu(h @ W_uvz + b_uvz), [e, e, s])
    q        = z * gamma[0] + beta[0]
    k        = z * gamma[1] + beta[1]
    q, k     = rope_half(q), rope_half(k)              // if rope: all s dims, base 10000, positions 0..n-1
    A[i, j]  = relu(q_i . k_j / n + bias[i, j])^2       // n = runtime sequence length, bias not divided
    A[i, j]  = 0 for j > i                              // if causal
    y        = (u * (A @ v)) @ W_out + b_out + x
    ```

    `bias[i, j] = rel_pos[clamp(j - i, -(M-1), M-1) + M - 1]` with
    `M = max_len` when `rel_pos = toeplitz` (distances beyond M - 1 clamp),
    0 when `rel_pos = none` (max_len is then unused but still >= 1).

    Weights (`L` = layer_name):

    | name | shape | note |
    |---|---|---|
    | `L.norm.weight` | [d] ([1] for scale_norm) | |
    | `L.norm.bias` | [d] | layer_norm only |
    | `L.uvz.weight` | [d, 2e+s] | columns u, v, z |
    | `L.uvz.bias` | [2e+s] | |
    | `L.gamma` | [2, s] | rows q, k |
    | `L.beta` | [2, s] | rows q, k |
    | `L.rel_pos` | [2*max_len-1] | rel_pos = toeplitz only |
    | `L.out.weight` | [e, d] | |
    | `L.out.bias` | [d] | |

    FLASH-pytorch's options (`../shared/spec/flash-pytorch.md`), each off or
    at the paper's value by default, and printed only when set:

    - `rel_pos = t5`: `bias[i, j] = rel_pos[bucket(j - i)] * sqrt(d)` with
      the bucket of `attn.t5_bias` (`num_buckets`, `max_distance`, causal
      as the layer), and then `A[i, j] = relu((q_i . k_j + bias[i, j]) /
      n)^2`: FLASH-pytorch's GAU divides the bias by n with the scores.
      The table is `L.rel_pos [num_buckets]`.
    - `rope_dims = r` (0: all s) and `rope_mode`: RoPE on the first r
      features of q and k only, pairs as in `attn.rope`.
    - `shift_tokens`: after the norm, the first ceil(d/2) features of row t
      are row t - 1's (zero in row 0), before the projection.
    - `norm_clamp`: `scale_norm` with `clamp` (x / max(rms(x), eps) * g).

    Rules: e, s, max_len >= 1; s even when rope is on; with rel_pos = t5,
    num_buckets even and >= 2 and max_distance >= 1; rope_dims even and
    <= s; norm_clamp only with norm = scale_norm.

    Example:

    ```mlir
    %y = attn.gau %x (layer_name = "l0", e = 1024, s = 128, causal = true,
                      norm = layer_norm, max_len = 512, rel_pos = toeplitz,
                      rope = true, eps = 1.0e-05) : tensor<?x?x512xf32>
    ```
  }], Attn_LayerCommonDoc.rules);
  let arguments = (ins Attn_Tensor:$x, StrAttr:$layer_name, Attn_I64Attr:$e,
                       Attn_I64Attr:$s, BoolAttr:$causal, Attn_NormKindAttr:$norm,
                       Attn_I64Attr:$max_len, Attn_RelPosKindAttr:$rel_pos,
                       BoolAttr:$rope, Attn_F64Attr:$eps,
                       DefaultValuedAttr<Attn_I64Attr, "32">:$num_buckets,
                       DefaultValuedAttr<Attn_I64Attr, "128">:$max_distance,
                       DefaultValuedAttr<Attn_I64Attr, "0">:$rope_dims,
                       DefaultValuedAttr<Attn_RopeModeAttr,
                           "::mlir::attn::RopeMode::half">:$rope_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$shift_tokens,
                       DefaultValuedAttr<BoolAttr, "false">:$norm_clamp);
  let assemblyFormat = [{
    $x ` ` `(` `layer_name` `=` $layer_name `,` `e` `=` $e `,` `s` `=` $s `,`
    `causal` `=` $causal `,` `norm` `=` `` $norm `,` `max_len` `=` $max_len `,`
    `rel_pos` `=` `` $rel_pos `,` `rope` `=` $rope `,` `eps` `=` $eps `)`
    attr-dict `:` type($x)
  }];
}

def Attn_FlashOp : Attn_LayerOp<"flash"> {
  let summary = "one FLASH layer (GAU with mixed chunk attention)";
  let description = !strconcat([{
    FLASH (spec/flash.md §3.2) for x : [..., n, d] with chunk size C = chunk.
    The sequence is cut into G = ceil(n / C) chunks; when C does not divide
    n, the projections (not x) are right-padded with zero rows, padded keys
    are masked out of the local term, and the output is sliced back to n.

    ```
    h        = Norm(x)
    u, v, z  = split(silu(h @ W_uvz + b_uvz), [e, e, s])
    qq, kq, ql, kl = z * gamma[r] + beta[r]   for r = 0 (quad_q), 1 (quad_k), 2 (lin_q), 3 (lin_k)
    (all four rope_half'ed if rope, at global positions g*C + c)
    local_g  = relu(qq_g kq_g^T / C + B)^2 @ v_g       // per chunk; j > i zeroed if causal
    S_g      = kl_g^T v_g / C                          // per-chunk state [s, e]
    lin_g    = ql_g @ (sum_{h < g} S_h)                // causal: exclusive prefix
    lin_g    = ql_g @ (sum_{all h} S_h)                // non-causal: total
    y        = (u * (local + lin)) @ W_out + b_out + x
    ```

    `B[i, j] = rel_pos[clamp(j - i, -(C-1), C-1) + C - 1]` (within-chunk
    distance, shared by all chunks) when `rel_pos = toeplitz`, else 0.
    Both parts divide by the constant C, also in the last, padded chunk.

    Weights (`L` = layer_name):

    | name | shape | note |
    |---|---|---|
    | `L.norm.weight` | [d] ([1] for scale_norm) | |
    | `L.norm.bias` | [d] | layer_norm only |
    | `L.uvz.weight` | [d, 2e+s] | columns u, v, z |
    | `L.uvz.bias` | [2e+s] | |
    | `L.gamma` | [4, s] | rows quad_q, quad_k, lin_q, lin_k |
    | `L.beta` | [4, s] | rows quad_q, quad_k, lin_q, lin_k |
    | `L.rel_pos` | [2*chunk-1] | rel_pos = toeplitz only |
    | `L.out.weight` | [e, d] | |
    | `L.out.bias` | [d] | |

    FLASH-pytorch's options are those of `attn.gau` (rel_pos = t5,
    rope_dims, rope_mode, shift_tokens, norm_clamp), except that the T5
    bias is scaled by sqrt(s) and is not divided (`relu(qq_g kq_g^T / C +
    B)^2`, positions within the chunk), and:

    - `lin_by_length` (non-causal only): `S = sum_g kl_g^T v_g / n` with n
      the unpadded sequence length instead of C, as FLASH-pytorch's
      non-causal FLASH.

    Rules: e, s, chunk >= 1; s even when rope is on; the option rules of
    `attn.gau`; lin_by_length only when not causal.

    Example:

    ```mlir
    %y = attn.flash %x (layer_name = "l1", e = 1024, s = 128, chunk = 256,
                        causal = true, norm = scale_norm, rel_pos = toeplitz,
                        rope = true, eps = 1.0e-05) : tensor<?x?x512xf32>
    ```
  }], Attn_LayerCommonDoc.rules);
  let arguments = (ins Attn_Tensor:$x, StrAttr:$layer_name, Attn_I64Attr:$e,
                       Attn_I64Attr:$s, Attn_I64Attr:$chunk, BoolAttr:$causal,
                       Attn_NormKindAttr:$norm, Attn_RelPosKindAttr:$rel_pos,
                       BoolAttr:$rope, Attn_F64Attr:$eps,
                       DefaultValuedAttr<Attn_I64Attr, "32">:$num_buckets,
                       DefaultValuedAttr<Attn_I64Attr, "128">:$max_distance,
                       DefaultValuedAttr<Attn_I64Attr, "0">:$rope_dims,
                       DefaultValuedAttr<Attn_RopeModeAttr,
                           "::mlir::attn::RopeMode::half">:$rope_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$shift_tokens,
                       DefaultValuedAttr<BoolAttr, "false">:$norm_clamp,
                       DefaultValuedAttr<BoolAttr, "false">:$lin_by_length);
  let assemblyFormat = [{
    $x ` ` `(` `layer_name` `=` $layer_name `,` `e` `=` $e `,` `s` `=` $s `,`
    `chunk` `=` $chunk `,` `causal` `=` $causal `,` `norm` `=` `` $norm `,`
    `rel_pos` `=` `` $rel_pos `,` `rope` `=` $rope `,` `eps` `=` $eps `)`
    attr-dict `:` type($x)
  }];
}

def Attn_MhsaOp : Attn_LayerOp<"mhsa"> {
  let summary = "softmax multi-head self-attention layer, pre-norm with residual";
  let description = !strconcat([{
    The Transformer baseline for x : [..., n, d], H = heads, dh = d / H:

    ```
    h          = Norm(x)
    q, k, v    = split(h @ W_qkv + b_qkv, [d, d, d])
    o_h        = softmax(q_h k_h^T / sqrt(dh) + mask) v_h   // head h = columns h*dh .. (h+1)*dh-1
    y          = concat_h(o_h) @ W_out + b_out + x
    ```

    The mask is `#attn.mask<causal>` when causal, none otherwise.

    Weights (`L` = layer_name): `L.norm.weight [d]` (`[1]` for scale_norm),
    `L.norm.bias [d]` (layer_norm only), `L.qkv.weight [d, 3d]` (columns q,
    k, v), `L.qkv.bias [3d]`, `L.out.weight [d, d]`, `L.out.bias [d]`.

    Rules: heads >= 1 and heads divides d.

    Example:

    ```mlir
    %y = attn.mhsa %x (layer_name = "enc0", heads = 8, causal = false,
                       norm = layer_norm, eps = 1.0e-05) : tensor<?x512xf32>
    ```
  }], Attn_LayerCommonDoc.rules);
  let arguments = (ins Attn_Tensor:$x, StrAttr:$layer_name,
                       Attn_I64Attr:$heads, BoolAttr:$causal,
                       Attn_NormKindAttr:$norm, Attn_F64Attr:$eps);
  let assemblyFormat = [{
    $x ` ` `(` `layer_name` `=` $layer_name `,` `heads` `=` $heads `,`
    `causal` `=` $causal `,` `norm` `=` `` $norm `,` `eps` `=` $eps `)`
    attr-dict `:` type($x)
  }];
}

def Attn_LinearAttentionOp : Attn_LayerOp<"linear_attention"> {
  let summary = "multi-head linear attention layer with a feature map";
  let description = !strconcat([{
    Kernelised linear attention (Katharopoulos et al.) for x : [..., n, d],
    H = heads, dh = d / H, phi = feature:

    ```
    h          = Norm(x)
    q, k, v    = split(h @ W_qkv + b_qkv, [d, d, d])
    o_h[i]     = phi(q_h[i]) S_i / (phi(q_h[i]) . z_i)
    S_i        = sum_j phi(k_h[j])^T v_h[j],  z_i = sum_j phi(k_h[j])
                 (j over all keys, or j <= i when causal)
    y          = concat_h(o_h) @ W_out + b_out + x
    ```

    It expands to `attn.linear_attn` with `normalize = true`, `scale = 1.0`.
    Weights as `attn.mhsa`: `L.norm.*`, `L.qkv.weight [d, 3d]`,
    `L.qkv.bias [3d]`, `L.out.weight [d, d]`, `L.out.bias [d]`.

    Rules: heads >= 1 and heads divides d.

    Example:

    ```mlir
    %y = attn.linear_attention %x (layer_name = "lin", heads = 4, causal = true,
                                   feature = elu1, norm = rms_norm,
                                   eps = 1.0e-05) : tensor<?x256xf32>
    ```
  }], Attn_LayerCommonDoc.rules);
  let arguments = (ins Attn_Tensor:$x, StrAttr:$layer_name,
                       Attn_I64Attr:$heads, BoolAttr:$causal,
                       Attn_FeatureMapAttr:$feature, Attn_NormKindAttr:$norm,
                       Attn_F64Attr:$eps);
  let assemblyFormat = [{
    $x ` ` `(` `layer_name` `=` $layer_name `,` `heads` `=` $heads `,`
    `causal` `=` $causal `,` `feature` `=` `` $feature `,` `norm` `=` `` $norm `,`
    `eps` `=` $eps `)` attr-dict `:` type($x)
  }];
}

def Attn_LocalAttentionOp : Attn_LayerOp<"local_attention"> {
  let summary = "softmax multi-head attention restricted to a window or block";
  let description = !strconcat([{
    As `attn.mhsa` (same weights, same 1/sqrt(dh) softmax per head), but key
    j is visible from query i only when, with W = window:

    | block | causal | visible iff |
    |---|---|---|
    | false | true | 0 <= i - j < W (sliding window, `#attn.mask<window W>`) |
    | false | false | \|i - j\| < W (symmetric band of 2W - 1 keys) |
    | true | false | i / W == j / W (blocks of W tokens, `#attn.mask<chunk W>`) |
    | true | true | i / W == j / W and j <= i |

    Weights (`L` = layer_name): `L.norm.*`, `L.qkv.weight [d, 3d]`,
    `L.qkv.bias [3d]`, `L.out.weight [d, d]`, `L.out.bias [d]`.

    Rules: heads >= 1, heads divides d, window >= 1.

    Example:

    ```mlir
    %y = attn.local_attention %x (layer_name = "loc", heads = 8, window = 128,
                                  causal = true, block = false,
                                  norm = layer_norm, eps = 1.0e-05)
           : tensor<?x?x512xf32>
    ```
  }], Attn_LayerCommonDoc.rules);
  let arguments = (ins Attn_Tensor:$x, StrAttr:$layer_name,
                       Attn_I64Attr:$heads, Attn_I64Attr:$window,
                       BoolAttr:$causal, BoolAttr:$block,
                       Attn_NormKindAttr:$norm, Attn_F64Attr:$eps);
  let assemblyFormat = [{
    $x ` ` `(` `layer_name` `=` $layer_name `,` `heads` `=` $heads `,`
    `window` `=` $window `,` `causal` `=` $causal `,` `block` `=` $block `,`
    `norm` `=` `` $norm `,` `eps` `=` $eps `)` attr-dict `:` type($x)
  }];
}

def Attn_GluFfnOp : Attn_LayerOp<"glu_ffn"> {
  let summary = "gated-linear-unit feed-forward layer, pre-norm with residual";
  let description = !strconcat([{
    For x : [..., n, d], hidden size h = hidden, act = activation:

    ```
    hn    = Norm(x)
    a, b  = split(hn @ W_in + b_in, [h, h])   // a: columns 0..h-1 (U), b: columns h..2h-1 (V)
    y     = (act(a) * act(b)) @ W_out + b_out + x
    ```

    This is the paper's GLU (spec §2.1: U = act(X W_u), V = act(X W_v),
    O = (U * V) W_o), with the activation on both halves.

    Weights (`L` = layer_name): `L.norm.weight [d]` (`[1]` for scale_norm),
    `L.norm.bias [d]` (layer_norm only), `L.in.weight [d, 2h]`,
    `L.in.bias [2h]`, `L.out.weight [h, d]`, `L.out.bias [d]`.

    Rules: hidden >= 1.

    Example:

    ```mlir
    %y = attn.glu_ffn %x (layer_name = "ffn0", hidden = 1024,
                          activation = gelu, norm = layer_norm,
                          eps = 1.0e-05) : tensor<?x?x256xf32>
    ```
  }], Attn_LayerCommonDoc.rules);
  let arguments = (ins Attn_Tensor:$x, StrAttr:$layer_name,
                       Attn_I64Attr:$hidden, Attn_ActivationAttr:$activation,
                       Attn_NormKindAttr:$norm, Attn_F64Attr:$eps);
  let assemblyFormat = [{
    $x ` ` `(` `layer_name` `=` $layer_name `,` `hidden` `=` $hidden `,`
    `activation` `=` `` $activation `,` `norm` `=` `` $norm `,` `eps` `=` $eps `)`
    attr-dict `:` type($x)
  }];
}

#endif // ATTNC_DSL_IR_ATTNLAYEROPS_TD
