// RUN: attn-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// The discardable attributes that mark a func.func as an attnc model:
// attn.model, attn.runtime_dims, and attn.name / attn.dims on arguments and
// results. Valid models round-trip; each invalid case gives one diagnostic.

// CHECK-LABEL: func.func @flash_layer
// CHECK-SAME: (%{{.*}}: tensor<?x?x512xf32> {attn.dims = ["b", "n", ""], attn.name = "x"})
// CHECK-SAME: -> (tensor<?x?x512xf32> {attn.dims = ["b", "n", ""], attn.name = "y"})
// CHECK-SAME: attributes {attn.model, attn.runtime_dims = {b = "batch", n = "seq"}}
func.func @flash_layer(%x: tensor<?x?x512xf32> {attn.name = "x", attn.dims = ["b", "n", ""]})
    -> (tensor<?x?x512xf32> {attn.name = "y", attn.dims = ["b", "n", ""]})
    attributes {attn.model, attn.runtime_dims = {n = "seq", b = "batch"}} {
  %y = attn.flash %x (layer_name = "l0", e = 1024, s = 128, chunk = 256,
                      causal = true, norm = layer_norm, rel_pos = toeplitz,
                      rope = true, eps = 1.0e-05) : tensor<?x?x512xf32>
  return %y : tensor<?x?x512xf32>
}

// -----

// A fully static model needs no runtime dims; a declaration is verified too.
// CHECK-LABEL: func.func private @static_model
// CHECK-SAME: (tensor<4x8xf32> {attn.dims = ["", ""], attn.name = "x"})
func.func private @static_model(tensor<4x8xf32> {attn.name = "x", attn.dims = ["", ""]})
    -> (tensor<4x8xf32> {attn.name = "y"}) attributes {attn.model}

// -----

// expected-error @+1 {{'attn.model' must be a unit attribute}}
func.func @model_not_unit() attributes {attn.model = 1 : i64} {
  return
}

// -----

// expected-error @+1 {{'attn.model' is only valid on func.func}}
module attributes {attn.model} {
}

// -----

// expected-error @+1 {{'attn.runtime_dims' is only valid on func.func}}
module attributes {attn.runtime_dims = {n = "seq"}} {
}

// -----

// expected-error @+1 {{'attn.runtime_dims' must be a dictionary}}
func.func @runtime_dims_not_dictionary() attributes {attn.model, attn.runtime_dims = ["n"]} {
  return
}

// -----

// expected-error @+1 {{runtime dim 'n' has kind "time" but must be "seq" or "batch"}}
func.func @runtime_dim_unknown_kind() attributes {attn.model, attn.runtime_dims = {n = "time"}} {
  return
}

// -----

// expected-error @+1 {{runtime dim 'n' has kind 3 : i64 but must be "seq" or "batch"}}
func.func @runtime_dim_kind_not_string() attributes {attn.model, attn.runtime_dims = {n = 3}} {
  return
}

// -----

// expected-error @+1 {{'attn.name' belongs on a function argument or result}}
func.func @name_on_function() attributes {attn.model, attn.name = "f"} {
  return
}

// -----

// expected-error @+1 {{unknown attn attribute 'attn.modle'}}
func.func @misspelled_model() attributes {attn.modle} {
  return
}

// -----

// expected-error @+1 {{'attn.name' of argument 0 must be a non-empty string}}
func.func @empty_name(%x: tensor<4xf32> {attn.name = ""}) attributes {attn.model} {
  return
}

// -----

// expected-error @+1 {{'attn.name' of result 0 must be a non-empty string}}
func.func @name_not_string(%x: tensor<4xf32>) -> (tensor<4xf32> {attn.name = 7 : i64}) attributes {attn.model} {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{unknown attn attribute 'attn.dim' on argument 0}}
func.func @misspelled_dims(%x: tensor<4xf32> {attn.dim = [""]}) attributes {attn.model} {
  return
}

// -----

// expected-error @+1 {{'attn.dims' of argument 0 must be an array of strings}}
func.func @dims_not_strings(%x: tensor<4xf32> {attn.dims = [0]}) attributes {attn.model} {
  return
}

// -----

// expected-error @+1 {{'attn.dims' of argument 0 needs a ranked tensor but the type is 'f32'}}
func.func @dims_on_scalar(%x: f32 {attn.dims = []}) attributes {attn.model} {
  return
}

// -----

// expected-error @+1 {{'attn.dims' of result 0 has 2 entries but the tensor has rank 3}}
func.func @dims_length_differs_from_rank(%x: tensor<?x?x8xf32>) -> (tensor<?x?x8xf32> {attn.dims = ["b", "n"]})
    attributes {attn.model, attn.runtime_dims = {n = "seq", b = "batch"}} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{axis 0 of argument 0 is dynamic but names no runtime dim}}
func.func @dynamic_axis_without_name(%x: tensor<?x8xf32> {attn.dims = ["", ""]})
    attributes {attn.model, attn.runtime_dims = {n = "seq"}} {
  return
}

// -----

// expected-error @+1 {{axis 1 of argument 0 is static (8) but names runtime dim 'n'}}
func.func @static_axis_with_name(%x: tensor<?x8xf32> {attn.dims = ["n", "n"]})
    attributes {attn.model, attn.runtime_dims = {n = "seq"}} {
  return
}

// -----

// expected-error @+1 {{axis 0 of argument 0 names runtime dim 'b' that attn.runtime_dims does not declare}}
func.func @undeclared_runtime_dim(%x: tensor<?x?x8xf32> {attn.dims = ["b", "n", ""]})
    attributes {attn.model, attn.runtime_dims = {n = "seq"}} {
  return
}

// -----

// expected-error @+1 {{axis 0 of result 0 names runtime dim 'n' that attn.runtime_dims does not declare}}
func.func @no_runtime_dims(%x: tensor<?x8xf32>) -> (tensor<?x8xf32> {attn.dims = ["n", ""]}) attributes {attn.model} {
  return %x : tensor<?x8xf32>
}
