//===- AttnKernelOps.td - attn fused kernels ---------------*- tablegen -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file defines attn.kernel, the fusion group that attn-fuse forms: ops
// whose intermediate results never reach memory as whole tensors, and
// attn.kernel_yield, its terminator.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNKERNELOPS_TD
#define ATTNC_DSL_IR_ATTNKERNELOPS_TD

def Attn_KernelOp : Attn_Op<"kernel", [RecursiveMemoryEffects]> {
  let summary = "ops fused into one kernel (formed by attn-fuse)";
  let description = [{
    A group of primitive ops that code generation emits as one loop nest:
    the group's *anchor* (its product, or its last op when the group is
    elementwise only) owns the loops, and every other member is computed
    inside them: an activation or residual add after a product in the
    product's output stage (epilogue), an elementwise op before its consumer
    inside the consumer's loads (prologue; before a product, one block of
    rows of the product's left operand at a time), `attn.split` as a view of
    the anchor. The anchor is the product if there is one, else the first
    member that is neither elementwise nor a split (`attn.rope`), else the
    last member. A norm before a product runs in the product's left-operand
    staging (its elementwise stage is not stored; its row statistics are,
    per row block of the product when a CPU product stages it, else whole).
    No member's result exists in memory as a whole tensor except
    the results the region yields, which are the kernel's results.

    The region is not isolated: members read values defined above (inputs,
    weights, earlier kernels) directly. The body is one block that ends in
    `attn.kernel_yield`, whose operands match the results in number and
    type. attn-tile gives the anchor its schedule and every other compute
    member `compute = inline`.

    Rules: the body holds attn ops only (no nested kernels); the yielded
    values are defined in the body.

    Example (FLASH's gating, output dense and residual):

    ```mlir
    %y = attn.kernel -> tensor<?x512xf32> {
      %s = attn.add %quad, %lin : tensor<?x1024xf32>, tensor<?x1024xf32> -> tensor<?x1024xf32>
      %g = attn.mul %u, %s : tensor<?x1024xf32>, tensor<?x1024xf32> -> tensor<?x1024xf32>
      %o = attn.dense %g, %w, %b : tensor<?x1024xf32>, tensor<1024x512xf32>, tensor<512xf32> -> tensor<?x512xf32>
      %r = attn.add %o, %x : tensor<?x512xf32>, tensor<?x512xf32> -> tensor<?x512xf32>
      attn.kernel_yield %r : tensor<?x512xf32>
    }
    ```
  }];
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "(`->` type($results)^)? attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The terminator of the body.
    KernelYieldOp getYield();
    /// The member that owns the loops (see the description).
    ::mlir::Operation *getAnchor();
  }];
}

def Attn_KernelYieldOp : Attn_Op<"kernel_yield",
    [Pure, Terminator, ReturnLike, HasParent<"KernelOp">]> {
  let summary = "the results of attn.kernel";
  let description = [{
    Terminates the body of `attn.kernel`; its operands become the kernel's
    results, in order.

    Example:

    ```mlir
    attn.kernel_yield %u, %v : tensor<?x1024xf32>, tensor<?x1024xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // ATTNC_DSL_IR_ATTNKERNELOPS_TD
