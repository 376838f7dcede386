//===- ReferenceTest.cpp - tests of the independent fp64 reference --------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file tests the fp64 reference of tests/reference/ against the
// hand-computed cases of spec/flash.md §8.2 (M1-M3), the T5 bucket table of
// §7.1 and the properties of §8.1 (T1, T3, T4, T5, T7, T9-T12), and
// cross-checks the two independent formulations of every layer: the direct
// layer references (Layers.h, FLASH chunk by chunk with padding) and the
// compositions of primitives (Composed.h). It also runs the interpreter on
// layer-level and primitive-level attn functions.
//
//===----------------------------------------------------------------------===//

#include "tests/reference/Composed.h"
#include "tests/reference/Interpreter.h"

#include "dsl/IR/AttnDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cmath>

using namespace attnc::ref;
using ::testing::HasSubstr;

namespace {

/// Expects a and b equal within atol + rtol * |b|, reporting the worst gap.
void expectClose(const Tensor &a, const Tensor &b, double tol = 1e-11) {
  ASSERT_EQ(a.shape, b.shape);
  EXPECT_TRUE(allClose(a, b, tol, tol)) << "max |a - b| = " << maxAbsDiff(a, b);
}

/// Rows [from, to) of x : [n, f].
Tensor rows(const Tensor &x, int64_t from, int64_t to) {
  const int64_t f = x.dim(-1);
  return Tensor({to - from, f},
                std::vector<double>(x.data.begin() + from * f,
                                    x.data.begin() + to * f));
}

/// x with rows t0.. changed by a different amount in every element.
Tensor perturbFrom(const Tensor &x, int64_t t0) {
  Tensor y = x;
  Tensor delta = randomTensor(x.shape, 99, 0.7);
  for (int64_t i = t0 * x.dim(-1); i < x.numel(); ++i)
    y[i] += delta[i];
  return y;
}

/// A relu(qk / C)-style score that ignores its positions.
ScoreFn plainScore(double scale) {
  return [scale](double qk, int64_t, int64_t, int64_t) { return qk * scale; };
}

//===--- hand-computed micro cases (§8.2) ---------------------------------===//

struct M1 {
  Tensor q{{2, 2}, {1, 0, 0, 1}}, k{{2, 2}, {2, 0, 0, -1}};
  Tensor v{{2, 2}, {1, 2, 3, 4}}, u{{2, 2}, {2, 2, 1, 1}};
  Tensor w{{3}, {0.5, 0, 0.25}};
  Tensor kernel(bool bias, bool causal) const {
    const Tensor *wp = bias ? &w : nullptr;
    return attention(
        q, k, v,
        [wp](double qk, int64_t i, int64_t j, int64_t n) {
          double r = std::max(qk / n + (wp ? relPosBias(*wp, i, j, 2) : 0), 0.0);
          return r * r;
        },
        Mask{causal ? MaskKind::Causal : MaskKind::None, 0}, Normalize::None, 1);
  }
};

TEST(ReferenceMicroTest, GauKernelWithoutBiasGatesToTwoFourZeroZero) {
  M1 m;
  expectClose(mul(m.u, m.kernel(false, false)), Tensor({2, 2}, {2, 4, 0, 0}));
}

TEST(ReferenceMicroTest, GauKernelWithToeplitzBias) {
  M1 m;
  expectClose(m.kernel(true, false), Tensor({2, 2}, {1.1875, 2.25, 0.25, 0.5}));
}

TEST(ReferenceMicroTest, CausalGauKernelDropsFutureKeys) {
  M1 m;
  expectClose(m.kernel(true, true), Tensor({2, 2}, {1, 2, 0.25, 0.5}));
}

TEST(ReferenceMicroTest, ChunkedLinearIsExclusiveWhenCausalAndTotalOtherwise) {
  Tensor q({4, 1}, {1, 1, 1, 1}), k({4, 1}, {1, 2, 3, 4}), v({4, 1}, {1, 2, 3, 4});
  expectClose(chunkedLinear(q, k, v, 2, true, 0.5), Tensor({4, 1}, {0, 0, 2.5, 2.5}));
  expectClose(chunkedLinear(q, k, v, 2, false, 0.5),
              Tensor({4, 1}, {15, 15, 15, 15}));
  // The (wrong) inclusive prefix, for contrast: chunk(j) <= chunk(i).
  Tensor inclusive = attention(
      q, k, v,
      [](double qk, int64_t i, int64_t j, int64_t) {
        return j / 2 <= i / 2 ? qk / 2 : 0.0;
      },
      Mask{}, Normalize::None, 1);
  expectClose(inclusive, Tensor({4, 1}, {2.5, 2.5, 15, 15}));
}

TEST(ReferenceMicroTest, HalfSplitRopeRotatesDimIWithDimIPlusHalf) {
  Tensor x({2, 2, 4}, {0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0});
  Tensor y = rope(x, RopeMode::Half, 4, 10000.0);
  const double c = std::cos(1.0), s = std::sin(1.0);
  expectClose(rows(y.reshaped({4, 4}), 1, 2), Tensor({1, 4}, {c, 0, s, 0}));
  expectClose(rows(y.reshaped({4, 4}), 3, 4), Tensor({1, 4}, {-s, 0, c, 0}));
  // Dim 1 pairs with dim 3 at inv_freq 10000^(-1/2) = 0.01.
  Tensor z = rope(Tensor({2, 4}, {0, 0, 0, 0, 0, 1, 0, 0}), RopeMode::Half, 4, 1e4);
  expectClose(rows(z, 1, 2),
              Tensor({1, 4}, {0, std::cos(0.01), 0, std::sin(0.01)}));
}

TEST(ReferenceMicroTest, InterleavedPartialRopeLeavesTailDimsAlone) {
  Tensor x({2, 6}, {0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 5, 6});
  Tensor y = rope(x, RopeMode::Interleaved, 4, 100.0);
  // Pairs (0,1) at theta 1 and (2,3) at theta 100^(-1/2) = 0.1.
  expectClose(rows(y, 1, 2),
              Tensor({1, 6}, {std::cos(1.0), std::sin(1.0), -std::sin(0.1),
                              std::cos(0.1), 5, 6}));
  expectClose(rows(y, 0, 1), rows(x, 0, 1)); // position 0 is the identity
}

//===--- positional biases (T1, §7.1) -------------------------------------===//

TEST(ReferenceBiasTest, ToeplitzMatchesThePaperConstructionAndCentredIndex) {
  for (int64_t L : {2, 5, 8}) {
    Tensor w = randomTensor({2 * L - 1}, L);
    // Paper: pad to 3L-1, tile L times, drop the last L, reshape [L, 3L-2],
    // keep columns r .. 3L-2-r with r = L-1.
    std::vector<double> t(w.data);
    t.resize(static_cast<size_t>(3 * L - 1), 0.0);
    std::vector<double> tiled;
    for (int64_t rep = 0; rep < L; ++rep)
      tiled.insert(tiled.end(), t.begin(), t.end());
    tiled.resize(tiled.size() - static_cast<size_t>(L));
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j) {
        double paper = tiled[static_cast<size_t>(i * (3 * L - 2) + (L - 1) + j)];
        EXPECT_EQ(relPosBias(w, i, j, L), paper) << L << " " << i << " " << j;
        EXPECT_EQ(relPosBias(w, i, j, L), w[j - i + L - 1]);
      }
  }
  EXPECT_EQ(relPosBias(Tensor({1}, {7.0}), 0, 0, 1), 7.0); // L = 1
  Tensor w({5}, {10, 11, 12, 13, 14});
  EXPECT_EQ(relPosBias(w, 2, 0, 3), 10); // spec example, bias[2, 0]
  EXPECT_EQ(relPosBias(w, 0, 9, 3), 14); // distances beyond M-1 clamp
  EXPECT_EQ(relPosBias(w, 9, 0, 3), 10);
}

