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

def OutlineLayersPass : Pass<"attn-outline-layers", "::mlir::ModuleOp"> {
  let summary = "Make each layer configuration a model uses more than once "
                "one private function, called once per layer";
  let description = [{
    The first pass of attn-lower-to-primitives. In each model function
    (`attn.model`), layer ops (trait Attn_LayerTrait: gau, flash, mhsa,
    linear_attention, local_attention, glu_ffn) with the same op, the same
    attributes other than `layer_name` and the same types form a
    configuration. Each configuration that occurs at least twice (a
    `repeat N` stack, or the same layer written out several times) becomes
    a private function `@<model>.layer<k>` holding one copy of the layer
    op, with `attn.layer_prefix` = the first layer's name; each of its
    layer ops becomes a `func.call` with `attn.layer` = that layer's name.
    A configuration used once stays in the model, so a model without
    repeated layers is unchanged. In a model that now has calls, each
    maximal run of the other ops (the glue before, between and after the
    layers; the weights it reads are cloned into it) becomes a private
    function `@<model>.glue<k>` called in its place, so the model is a
    sequence of calls. Every later pass runs on each function once, and
    code generation compiles each function once and runs the calls in
    order (docs/architecture.md, "Layer kernels"), so compile time does
    not grow with depth. attn-hoist-weights, at the end of the pipeline,
    turns the layer functions' weights into arguments.

    Before:

    ```mlir
    %0 = attn.flash %x (layer_name = "lm.0", ...) : tensor<?x?x512xf32>
    %1 = attn.flash %0 (layer_name = "lm.1", ...) : tensor<?x?x512xf32>
    ```

    After:

    ```mlir
    %0 = call @m.layer0(%x) {attn.layer = "lm.0"} : (tensor<?x?x512xf32>) -> tensor<?x?x512xf32>
    %1 = call @m.layer0(%0) {attn.layer = "lm.1"} : (tensor<?x?x512xf32>) -> tensor<?x?x512xf32>
    func.func private @m.layer0(%x: tensor<?x?x512xf32> {attn.name = "x"}) -> tensor<?x?x512xf32>
        attributes {attn.layer_prefix = "lm.0"} {
      %0 = attn.flash %x (layer_name = "lm.0", ...) : tensor<?x?x512xf32>
      return %0 : tensor<?x?x512xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect",
                           "::mlir::func::FuncDialect"];
}

def HoistWeightsPass : Pass<"attn-hoist-weights", "::mlir::ModuleOp"> {
  let summary = "Pass each layer function its weights as arguments, named "
                "per call";
  let description = [{
    The last pass of attn-lower-to-primitives. In each function with
    `attn.layer_prefix = P` (attn-outline-layers), every
    `attn.weight "P.<part>"` becomes a trailing argument with
    `attn.weight = "<part>"` (one per distinct name, in order of first
    use), and every call of the function with `attn.layer = L` passes a new
    `attn.weight "L.<part>"` for it. A weight whose name does not start
    with `P.` is an error at the weight. Functions without weights are
    left alone, so the pass can run twice.

    Before:

    ```mlir
    %0 = call @m.layer0(%x) {attn.layer = "lm.1"} : ...
    func.func private @m.layer0(%x: tensor<?x?x512xf32>) -> ... attributes {attn.layer_prefix = "lm.0"} {
      %w = attn.weight "lm.0.out.weight" : tensor<1024x512xf32>
      ...
    }
    ```

    After:

    ```mlir
    %w1 = attn.weight "lm.1.out.weight" : tensor<1024x512xf32>
    %0 = call @m.layer0(%x, %w1) {attn.layer = "lm.1"} : ...
    func.func private @m.layer0(%x: tensor<?x?x512xf32>,
        %w: tensor<1024x512xf32> {attn.name = "out.weight", attn.weight = "out.weight"}) -> ...
    ```
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect",
                           "::mlir::func::FuncDialect"];
}

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

def ChunkPass : Pass<"attn-chunk", "::mlir::func::FuncOp"> {
  let summary = "Rewrite chunk-masked attention and the chunked global linear "
                "term into the chunk-parallel form of FLASH";
  let description = [{
    FLASH's mixed chunk attention as a compiler pass (spec §3.2, §3.5). The
    sequence is cut into G = ceil(n / C) chunks with zero padding after the
    projections (`attn.chunk`), and:

    - `attn.attention` under `#attn.mask<chunk C>` / `<causal_chunk C>` with
      `normalize = none` (or any under `causal_chunk`) becomes an attention on
      the chunked tensors, where the chunk is a batch dim and the mask is
      `none` / `causal`. Padded keys have zero values and contribute nothing;
      under `causal_chunk` they come after every real row of the last chunk,
      so a softmax does not see them either. The rewrite applies only when the
      score does not read the key length `%n` and reads the positions `%i`,
      `%j` only through the distance-based `attn.rel_pos_bias` /
      `attn.t5_bias` (so positions inside a chunk give the same score).
    - `attn.chunked_linear` becomes per-chunk states K_g^T V_g
      (`attn.chunk_state`), an exclusive prefix over chunks when causal or the
      total when not (`attn.chunk_scan`), and Q_g . state (`attn.state_apply`).
    - Causal `attn.linear_attn` becomes FLASH's two parts in chunks of 128
      rows, without FLASH's gating: with phi(q), phi(k) (the feature map in
      elementwise ops), its numerator is an attention within chunks under
      `causal_chunk` with score qk plus a causal `attn.chunked_linear`, and
      its denominator the same with values a column of ones (v's first
      column to the power 0); both then become the chunk ops above. The
      row-wise form it replaces is O(n^2); this one is linear in n and
      streams and decodes as causal FLASH.
    - Non-causal `attn.linear_attn` whose queries and keys are the same
      rows (one value through row-wise ops, or arguments of the same
      sequence dim) becomes a non-causal `attn.chunked_linear` in chunks of
      256 for the numerator and one for the denominator: per-chunk GEMMs
      and their total, which streams in two sweeps.

    Results go back to sequence form with `attn.unchunk`, which drops the
    padding. The rewrite is exact (tests/e2e compare before and after).

    Before:

    ```mlir
    %g = attn.chunked_linear %q, %k, %v chunk = 256 causal = true scale = 3.906250e-03 : ...
    ```

    After:

    ```mlir
    %qc = attn.chunk %q chunk = 256 : tensor<?x128xf32> -> tensor<?x256x128xf32>
    %kc = attn.chunk %k chunk = 256 : ...
    %vc = attn.chunk %v chunk = 256 : ...
    %s = attn.chunk_state %kc, %vc scale = 3.906250e-03 : ... -> tensor<?x128x1024xf32>
    %p = attn.chunk_scan %s exclusive = true : tensor<?x128x1024xf32>
    %o = attn.state_apply %qc, %p : ... -> tensor<?x256x1024xf32>
    %g = attn.unchunk %o, %q : ... -> tensor<?x1024xf32>
    ```
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect"];
}

def FusePass : Pass<"attn-fuse", "::mlir::func::FuncOp"> {
  let summary = "Group primitive ops into attn.kernel regions that code "
                "generation emits as one loop nest each";
  let description = [{
    Forms `attn.kernel` regions (see the op) from these rules, applied to
    the ops of the function body:

    - epilogue: an activation (silu, gelu, relu, sigmoid, exp, tanh) whose
      operand is a product (`attn.dense`, `attn.matmul`) used only by it
      joins the product's kernel, and so does an `attn.split` of that
      activation used only by the split (dense + bias + activation + split);
    - residual: an `attn.add` of a product used only by it and of a value of
      the same type joins the product's kernel (its output stage adds it);
    - prologue: an elementwise op whose result is used only by an
      elementwise op of the same type, only as the left operand of a
      product, or only by `attn.rope`, joins its user's kernel (gating
      before the output dense; FLASH's per-dim scale and offset of q and k
      before RoPE); so does a norm used only as a product's left operand
      (the input layer norm: its row statistics are stored, the normalised
      rows computed one block at a time where the product stages them).

    Quadratic attention is one op already (QK^T, score, mask and .V are
    fused by its schedule, see `attn-tile`), so it forms no kernel here.
    A group whose members cannot all move to its last member (a member
    other than the last used outside the group) stays unfused. Groups of
    one op form no kernel. The pass is target-independent; `attn-tile`
    decides per target how members are scheduled (inside the anchor's
    loops, on a CPU and on CUDA alike).

    Example (FLASH's input projection):

    ```mlir
    %d = attn.dense %x, %w, %b : ...
    %a = attn.silu %d : tensor<?x2176xf32>
    %u, %v, %z = attn.split %a [1024, 1024, 128] : ...
    // becomes
    %u, %v, %z = attn.kernel -> tensor<?x1024xf32>, tensor<?x1024xf32>, tensor<?x128xf32> {
      %d = attn.dense %x, %w, %b : ...
      %a = attn.silu %d : tensor<?x2176xf32>
      %s:3 = attn.split %a [1024, 1024, 128] : ...
      attn.kernel_yield %s#0, %s#1, %s#2 : ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect"];
}

def TilePass : Pass<"attn-tile", "::mlir::func::FuncOp"> {
  let summary = "Attach a loop schedule chosen by a register and cache cost "
                "model to every compute op of primitive-level IR";
  let description = [{
    Gives every compute op that has no `attn.schedule` yet a
    `#attn.schedule<...>` (see `docs/dialect.md`, "Schedules") chosen for
    the target, so that codegen schedules each Halide stage from data; the
    same for each result of the function that has none (the result
    attribute `attn.schedule`: the stage that copies it out). With
    `policy=naive` every schedule added is the naive baseline
    (`strategy = naive`: scalar, serial loops at root; a CPU baseline).
    Ops that already carry a schedule keep it. Every schedule, given or
    chosen, is checked against the target's budgets (`verifyScheduleFor`)
    and an illegal one is reported at its op's location. Pure views
    (`attn.split`, `attn.row`, `attn.transpose`, `attn.weight`,
    `attn.constant`, `attn.unchunk`), scalar ops, ops inside score regions
    and layer ops stay unscheduled; `attn.chunk` is stored (its consumers
    read it many times, and reading the zero-padded view through them
    measured slower). Inside an `attn.kernel` (see `attn-fuse`), the
    kernel's anchor gets its schedule and every other elementwise member
    `compute = inline` (run inside the anchor's loops: a product's output
    stage, or on CUDA the staging of its left operand panel), on a CPU and
    on CUDA alike. Nothing outside a kernel is inlined.

    The cost model (`TargetModel`: f32 lanes 16 / 8 / 4 for avx512 / avx2 /
    generic, vector registers 32 / 16 / 16, L1 32 KiB, L2 1 MiB; CUDA: at most
    1024 threads and 48 KiB of shared memory per block):
    - products (`strategy = gemm`; `attn.matmul`, `attn.dense`, the chunk
      form's `attn.chunk_state` and `attn.state_apply`) on a CPU: tile x = 4 vectors (fewer when the
      static N is narrower), tile y the largest of 8..2 rows whose
      (tile x / vector) * tile y accumulators fit in the vector registers
      less 6, unroll = [tile x / vector, tile y], split_k the largest power
      of two whose split_k * tile x * 4 bytes fit in half of L2 (0 when the
      static K is smaller), row_block = 16 tiles of rows (whole query
      blocks of the chunk attention that FLASH's output projection
      computes in them), parallel rows,
      `stage_lhs` when the left operand is an inlined member of the
      product's kernel (a prologue), `pack_rhs` when the right operand has
      no batch axes (a weight);
    - the same on CUDA: a 64 x 64 tile per block (fitted down to small
      operands) over gpu_threads [16, 16] of 4 x 4 register accumulators,
      both operand panels staged in shared memory in K steps of split_k =
      16 (`shared`; no staging when K < 4);
    - `attn.attention` on CPU: blocks of split_k queries x split_k keys
      (`strategy = blocked`), split_k = 64 for at most 512 static keys (fitted
      down to few keys), 128 otherwise; output register tile [2 vectors,
      8 rows] of a head's columns ([2, 4] with 16 vector registers),
      parallel query blocks and heads; under a chunk mask, or with one
      column per head, scores one query row at a time (`strategy = rows`,
      vectorised, parallel); on CUDA blocks of 64 queries x up to 256
      value columns of a head over gpu_threads [16, 16], 32 keys per step
      (16 with 256 columns) in shared memory (`blocked`, `shared`), or one thread per
      output element (`rows`, tile [32, 8]) for dynamic widths, chunk masks and
      heads of fewer than 16 columns;
    - elementwise ops, norms, `attn.scale_offset`, `attn.rope` (`loops`),
      `attn.linear_attn`, `attn.chunked_linear` and the chunk-form state
      ops: tile [vector * 4, 1] (narrower for narrow rows), vector = lanes,
      parallel rows on CPU; gpu_threads [64, 1] (or [w, 64 / w] for rows of
      w < 64) on CUDA.

    `target` is `host` (the running CPU: avx512 if it has AVX-512F, else
    avx2 if it has AVX2, else generic), `x86-64-avx2`, `x86-64-avx512`,
    `generic` or `cuda`.

    Before:

    ```mlir
    %d = attn.dense %x, %w, %b : tensor<?x512xf32>, tensor<512x2176xf32>, tensor<2176xf32> -> tensor<?x2176xf32>
    %a = attn.silu %d : tensor<?x2176xf32>
    ```

    After (`--attn-tile=target=x86-64-avx512`):

    ```mlir
    %d = attn.dense %x, %w, %b {attn.schedule = #attn.schedule<strategy = gemm, tile = [64, 6], vector = 16, unroll = [4, 6], row_block = 96, pack_rhs = true, parallel = true, compute = root>} : ...
    %a = attn.silu %d {attn.schedule = #attn.schedule<tile = [64, 1], vector = 16, parallel = true, compute = root>} : tensor<?x2176xf32>
    ```
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"host\"",
           "Target whose budgets the schedules fit: host, x86-64-avx2, "
           "x86-64-avx512, generic or cuda">,
    Option<"policy", "policy", "std::string", /*default=*/"\"default\"",
           "How the schedules added are chosen: default (the cost model) "
           "or naive (`strategy = naive` on every op: the baseline)">
  ];
  let dependentDialects = ["::mlir::attn::AttnDialect"];
}

def ApplyTuningPass : Pass<"attn-apply-tuning", "::mlir::ModuleOp"> {
  let summary = "Replace schedules by the fastest ones a tuning database "
                "recorded for the same kernels";
  let description = [{
    Runs after attn-tile. For every op with its own loops (a schedule that
    is not `compute = inline`: an attn.kernel's anchor or a scheduled op
    outside kernels), looks up its tuningSignature in the tuning database
    `db` (tune/TuningDb.h, written by `attnc tune`) for the target `target`
    and this attnc's version, at the runtime dims nearest `dims`
    (`n=8192,b=1`; empty: the largest sizes tuned), and sets the fastest
    schedule measured there, if it was faster than attn-tile's default in
    the tuner's own measurement. Every schedule set is checked against the
    target's budgets first; one that fails (a database edited by hand) is
    skipped with a warning. A remark says how many kernels took a tuned
    schedule, and why none did when the database has rows only for other
    targets or versions. A missing, damaged or foreign database file is an
    error.

    Before (`attnc tune` measured `tile = [32, 6]` faster for this dense):

    ```mlir
    %0 = attn.dense %x, %w, %b {attn.schedule = #attn.schedule<strategy = gemm, tile = [64, 6], ...>}
    ```

    After:

    ```mlir
    %0 = attn.dense %x, %w, %b {attn.schedule = #attn.schedule<strategy = gemm, tile = [32, 6], ...>}
    ```
  }];
  let options = [
    Option<"db", "db", "std::string", /*default=*/"\"\"",
           "The tuning database (an `attnc tune --db` file)">,
    Option<"target", "target", "std::string", /*default=*/"\"host\"",
           "Target the schedules are for, as attn-tile's option">,
    Option<"dims", "dims", "std::string", /*default=*/"\"\"",
           "Runtime dims to choose tuned schedules for (name=size,...; "
           "empty: the largest tuned sizes)">
  ];
  let dependentDialects = ["::mlir::attn::AttnDialect"];
}

#endif // ATTNC_PASSES_PASSES_TD
