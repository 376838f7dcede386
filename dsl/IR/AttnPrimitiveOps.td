//===- AttnPrimitiveOps.td - attn primitive operations -----*- tablegen -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file defines the primitive ops of the attn dialect: weights and
// constants, elementwise maths with numpy broadcasting, matmul/dense, shape
// ops (split, transpose, row), norms, scale-offset, RoPE, attention with a
// scalar score region, the positional-bias scalar ops used inside that region,
// and linear attention.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNPRIMITIVEOPS_TD
#define ATTNC_DSL_IR_ATTNPRIMITIVEOPS_TD

//===----------------------------------------------------------------------===//
// Weights and constants
//===----------------------------------------------------------------------===//

def Attn_WeightOp : Attn_Op<"weight", [Pure]> {
  let summary = "a named model weight";
  let description = [{
    The weight called `name` in the model's weight set (a safetensors key:
    a param's own name, or `<layer>.<part>` for layer templates). The
    result has a static shape; loading checks the stored shape against it.
    Rules: `name` is not empty, the result shape is static.

    Example:

    ```mlir
    %w = attn.weight "l0.uvz.weight" : tensor<512x2176xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Attn_ConstantOp : Attn_Op<"constant", [Pure]> {
  let summary = "a scalar constant as a rank-0 tensor";
  let description = [{
    A rank-0 tensor holding `value` (rounded to the element type). It
    broadcasts against any tensor in the elementwise ops.

    Example:

    ```mlir
    %c = attn.constant 2.0 : tensor<f32>
    ```
  }];
  let arguments = (ins Attn_F64Attr:$value);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

/// Binary elementwise op with numpy broadcasting.
class Attn_BinaryOp<string mnemonic, string maths>
    : Attn_Op<mnemonic, [Pure, Attn_ElementwiseTrait, Attn_RowwiseStageTrait]> {
  let summary = "elementwise " # maths # " with numpy broadcasting";
  let description = [{
    Computes `result = }] # maths # [{` elementwise. The shapes of a and b
    broadcast as in numpy: they are aligned at the last axis, and per axis
    the sizes must be equal or one of them 1 (a missing axis counts as 1).
    A dynamic size is compatible with any size; the broadcast of `?` and 1
    is `?`. The result has the broadcast shape and the common element type.

    Example:

    ```mlir
    %r = attn.}] # mnemonic # [{ %a, %b : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$a, Attn_Tensor:$b);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` type($a) `,` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return detail::verifyBroadcastBinaryOp(getOperation());
    }
  }];
}

def Attn_AddOp : Attn_BinaryOp<"add", "a + b">;
def Attn_SubOp : Attn_BinaryOp<"sub", "a - b">;
def Attn_MulOp : Attn_BinaryOp<"mul", "a * b">;
def Attn_DivOp : Attn_BinaryOp<"div", "a / b">;
def Attn_PowOp : Attn_BinaryOp<"pow", "a ^ b (powf)">;
/// Normalised linear attention's num / den (`attn-chunk`): a row whose
/// features give no key any weight has den = 0, and its result is 0, as a
/// softmax row with no kept key (docs/dsl.md §4.8), not 0 / 0.
def Attn_DivOrZeroOp : Attn_BinaryOp<"div_or_zero", "a / b, or 0 where b == 0">;

