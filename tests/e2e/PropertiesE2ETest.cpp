//===- PropertiesE2ETest.cpp - the spec's properties (§8.1) on codegen ----===//
//
// This file checks the properties of ../shared/spec/flash.md §8.1 on the
// generated code: causality (T3: perturbing future inputs non-uniformly
// leaves earlier outputs unchanged bit for bit), FLASH with C = n against
// GAU (T4) and against GAU plus the linear term written from primitives
// (T5), the chunked exclusive prefix against the sequential recurrence (T7)
// and the non-causal chunked global term against Q (K^T V) / C (T10).
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/E2EUtil.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace attnc::e2e {
namespace {

using codegen::HostTensor;
using driver::SchedulePolicy;
using codegen::TensorMap;

std::string layerModel(const std::string &body, int d = 64) {
  return "model t {\n  dim d = " + std::to_string(d) +
         "\n  dim n : seq\n  dim b : batch\n  input x : f32[b, n, d]\n"
         "  output y = " + body + "\n}\n";
}

/// Adds non-uniform noise to rows t >= t0 of x [b, n, d].
HostTensor perturbFuture(HostTensor x, int64_t t0) {
  std::mt19937 rng(77);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  int64_t n = x.shape[1], d = x.shape[2];
  for (int64_t b = 0; b < x.shape[0]; ++b)
    for (int64_t t = t0; t < n; ++t)
      for (int64_t c = 0; c < d; ++c)
        x.data[size_t((b * n + t) * d + c)] += noise(rng);
  return x;
}

/// Whether rows [begin, end) of two [b, n, d] tensors are bit-identical.
bool rowsIdentical(const HostTensor &a, const HostTensor &b, int64_t begin,
                   int64_t end) {
  int64_t n = a.shape[1], d = a.shape[2];
  for (int64_t batch = 0; batch < a.shape[0]; ++batch)
    if (std::memcmp(&a.data[size_t((batch * n + begin) * d)],
                    &b.data[size_t((batch * n + begin) * d)],
                    size_t((end - begin) * d) * sizeof(float)) != 0)
      return false;
  return true;
}

struct CausalCase {
  const char *name;
  std::string body;
  bool causal;
};

class CausalityTest : public ::testing::TestWithParam<CausalCase> {};

TEST_P(CausalityTest, FutureInputsChangeOnlyLaterOutputs) {
  const CausalCase &c = GetParam();
  auto model = compileAttn(layerModel(c.body), SchedulePolicy::Default);
  ASSERT_TRUE(model->jit) << model->diagnostics;
  TensorMap weights = codegen::randomWeights(model->jit->pipeline().weights(), 5);
  TensorMap inputs = randomInputs(*model->jit, {{"n", 45}, {"b", 2}}, 1);
  const int64_t t0 = 21; // inside a chunk of 8 (chunks 16..23)
  TensorMap perturbed = inputs;
  perturbed["x"] = perturbFuture(inputs.at("x"), t0);
  HostTensor y = runJit(*model, inputs, weights).at("y");
  HostTensor yp = runJit(*model, perturbed, weights).at("y");
  EXPECT_FALSE(rowsIdentical(y, yp, t0, 45)) << "later outputs must change";
  if (c.causal)
    EXPECT_TRUE(rowsIdentical(y, yp, 0, t0))
        << c.name << ": an earlier output changed";
  else
    EXPECT_FALSE(rowsIdentical(y, yp, 0, t0))
        << c.name << ": a non-causal model must see the future";
}

INSTANTIATE_TEST_SUITE_P(
    Models, CausalityTest,
    ::testing::Values(
        CausalCase{"GauCausal", "gau(x, e = 128, s = 32, causal = true)", true},
        CausalCase{"FlashCausal",
                   "flash(x, e = 128, s = 32, chunk = 8, causal = true)", true},
        CausalCase{"MhsaCausal", "mhsa(x, heads = 4, causal = true)", true},
        CausalCase{"LinearCausal", "linear_attention(x, causal = true)", true},
        CausalCase{"LocalWindow", "local_attention(x, heads = 2, window = 6)", true},
        CausalCase{"LocalCausalBlocks",
                   "local_attention(x, heads = 2, window = 8, block = true)", true},
        CausalCase{"FlashBidirectional", "flash(x, e = 128, s = 32, chunk = 8)",
                   false},
        CausalCase{"GauBidirectional", "gau(x, e = 128, s = 32)", false}),
    [](const ::testing::TestParamInfo<CausalCase> &info) {
      return std::string(info.param.name);
    });

/// Relative error between two host tensors.
double relative(const HostTensor &got, const HostTensor &want) {
  double maxRef = 0, maxDiff = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    maxRef = std::max(maxRef, double(std::abs(want.data[i])));
    maxDiff = std::max(maxDiff, double(std::abs(got.data[i] - want.data[i])));
  }
  return maxDiff / std::max(maxRef, 1e-30);
}

/// Rows `rows` of a [r, c] weight.
HostTensor rowsOf(const HostTensor &w, std::vector<int64_t> rows) {
  HostTensor out({int64_t(rows.size()), w.shape[1]});
  for (size_t r = 0; r < rows.size(); ++r)
    std::copy_n(&w.data[size_t(rows[r] * w.shape[1])], w.shape[1],
                &out.data[r * size_t(w.shape[1])]);
  return out;
}

// T4: causal FLASH with C = n equals the causal GAU whose (gamma, beta) are
// FLASH's quad rows, with the same relative bias (max_len = C): the linear
// term is an empty exclusive sum.
TEST(FlashPropertiesTest, CausalFlashWithOneChunkEqualsCausalGau) {
  auto flash = compileAttn(
      layerModel("flash(x, e = 128, s = 32, chunk = 16, causal = true) as f"),
      SchedulePolicy::Default);
  auto gau = compileAttn(
      layerModel("gau(x, e = 128, s = 32, max_len = 16, causal = true) as g"),
      SchedulePolicy::Default);
  ASSERT_TRUE(flash->jit && gau->jit) << flash->diagnostics << gau->diagnostics;
  TensorMap fw = codegen::randomWeights(flash->jit->pipeline().weights(), 8);
  TensorMap gw;
  for (const auto &[name, t] : fw) {
    std::string part = name.substr(2);
    gw["g." + part] = (part == "gamma" || part == "beta") ? rowsOf(t, {0, 1}) : t;
  }
  TensorMap inputs = randomInputs(*flash->jit, {{"n", 16}, {"b", 2}}, 4);
  HostTensor yf = runJit(*flash, inputs, fw).at("y");
  HostTensor yg = runJit(*gau, inputs, gw).at("y");
  EXPECT_LE(relative(yf, yg), 1e-5);
}

// T5: non-causal FLASH with C = n equals the GAU (quad rows) plus the global
// term u * (Q_lin (K_lin^T V) / n) W_o, written here from primitives.
TEST(FlashPropertiesTest, BidirectionalFlashWithOneChunkEqualsGauPlusLinearTerm) {
  auto flash = compileAttn(
      layerModel("flash(x, e = 128, s = 32, chunk = 16, causal = false) as f"),
      SchedulePolicy::Default);
  const char *composed = R"(model t {
  dim d = 64, e = 128, s = 32, c = 16
  dim n : seq
  dim b : batch
  input x : f32[b, n, d]
  param nw : f32[d]
  param nb : f32[d]
  param w_uvz : f32[d, 2*e + s]
  param b_uvz : f32[2*e + s]
  param gamma : f32[4, s]
  param beta : f32[4, s]
  param rel : f32[2*c - 1]
  param w_o : f32[e, d]
  param b_o : f32[d]
  u, v, z = split(silu(layer_norm(x, nw, nb) @ w_uvz + b_uvz), [e, e, s])
  qq = rope(z * gamma[0] + beta[0])
  kq = rope(z * gamma[1] + beta[1])
  ql = rope(z * gamma[2] + beta[2])
  kl = rope(z * gamma[3] + beta[3])
  quad = attention(qq, kq, v, score = relu(qk / n + rel_pos_bias(rel))^2)
  lin = linear_attention(ql, kl, v, feature = identity, normalize = false,
                         scale = 1 / c)
  output y = (u * (quad + lin)) @ w_o + b_o + x
})";
  auto reference = compileAttn(composed, SchedulePolicy::Default);
  ASSERT_TRUE(flash->jit && reference->jit)
      << flash->diagnostics << reference->diagnostics;
  TensorMap fw = codegen::randomWeights(flash->jit->pipeline().weights(), 12);
  TensorMap rw = {{"nw", fw.at("f.norm.weight")}, {"nb", fw.at("f.norm.bias")},
                  {"w_uvz", fw.at("f.uvz.weight")}, {"b_uvz", fw.at("f.uvz.bias")},
                  {"gamma", fw.at("f.gamma")},     {"beta", fw.at("f.beta")},
                  {"rel", fw.at("f.rel_pos")},     {"w_o", fw.at("f.out.weight")},
                  {"b_o", fw.at("f.out.bias")}};
  TensorMap inputs = randomInputs(*flash->jit, {{"n", 16}, {"b", 2}}, 6);
  HostTensor yf = runJit(*flash, inputs, fw).at("y");
  HostTensor yr = runJit(*reference, inputs, rw).at("y");
  EXPECT_LE(relative(yf, yr), 1e-5);
}

