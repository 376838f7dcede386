//===- LayerUtil.h - helpers shared by the reference layers -----*- C++ -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file declares the private helpers of the layer references (Layers.cpp,
// FlashLayer.cpp, MultiHeadLayers.cpp): a small row-major matrix, the
// per-batch view of x : [..., n, d], the pre-norm of spec §2.5 with its
// weights, a dense layer and the half-split RoPE of spec §2.4.2. They are
// written again here on purpose, apart from Primitives.h, so that the
// layer references and the primitive references stay independent and can
// check each other.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TESTS_REFERENCE_LAYERUTIL_H
#define ATTNC_TESTS_REFERENCE_LAYERUTIL_H

#include "tests/reference/Layers.h"

namespace attnc::ref::detail {

/// A dense row-major matrix of doubles.
struct Mat {
  int64_t rows = 0, cols = 0;
  std::vector<double> a;

  Mat() = default;
  Mat(int64_t rows, int64_t cols)
      : rows(rows), cols(cols), a(static_cast<size_t>(rows * cols), 0.0) {}
  double &operator()(int64_t i, int64_t j) {
    return a[static_cast<size_t>(i * cols + j)];
  }
  double operator()(int64_t i, int64_t j) const {
    return a[static_cast<size_t>(i * cols + j)];
  }
};

/// x : [..., n, d] seen as `batch` matrices [n, d].
struct LayerShape {
  int64_t batch = 0, n = 0, d = 0;
};

/// The shape of a layer input; throws unless x has rank >= 2.
LayerShape layerShape(const Tensor &x);

/// Batch entry b of x as an [n, d] matrix.
Mat batchRows(const Tensor &x, const LayerShape &shape, int64_t b);

/// Writes the [n, d] matrix m into batch entry b of out.
void storeRows(Tensor &out, const LayerShape &shape, int64_t b, const Mat &m);

/// The weight `<layerName>.<part>` with the expected shape.
const Tensor &layerWeight(const WeightMap &weights,
                          const std::string &layerName, const std::string &part,
                          const std::vector<int64_t> &shape);

/// Norm(x) row by row with the layer's norm weights (spec §2.5):
/// layer_norm uses L.norm.weight [d] and L.norm.bias [d], scale_norm
/// L.norm.weight [1], rms_norm L.norm.weight [d].
Mat normRows(const Mat &x, const WeightMap &weights,
             const std::string &layerName, NormKind norm, double eps,
             bool clamp = false);

/// x @ w + bias for w : [k, n] and bias : [n].
Mat denseRows(const Mat &x, const Tensor &w, const Tensor &bias);

/// SiLU(Norm(x) @ W_uvz + b_uvz): the one input projection of GAU and FLASH
/// (spec §2.2), columns u | v | z; with options.shiftTokens the first
/// ceil(d/2) columns of Norm(x) are taken from the row before (zero in row
/// 0), and options.normClamp clamps scale_norm's RMS at eps.
Mat gatedProjection(const Mat &x, const WeightMap &weights,
                    const std::string &layerName, NormKind norm, double eps,
                    const Tensor &wUvz, const Tensor &bUvz,
                    const GatedOptions &options);

/// RoPE (spec §2.4.2) on the first `dims` columns of x (0: all), base 10000,
/// row r at position r: column i pairs with i + dims / 2 (Half) or pair i
/// is (2i, 2i + 1) (Interleaved); angle r * 10000^(-2i / dims).
void ropeRows(Mat &x, RopeMode mode, int64_t dims);

/// The T5 bias of GAU/FLASH with rel_pos = T5, or 0: `table`
/// [numBuckets] at the bucket of j - i, times `scale`.
double gatedT5Bias(const Tensor *table, const GatedOptions &options,
                   int64_t i, int64_t j, bool causal, double scale);

/// Columns [start, start + count) of x.
Mat columns(const Mat &x, int64_t start, int64_t count);

/// out @ W_out + b_out + x: the output projection `L.out` and the residual.
Mat outputProjection(const Mat &o, const Mat &x, const WeightMap &weights,
                     const std::string &layerName, int64_t d);

} // namespace attnc::ref::detail

#endif // ATTNC_TESTS_REFERENCE_LAYERUTIL_H