TEST(ReferenceBiasTest, T5BucketsMatchTheSpecTable) {
  const int64_t rel[] = {0, -1, -7, -8, -15, -16, -17, -31, -32, -33, -63,
                         -64, -65, -127, -128, -500};
  const int64_t causal[] = {0, 1, 7, 8, 15, 16, 16, 21, 21, 21, 26, 26, 26,
                            31, 31, 31};
  const int64_t bidir[] = {0, 1, 7, 8, 9, 10, 10, 11, 12, 12, 13, 14, 14, 15,
                           15, 15};
  for (size_t i = 0; i < std::size(rel); ++i) {
    EXPECT_EQ(t5Bucket(rel[i], true, 32, 128), causal[i]) << rel[i];
    EXPECT_EQ(t5Bucket(rel[i], false, 32, 128), bidir[i]) << rel[i];
  }
  const int64_t pos[] = {1, 7, 8, 16, 32, 64, 128, 500};
  const int64_t posBucket[] = {17, 23, 24, 26, 28, 30, 31, 31};
  for (size_t i = 0; i < std::size(pos); ++i)
    EXPECT_EQ(t5Bucket(pos[i], false, 32, 128), posBucket[i]) << pos[i];
  EXPECT_EQ(t5Bucket(5, true, 32, 128), 0); // future keys -> bucket 0
  Tensor emb = randomTensor({32}, 3);
  EXPECT_EQ(t5Bias(emb, 40, 7, true, 32, 128, 2.0), 2.0 * emb[21]);
}

//===--- primitives -------------------------------------------------------===//

TEST(ReferencePrimitiveTest, BinaryOpsBroadcastLikeNumpy) {
  Tensor a({2, 1, 3}, {1, 2, 3, 4, 5, 6}), b({4, 1}, {10, 20, 30, 40});
  Tensor c = add(a, b);
  ASSERT_EQ(c.shape, (std::vector<int64_t>{2, 4, 3}));
  EXPECT_EQ(c.at({1, 2, 0}), 34);
  EXPECT_EQ(sub(a, Tensor::scalar(1)).at({1, 0, 2}), 5);
  EXPECT_EQ(pow(Tensor::scalar(2), a).at({0, 0, 2}), 8);
  EXPECT_THROW(add(a, Tensor({2}, {1, 2})), std::runtime_error);
}

