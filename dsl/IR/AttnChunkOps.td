//===- AttnChunkOps.td - attn chunk-form ops ---------------*- tablegen -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file defines the ops of the chunk-parallel form that attn-chunk
// produces (spec §3.2): chunk/unchunk with zero padding, per-chunk K^T V
// states, the prefix (or total) over chunks, and the application of a state
// to the queries of its chunk. Quadratic attention inside chunks is an
// ordinary attn.attention on the chunked tensors (the chunk is a batch dim).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNCHUNKOPS_TD
#define ATTNC_DSL_IR_ATTNCHUNKOPS_TD

def Attn_ChunkOp : Attn_Op<"chunk", [Pure, Attn_RowwiseStageTrait]> {
  let summary = "split the sequence axis into zero-padded chunks of C";
  let description = [{
    For x : [..., n, f] and C = chunk, the result is [..., G, C, f] with
    G = ceil(n / C) and `result[..., g, c, :] = x[..., g*C + c, :]` when
    g*C + c < n, else 0 (the padding of spec §3.5, applied after the
    projections).

    Schedule: `compute = inline` (attn-tile's choice) reads x through the
    re-index in the consumers' loops, so no copy is stored; a loop schedule
    stores the chunked copy as a row-wise stage.

    Rules: x has rank >= 2; chunk >= 1; the result has rank + 1, the same
    leading dims and feature dim, C as its chunk dim, and G = ceil(n / C)
    when n is static (dynamic otherwise).

    Example:

    ```mlir
    %c = attn.chunk %x chunk = 256 : tensor<?x128xf32> -> tensor<?x256x128xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$x, Attn_I64Attr:$chunk);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $x `chunk` `=` $chunk attr-dict `:` type($x) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Attn_UnchunkOp : Attn_Op<"unchunk", [Pure]> {
  let summary = "merge chunks back into a sequence of the original length";
  let description = [{
    For y : [..., G, C, f] and like : [..., n, f'] (the tensor whose length
    the result takes), the result is [..., n, f] with
    `result[..., t, :] = y[..., t / C, t % C, :]`: the padding is dropped.

    Rules: y has rank >= 3; like has rank(y) - 1 and the same leading dims;
    the result is like's shape with y's feature dim.

    Example:

    ```mlir
    %y = attn.unchunk %c, %x : tensor<?x256x1024xf32>, tensor<?x128xf32> -> tensor<?x1024xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$y, Attn_Tensor:$like);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $y `,` $like attr-dict `:` type($y) `,` type($like) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Attn_ChunkStateOp : Attn_Op<"chunk_state", [Pure,
    DeclareOpInterfaceMethods<Attn_ProductOpInterface>]> {
  let summary = "per-chunk linear-attention state K_g^T V_g, scaled";
  let description = [{
    For k : [..., G, C, s] and v : [..., G, C, e]:
    `result[..., g, :, :] = scale * k[..., g, :, :]^T @ v[..., g, :, :]`, an
    [s, e] state per chunk (FLASH: scale = 1/C). Zero-padded rows add 0.

    Rules: k and v have the same rank >= 3 and leading dims and the same
    chunk dim; the result is [..., G, s, e].

    Example:

    ```mlir
    %s = attn.chunk_state %k, %v scale = 3.906250e-03 : tensor<?x256x128xf32>, tensor<?x256x1024xf32> -> tensor<?x128x1024xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$k, Attn_Tensor:$v, Attn_F64Attr:$scale);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $k `,` $v `scale` `=` $scale attr-dict `:` type($k) `,` type($v) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Attn_ChunkScanOp : Attn_Op<"chunk_scan",
    [Pure, AllTypesMatch<["states", "result"]>, Attn_RowwiseStageTrait]> {
  let summary = "exclusive prefix (causal) or total (non-causal) over chunks";
  let description = [{
    For states : [..., G, s, e]:

    ```
    exclusive = true:  result[..., g] = sum_{h < g} states[..., h]   // result[..., 0] = 0
    exclusive = false: result[..., g] = sum_{h}     states[..., h]   // the same for every g
    ```

    The exclusive form is FLASH's causal global term (spec §3.1: previous
    chunks only; an inclusive prefix would leak the chunk's own future).
    When nothing else reads the states, code generation sums
    them in place (states[g] += states[g - 1], an update of the states'
    own stage) and the result is a view, states[g - 1] or 0: no buffer of
    its own. Streamed, decoded and autoscheduled pipelines keep the scan a
    stage of its own.

    With `length_of` (a tensor [..., n, f] in sequence form, not exclusive
    only), the total is divided by n, its sequence length: only its shape
    is read (FLASH-pytorch's non-causal state, divided by n instead of C).

    Rules: rank >= 3; length_of has rank >= 2 and only when not exclusive.

    Example:

    ```mlir
    %p = attn.chunk_scan %s exclusive = true : tensor<?x128x1024xf32>
    %t = attn.chunk_scan %s length_of %k : tensor<?x128xf32> exclusive = false
           : tensor<?x128x1024xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$states, BoolAttr:$exclusive,
                       Optional<Attn_Tensor>:$length_of);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $states (`length_of` $length_of^ `:` type($length_of))?
    `exclusive` `=` $exclusive attr-dict `:` type($states)
  }];
  let hasVerifier = 1;
}

def Attn_StateApplyOp : Attn_Op<"state_apply", [Pure,
    DeclareOpInterfaceMethods<Attn_ProductOpInterface>]> {
  let summary = "queries of each chunk times the state visible to that chunk";
  let description = [{
    For q : [..., G, C, s] and states : [..., G, s, e]:
    `result[..., g, :, :] = q[..., g, :, :] @ states[..., g, :, :]`.

    Rules: q and states have the same rank >= 3 and leading dims (G
    included); q's feature dim equals the states' s; the result is
    [..., G, C, e].

    Example:

    ```mlir
    %o = attn.state_apply %q, %p : tensor<?x256x128xf32>, tensor<?x128x1024xf32> -> tensor<?x256x1024xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$q, Attn_Tensor:$states);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $q `,` $states attr-dict `:` type($q) `,` type($states) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // ATTNC_DSL_IR_ATTNCHUNKOPS_TD
