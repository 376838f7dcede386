// RUN: attn-opt %s -split-input-file -verify-diagnostics

// Every verifier message of the attn ops and of #attn.mask, one case per
// split. Model function attributes are in model-attrs.mlir.

func.func @gau_input_rank_below_two(%x: tensor<64xf32>) {
  // expected-error @+1 {{'attn.gau' op x must have rank >= 2 but has rank 1}}
  %0 = attn.gau %x (layer_name = "l", e = 8, s = 4, causal = true, norm = layer_norm, max_len = 8, rel_pos = none, rope = true, eps = 1.0e-05) : tensor<64xf32>
  return
}

// -----

func.func @flash_dynamic_feature_dim(%x: tensor<?x?xf32>) {
  // expected-error @+1 {{'attn.flash' op x must have a static feature dim (axis -1) but has type 'tensor<?x?xf32>'}}
  %0 = attn.flash %x (layer_name = "l", e = 8, s = 4, chunk = 4, causal = true, norm = layer_norm, rel_pos = none, rope = true, eps = 1.0e-05) : tensor<?x?xf32>
  return
}

// -----

func.func @mhsa_zero_feature_dim(%x: tensor<?x0xf32>) {
  // expected-error @+1 {{'attn.mhsa' op feature dim d must be positive but is 0}}
  %0 = attn.mhsa %x (layer_name = "l", heads = 1, causal = true, norm = layer_norm, eps = 1.0e-05) : tensor<?x0xf32>
  return
}

// -----

func.func @glu_ffn_empty_layer_name(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.glu_ffn' op layer_name must not be empty}}
  %0 = attn.glu_ffn %x (layer_name = "", hidden = 8, activation = silu, norm = layer_norm, eps = 1.0e-05) : tensor<?x64xf32>
  return
}

// -----

func.func @glu_ffn_zero_eps(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.glu_ffn' op eps must be positive but is 0.000000e+00}}
  %0 = attn.glu_ffn %x (layer_name = "f", hidden = 8, activation = silu, norm = layer_norm, eps = 0.0) : tensor<?x64xf32>
  return
}

// -----