/// attn.chunked_linear as a model of its own (q, k, v inputs).
std::string chunkedLinearModel(bool causal) {
  return std::string(R"(func.func @chunked(
    %q: tensor<?x?x5xf32> {attn.name = "q", attn.dims = ["b", "n", ""]},
    %k: tensor<?x?x5xf32> {attn.name = "k", attn.dims = ["b", "n", ""]},
    %v: tensor<?x?x6xf32> {attn.name = "v", attn.dims = ["b", "n", ""]})
    -> (tensor<?x?x6xf32> {attn.name = "y", attn.dims = ["b", "n", ""]})
    attributes {attn.model, attn.runtime_dims = {b = "batch", n = "seq"}} {
  %y = attn.chunked_linear %q, %k, %v chunk = 8 causal = )") +
         (causal ? "true" : "false") + R"( scale = 1.250000e-01
      : tensor<?x?x5xf32>, tensor<?x?x5xf32>, tensor<?x?x6xf32> -> tensor<?x?x6xf32>
  return %y : tensor<?x?x6xf32>
})";
}

/// The sequential chunk RNN of T7 (causal) or Q (K^T V) / C (T10), in double.
HostTensor chunkedByRecurrence(const TensorMap &in, bool causal, int64_t chunk) {
  const HostTensor &q = in.at("q"), &k = in.at("k"), &v = in.at("v");
  int64_t batches = q.shape[0], n = q.shape[1], s = q.shape[2], e = v.shape[2];
  HostTensor y({batches, n, e});
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<double> state(size_t(s * e), 0.0), total(size_t(s * e), 0.0);
    auto addToken = [&](std::vector<double> &target, int64_t t) {
      for (int64_t a = 0; a < s; ++a)
        for (int64_t c = 0; c < e; ++c)
          target[size_t(a * e + c)] +=
              double(k.data[size_t((b * n + t) * s + a)]) *
              double(v.data[size_t((b * n + t) * e + c)]) / double(chunk);
    };
    for (int64_t t = 0; t < n; ++t)
      addToken(total, t);
    for (int64_t t = 0; t < n; ++t) {
      if (causal && t % chunk == 0 && t > 0) // close the previous chunk
        for (int64_t u = t - chunk; u < t; ++u)
          addToken(state, u);
      const std::vector<double> &visible = causal ? state : total;
      for (int64_t c = 0; c < e; ++c) {
        double acc = 0;
        for (int64_t a = 0; a < s; ++a)
          acc += double(q.data[size_t((b * n + t) * s + a)]) * visible[size_t(a * e + c)];
        y.data[size_t((b * n + t) * e + c)] = float(acc);
      }
    }
  }
  return y;
}

class ChunkedLinearTest : public ::testing::TestWithParam<bool> {};

// T7 (causal: the chunked exclusive prefix equals the sequential recurrence)
// and T10 (non-causal: every chunk sees Q (K^T V) / C).
TEST_P(ChunkedLinearTest, MatchesTheRecurrence) {
  bool causal = GetParam();
  auto model = compileIR(chunkedLinearModel(causal), SchedulePolicy::Default);
  ASSERT_TRUE(model->jit) << model->diagnostics;
  for (int64_t n : {1, 8, 37}) {
    TensorMap inputs = randomInputs(*model->jit, {{"n", n}, {"b", 2}}, 3);
    HostTensor y = runJit(*model, inputs, {}).at("y");
    EXPECT_LE(relative(y, chunkedByRecurrence(inputs, causal, 8)), 1e-5)
        << "n = " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ChunkedLinearTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return std::string(info.param ? "Causal"
                                                         : "Bidirectional");
                         });

} // namespace
} // namespace attnc::e2e
