//===- main.cpp - a C++ app that links a generated FLASH library ----------===//
//
// This file is the example application of attnc: it links the library that
// attnc_add_model() generated from examples/flash.attn, loads the weights
// from a safetensors file through the attnc runtime, runs one causal FLASH
// layer on a deterministic input and prints the output's shape and a
// checksum. No MLIR, Halide or Python is needed at run time.
//
//   flash_app WEIGHTS.safetensors [n] [batch]
//
//===----------------------------------------------------------------------===//
#include "flash_layer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s WEIGHTS.safetensors [n] [batch]\n", argv[0]);
    return 2;
  }
  int64_t n = argc > 2 ? std::atoll(argv[2]) : 300;
  int64_t batch = argc > 3 ? std::atoll(argv[3]) : 2;
  const int64_t d = 512;

  attn_weights *set = nullptr;
  flash_layer_weights weights;
  if (attn_weights_load(argv[1], &set) != ATTN_OK ||
      flash_layer_weights_bind(set, &weights) != ATTN_OK) {
    std::fprintf(stderr, "error: %s\n", attn_error_message());
    attn_weights_free(set);
    return 1;
  }

  // x[b, t, c] = sin(0.01 * (b * 131 + t * 7 + c)): deterministic, non-uniform.
  std::vector<float> xData(size_t(batch * n * d)), yData(xData.size());
  for (size_t i = 0; i < xData.size(); ++i)
    xData[i] = float(std::sin(0.01 * double(i % 100003)));
  attn_tensor x = {xData.data(), 3, {batch, n, d}};
  attn_tensor y = {yData.data(), 3, {batch, n, d}};

  if (flash_layer_run(&weights, &x, &y) != ATTN_OK) {
    std::fprintf(stderr, "error: %s\n", attn_error_message());
    attn_weights_free(set);
    return 1;
  }
  double sum = 0, absSum = 0;
  for (float v : yData) {
    sum += v;
    absSum += std::fabs(v);
  }
  std::printf("y: shape [%lld, %lld, %lld], checksum sum %.6e, mean |y| %.6e\n",
              (long long)batch, (long long)n, (long long)d, sum,
              absSum / double(yData.size()));
  attn_weights_free(set);
  return 0;
}