func.func @mhsa_result_type_differs_from_input(%x: tensor<?x64xf32>) {
  // expected-error @+2 {{'attn.mhsa' op inferred type(s) 'tensor<?x64xf32>' are incompatible with return type(s) of operation 'tensor<4x64xf32>'}}
  // expected-error @+1 {{'attn.mhsa' op failed to infer returned types}}
  %0 = "attn.mhsa"(%x) <{layer_name = "l", heads = 1 : i64, causal = true, norm = #attn<norm_kind layer_norm>, eps = 1.0e-05 : f64}> : (tensor<?x64xf32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @gau_e_positive(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.gau' op e must be positive but is 0}}
  %0 = attn.gau %x (layer_name = "l", e = 0, s = 4, causal = true, norm = layer_norm, max_len = 8, rel_pos = none, rope = true, eps = 1.0e-05) : tensor<?x64xf32>
  return
}

// -----

func.func @gau_s_positive(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.gau' op s must be positive but is -2}}
  %0 = attn.gau %x (layer_name = "l", e = 8, s = -2, causal = true, norm = layer_norm, max_len = 8, rel_pos = none, rope = false, eps = 1.0e-05) : tensor<?x64xf32>
  return
}

// -----

func.func @gau_s_even_when_rope(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.gau' op s must be even when rope is on but is 127}}
  %0 = attn.gau %x (layer_name = "l", e = 8, s = 127, causal = true, norm = layer_norm, max_len = 8, rel_pos = none, rope = true, eps = 1.0e-05) : tensor<?x64xf32>
  return
}

// -----

func.func @gau_max_len_positive(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.gau' op max_len must be positive but is 0}}
  %0 = attn.gau %x (layer_name = "l", e = 8, s = 4, causal = true, norm = layer_norm, max_len = 0, rel_pos = toeplitz, rope = true, eps = 1.0e-05) : tensor<?x64xf32>
  return
}

// -----

func.func @flash_s_even_when_rope(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.flash' op s must be even when rope is on but is 5}}
  %0 = attn.flash %x (layer_name = "l", e = 8, s = 5, chunk = 4, causal = true, norm = layer_norm, rel_pos = none, rope = true, eps = 1.0e-05) : tensor<?x64xf32>
  return
}

// -----

func.func @flash_chunk_positive(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.flash' op chunk must be positive but is 0}}
  %0 = attn.flash %x (layer_name = "l", e = 8, s = 4, chunk = 0, causal = true, norm = layer_norm, rel_pos = toeplitz, rope = true, eps = 1.0e-05) : tensor<?x64xf32>
  return
}

// -----

func.func @flash_e_positive(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.flash' op e must be positive but is -1}}
  %0 = attn.flash %x (layer_name = "l", e = -1, s = 4, chunk = 4, causal = true, norm = layer_norm, rel_pos = toeplitz, rope = true, eps = 1.0e-05) : tensor<?x64xf32>
  return
}

// -----

func.func @mhsa_heads_does_not_divide(%x: tensor<?x512xf32>) {
  // expected-error @+1 {{'attn.mhsa' op heads 3 does not divide the feature dim 512}}
  %0 = attn.mhsa %x (layer_name = "l", heads = 3, causal = true, norm = layer_norm, eps = 1.0e-05) : tensor<?x512xf32>
  return
}

// -----

func.func @mhsa_heads_positive(%x: tensor<?x512xf32>) {
  // expected-error @+1 {{'attn.mhsa' op heads must be positive but is 0}}
  %0 = attn.mhsa %x (layer_name = "l", heads = 0, causal = true, norm = layer_norm, eps = 1.0e-05) : tensor<?x512xf32>
  return
}

// -----

func.func @linear_attention_heads_does_not_divide(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.linear_attention' op heads 5 does not divide the feature dim 64}}
  %0 = attn.linear_attention %x (layer_name = "l", heads = 5, causal = true, feature = elu1, norm = layer_norm, eps = 1.0e-05) : tensor<?x64xf32>
  return
}

// -----

func.func @local_attention_window_positive(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.local_attention' op window must be positive but is 0}}
  %0 = attn.local_attention %x (layer_name = "l", heads = 2, window = 0, causal = true, block = false, norm = layer_norm, eps = 1.0e-05) : tensor<?x64xf32>
  return
}

// -----

func.func @local_attention_heads_does_not_divide(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.local_attention' op heads 3 does not divide the feature dim 64}}
  %0 = attn.local_attention %x (layer_name = "l", heads = 3, window = 4, causal = true, block = false, norm = layer_norm, eps = 1.0e-05) : tensor<?x64xf32>
  return
}

// -----

func.func @glu_ffn_hidden_positive(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.glu_ffn' op hidden must be positive but is 0}}
  %0 = attn.glu_ffn %x (layer_name = "f", hidden = 0, activation = silu, norm = layer_norm, eps = 1.0e-05) : tensor<?x64xf32>
  return
}

// -----

func.func @glu_ffn_unknown_norm_kind(%x: tensor<?x64xf32>) {
  // expected-error @+2 {{expected ::mlir::attn::NormKind to be one of: layer_norm, scale_norm, rms_norm}}
  // expected-error @+1 {{failed to parse Attn_NormKindAttr parameter 'value'}}
  %0 = attn.glu_ffn %x (layer_name = "f", hidden = 4, activation = silu, norm = batch_norm, eps = 1.0e-05) : tensor<?x64xf32>
  return
}

// -----

func.func @weight_name_not_empty() {
  // expected-error @+1 {{'attn.weight' op name must not be empty}}
  %0 = attn.weight "" : tensor<4xf32>
  return
}

// -----

func.func @weight_dynamic_shape() {
  // expected-error @+1 {{'attn.weight' op result must have a static shape but has type 'tensor<?x4xf32>'}}
  %0 = attn.weight "w" : tensor<?x4xf32>
  return
}

// -----

func.func @constant_not_rank_zero() {
  // expected-error @+1 {{'attn.constant' op result must have rank 0 but has rank 1}}
  %0 = attn.constant 1.0 : tensor<1xf32>
  return
}

// -----

func.func @add_shapes_do_not_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'attn.add' op operand shapes 2x3 and 4 do not broadcast}}
  %0 = attn.add %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @mul_result_not_broadcast_shape(%a: tensor<2x1xf32>, %b: tensor<?xf32>) {
  // expected-error @+1 {{'attn.mul' op result type 'tensor<3x?xf32>' does not match the expected shape 2x?}}
  %0 = attn.mul %a, %b : tensor<2x1xf32>, tensor<?xf32> -> tensor<3x?xf32>
  return
}

// -----

func.func @sub_mixed_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'attn.sub' op element types differ: 'f32' and 'f16'}}
  %0 = attn.sub %a, %b : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  return
}

// -----

func.func @matmul_a_rank_below_two(%a: tensor<4xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{'attn.matmul' op a must have rank >= 2 but has rank 1}}
  %0 = attn.matmul %a, %b : tensor<4xf32>, tensor<4x2xf32> -> tensor<2xf32>
  return
}

// -----

func.func @matmul_b_rank_mismatch(%a: tensor<2x3x4xf32>, %b: tensor<1x2x4x5xf32>) {
  // expected-error @+1 {{'attn.matmul' op b must have rank 2 or the rank of a (3) but has rank 4}}
  %0 = attn.matmul %a, %b : tensor<2x3x4xf32>, tensor<1x2x4x5xf32> -> tensor<2x3x5xf32>
  return
}

