//===- AttnNormOps.td - attn norms, scale-offset and RoPE --*- tablegen -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file defines the primitive ops that act along the feature axis (the
// three norms and scale-offset) and RoPE, which rotates feature pairs by an
// angle that depends on the position on the sequence axis.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNNORMOPS_TD
#define ATTNC_DSL_IR_ATTNNORMOPS_TD

def Attn_LayerNormOp : Attn_Op<"layer_norm",
    [Pure, AttrSizedOperandSegments, AllTypesMatch<["x", "result"]>, Attn_NormTrait,
     Attn_RowwiseStageTrait]> {
  let summary = "layer normalisation over the last axis";
  let description = [{
    For x : [..., f]:
    `result = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias`, mean and
    the biased variance over the last axis. A missing weight counts as 1, a
    missing bias as 0.

    Rules: x has rank >= 1; weight and bias (when present) are [f]; eps > 0.

    Example:

    ```mlir
    %h = attn.layer_norm %x weight %w bias %b eps = 1.0e-05 : (tensor<?x512xf32>, tensor<512xf32>, tensor<512xf32>) -> tensor<?x512xf32>
    %h2 = attn.layer_norm %x eps = 1.0e-05 : (tensor<?x512xf32>) -> tensor<?x512xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$x, Optional<Attn_Tensor>:$weight,
                       Optional<Attn_Tensor>:$bias, Attn_F64Attr:$eps);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $x (`weight` $weight^)? (`bias` $bias^)? `eps` `=` $eps attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_ScaleNormOp : Attn_Op<"scale_norm",
    [Pure, AllTypesMatch<["x", "result"]>, Attn_NormTrait, Attn_RowwiseStageTrait]> {
  let summary = "scale normalisation: RMS norm with one scalar gain";
  let description = [{
    For x : [..., f]: `result = x * rsqrt(mean(x^2) + eps) * alpha[0]`, the
    mean over the last axis. With `clamp`, eps bounds the root mean square
    from below instead: `result = x / max(sqrt(mean(x^2)), eps) * alpha[0]`
    (FLASH-pytorch's ScaleNorm, `x / clamp(|x| f^-1/2, min = eps) * g`).

    Rules: x has rank >= 1; alpha is [1]; eps > 0.

    Example:

    ```mlir
    %h = attn.scale_norm %x, %alpha eps = 1.0e-05 : tensor<?x512xf32>, tensor<1xf32>
    %c = attn.scale_norm %x, %alpha eps = 1.0e-05 {clamp = true} : tensor<?x512xf32>, tensor<1xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$x, Attn_Tensor:$alpha, Attn_F64Attr:$eps,
                       DefaultValuedAttr<BoolAttr, "false">:$clamp);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $x `,` $alpha `eps` `=` $eps attr-dict `:` type($x) `,` type($alpha)
  }];
  let hasVerifier = 1;
}

def Attn_RmsNormOp : Attn_Op<"rms_norm",
    [Pure, AllTypesMatch<["x", "result"]>, Attn_NormTrait, Attn_RowwiseStageTrait]> {
  let summary = "RMS normalisation over the last axis";
  let description = [{
    For x : [..., f]: `result = x * rsqrt(mean(x^2) + eps) * weight`, the
    mean over the last axis; a missing weight counts as 1.

    Rules: x has rank >= 1; weight (when present) is [f]; eps > 0.

    Example:

    ```mlir
    %h = attn.rms_norm %x weight %w eps = 1.0e-06 : (tensor<?x512xf32>, tensor<512xf32>) -> tensor<?x512xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$x, Optional<Attn_Tensor>:$weight,
                       Attn_F64Attr:$eps);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $x (`weight` $weight^)? `eps` `=` $eps attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_ScaleOffsetOp : Attn_Op<"scale_offset",
    [Pure, AllTypesMatch<["x", "result"]>, Attn_ElementwiseTrait,
     Attn_RowwiseStageTrait]> {
  let summary = "per-feature scale and offset: x * gamma + beta";
  let description = [{
    For x : [..., f]: `result[..., c] = x[..., c] * gamma[c] + beta[c]`
    (the cheap Q/K transforms of GAU).

    Rules: x has rank >= 1; gamma and beta are [f].

    Example:

    ```mlir
    %q = attn.scale_offset %z, %g0, %b0 : tensor<?x128xf32>, tensor<128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$x, Attn_Tensor:$gamma, Attn_Tensor:$beta);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $x `,` $gamma `,` $beta attr-dict `:` type($x) `,` type($gamma) `,`
    type($beta)
  }];
  let hasVerifier = 1;
}

