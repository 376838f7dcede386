// RUN: attn-opt %s -split-input-file --attn-fuse | FileCheck %s

// Epilogue: dense + bias + activation + split in one kernel that yields the
// split's parts.
// CHECK-LABEL: func.func @dense_activation_split
// CHECK:      %[[K:.*]]:3 = attn.kernel -> tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x16xf32> {
// CHECK-NEXT:   %[[D:.*]] = attn.dense
// CHECK-NEXT:   %[[S:.*]] = attn.silu %[[D]]
// CHECK-NEXT:   %[[P:.*]]:3 = attn.split %[[S]]
// CHECK-NEXT:   attn.kernel_yield %[[P]]#0, %[[P]]#1, %[[P]]#2
// CHECK-NEXT: }
// CHECK:      attn.sub %[[K]]#0, %[[K]]#1
// CHECK:      return {{.*}}, %[[K]]#2
func.func @dense_activation_split(%x: tensor<?x64xf32>, %w: tensor<64x80xf32>, %b: tensor<80xf32>) -> (tensor<?x32xf32>, tensor<?x16xf32>) {
  %d = attn.dense %x, %w, %b : tensor<?x64xf32>, tensor<64x80xf32>, tensor<80xf32> -> tensor<?x80xf32>
  %s = attn.silu %d : tensor<?x80xf32>
  %p:3 = attn.split %s [32, 32, 16] : tensor<?x80xf32> -> tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x16xf32>
  %r = attn.sub %p#0, %p#1 : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
  return %r, %p#2 : tensor<?x32xf32>, tensor<?x16xf32>
}

// -----

// Gating (prologue into the product's left operand), output dense and
// residual (epilogue) in one kernel; the sum feeding the gate joins too.
// CHECK-LABEL: func.func @gate_dense_residual
// CHECK:      %[[K:.*]] = attn.kernel -> tensor<?x64xf32> {
// CHECK-NEXT:   attn.add %arg1, %arg2
// CHECK-NEXT:   attn.mul %arg0
// CHECK-NEXT:   attn.dense
// CHECK-NEXT:   %[[R:.*]] = attn.add {{.*}}, %arg5
// CHECK-NEXT:   attn.kernel_yield %[[R]] : tensor<?x64xf32>
// CHECK:      return %[[K]]
func.func @gate_dense_residual(%u: tensor<?x128xf32>, %a: tensor<?x128xf32>, %l: tensor<?x128xf32>, %w: tensor<128x64xf32>, %b: tensor<64xf32>, %x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %s = attn.add %a, %l : tensor<?x128xf32>, tensor<?x128xf32> -> tensor<?x128xf32>
  %g = attn.mul %u, %s : tensor<?x128xf32>, tensor<?x128xf32> -> tensor<?x128xf32>
  %o = attn.dense %g, %w, %b : tensor<?x128xf32>, tensor<128x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %y = attn.add %o, %x : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// An elementwise chain fuses into its last op, an activation into the
// product before it; nothing fuses into the right operand of a product,
// into a broadcast of another shape, or across a value with two uses;
// attention and single ops form no kernel.
// CHECK-LABEL: func.func @not_fused
// CHECK:      attn.kernel -> tensor<?x64xf32> {
// CHECK-NEXT:   attn.exp %arg0
// CHECK-NEXT:   attn.neg
// CHECK-NEXT:   attn.kernel_yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[R:.*]] = attn.relu %arg1
// CHECK-NEXT: %[[S:.*]] = attn.kernel -> tensor<?x64xf32> {
// CHECK-NEXT:   attn.matmul %arg0, %[[R]]
// CHECK-NEXT:   attn.sigmoid
// CHECK-NEXT:   attn.kernel_yield
// CHECK-NEXT: }
// CHECK-NEXT: attn.add %[[S]], %arg2
// CHECK-NEXT: attn.mul
// CHECK-NEXT: attn.attention
// CHECK-NOT:  attn.kernel
func.func @not_fused(%x: tensor<?x64xf32>, %m: tensor<64x64xf32>, %g: tensor<64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %e = attn.exp %x : tensor<?x64xf32>
  %n = attn.neg %e : tensor<?x64xf32>
  %r = attn.relu %m : tensor<64x64xf32>
  %p = attn.matmul %x, %r : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %s = attn.sigmoid %p : tensor<?x64xf32>
  %a = attn.add %s, %g : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %t = attn.mul %a, %a : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  %o = attn.attention %x, %x, %t mask = #attn.mask<causal> normalize = none heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %len: index):
    attn.yield %qk : f32
  }
  return %n, %s, %t, %o : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// A residual computed after the product is not added in the product's
// output stage (it is not ready there); it fuses into the add instead.
// CHECK-LABEL: func.func @late_residual
// CHECK:      %[[D:.*]] = attn.dense
// CHECK-NEXT: attn.kernel -> tensor<?x64xf32> {
// CHECK-NEXT:   %[[E:.*]] = attn.exp %arg3
// CHECK-NEXT:   attn.add %[[D]], %[[E]]
func.func @late_residual(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>, %y: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %d = attn.dense %x, %w, %b : tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %e = attn.exp %y : tensor<?x64xf32>
  %r = attn.add %d, %e : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// -----

// Prologue into RoPE: the per-dim scale and offset runs inside the rotation.
// CHECK-LABEL: func.func @scale_offset_rope
// CHECK:      attn.kernel -> tensor<?x64xf32> {
// CHECK-NEXT:   attn.scale_offset
// CHECK-NEXT:   attn.rope
// CHECK-NEXT:   attn.kernel_yield
func.func @scale_offset_rope(%z: tensor<?x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<?x64xf32> {
  %q = attn.scale_offset %z, %g, %b : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %r = attn.rope %q mode = half rotary_dims = 64 base = 1.000000e+04 : tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// -----

// A norm read only as a product's left operand joins the product's kernel
// (its rows are normalised where the product stages them); the product
// anchors the kernel.
// CHECK-LABEL: func.func @norm_dense
// CHECK:      attn.kernel -> tensor<?x32xf32> {
// CHECK-NEXT:   attn.layer_norm
// CHECK-NEXT:   attn.dense
// CHECK-NEXT:   attn.kernel_yield
func.func @norm_dense(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<?x32xf32> {
  %n = attn.layer_norm %x weight %g eps = 1.000000e-05 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %d = attn.dense %n, %w, %b : tensor<?x64xf32>, tensor<64x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
  return %d : tensor<?x32xf32>
}