TEST(ReferencePrimitiveTest, MatmulSharesA2dRightOperandAcrossTheBatch) {
  Tensor a = randomTensor({3, 2, 4}, 1), b = randomTensor({4, 5}, 2);
  Tensor shared = matmul(a, b);
  Tensor tiled({3, 4, 5});
  for (int64_t i = 0; i < tiled.numel(); ++i)
    tiled[i] = b[i % 20];
  expectClose(shared, matmul(a, tiled));
  expectClose(shared, dense(a, b, Tensor({5})));
  expectClose(transpose(transpose(a)), a);
  EXPECT_EQ(transpose(a).at({2, 3, 1}), a.at({2, 1, 3}));
}

TEST(ReferencePrimitiveTest, NormsFollowTheirDefinitions) {
  Tensor x({1, 4}, {1, 2, 3, 6});
  // mean 3, biased variance 3.5
  Tensor ln = layerNorm(x, nullptr, nullptr, 0.5);
  EXPECT_NEAR(ln[0], -2.0 / 2.0, 1e-15);
  Tensor g({1}, {2.0});
  EXPECT_NEAR(scaleNorm(x, g, 0.5)[3], 6 * 2 / std::sqrt(12.5 + 0.5), 1e-15);
  Tensor w({4}, {1, 2, 3, 4});
  EXPECT_NEAR(rmsNorm(x, &w, 0.5)[2], 3 * 3 / std::sqrt(13.0), 1e-15);
}

TEST(ReferencePrimitiveTest, MasksKeepTheDocumentedPairs) {
  EXPECT_TRUE((Mask{MaskKind::Causal, 0}.keeps(3, 3)));
  EXPECT_FALSE((Mask{MaskKind::Causal, 0}.keeps(3, 4)));
  EXPECT_TRUE((Mask{MaskKind::Window, 2}.keeps(5, 4)));
  EXPECT_FALSE((Mask{MaskKind::Window, 2}.keeps(5, 3)));
  EXPECT_TRUE((Mask{MaskKind::Band, 2}.keeps(3, 4)));
  EXPECT_FALSE((Mask{MaskKind::Band, 2}.keeps(3, 5)));
  EXPECT_TRUE((Mask{MaskKind::Chunk, 3}.keeps(3, 5)));
  EXPECT_FALSE((Mask{MaskKind::Chunk, 3}.keeps(2, 3)));
  EXPECT_FALSE((Mask{MaskKind::CausalChunk, 3}.keeps(3, 5)));
  EXPECT_TRUE((Mask{MaskKind::CausalChunk, 3}.keeps(5, 3)));
}

TEST(ReferencePrimitiveTest, SoftmaxRowWithoutKeptKeysIsZero) {
  Tensor q = randomTensor({4, 2}, 1), k = randomTensor({2, 2}, 2);
  Tensor v = randomTensor({2, 3}, 3);
  Tensor o = attention(q, k, v, plainScore(1.0), Mask{MaskKind::Chunk, 2},
                       Normalize::Softmax, 1);
  for (int64_t c = 0; c < 3; ++c) {
    EXPECT_EQ(o.at({2, c}), 0.0);
    EXPECT_EQ(o.at({3, c}), 0.0);
  }
  Tensor none = attention(q, k, v, plainScore(1.0), Mask{MaskKind::Chunk, 2},
                          Normalize::None, 1);
  EXPECT_EQ(none.at({3, 1}), 0.0);
  EXPECT_NEAR(none.at({1, 2}),
              (q.at({1, 0}) * k.at({0, 0}) + q.at({1, 1}) * k.at({0, 1})) *
                      v.at({0, 2}) +
                  (q.at({1, 0}) * k.at({1, 0}) + q.at({1, 1}) * k.at({1, 1})) *
                      v.at({1, 2}),
              1e-14);
}

TEST(ReferencePrimitiveTest, LinearAttnCausalIsInclusive) {
  Tensor q = randomTensor({5, 3}, 4), k = randomTensor({5, 3}, 5);
  Tensor v = randomTensor({5, 2}, 6);
  Tensor lin = linearAttn(q, k, v, FeatureMap::Identity, true, false, 0.5);
  Tensor quad = attention(q, k, v, plainScore(0.5), Mask{MaskKind::Causal, 0},
                          Normalize::None, 1);
  expectClose(lin, quad);
}

//===--- chunked linear term (T7, T9, T10, T11) ----------------------------===//