/// Unary elementwise op; the result has the operand's type.
class Attn_UnaryOp<string mnemonic, string maths, list<Trait> traits = []>
    : Attn_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType,
                                     Attn_ElementwiseTrait, Attn_RowwiseStageTrait],
                                    traits)> {
  let summary = "elementwise " # maths;
  let description = [{
    Computes `result = }] # maths # [{` elementwise; the result has the type
    of x.

    Example:

    ```mlir
    %r = attn.}] # mnemonic # [{ %x : tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$x);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def Attn_NegOp : Attn_UnaryOp<"neg", "-x">;
def Attn_SiluOp : Attn_UnaryOp<"silu", "x * sigmoid(x)", [Attn_ActivationTrait]>;
def Attn_GeluOp : Attn_UnaryOp<"gelu", "0.5 * x * (1 + erf(x / sqrt(2))) (exact erf form)", [Attn_ActivationTrait]>;
def Attn_ReluOp : Attn_UnaryOp<"relu", "max(x, 0)", [Attn_ActivationTrait]>;
def Attn_SigmoidOp : Attn_UnaryOp<"sigmoid", "1 / (1 + exp(-x))", [Attn_ActivationTrait]>;
def Attn_ExpOp : Attn_UnaryOp<"exp", "exp(x)", [Attn_ActivationTrait]>;
def Attn_TanhOp : Attn_UnaryOp<"tanh", "tanh(x)", [Attn_ActivationTrait]>;
def Attn_SqrtOp : Attn_UnaryOp<"sqrt", "sqrt(x)">;

//===----------------------------------------------------------------------===//
// Contractions and shape ops
//===----------------------------------------------------------------------===//

def Attn_MatmulOp : Attn_Op<"matmul", [Pure,
    DeclareOpInterfaceMethods<Attn_ProductOpInterface>]> {
  let summary = "(batched) matrix product";
  let description = [{
    `result[..., i, j] = sum_k a[..., i, k] * b[..., k, j]` for
    a : [..., m, k] and b : [k, n] (shared by every batch entry) or
    b : [..., k, n] (same rank as a, batch dims agree). The result is
    [..., m, n] with a's batch dims.

    Rules: both ranks >= 2; b has rank 2 or a's rank; the k dims, batch dims
    and result dims agree (dynamic dims are compatible with anything).

    Example:

    ```mlir
    %r = attn.matmul %a, %b : tensor<?x?x64xf32>, tensor<64x32xf32> -> tensor<?x?x32xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$a, Attn_Tensor:$b);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` type($a) `,` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Attn_DenseOp : Attn_Op<"dense", [Pure,
    DeclareOpInterfaceMethods<Attn_ProductOpInterface>]> {
  let summary = "dense layer: x @ w + bias";
  let description = [{
    `result[..., j] = sum_k x[..., k] * w[k, j] + bias[j]` for x : [..., k],
    w : [k, n] (stored `[in, out]`), bias : [n]; the result is [..., n].

    Rules: x has rank >= 1, w rank 2, bias rank 1; the k dims, n dims and
    the leading dims of x and the result agree.

    Example:

    ```mlir
    %r = attn.dense %x, %w, %b : tensor<?x512xf32>, tensor<512x2176xf32>, tensor<2176xf32> -> tensor<?x2176xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$x, Attn_Tensor:$w, Attn_Tensor:$bias);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $x `,` $w `,` $bias attr-dict `:` type($x) `,` type($w) `,` type($bias)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Attn_SplitOp : Attn_Op<"split", [Pure]> {
  let summary = "split the last axis into consecutive parts";
  let description = [{
    For x : [..., f] and sizes [f_0, ..., f_(r-1)], result i is
    `x[..., o_i : o_i + f_i]` with `o_i = f_0 + ... + f_(i-1)`.

    Rules: x has rank >= 1; one result per size; every size >= 1; the sizes
    sum to f when f is static; result i is [..., f_i] with x's leading dims.
    The builder `SplitOp::build(b, state, x, sizes)` infers the result types.

    Example:

    ```mlir
    %u, %v, %z = attn.split %uvz [1024, 1024, 128] : tensor<?x2176xf32> -> tensor<?x1024xf32>, tensor<?x1024xf32>, tensor<?x128xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$x, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Attn_Tensor>:$results);
  let assemblyFormat = "$x $sizes attr-dict `:` type($x) `->` type($results)";
  let builders = [
    OpBuilder<(ins "::mlir::Value":$x, "::llvm::ArrayRef<int64_t>":$sizes)>
  ];
  let hasVerifier = 1;
}

def Attn_TransposeOp : Attn_Op<"transpose", [Pure]> {
  let summary = "swap the last two axes";
  let description = [{
    `result[..., j, i] = x[..., i, j]` for x : [..., a, b]; the result is
    [..., b, a]. Rules: rank >= 2, result dims agree.

    Example:

    ```mlir
    %t = attn.transpose %k : tensor<?x128xf32> -> tensor<128x?xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$x);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_RowOp : Attn_Op<"row", [Pure]> {
  let summary = "one row of a static matrix";
  let description = [{
    `result[c] = p[index, c]` for p : [r, c] with a static shape (a param
    such as gamma [2, s]). Rules: p has rank 2 and a static shape,
    0 <= index < r, the result is [c].

    Example:

    ```mlir
    %g0 = attn.row %gamma[0] : tensor<2x128xf32> -> tensor<128xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$p, Attn_I64Attr:$index);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = "$p `[` $index `]` attr-dict `:` type($p) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_EmbeddingOp : Attn_Op<"embedding", [Pure, Attn_RowwiseStageTrait]> {
  let summary = "the rows of a table at token ids";
  let description = [{
    For token ids : [...] (i32) and table : [V, d] (static):
    `result[..., t, :] = table[ids[..., t], :]`, of shape [..., d].

    Ids must lie in 0..V-1. Running a model checks them before any kernel
    runs and reports the first one outside, with its input and position;
    the generated code clamps the row index all the same, so no id can make
    it read outside the table.

    Rules: ids is an i32 tensor; table has rank 2 and a static shape; the
    result is ids's shape followed by d, with the table's element type.

    Example:

    ```mlir
    %x = attn.embedding %ids, %tok : tensor<?x?xi32>, tensor<50x64xf32> -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I32]>:$ids, Attn_Tensor:$table);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $ids `,` $table attr-dict `:` type($ids) `,` type($table) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

include "dsl/IR/AttnNormOps.td"
include "dsl/IR/AttnAttentionOps.td"

#endif // ATTNC_DSL_IR_ATTNPRIMITIVEOPS_TD