// -----

func.func @matmul_batch_dims_differ(%a: tensor<2x3x4xf32>, %b: tensor<3x4x5xf32>) {
  // expected-error @+1 {{'attn.matmul' op a and b batch dims differ: 2 vs 3}}
  %0 = attn.matmul %a, %b : tensor<2x3x4xf32>, tensor<3x4x5xf32> -> tensor<2x3x5xf32>
  return
}

// -----

func.func @matmul_contraction_dims_differ(%a: tensor<?x64xf32>, %b: tensor<32x8xf32>) {
  // expected-error @+1 {{'attn.matmul' op a and b contraction dims differ: 64 vs 32}}
  %0 = attn.matmul %a, %b : tensor<?x64xf32>, tensor<32x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @matmul_wrong_result_shape(%a: tensor<?x64xf32>, %b: tensor<64x8xf32>) {
  // expected-error @+1 {{'attn.matmul' op result type 'tensor<?x16xf32>' does not match the expected shape ?x8}}
  %0 = attn.matmul %a, %b : tensor<?x64xf32>, tensor<64x8xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @dense_w_not_matrix(%x: tensor<?x64xf32>, %w: tensor<1x64x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'attn.dense' op w must have rank 2 but has rank 3}}
  %0 = attn.dense %x, %w, %b : tensor<?x64xf32>, tensor<1x64x8xf32>, tensor<8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @dense_contraction_dims_differ(%x: tensor<?x64xf32>, %w: tensor<32x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'attn.dense' op x and w contraction dims differ: 64 vs 32}}
  %0 = attn.dense %x, %w, %b : tensor<?x64xf32>, tensor<32x8xf32>, tensor<8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @dense_bias_length(%x: tensor<?x64xf32>, %w: tensor<64x8xf32>, %b: tensor<10xf32>) {
  // expected-error @+1 {{'attn.dense' op bias has 10 entries but must have 8 (the columns of w)}}
  %0 = attn.dense %x, %w, %b : tensor<?x64xf32>, tensor<64x8xf32>, tensor<10xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @dense_bias_not_vector(%x: tensor<?x64xf32>, %w: tensor<64x8xf32>, %b: tensor<1x8xf32>) {
  // expected-error @+1 {{'attn.dense' op bias must have rank 1 but has rank 2}}
  %0 = attn.dense %x, %w, %b : tensor<?x64xf32>, tensor<64x8xf32>, tensor<1x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @dense_scalar_input(%x: tensor<f32>, %w: tensor<64x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'attn.dense' op x must have rank >= 1 but has rank 0}}
  %0 = attn.dense %x, %w, %b : tensor<f32>, tensor<64x8xf32>, tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @split_sizes_do_not_sum_to_last_dim(%x: tensor<?x96xf32>) {
  // expected-error @+1 {{'attn.split' op sizes sum to 100 but the last dim is 96}}
  %0:2 = attn.split %x [50, 50] : tensor<?x96xf32> -> tensor<?x50xf32>, tensor<?x50xf32>
  return
}

// -----

func.func @split_sizes_count_differs_from_results(%x: tensor<?x96xf32>) {
  // expected-error @+1 {{'attn.split' op sizes has 3 entries but the op has 2 results}}
  %0:2 = attn.split %x [32, 32, 32] : tensor<?x96xf32> -> tensor<?x32xf32>, tensor<?x32xf32>
  return
}

// -----

func.func @split_zero_size(%x: tensor<?x96xf32>) {
  // expected-error @+1 {{'attn.split' op size 1 must be positive but is 0}}
  %0:2 = attn.split %x [96, 0] : tensor<?x96xf32> -> tensor<?x96xf32>, tensor<?x0xf32>
  return
}

// -----

func.func @split_wrong_result_shape(%x: tensor<?x96xf32>) {
  // expected-error @+1 {{'attn.split' op result 1 type 'tensor<?x32xf32>' does not match the expected shape ?x64}}
  %0:2 = attn.split %x [32, 64] : tensor<?x96xf32> -> tensor<?x32xf32>, tensor<?x32xf32>
  return
}

// -----

func.func @transpose_rank_below_two(%x: tensor<4xf32>) {
  // expected-error @+1 {{'attn.transpose' op x must have rank >= 2 but has rank 1}}
  %0 = attn.transpose %x : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @transpose_wrong_result_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'attn.transpose' op result type 'tensor<4x8xf32>' does not match the expected shape 8x4}}
  %0 = attn.transpose %x : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @row_dynamic_matrix(%p: tensor<?x4xf32>) {
  // expected-error @+1 {{'attn.row' op p must have a static shape but has type 'tensor<?x4xf32>'}}
  %0 = attn.row %p[0] : tensor<?x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @row_index_too_large(%p: tensor<2x4xf32>) {
  // expected-error @+1 {{'attn.row' op index 2 is out of range for 2 rows}}
  %0 = attn.row %p[2] : tensor<2x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @row_index_negative(%p: tensor<2x4xf32>) {
  // expected-error @+1 {{'attn.row' op index -1 is out of range for 2 rows}}
  %0 = attn.row %p[-1] : tensor<2x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @row_not_matrix(%p: tensor<4xf32>) {
  // expected-error @+1 {{'attn.row' op p must have rank 2 but has rank 1}}
  %0 = attn.row %p[0] : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @layer_norm_weight_length(%x: tensor<?x16xf32>, %w: tensor<10xf32>) {
  // expected-error @+1 {{'attn.layer_norm' op weight has 10 entries but must have 16 (the feature dim)}}
  %0 = attn.layer_norm %x weight %w eps = 1.0e-05 : (tensor<?x16xf32>, tensor<10xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @layer_norm_bias_length(%x: tensor<?x16xf32>, %w: tensor<16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'attn.layer_norm' op bias has 8 entries but must have 16 (the feature dim)}}
  %0 = attn.layer_norm %x weight %w bias %b eps = 1.0e-05 : (tensor<?x16xf32>, tensor<16xf32>, tensor<8xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @layer_norm_negative_eps(%x: tensor<?x16xf32>) {
  // expected-error @+1 {{'attn.layer_norm' op eps must be positive but is -1.000000e+00}}
  %0 = attn.layer_norm %x eps = -1.0 : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @scale_norm_alpha_not_scalar(%x: tensor<?x16xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'attn.scale_norm' op alpha has 4 entries but must have 1 (one scalar gain)}}
  %0 = attn.scale_norm %x, %a eps = 1.0e-05 : tensor<?x16xf32>, tensor<4xf32>
  return
}

// -----

func.func @rms_norm_weight_length(%x: tensor<?x16xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'attn.rms_norm' op weight has 8 entries but must have 16 (the feature dim)}}
  %0 = attn.rms_norm %x weight %w eps = 1.0e-05 : (tensor<?x16xf32>, tensor<8xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @scale_offset_beta_length(%x: tensor<?x16xf32>, %g: tensor<16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'attn.scale_offset' op beta has 8 entries but must have 16 (the feature dim)}}
  %0 = attn.scale_offset %x, %g, %b : tensor<?x16xf32>, tensor<16xf32>, tensor<8xf32>
  return
}

// -----

func.func @rope_odd_rotary_dims(%x: tensor<?x16xf32>) {
  // expected-error @+1 {{'attn.rope' op rotary_dims must be even but is 7}}
  %0 = attn.rope %x mode = half rotary_dims = 7 base = 1.0e+04 : tensor<?x16xf32>
  return
}

// -----

func.func @rope_rotary_dims_exceed_feature_dim(%x: tensor<?x128xf32>) {
  // expected-error @+1 {{'attn.rope' op rotary_dims 130 exceeds the feature dim 128}}
  %0 = attn.rope %x mode = interleaved rotary_dims = 130 base = 1.0e+04 : tensor<?x128xf32>
  return
}

// -----

func.func @rope_zero_rotary_dims(%x: tensor<?x16xf32>) {
  // expected-error @+1 {{'attn.rope' op rotary_dims must be positive but is 0}}
  %0 = attn.rope %x mode = half rotary_dims = 0 base = 1.0e+04 : tensor<?x16xf32>
  return
}

// -----

func.func @rope_zero_base(%x: tensor<?x16xf32>) {
  // expected-error @+1 {{'attn.rope' op base must be positive but is 0.000000e+00}}
  %0 = attn.rope %x mode = half rotary_dims = 16 base = 0.0 : tensor<?x16xf32>
  return
}

// -----

func.func @rope_rank_below_two(%x: tensor<16xf32>) {
  // expected-error @+1 {{'attn.rope' op x must have rank >= 2 but has rank 1}}
  %0 = attn.rope %x mode = half rotary_dims = 16 base = 1.0e+04 : tensor<16xf32>
  return
}

// -----

func.func @attention_q_rank_below_two(%q: tensor<64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{'attn.attention' op q must have rank >= 2 but has rank 1}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 1 : tensor<64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @attention_ranks_differ(%q: tensor<2x?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{'attn.attention' op q, k and v must have the same rank but have ranks 3, 2 and 2}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 1 : tensor<2x?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<2x?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @attention_batch_dims_differ(%q: tensor<2x?x64xf32>, %k: tensor<3x?x64xf32>, %v: tensor<?x?x32xf32>) {
  // expected-error @+1 {{'attn.attention' op batch dim 0 differs between q, k and v: 2, 3 and ?}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 1 : tensor<2x?x64xf32>, tensor<3x?x64xf32>, tensor<?x?x32xf32> -> tensor<2x?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @attention_qk_feature_dims_differ(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{'attn.attention' op q and k feature dims differ: 64 vs 32}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 1 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @attention_kv_sequence_dims_differ(%q: tensor<?x64xf32>, %k: tensor<100x64xf32>, %v: tensor<96x32xf32>) {
  // expected-error @+1 {{'attn.attention' op k and v sequence dims differ: 100 vs 96}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 1 : tensor<?x64xf32>, tensor<100x64xf32>, tensor<96x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @attention_zero_heads(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{'attn.attention' op heads must be positive but is 0}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 0 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @attention_heads_do_not_divide_q(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{'attn.attention' op heads 3 does not divide the q feature dim 64}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 3 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @attention_heads_do_not_divide_v(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x30xf32>) {
  // expected-error @+1 {{'attn.attention' op heads 4 does not divide the v feature dim 30}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 4 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x30xf32> -> tensor<?x30xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @attention_wrong_result_shape(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{'attn.attention' op result type 'tensor<?x64xf32>' does not match the expected shape ?x32}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x64xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @attention_mixed_element_types(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf16>) {
  // expected-error @+1 {{'attn.attention' op element types differ: 'f32' and 'f16'}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf16> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @attention_score_wrong_arguments(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{'attn.attention' op score region arguments must be (f32, index, index, index) but are (f32, index)}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @attention_score_two_blocks(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{'attn.attention' op score region must have exactly one block but has 2}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  ^bb1:
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @attention_score_ends_in_return(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{'attn.attention' op score region must end in attn.yield but ends in func.return}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    func.return
  }
  return
}

// -----

func.func @attention_score_yields_f16(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{'attn.attention' op score region must yield f32 but yields 'f16'}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    %h = arith.truncf %qk : f32 to f16
    attn.yield %h : f16
  }
  return
}

// -----

func.func @attention_score_empty_block(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{'attn.attention' op score region must end in attn.yield but is empty}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<none> normalize = none heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
  }
  return
}

// -----

func.func @yield_outside_attention(%s: f32) {
  // expected-error @+1 {{'attn.yield' op expects parent op 'attn.attention'}}
  attn.yield %s : f32
  return
}

// -----

func.func @mask_unknown_kind(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{unknown mask kind 'diagonal', expected none, causal, window, chunk, band or causal_chunk}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<diagonal 4> normalize = none heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @mask_window_without_size(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{mask kind window needs a size, as in #attn.mask<window 64>}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<window> normalize = none heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @mask_window_zero_size(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{mask window size must be positive but is 0}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<window 0> normalize = none heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @mask_chunk_negative_size(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{mask chunk size must be positive but is -8}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<chunk -8> normalize = none heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @mask_causal_with_size(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{mask kind causal takes no size but has 5}}
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal 5> normalize = none heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

func.func @rel_pos_bias_table_length(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>, %w: tensor<100xf32>) {
  %0 = attn.attention %q, %k, %v mask = #attn.mask<none> normalize = softmax heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    // expected-error @+1 {{'attn.rel_pos_bias' op w has 100 entries but must have 1023 (2 * max_len - 1)}}
    %b = attn.rel_pos_bias %w[%i, %j] max_len = 512 : tensor<100xf32>
    attn.yield %b : f32
  }
  return
}

// -----

func.func @rel_pos_bias_zero_max_len(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>, %w: tensor<1xf32>) {
  %0 = attn.attention %q, %k, %v mask = #attn.mask<none> normalize = softmax heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    // expected-error @+1 {{'attn.rel_pos_bias' op max_len must be positive but is 0}}
    %b = attn.rel_pos_bias %w[%i, %j] max_len = 0 : tensor<1xf32>
    attn.yield %b : f32
  }
  return
}

// -----

func.func @rel_pos_bias_table_not_vector(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>, %w: tensor<1x3xf32>) {
  %0 = attn.attention %q, %k, %v mask = #attn.mask<none> normalize = softmax heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    // expected-error @+1 {{'attn.rel_pos_bias' op w must have rank 1 but has rank 2}}
    %b = attn.rel_pos_bias %w[%i, %j] max_len = 2 : tensor<1x3xf32>
    attn.yield %b : f32
  }
  return
}

// -----

func.func @t5_bias_too_few_buckets_bidirectional(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>, %w: tensor<2xf32>) {
  %0 = attn.attention %q, %k, %v mask = #attn.mask<none> normalize = softmax heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    // expected-error @+1 {{'attn.t5_bias' op num_buckets must be >= 4 but is 2}}
    %b = attn.t5_bias %w[%i, %j] causal = false num_buckets = 2 max_distance = 128 scale = 1.0 : tensor<2xf32>
    attn.yield %b : f32
  }
  return
}

// -----

func.func @t5_bias_too_few_buckets_causal(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>, %w: tensor<1xf32>) {
  %0 = attn.attention %q, %k, %v mask = #attn.mask<none> normalize = softmax heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    // expected-error @+1 {{'attn.t5_bias' op num_buckets must be >= 2 but is 1}}
    %b = attn.t5_bias %w[%i, %j] causal = true num_buckets = 1 max_distance = 128 scale = 1.0 : tensor<1xf32>
    attn.yield %b : f32
  }
  return
}

// -----

func.func @t5_bias_odd_buckets_bidirectional(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>, %w: tensor<33xf32>) {
  %0 = attn.attention %q, %k, %v mask = #attn.mask<none> normalize = softmax heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    // expected-error @+1 {{'attn.t5_bias' op num_buckets must be even when not causal but is 33}}
    %b = attn.t5_bias %w[%i, %j] causal = false num_buckets = 33 max_distance = 128 scale = 1.0 : tensor<33xf32>
    attn.yield %b : f32
  }
  return
}

