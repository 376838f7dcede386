/*===- main.c - a C app outside attnc's tree that runs a GAU layer --------===*\
|*                                                                            *|
|* Links the library that attnc_add_model() of an installed attnc generated   *|
|* from examples/gau.attn (examples/outside/CMakeLists.txt), loads the        *|
|* weights from a safetensors file through the attnc runtime's C API, runs    *|
|* one causal GAU layer on a deterministic input and prints the output's      *|
|* shape and a checksum.                                                      *|
|*                                                                            *|
|*   gau_app WEIGHTS.safetensors [n] [batch]                                  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#include "gau_layer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s WEIGHTS.safetensors [n] [batch]\n", argv[0]);
    return 2;
  }
  int64_t n = argc > 2 ? atoll(argv[2]) : 64;
  int64_t batch = argc > 3 ? atoll(argv[3]) : 1;
  const int64_t d = 512;
  if (n < 1 || batch < 1) {
    fprintf(stderr, "error: n and batch must be positive\n");
    return 2;
  }

  attn_weights *set = NULL;
  gau_layer_weights weights;
  if (attn_weights_load(argv[1], &set) != ATTN_OK ||
      gau_layer_weights_bind(set, &weights) != ATTN_OK) {
    fprintf(stderr, "error: %s\n", attn_error_message());
    attn_weights_free(set);
    return 1;
  }

  size_t count = (size_t)(batch * n * d);
  float *xData = malloc(count * sizeof *xData);
  float *yData = malloc(count * sizeof *yData);
  if (!xData || !yData) {
    fprintf(stderr, "error: out of memory\n");
    return 1;
  }
  /* x[b, t, c] = cos(0.013 * i): deterministic, non-uniform. */
  for (size_t i = 0; i < count; ++i)
    xData[i] = (float)cos(0.013 * (double)(i % 100003));
  attn_tensor x = {xData, 3, {batch, n, d}};
  attn_tensor y = {yData, 3, {batch, n, d}};

  int status = 0;
  if (gau_layer_run(&weights, &x, &y) != ATTN_OK) {
    fprintf(stderr, "error: %s\n", attn_error_message());
    status = 1;
  } else {
    double sum = 0, absSum = 0;
    for (size_t i = 0; i < count; ++i) {
      sum += yData[i];
      absSum += fabs(yData[i]);
    }
    printf("y: shape [%lld, %lld, %lld], checksum sum %.6e, mean |y| %.6e\n",
           (long long)batch, (long long)n, (long long)d, sum,
           absSum / (double)count);
  }
  free(xData);
  free(yData);
  attn_weights_free(set);
  return status;
}