TEST(ReferenceChunkTest, ExclusiveCumsumEqualsChunkRnnAndMaskedQuadratic) {
  const int64_t n = 11, C = 3, s = 4, e = 5;
  Tensor q = randomTensor({n, s}, 7), k = randomTensor({n, s}, 8);
  Tensor v = randomTensor({n, e}, 9);
  Tensor chunked = chunkedLinear(q, k, v, C, true, 1.0 / C);
  // Sequential chunk RNN: S <- S + K_g^T V_g / C after chunk g.
  Tensor rnn({n, e});
  std::vector<double> S(static_cast<size_t>(s * e), 0.0);
  for (int64_t start = 0; start < n; start += C) {
    const int64_t end = std::min(start + C, n);
    for (int64_t i = start; i < end; ++i)
      for (int64_t c = 0; c < e; ++c)
        for (int64_t a = 0; a < s; ++a)
          rnn.at({i, c}) += q.at({i, a}) * S[static_cast<size_t>(a * e + c)];
    for (int64_t j = start; j < end; ++j)
      for (int64_t a = 0; a < s; ++a)
        for (int64_t c = 0; c < e; ++c)
          S[static_cast<size_t>(a * e + c)] += k.at({j, a}) * v.at({j, c}) / C;
  }
  expectClose(chunked, rnn);
  // ((Q K^T) . M) V / C with M[i, j] = [chunk(j) < chunk(i)].
  Tensor masked = attention(
      q, k, v,
      [C](double qk, int64_t i, int64_t j, int64_t) {
        return j / C < i / C ? qk / C : 0.0;
      },
      Mask{}, Normalize::None, 1);
  expectClose(chunked, masked);
}

TEST(ReferenceChunkTest, InclusiveCumsumLeaksFutureTokensOfTheSameChunk) {
  const int64_t n = 8, C = 4;
  Tensor q = randomTensor({n, 2}, 10), k = randomTensor({n, 2}, 11);
  Tensor v = randomTensor({n, 3}, 12), v2 = perturbFrom(v, 6);
  Tensor k2 = perturbFrom(k, 6);
  auto inclusive = [&](const Tensor &kk, const Tensor &vv) {
    return attention(
        q, kk, vv,
        [C](double qk, int64_t i, int64_t j, int64_t) {
          return j / C <= i / C ? qk / C : 0.0;
        },
        Mask{}, Normalize::None, 1);
  };
  Tensor before = inclusive(k, v), after = inclusive(k2, v2);
  EXPECT_NE(before.at({4, 0}), after.at({4, 0}));
  EXPECT_NE(before.at({5, 1}), after.at({5, 1}));
  Tensor exclusive = chunkedLinear(q, k, v, C, true, 1.0 / C);
  Tensor exclusive2 = chunkedLinear(q, k2, v2, C, true, 1.0 / C);
  expectClose(rows(exclusive2, 0, 8), rows(exclusive, 0, 8), 0.0);
}

TEST(ReferenceChunkTest, NonCausalChunkedTermIsOneGlobalState) {
  const int64_t n = 10, C = 4;
  Tensor q = randomTensor({2, n, 3}, 13), k = randomTensor({2, n, 3}, 14);
  Tensor v = randomTensor({2, n, 5}, 15);
  Tensor expected =
      mul(matmul(q, matmul(transpose(k), v)), Tensor::scalar(1.0 / C));
  expectClose(chunkedLinear(q, k, v, C, false, 1.0 / C), expected);
}

TEST(ReferenceChunkTest, DividingByNInsideReluSquaredIsOneOverNSquared) {
  Tensor x = randomTensor({64}, 16, 3.0), b = randomTensor({64}, 17, 0.5);
  for (double n : {1.0, 7.0, 512.0})
    for (int64_t i = 0; i < 64; ++i) {
      double lhs = std::pow(std::max(x[i] / n + b[i], 0.0), 2);
      double rhs = std::pow(std::max(x[i] + n * b[i], 0.0), 2) / (n * n);
      EXPECT_NEAR(lhs, rhs, 1e-14 * (1 + rhs));
    }
}

//===--- layers: FLASH against GAU and against its primitives -------------===//

const int64_t kD = 8;

GauConfig gauConfig(int64_t n, bool causal) {
  GauConfig c;
  c.layerName = "g";
  c.e = 6;
  c.s = 4;
  c.causal = causal;
  c.maxLen = n;
  return c;
}

FlashConfig flashConfig(int64_t chunk, bool causal) {
  FlashConfig c;
  c.layerName = "f";
  c.e = 6;
  c.s = 4;
  c.chunk = chunk;
  c.causal = causal;
  return c;
}

/// FLASH weights whose quad rows and bias equal the GAU weights of `gw`.
WeightMap flashFromGauWeights(const WeightMap &gw, const FlashConfig &fc) {
  WeightMap fw = composed::randomWeights(fc, kD, 21);
  for (const char *part : {"norm.weight", "norm.bias", "uvz.weight", "uvz.bias",
                           "rel_pos", "out.weight", "out.bias"})
    fw["f." + std::string(part)] = gw.at("g." + std::string(part));
  for (const char *part : {"gamma", "beta"})
    for (int64_t c = 0; c < 8; ++c) // rows 0 and 1: quad_q, quad_k
      fw["f." + std::string(part)][c] = gw.at("g." + std::string(part))[c];
  return fw;
}