// -----

func.func @t5_bias_max_distance_too_small(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>, %w: tensor<32xf32>) {
  %0 = attn.attention %q, %k, %v mask = #attn.mask<none> normalize = softmax heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    // expected-error @+1 {{'attn.t5_bias' op max_distance must exceed the 8 exact buckets but is 8}}
    %b = attn.t5_bias %w[%i, %j] causal = false num_buckets = 32 max_distance = 8 scale = 1.0 : tensor<32xf32>
    attn.yield %b : f32
  }
  return
}

// -----

func.func @t5_bias_table_length(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>, %w: tensor<16xf32>) {
  %0 = attn.attention %q, %k, %v mask = #attn.mask<none> normalize = softmax heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    // expected-error @+1 {{'attn.t5_bias' op emb has 16 entries but must have 32 (num_buckets)}}
    %b = attn.t5_bias %w[%i, %j] causal = true num_buckets = 32 max_distance = 128 scale = 1.0 : tensor<16xf32>
    attn.yield %b : f32
  }
  return
}

// -----

func.func @linear_attn_causal_lengths_differ(%q: tensor<100x64xf32>, %k: tensor<96x64xf32>, %v: tensor<96x32xf32>) {
  // expected-error @+1 {{'attn.linear_attn' op causal linear attention needs equal query and key lengths but has 100 and 96}}
  %0 = attn.linear_attn %q, %k, %v feature = relu causal = true normalize = true scale = 1.0 : tensor<100x64xf32>, tensor<96x64xf32>, tensor<96x32xf32> -> tensor<100x32xf32>
  return
}

