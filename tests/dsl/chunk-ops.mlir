// RUN: attn-opt %s -split-input-file | attn-opt | FileCheck %s

// Round trip of the chunk-form ops.
// CHECK-LABEL: func.func @chunk_form
// CHECK: attn.chunk %{{.*}} chunk = 4 : tensor<?x8xf32> -> tensor<?x4x8xf32>
// CHECK: attn.chunk_state %{{.*}}, %{{.*}} scale = 2.500000e-01 : tensor<?x4x8xf32>, tensor<?x4x6xf32> -> tensor<?x8x6xf32>
// CHECK: attn.chunk_scan %{{.*}} exclusive = true : tensor<?x8x6xf32>
// CHECK: attn.state_apply %{{.*}}, %{{.*}} : tensor<?x4x8xf32>, tensor<?x8x6xf32> -> tensor<?x4x6xf32>
// CHECK: attn.unchunk %{{.*}}, %{{.*}} : tensor<?x4x6xf32>, tensor<?x8xf32> -> tensor<?x6xf32>
func.func @chunk_form(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>) -> tensor<?x6xf32> {
  %qc = attn.chunk %q chunk = 4 : tensor<?x8xf32> -> tensor<?x4x8xf32>
  %vc = attn.chunk %v chunk = 4 : tensor<?x6xf32> -> tensor<?x4x6xf32>
  %s = attn.chunk_state %qc, %vc scale = 0.25 : tensor<?x4x8xf32>, tensor<?x4x6xf32> -> tensor<?x8x6xf32>
  %p = attn.chunk_scan %s exclusive = true : tensor<?x8x6xf32>
  %o = attn.state_apply %qc, %p : tensor<?x4x8xf32>, tensor<?x8x6xf32> -> tensor<?x4x6xf32>
  %y = attn.unchunk %o, %q : tensor<?x4x6xf32>, tensor<?x8xf32> -> tensor<?x6xf32>
  return %y : tensor<?x6xf32>
}