TEST(ReferenceFlashTest, CausalFlashWithOneChunkIsCausalGau) {
  const int64_t n = 6;
  GauConfig gc = gauConfig(n, true);
  FlashConfig fc = flashConfig(n, true);
  WeightMap gw = composed::randomWeights(gc, kD, 20);
  Tensor x = randomTensor({2, n, kD}, 22);
  GauTrace trace;
  Tensor y = flash(x, flashFromGauWeights(gw, fc), fc, &trace);
  expectClose(y, gau(x, gw, gc));
  expectClose(trace.lin, Tensor(trace.lin.shape), 0.0); // exactly 0
}

TEST(ReferenceFlashTest, NonCausalFlashWithOneChunkIsGauPlusGlobalLinearTerm) {
  const int64_t n = 6;
  GauConfig gc = gauConfig(n, false);
  FlashConfig fc = flashConfig(n, false);
  WeightMap gw = composed::randomWeights(gc, kD, 23);
  WeightMap fw = flashFromGauWeights(gw, fc);
  Tensor x = randomTensor({n, kD}, 24);
  GauTrace ft, gt, pieces;
  Tensor y = flash(x, fw, fc, &ft);
  Tensor g = gau(x, gw, gc, &gt);
  expectClose(ft.quad, gt.quad); // local part = A V of the GAU
  // Linear part = Q_lin (K_lin^T V) / n, from the primitive pieces.
  composed::flash(x, fw, fc, &pieces);
  expectClose(ft.lin, pieces.lin);
  // Total = GAU + (U * lin) W_o.
  expectClose(y, add(g, matmul(mul(ft.u, ft.lin), fw.at("f.out.weight"))));
}

TEST(ReferenceFlashTest, ChunkedFlashEqualsMaskedAttentionPlusChunkedLinear) {
  struct Case {
    int64_t n, chunk;
    bool causal, rope;
    RelPosKind relPos;
    NormKind norm;
  };
  const Case cases[] = {
      {12, 4, true, true, RelPosKind::Toeplitz, NormKind::LayerNorm},
      {12, 4, false, true, RelPosKind::Toeplitz, NormKind::ScaleNorm},
      {10, 4, true, true, RelPosKind::Toeplitz, NormKind::RmsNorm},
      {10, 4, false, true, RelPosKind::Toeplitz, NormKind::LayerNorm},
      {7, 3, false, false, RelPosKind::None, NormKind::LayerNorm},
      {5, 8, true, true, RelPosKind::Toeplitz, NormKind::LayerNorm},
      {9, 1, true, true, RelPosKind::Toeplitz, NormKind::ScaleNorm},
  };
  for (const Case &tc : cases) {
    FlashConfig fc = flashConfig(tc.chunk, tc.causal);
    fc.rope = tc.rope;
    fc.relPos = tc.relPos;
    fc.norm = tc.norm;
    WeightMap w = composed::randomWeights(fc, kD, 30 + tc.n);
    Tensor x = randomTensor({2, tc.n, kD}, 31 + tc.chunk);
    SCOPED_TRACE("n=" + std::to_string(tc.n) + " C=" + std::to_string(tc.chunk) +
                 " causal=" + std::to_string(tc.causal));
    expectClose(flash(x, w, fc), composed::flash(x, w, fc));
  }
}

TEST(ReferenceFlashTest, PaddingNeverChangesEarlierCausalOutputs) {
  const int64_t n = 10, longer = 16;
  FlashConfig fc = flashConfig(4, true);
  WeightMap w = composed::randomWeights(fc, kD, 40);
  Tensor x = randomTensor({longer, kD}, 41);
  expectClose(flash(rows(x, 0, n), w, fc), rows(flash(x, w, fc), 0, n));
}

TEST(ReferenceFlashTest, CausalLayersIgnoreTheFutureAndNonCausalOnesDoNot) {
  const int64_t n = 9, t0 = 6;
  Tensor x = randomTensor({n, kD}, 50), x2 = perturbFrom(x, t0);
  for (bool causal : {true, false}) {
    FlashConfig fc = flashConfig(4, causal);
    GauConfig gc = gauConfig(16, causal);
    WeightMap fw = composed::randomWeights(fc, kD, 51);
    WeightMap gw = composed::randomWeights(gc, kD, 52);
    Tensor f1 = flash(x, fw, fc), f2 = flash(x2, fw, fc);
    Tensor g1 = gau(x, gw, gc), g2 = gau(x2, gw, gc);
    if (causal) {
      EXPECT_EQ(maxAbsDiff(rows(f1, 0, t0), rows(f2, 0, t0)), 0.0);
      EXPECT_EQ(maxAbsDiff(rows(g1, 0, t0), rows(g2, 0, t0)), 0.0);
    } else {
      EXPECT_GT(maxAbsDiff(rows(f1, 0, t0), rows(f2, 0, t0)), 1e-6);
      EXPECT_GT(maxAbsDiff(rows(g1, 0, t0), rows(g2, 0, t0)), 1e-6);
    }
    EXPECT_GT(maxAbsDiff(rows(f1, t0, n), rows(f2, t0, n)), 1e-6);
    EXPECT_GT(maxAbsDiff(rows(g1, t0, n), rows(g2, t0, n)), 1e-6);
  }
}