// -----

func.func @linear_attn_kv_sequence_dims_differ(%q: tensor<?x64xf32>, %k: tensor<96x64xf32>, %v: tensor<90x32xf32>) {
  // expected-error @+1 {{'attn.linear_attn' op k and v sequence dims differ: 96 vs 90}}
  %0 = attn.linear_attn %q, %k, %v feature = relu causal = false normalize = true scale = 1.0 : tensor<?x64xf32>, tensor<96x64xf32>, tensor<90x32xf32> -> tensor<?x32xf32>
  return
}

// -----

func.func @linear_attn_wrong_result_shape(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{'attn.linear_attn' op result type 'tensor<?x64xf32>' does not match the expected shape ?x32}}
  %0 = attn.linear_attn %q, %k, %v feature = relu causal = false normalize = true scale = 1.0 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @chunked_linear_zero_chunk(%q: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{'attn.chunked_linear' op chunk must be >= 1 but is 0}}
  %0 = attn.chunked_linear %q, %q, %v chunk = 0 causal = true scale = 1.0 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
  return
}

// -----

func.func @chunked_linear_lengths(%q: tensor<8x64xf32>, %k: tensor<4x64xf32>, %v: tensor<4x32xf32>) {
  // expected-error @+1 {{'attn.chunked_linear' op chunked linear attention needs equal query and key lengths but has 8 and 4}}
  %0 = attn.chunked_linear %q, %k, %v chunk = 2 causal = false scale = 1.0 : tensor<8x64xf32>, tensor<4x64xf32>, tensor<4x32xf32> -> tensor<8x32xf32>
  return
}

