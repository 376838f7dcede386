//===- Passes.td - attnc's passes on the attn dialect ------*- tablegen -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file declares every pass of attnc. Each pass is implemented in its
// own file of this folder and tested in tests/passes/<flag>.mlir.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_PASSES_PASSES_TD
#define ATTNC_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def ExpandLayersPass : Pass<"attn-expand-layers", "::mlir::func::FuncOp"> {
  let summary = "Lower every layer template op to primitive attn ops with the "
                "exact mathematics of the FLASH paper";
  let description = [{
    Rewrites `attn.gau`, `attn.flash`, `attn.mhsa`, `attn.linear_attention`,
    `attn.local_attention` and `attn.glu_ffn` into primitive ops, materialising
    their weights as `attn.weight "<layer_name>.<part>"` with the shapes of
    the op descriptions. Every new op keeps the location of the layer op, so
    later diagnostics still point at the .attn line.

    The maths is the spec's (../shared/spec/flash.md §2.2, §3.2, §3.5):
    pre-norm, one dense to u|v|z followed by SiLU, per-dim scale-offset rows
    (gau: q, k; flash: quad_q, quad_k, lin_q, lin_k), half-split RoPE over all
    s dims at global positions, then
    - gau: `relu(qk / n + rel_pos_bias)^2` (n = runtime sequence length,
      bias not divided), causal mask when causal;
    - flash: local `relu(qk / C + rel_pos_bias)^2` under `#attn.mask<chunk C>`
      (or `causal_chunk C`), plus `attn.chunked_linear` with scale 1/C
      (exclusive over chunks when causal); the padding of a partial last
      chunk is implicit in the sequence form (padded keys contribute 0);
    - gate by u, output dense, residual.
    mhsa, linear_attention (heads = 1), local_attention and glu_ffn follow
    their op descriptions.

    Before:

    ```mlir
    %y = attn.gau %x (layer_name = "g", e = 1024, s = 128, causal = true,
                      norm = layer_norm, max_len = 512, rel_pos = toeplitz,
                      rope = true, eps = 1.0e-05) : tensor<?x512xf32>
    ```

    After (abridged):

    ```mlir
    %nw = attn.weight "g.norm.weight" : tensor<512xf32>
    ...
    %h = attn.layer_norm %x weight %nw bias %nb eps = 1.0e-05 : ...
    %d = attn.dense %h, %w, %b : ... -> tensor<?x2176xf32>
    %a = attn.silu %d : tensor<?x2176xf32>
    %u, %v, %z = attn.split %a [1024, 1024, 128] : ...
    ...
    %o = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 1 ... {
      ... relu(qk / n + rel_pos_bias)^2 ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

#endif // ATTNC_PASSES_PASSES_TD