def Attn_RopeOp : Attn_Op<"rope",
    [Pure, SameOperandsAndResultType, Attn_RowwiseStageTrait]> {
  let summary = "rotary position embedding along the sequence axis";
  let description = [{
    For x : [..., n, f], position p = 0..n-1 on axis -2, r = rotary_dims and
    `theta[p, i] = p * base^(-2i / r)` for i = 0..r/2-1, the pairs (a, b) of
    the first r features are rotated:
    `a' = a cos(theta) - b sin(theta)`, `b' = b cos(theta) + a sin(theta)`.
    Features r..f-1 pass through unchanged.

    - `mode = half`: pair i is (i, i + r/2) (the FLASH paper's layout);
    - `mode = interleaved`: pair i is (2i, 2i + 1).

    Rules: x has rank >= 2; rotary_dims is positive, even and <= f when f is
    static; base > 0.

    Example:

    ```mlir
    %q = attn.rope %q0 mode = half rotary_dims = 128 base = 1.0e+04 : tensor<?x128xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$x, Attn_RopeModeAttr:$mode,
                       Attn_I64Attr:$rotary_dims, Attn_F64Attr:$base);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $x `mode` `=` `` $mode `rotary_dims` `=` $rotary_dims `base` `=` $base
    attr-dict `:` type($x)
  }];
  let hasVerifier = 1;
}

def Attn_SinusoidalOp : Attn_Op<"sinusoidal",
    [Pure, SameOperandsAndResultType, Attn_RowwiseStageTrait]> {
  let summary = "sinusoidal absolute positions of a sequence";
  let description = [{
    For x : [..., n, d] (only its shape is read), position p = 0..n-1 on
    axis -2, h = d / 2 and `theta[p, i] = p * base^(-2i / d)`:

    ```
    result[..., p, i]     = sin(theta[p, i])    for i < h
    result[..., p, h + i] = cos(theta[p, i])
    ```

    The absolute position embedding of FLASH-pytorch's FLASHTransformer
    (`ScaledSinuEmbedding`, before its scale). The angles are reduced in
    double precision, as RoPE's are.

    Rules: x has rank >= 2; d is static and even; base > 0.

    Example:

    ```mlir
    %p = attn.sinusoidal %x base = 1.0e+04 : tensor<?x?x512xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$x, Attn_F64Attr:$base);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = "$x `base` `=` $base attr-dict `:` type($x)";
  let hasVerifier = 1;
}

def Attn_TokenShiftOp : Attn_Op<"token_shift",
    [Pure, SameOperandsAndResultType, Attn_RowwiseStageTrait]> {
  let summary = "token shift: the first features of a row from the row before";
  let description = [{
    For x : [..., n, f] and k = dims, along the sequence axis -2:

    ```
    result[..., t, c] = x[..., t - 1, c]   for c < k and t >= 1
                      = 0                  for c < k and t = 0
                      = x[..., t, c]       for c >= k
    ```

    FLASH-pytorch's `shift_tokens` (k = ceil(f / 2)): each token sees half
    of the previous token's normalised features, at no cost in FLOPs.

    Rules: x has rank >= 2; 1 <= dims <= f when f is static.

    Example:

    ```mlir
    %s = attn.token_shift %h dims = 256 : tensor<?x512xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$x, Attn_I64Attr:$dims);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $x `dims` `=` $dims attr-dict `:` type($x)
  }];
  let hasVerifier = 1;
}

#endif // ATTNC_DSL_IR_ATTNNORMOPS_TD