// -----

func.func @chunk_zero(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'attn.chunk' op chunk must be >= 1 but is 0}}
  %0 = attn.chunk %x chunk = 0 : tensor<?x8xf32> -> tensor<?x0x8xf32>
  return
}

// -----

func.func @chunk_rank(%x: tensor<8xf32>) {
  // expected-error @+1 {{'attn.chunk' op needs rank >= 2 but x is 'tensor<8xf32>'}}
  %0 = attn.chunk %x chunk = 4 : tensor<8xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @chunk_bad_result(%x: tensor<10x8xf32>) {
  // expected-error @+1 {{'attn.chunk' op result must have rank 3 but has 2}}
  %0 = attn.chunk %x chunk = 4 : tensor<10x8xf32> -> tensor<3x8xf32>
  return
}

// -----

func.func @unchunk_like_rank(%y: tensor<?x4x6xf32>, %like: tensor<?x?x8xf32>) {
  // expected-error @+1 {{'attn.unchunk' op like must have rank 2 but has 3}}
  %0 = attn.unchunk %y, %like : tensor<?x4x6xf32>, tensor<?x?x8xf32> -> tensor<?x?x6xf32>
  return
}

// -----

func.func @unchunk_rank(%y: tensor<4x6xf32>, %like: tensor<6xf32>) {
  // expected-error @+1 {{'attn.unchunk' op needs y of rank >= 3 but y is 'tensor<4x6xf32>'}}
  %0 = attn.unchunk %y, %like : tensor<4x6xf32>, tensor<6xf32> -> tensor<6xf32>
  return
}

// -----

func.func @unchunk_leading(%y: tensor<2x?x4x6xf32>, %like: tensor<3x?x8xf32>) {
  // expected-error @+1 {{'attn.unchunk' op leading dims differ at axis 0: 2 and 3}}
  %0 = attn.unchunk %y, %like : tensor<2x?x4x6xf32>, tensor<3x?x8xf32> -> tensor<3x?x6xf32>
  return
}

// -----

func.func @chunk_state_rank(%k: tensor<4x8xf32>, %v: tensor<4x6xf32>) {
  // expected-error @+1 {{'attn.chunk_state' op needs k and v of the same rank >= 3 but has 'tensor<4x8xf32>' and 'tensor<4x6xf32>'}}
  %0 = attn.chunk_state %k, %v scale = 1.0 : tensor<4x8xf32>, tensor<4x6xf32> -> tensor<8x6xf32>
  return
}

// -----

func.func @chunk_state_chunks(%k: tensor<?x4x8xf32>, %v: tensor<?x5x6xf32>) {
  // expected-error @+1 {{'attn.chunk_state' op k and v differ at axis 1: 4 and 5}}
  %0 = attn.chunk_state %k, %v scale = 1.0 : tensor<?x4x8xf32>, tensor<?x5x6xf32> -> tensor<?x8x6xf32>
  return
}

// -----

func.func @chunk_scan_rank(%s: tensor<8x6xf32>) {
  // expected-error @+1 {{'attn.chunk_scan' op needs rank >= 3 but states are 'tensor<8x6xf32>'}}
  %0 = attn.chunk_scan %s exclusive = true : tensor<8x6xf32>
  return
}

// -----

func.func @state_apply_rank(%q: tensor<4x8xf32>, %s: tensor<?x8x6xf32>) {
  // expected-error @+1 {{'attn.state_apply' op needs q and states of the same rank >= 3 but has 'tensor<4x8xf32>' and 'tensor<?x8x6xf32>'}}
  %0 = attn.state_apply %q, %s : tensor<4x8xf32>, tensor<?x8x6xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @state_apply_leading(%q: tensor<3x4x8xf32>, %s: tensor<2x8x6xf32>) {
  // expected-error @+1 {{'attn.state_apply' op leading dims differ at axis 0: 3 and 2}}
  %0 = attn.state_apply %q, %s : tensor<3x4x8xf32>, tensor<2x8x6xf32> -> tensor<3x4x6xf32>
  return
}

// -----

func.func @state_apply_width(%q: tensor<?x4x8xf32>, %s: tensor<?x7x6xf32>) {
  // expected-error @+1 {{'attn.state_apply' op query width 8 differs from the state's 7}}
  %0 = attn.state_apply %q, %s : tensor<?x4x8xf32>, tensor<?x7x6xf32> -> tensor<?x4x6xf32>
  return
}

// -----

func.func @kernel_yield_count(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.kernel' op yields 2 values but has 1 results}}
  %y = attn.kernel -> tensor<?x64xf32> {
    %a = attn.exp %x : tensor<?x64xf32>
    attn.kernel_yield %a, %a : tensor<?x64xf32>, tensor<?x64xf32>
  }
  return %y : tensor<?x64xf32>
}

// -----

func.func @kernel_yield_type(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'attn.kernel' op result 0 has type 'tensor<?x32xf32>' but the body yields 'tensor<?x64xf32>'}}
  %y = attn.kernel -> tensor<?x32xf32> {
    %a = attn.exp %x : tensor<?x64xf32>
    attn.kernel_yield %a : tensor<?x64xf32>
  }
  return %y : tensor<?x32xf32>
}