//===--- the other layers against their primitives ------------------------===//

TEST(ReferenceLayerTest, GauEqualsAttentionWithReluSquaredScore) {
  for (bool causal : {true, false}) {
    GauConfig gc = gauConfig(4, causal); // max_len 4 < n: distances clamp
    gc.norm = causal ? NormKind::RmsNorm : NormKind::LayerNorm;
    WeightMap w = composed::randomWeights(gc, kD, 60);
    Tensor x = randomTensor({3, 7, kD}, 61);
    expectClose(gau(x, w, gc), composed::gau(x, w, gc));
  }
}

TEST(ReferenceLayerTest, MultiHeadLayersEqualTheirPrimitiveForms) {
  Tensor x = randomTensor({2, 7, kD}, 70);
  for (bool causal : {true, false}) {
    WeightMap w = composed::randomQkvWeights("m", NormKind::LayerNorm, kD, 71);
    MhsaConfig mc{"m", 2, causal, NormKind::LayerNorm, 1e-5};
    expectClose(mhsa(x, w, mc), composed::mhsa(x, w, mc));
    for (FeatureMap f : {FeatureMap::Elu1, FeatureMap::Exp, FeatureMap::Silu}) {
      LinearAttentionConfig lc{"m", 2, causal, f, NormKind::LayerNorm, 1e-5};
      expectClose(linearAttention(x, w, lc), composed::linearAttention(x, w, lc),
                  1e-10);
    }
    for (bool block : {true, false}) {
      LocalAttentionConfig lc{"m", 4, 3, causal, block, NormKind::LayerNorm, 1e-5};
      expectClose(localAttention(x, w, lc), composed::localAttention(x, w, lc));
    }
  }
}

TEST(ReferenceLayerTest, GluFfnAppliesTheActivationToBothHalves) {
  Tensor x = randomTensor({5, kD}, 80);
  for (Activation a : {Activation::Silu, Activation::Gelu, Activation::Relu,
                       Activation::Sigmoid, Activation::Tanh}) {
    GluFfnConfig c{"ffn", 6, a, NormKind::ScaleNorm, 1e-5};
    WeightMap w = composed::randomWeights(c, kD, 81);
    expectClose(gluFfn(x, w, c), composed::gluFfn(x, w, c));
  }
}

TEST(ReferenceLayerTest, MissingOrMisshapedWeightsAreNamed) {
  GauConfig gc = gauConfig(8, true);
  WeightMap w = composed::randomWeights(gc, kD, 90);
  Tensor x = randomTensor({4, kD}, 91);
  WeightMap missing = w;
  missing.erase("g.gamma");
  try {
    gau(x, missing, gc);
    FAIL() << "no exception";
  } catch (const std::runtime_error &error) {
    EXPECT_THAT(error.what(), HasSubstr("missing weight 'g.gamma'"));
  }
  WeightMap wrong = w;
  wrong["g.rel_pos"] = Tensor({3});
  try {
    gau(x, wrong, gc);
    FAIL() << "no exception";
  } catch (const std::runtime_error &error) {
    EXPECT_THAT(error.what(), HasSubstr("'g.rel_pos' has shape [3]"));
  }
}

//===--- the interpreter --------------------------------------------------===//

/// Parses `source` and returns its function `name` (the module is kept in
/// `module`).
mlir::func::FuncOp parseFunction(mlir::MLIRContext &context,
                                 mlir::OwningOpRef<mlir::ModuleOp> &module,
                                 const std::string &source,
                                 const std::string &name) {
  context.loadDialect<mlir::attn::AttnDialect, mlir::func::FuncDialect,
                      mlir::arith::ArithDialect, mlir::math::MathDialect>();
  module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  if (!module)
    return nullptr;
  return module->lookupSymbol<mlir::func::FuncOp>(name);
}

const char *kLayerStack = R"mlir(
func.func @stack(%x: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
  %0 = attn.gau %x (layer_name = "a", e = 6, s = 4, causal = true, norm = layer_norm, max_len = 3, rel_pos = toeplitz, rope = true, eps = 1.0e-05) : tensor<2x?x8xf32>
  %1 = attn.flash %0 (layer_name = "b", e = 6, s = 4, chunk = 3, causal = false, norm = scale_norm, rel_pos = toeplitz, rope = true, eps = 1.0e-05) : tensor<2x?x8xf32>
  %2 = attn.mhsa %1 (layer_name = "c", heads = 2, causal = true, norm = rms_norm, eps = 1.0e-05) : tensor<2x?x8xf32>
  %3 = attn.linear_attention %2 (layer_name = "d", heads = 2, causal = true, feature = elu1, norm = layer_norm, eps = 1.0e-05) : tensor<2x?x8xf32>
  %4 = attn.local_attention %3 (layer_name = "e", heads = 4, window = 2, causal = false, block = true, norm = layer_norm, eps = 1.0e-05) : tensor<2x?x8xf32>
  %5 = attn.glu_ffn %4 (layer_name = "f", hidden = 5, activation = gelu, norm = layer_norm, eps = 1.0e-05) : tensor<2x?x8xf32>
  return %5 : tensor<2x?x8xf32>
}
)mlir";

