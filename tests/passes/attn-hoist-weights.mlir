// RUN: attn-opt %s -split-input-file -verify-diagnostics --attn-hoist-weights | FileCheck %s

// Each weight of the layer function becomes an argument (once per name),
// and each call passes its own layer's weights.
// CHECK-LABEL: func.func @stack
// CHECK:      %[[W0:.*]] = attn.weight "f.0.b" : tensor<32xf32>
// CHECK-NEXT: %[[V0:.*]] = attn.weight "f.0.w" : tensor<32x32xf32>
// CHECK-NEXT: %[[A:.*]] = call @stack.layer0(%arg0, %[[W0]], %[[V0]]) {attn.layer = "f.0"}
// CHECK-NEXT: %[[W1:.*]] = attn.weight "f.1.b" : tensor<32xf32>
// CHECK-NEXT: %[[V1:.*]] = attn.weight "f.1.w" : tensor<32x32xf32>
// CHECK-NEXT: call @stack.layer0(%[[A]], %[[W1]], %[[V1]]) {attn.layer = "f.1"}
// CHECK:      func.func private @stack.layer0(%arg0: tensor<?x32xf32> {attn.name = "x"}, %arg1: tensor<32xf32> {attn.name = "b", attn.weight = "b"}, %arg2: tensor<32x32xf32> {attn.name = "w", attn.weight = "w"})
// CHECK-NOT:  attn.weight "
// CHECK:      attn.dense %arg0, %arg2, %arg1
// CHECK:      attn.add {{.*}}, %arg1
func.func @stack(%x: tensor<?x32xf32> {attn.name = "x", attn.dims = ["n", ""]})
    -> (tensor<?x32xf32> {attn.name = "y", attn.dims = ["n", ""]})
    attributes {attn.model, attn.runtime_dims = {n = "seq"}} {
  %0 = call @stack.layer0(%x) {attn.layer = "f.0"} : (tensor<?x32xf32>) -> tensor<?x32xf32>
  %1 = call @stack.layer0(%0) {attn.layer = "f.1"} : (tensor<?x32xf32>) -> tensor<?x32xf32>
  return %1 : tensor<?x32xf32>
}
func.func private @stack.layer0(%x: tensor<?x32xf32> {attn.name = "x"}) -> tensor<?x32xf32>
    attributes {attn.layer_prefix = "f.0"} {
  %b = attn.weight "f.0.b" : tensor<32xf32>
  %w = attn.weight "f.0.w" : tensor<32x32xf32>
  %d = attn.dense %x, %w, %b : tensor<?x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
  %b2 = attn.weight "f.0.b" : tensor<32xf32>
  %r = attn.add %d, %b2 : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}

// -----

// A weight that is not the layer's is an error at the weight.
func.func private @bad.layer0(%x: tensor<?x32xf32>) -> tensor<?x32xf32>
    attributes {attn.layer_prefix = "f.0"} {
  // expected-error @+1 {{layer function 'bad.layer0' of layer 'f.0' reads weight 'final_norm', which is not one of the layer's}}
  %b = attn.weight "final_norm" : tensor<32xf32>
  %r = attn.add %x, %b : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}