// -----

func.func @kernel_yields_outside_value(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.kernel' op result 0 is not computed by the kernel's body}}
  %y = attn.kernel -> tensor<?x64xf32> {
    %a = attn.exp %x : tensor<?x64xf32>
    attn.kernel_yield %x : tensor<?x64xf32>
  }
  return %y : tensor<?x64xf32>
}

// -----

func.func @kernel_nested(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = attn.kernel -> tensor<?x64xf32> {
    // expected-error @+1 {{'attn.kernel' op cannot be nested in another attn.kernel}}
    %i = attn.kernel -> tensor<?x64xf32> {
      %a = attn.exp %x : tensor<?x64xf32>
      attn.kernel_yield %a : tensor<?x64xf32>
    }
    attn.kernel_yield %i : tensor<?x64xf32>
  }
  return %y : tensor<?x64xf32>
}

// -----

func.func @kernel_foreign_op(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = attn.kernel -> tensor<?x64xf32> {
    // expected-error @+1 {{'arith.constant' op is not an attn op and cannot be fused into an attn.kernel}}
    %c = arith.constant 1.0 : f32
    %a = attn.exp %x : tensor<?x64xf32>
    attn.kernel_yield %a : tensor<?x64xf32>
  }
  return %y : tensor<?x64xf32>
}