TEST(ReferenceInterpreterTest, LayerOpsDispatchWithTheirAttributes) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  auto fn = parseFunction(context, module, kLayerStack, "stack");
  ASSERT_TRUE(fn);
  GauConfig a{"a", 6, 4, true, NormKind::LayerNorm, 3, RelPosKind::Toeplitz, true, 1e-5};
  FlashConfig b{"b", 6, 4, 3, false, NormKind::ScaleNorm, RelPosKind::Toeplitz, true, 1e-5};
  MhsaConfig c{"c", 2, true, NormKind::RmsNorm, 1e-5};
  LinearAttentionConfig d{"d", 2, true, FeatureMap::Elu1, NormKind::LayerNorm, 1e-5};
  LocalAttentionConfig e{"e", 4, 2, false, true, NormKind::LayerNorm, 1e-5};
  GluFfnConfig f{"f", 5, Activation::Gelu, NormKind::LayerNorm, 1e-5};
  WeightMap w = composed::randomWeights(a, kD, 100);
  w.merge(composed::randomWeights(b, kD, 101));
  w.merge(composed::randomQkvWeights("c", NormKind::RmsNorm, kD, 102));
  w.merge(composed::randomQkvWeights("d", NormKind::LayerNorm, kD, 103));
  w.merge(composed::randomQkvWeights("e", NormKind::LayerNorm, kD, 104));
  w.merge(composed::randomWeights(f, kD, 105));
  Tensor x = randomTensor({2, 7, kD}, 106);
  Tensor expected = gluFfn(
      localAttention(
          linearAttention(mhsa(flash(gau(x, w, a), w, b), w, c), w, d), w, e),
      w, f);
  std::vector<Tensor> out = evaluate(fn, {x}, w);
  ASSERT_EQ(out.size(), 1u);
  expectClose(out[0], expected, 0.0);
  EXPECT_THROW(evaluate(fn, {randomTensor({3, 7, kD}, 1)}, w), std::runtime_error);
}

const char *kDeadLayer = R"mlir(
func.func @dead(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = attn.flash %x (layer_name = "unused", e = 6, s = 4, chunk = 3, causal = true, norm = scale_norm, rel_pos = toeplitz, rope = true, eps = 1.0e-05) : tensor<?x8xf32>
  %1 = attn.gelu %x : tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}
)mlir";

TEST(ReferenceInterpreterTest, ADeadLayerIsNotEvaluatedAndNeedsNoWeights) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  auto fn = parseFunction(context, module, kDeadLayer, "dead");
  ASSERT_TRUE(fn);
  Tensor x = randomTensor({5, kD}, 110);
  std::vector<Tensor> out = evaluate(fn, {x}, WeightMap());
  ASSERT_EQ(out.size(), 1u);
  expectClose(out[0], gelu(x), 0.0);
}

const char *kPrimitiveGau = R"mlir(
func.func @gau(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %nw = attn.weight "g.norm.weight" : tensor<8xf32>
  %nb = attn.weight "g.norm.bias" : tensor<8xf32>
  %h = attn.layer_norm %x weight %nw bias %nb eps = 1.0e-05 : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %w = attn.weight "g.uvz.weight" : tensor<8x16xf32>
  %b = attn.weight "g.uvz.bias" : tensor<16xf32>
  %d = attn.dense %h, %w, %b : tensor<?x8xf32>, tensor<8x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  %a = attn.silu %d : tensor<?x16xf32>
  %u, %v, %z = attn.split %a [6, 6, 4] : tensor<?x16xf32> -> tensor<?x6xf32>, tensor<?x6xf32>, tensor<?x4xf32>
  %g = attn.weight "g.gamma" : tensor<2x4xf32>
  %be = attn.weight "g.beta" : tensor<2x4xf32>
  %g0 = attn.row %g[0] : tensor<2x4xf32> -> tensor<4xf32>
  %g1 = attn.row %g[1] : tensor<2x4xf32> -> tensor<4xf32>
  %b0 = attn.row %be[0] : tensor<2x4xf32> -> tensor<4xf32>
  %b1 = attn.row %be[1] : tensor<2x4xf32> -> tensor<4xf32>
  %q0 = attn.scale_offset %z, %g0, %b0 : tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>
  %k0 = attn.scale_offset %z, %g1, %b1 : tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>
  %q = attn.rope %q0 mode = half rotary_dims = 4 base = 1.0e+04 : tensor<?x4xf32>
  %k = attn.rope %k0 mode = half rotary_dims = 4 base = 1.0e+04 : tensor<?x4xf32>
  %rp = attn.weight "g.rel_pos" : tensor<7xf32>
  %o = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 1
         : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x6xf32> -> tensor<?x6xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f32
    %s = arith.divf %qk, %nf : f32
    %bias = attn.rel_pos_bias %rp[%i, %j] max_len = 4 : tensor<7xf32>
    %sb = arith.addf %s, %bias : f32
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %sb, %zero : f32
    %r2 = arith.mulf %r, %r : f32
    attn.yield %r2 : f32
  }
  %gated = attn.mul %u, %o : tensor<?x6xf32>, tensor<?x6xf32> -> tensor<?x6xf32>
  %ow = attn.weight "g.out.weight" : tensor<6x8xf32>
  %ob = attn.weight "g.out.bias" : tensor<8xf32>
  %y0 = attn.dense %gated, %ow, %ob : tensor<?x6xf32>, tensor<6x8xf32>, tensor<8xf32> -> tensor<?x8xf32>
  %y = attn.add %y0, %x : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

