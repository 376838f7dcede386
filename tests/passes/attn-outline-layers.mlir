// RUN: attn-opt %s -split-input-file --attn-outline-layers | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-outline-layers --attn-outline-layers | FileCheck %s

// A stack of three layers of one configuration: one function, three calls,
// each naming its layer; the layer used once (f2) is glue between them and
// becomes a function of its own, so the model is a sequence of calls.
// CHECK-LABEL: func.func @stack
// CHECK:      %[[A:.*]] = call @stack.layer0(%arg0) {attn.layer = "f.0"}
// CHECK-NEXT: %[[B:.*]] = call @stack.layer0(%[[A]]) {attn.layer = "f.1"}
// CHECK-NEXT: %[[C:.*]] = call @stack.glue0(%[[B]])
// CHECK-NEXT: %[[D:.*]] = call @stack.layer0(%[[C]]) {attn.layer = "f.2"}
// CHECK-NEXT: return %[[D]]
// CHECK:      func.func private @stack.glue0(%arg0: tensor<?x32xf32>) -> tensor<?x32xf32>
// CHECK-NEXT: attn.glu_ffn %arg0 (layer_name = "f2", hidden = 96
// CHECK:      func.func private @stack.layer0(%arg0: tensor<?x32xf32> {attn.name = "x"}) -> tensor<?x32xf32> attributes {attn.layer_prefix = "f.0"}
// CHECK-NEXT: %[[L:.*]] = attn.glu_ffn %arg0 (layer_name = "f.0", hidden = 64
// CHECK-NEXT: return %[[L]]
// CHECK-NOT:  func.func
func.func @stack(%x: tensor<?x32xf32> {attn.name = "x", attn.dims = ["n", ""]})
    -> (tensor<?x32xf32> {attn.name = "y", attn.dims = ["n", ""]})
    attributes {attn.model, attn.runtime_dims = {n = "seq"}} {
  %0 = attn.glu_ffn %x (layer_name = "f.0", hidden = 64, activation = gelu, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  %1 = attn.glu_ffn %0 (layer_name = "f.1", hidden = 64, activation = gelu, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  %2 = attn.glu_ffn %1 (layer_name = "f2", hidden = 96, activation = gelu, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  %3 = attn.glu_ffn %2 (layer_name = "f.2", hidden = 64, activation = gelu, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  return %3 : tensor<?x32xf32>
}

// -----

// The same attributes on other shapes are another configuration: two
// functions, in order of first use (and no glue).
// CHECK-LABEL: func.func @shapes
// CHECK:      call @shapes.layer0(%arg0) {attn.layer = "a.0"} : (tensor<?x32xf32>)
// CHECK:      call @shapes.layer1(%arg1) {attn.layer = "b.0"} : (tensor<?x?x32xf32>)
// CHECK:      call @shapes.layer0({{.*}}) {attn.layer = "a.1"}
// CHECK:      call @shapes.layer1({{.*}}) {attn.layer = "b.1"}
// CHECK:      func.func private @shapes.layer1(%arg0: tensor<?x?x32xf32>
// CHECK:      func.func private @shapes.layer0(%arg0: tensor<?x32xf32>
func.func @shapes(%x: tensor<?x32xf32> {attn.name = "x", attn.dims = ["n", ""]},
                  %z: tensor<?x?x32xf32> {attn.name = "z", attn.dims = ["b", "n", ""]})
    -> (tensor<?x32xf32> {attn.name = "y", attn.dims = ["n", ""]},
        tensor<?x?x32xf32> {attn.name = "w", attn.dims = ["b", "n", ""]})
    attributes {attn.model, attn.runtime_dims = {b = "batch", n = "seq"}} {
  %0 = attn.glu_ffn %x (layer_name = "a.0", hidden = 64, activation = gelu, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  %1 = attn.glu_ffn %z (layer_name = "b.0", hidden = 64, activation = gelu, norm = layer_norm, eps = 1.0e-05) : tensor<?x?x32xf32>
  %2 = attn.glu_ffn %0 (layer_name = "a.1", hidden = 64, activation = gelu, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  %3 = attn.glu_ffn %1 (layer_name = "b.1", hidden = 64, activation = gelu, norm = layer_norm, eps = 1.0e-05) : tensor<?x?x32xf32>
  return %2, %3 : tensor<?x32xf32>, tensor<?x?x32xf32>
}

// -----

// Glue before and after a stack: each run between calls is one function;
// a weight it reads is cloned into it, and one it no longer reads leaves
// the model.
// CHECK-LABEL: func.func @glue
// CHECK-NOT:  attn.weight
// CHECK:      %[[G:.*]] = call @glue.glue0(%arg0)
// CHECK-NEXT: %[[A:.*]] = call @glue.layer0(%[[G]]) {attn.layer = "f.0"}
// CHECK-NEXT: %[[B:.*]] = call @glue.layer0(%[[A]]) {attn.layer = "f.1"}
// CHECK-NEXT: %[[H:.*]]:2 = call @glue.glue1(%[[B]], %[[G]])
// CHECK-NEXT: return %[[H]]#0, %[[H]]#1
// CHECK:      func.func private @glue.glue1(%arg0: tensor<?x32xf32>, %arg1: tensor<?x32xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>)
// CHECK-NEXT: %[[W:.*]] = attn.weight "g" : tensor<32xf32>
// CHECK:      func.func private @glue.glue0(%arg0: tensor<?x32xf32>) -> tensor<?x32xf32>
// CHECK-NEXT: attn.relu %arg0
func.func @glue(%x: tensor<?x32xf32> {attn.name = "x", attn.dims = ["n", ""]})
    -> (tensor<?x32xf32> {attn.name = "y", attn.dims = ["n", ""]},
        tensor<?x32xf32> {attn.name = "z", attn.dims = ["n", ""]})
    attributes {attn.model, attn.runtime_dims = {n = "seq"}} {
  %g = attn.weight "g" : tensor<32xf32>
  %r = attn.relu %x : tensor<?x32xf32>
  %0 = attn.glu_ffn %r (layer_name = "f.0", hidden = 64, activation = gelu, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  %1 = attn.glu_ffn %0 (layer_name = "f.1", hidden = 64, activation = gelu, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  %y = attn.rms_norm %1 weight %g eps = 1.0e-05 : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  %z = attn.add %r, %1 : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
  return %y, %z : tensor<?x32xf32>, tensor<?x32xf32>
}

// -----

// Functions that are not models (no attn.model) are left alone.
// CHECK-LABEL: func.func @not_a_model
// CHECK-COUNT-2: attn.glu_ffn
// CHECK-NOT:  call
func.func @not_a_model(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %0 = attn.glu_ffn %x (layer_name = "f.0", hidden = 64, activation = gelu, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  %1 = attn.glu_ffn %0 (layer_name = "f.1", hidden = 64, activation = gelu, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  return %1 : tensor<?x32xf32>
}