// -----

func.func @kernel_without_anchor(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.kernel' op has no compute op to anchor its loops}}
  attn.kernel {
    attn.kernel_yield
  }
  return
}

// -----

func.func @gau_t5_buckets_even(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.gau' op num_buckets must be even and >= 2 but is 7}}
  %0 = attn.gau %x (layer_name = "l", e = 8, s = 4, causal = true, norm = layer_norm, max_len = 8, rel_pos = t5, rope = true, eps = 1.0e-05) {num_buckets = 7 : i64} : tensor<?x64xf32>
  return
}

// -----

func.func @flash_rope_dims_within_s(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.flash' op rope_dims must be even, >= 0 and <= s = 4 but is 6}}
  %0 = attn.flash %x (layer_name = "l", e = 8, s = 4, chunk = 4, causal = true, norm = layer_norm, rel_pos = none, rope = true, eps = 1.0e-05) {rope_dims = 6 : i64} : tensor<?x64xf32>
  return
}

// -----

func.func @flash_norm_clamp_needs_scale_norm(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.flash' op norm_clamp needs norm = scale_norm but norm is rms_norm}}
  %0 = attn.flash %x (layer_name = "l", e = 8, s = 4, chunk = 4, causal = true, norm = rms_norm, rel_pos = none, rope = true, eps = 1.0e-05) {norm_clamp = true} : tensor<?x64xf32>
  return
}

// -----

func.func @flash_lin_by_length_not_causal(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.flash' op lin_by_length needs causal = false}}
  %0 = attn.flash %x (layer_name = "l", e = 8, s = 4, chunk = 4, causal = true, norm = layer_norm, rel_pos = none, rope = true, eps = 1.0e-05) {lin_by_length = true} : tensor<?x64xf32>
  return
}

// -----

func.func @chunked_linear_divide_by_length_not_causal(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>) {
  // expected-error @+1 {{'attn.chunked_linear' op divide_by_length needs causal = false}}
  %0 = attn.chunked_linear %q, %q, %v chunk = 4 causal = true scale = 1.000000e+00 {divide_by_length = true}
       : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32> -> tensor<?x6xf32>
  return
}

// -----

func.func @chunk_scan_length_of_not_exclusive(%s: tensor<?x8x6xf32>, %k: tensor<?x8xf32>) {
  // expected-error @+1 {{'attn.chunk_scan' op length_of needs exclusive = false}}
  %0 = attn.chunk_scan %s length_of %k : tensor<?x8xf32> exclusive = true : tensor<?x8x6xf32>
  return
}

// -----

func.func @token_shift_dims_within_width(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.token_shift' op dims 65 exceeds the feature dim 64}}
  %0 = attn.token_shift %x dims = 65 : tensor<?x64xf32>
  return
}

// -----

func.func @embedding_table_static(%ids: tensor<?xi32>, %tok: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.embedding' op table must have rank 2 and a static shape but is 'tensor<?x64xf32>'}}
  %0 = attn.embedding %ids, %tok : tensor<?xi32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @embedding_result_shape(%ids: tensor<?xi32>, %tok: tensor<50x64xf32>) {
  // expected-error @+1 {{'attn.embedding' op result must be ids's shape followed by the table's width, with its element type, but is 'tensor<?x32xf32>'}}
  %0 = attn.embedding %ids, %tok : tensor<?xi32>, tensor<50x64xf32> -> tensor<?x32xf32>
  return
}

// -----

func.func @flash_t5_max_distance_past_exact(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'attn.flash' op max_distance must exceed the 8 exact buckets but is 8}}
  %0 = attn.flash %x (layer_name = "l", e = 8, s = 4, chunk = 4, causal = false, norm = layer_norm, rel_pos = t5, rope = true, eps = 1.0e-05) {max_distance = 8 : i64} : tensor<?x64xf32>
  return
}