func.func @bad_score(%q: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %o = attn.attention %q, %q, %q mask = #attn.mask<none> normalize = softmax heads = 1
         : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    %c = arith.cmpf olt, %qk, %qk : f32
    attn.yield %qk : f32
  }
  return %o : tensor<?x4xf32>
}

func.func @score_ops(%q: tensor<?x4xf32>, %v: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %emb = attn.weight "emb" : tensor<8xf32>
  %o = attn.attention %q, %q, %v mask = #attn.mask<band 3> normalize = softmax heads = 2
         : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x2xf32> -> tensor<?x2xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    %t = attn.t5_bias %emb[%i, %j] causal = false num_buckets = 8 max_distance = 16 scale = 0.5 : tensor<8xf32>
    %e = math.exp %qk : f32
    %th = math.tanh %e : f32
    %sq = math.sqrt %e : f32
    %p = math.powf %sq, %th : f32
    %er = math.erf %qk : f32
    %l = math.log %e : f32
    %f = math.fma %er, %p, %t : f32
    %ng = arith.negf %l : f32
    %sub = arith.subf %f, %ng : f32
    %c = arith.constant 3.0 : f32
    %mn = arith.minimumf %sub, %c : f32
    attn.yield %mn : f32
  }
  return %o : tensor<?x2xf32>
}

func.func @constant(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c = attn.constant 0.1 : tensor<f32>
  %y = attn.mul %x, %c : tensor<?x4xf32>, tensor<f32> -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
)mlir";

TEST(ReferenceInterpreterTest, PrimitiveGauWithScoreRegionEqualsTheGauLayer) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  auto fn = parseFunction(context, module, kPrimitiveGau, "gau");
  ASSERT_TRUE(fn);
  GauConfig gc = gauConfig(4, true);
  WeightMap w = composed::randomWeights(gc, kD, 110);
  Tensor x = randomTensor({9, kD}, 111);
  std::vector<Tensor> out = evaluate(fn, {x}, w);
  ASSERT_EQ(out.size(), 1u);
  expectClose(out[0], gau(x, w, gc));
  w.erase("g.gamma");
  try {
    evaluate(fn, {x}, w);
    FAIL() << "no exception";
  } catch (const std::runtime_error &error) {
    EXPECT_THAT(error.what(), HasSubstr("'g.gamma'"));
  }
}

TEST(ReferenceInterpreterTest, UnsupportedScoreOpsAreNamed) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  auto fn = parseFunction(context, module, kPrimitiveGau, "bad_score");
  ASSERT_TRUE(fn);
  try {
    evaluate(fn, {randomTensor({3, 4}, 1)}, {});
    FAIL() << "no exception";
  } catch (const std::runtime_error &error) {
    EXPECT_THAT(error.what(), HasSubstr("'arith.cmpf'"));
  }
}

TEST(ReferenceInterpreterTest, ScoreRegionsEvaluateEverySupportedScalarOp) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  auto fn = parseFunction(context, module, kPrimitiveGau, "score_ops");
  ASSERT_TRUE(fn);
  Tensor q = randomTensor({6, 4}, 3), v = randomTensor({6, 2}, 4);
  WeightMap w{{"emb", randomTensor({8}, 5)}};
  const Tensor &emb = w.at("emb");
  Tensor expected = attention(
      q, q, v,
      [&emb](double qk, int64_t i, int64_t j, int64_t) {
        double e = std::exp(qk);
        double f = std::erf(qk) * std::pow(std::sqrt(e), std::tanh(e)) +
                   t5Bias(emb, i, j, false, 8, 16, 0.5);
        return std::min(f + std::log(e), 3.0);
      },
      Mask{MaskKind::Band, 3}, Normalize::Softmax, 2);
  std::vector<Tensor> out = evaluate(fn, {q, v}, w);
  ASSERT_EQ(out.size(), 1u);
  expectClose(out[0], expected, 1e-14);
}

TEST(ReferenceInterpreterTest, ConstantsAreRoundedToTheElementType) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  auto fn = parseFunction(context, module, kPrimitiveGau, "constant");
  ASSERT_TRUE(fn);
  Tensor x = randomTensor({2, 4}, 2);
  std::vector<Tensor> out = evaluate(fn, {x}, {});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0][5], x[5] * static_cast<double>(0.1f));
}

} // namespace
