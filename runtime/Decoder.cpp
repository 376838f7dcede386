//===- Decoder.cpp - attn_decoder, incremental decoding in libraries ------===//
//
// This file implements attn_decoder (attn_runtime.h): one sequence of a
// generated causal model decoded incrementally. It owns a block's inputs
// and outputs and, per carry, its value and its next value, and runs the
// generated block and step functions through BlockSequence (the block
// logic the JIT's decoder shares).
//
//===----------------------------------------------------------------------===//
#include "runtime/BlockSequence.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace attnc::runtime;

struct attn_decoder {
  std::string model;
  attn_decode_block_fn runBlock = nullptr, runStep = nullptr;
  const void *weights = nullptr;
  std::vector<int64_t> inElements, outElements;
  std::vector<bool> caches; ///< Per carry: a cache, written in place.
  /// The block's inputs (4-byte elements) and outputs, block_rows each.
  std::vector<std::vector<float>> inputs, outputs;
  std::vector<std::vector<float>> carries, nexts;
  BlockSequence sequence;

  attn_decoder(int blockRows, int unitRows, int stepRows, int64_t maxRows)
      : sequence(blockRows, unitRows, stepRows, maxRows) {}
  void reset() {
    sequence.reset();
    for (std::vector<float> &carry : carries)
      std::fill(carry.begin(), carry.end(), 0.0f);
  }
};

/// Whether `count` sizes at `sizes` are each >= 1 (and the array is given).
static bool positive(const int64_t *sizes, int32_t count) {
  if (count > 0 && !sizes)
    return false;
  for (int32_t i = 0; i < count; ++i)
    if (sizes[i] < 1 || sizes[i] > INT32_MAX / 4)
      return false;
  return true;
}

extern "C" {

attn_status attn_decoder_new(const attn_decoder_layout *layout,
                             const void *model, attn_decoder **out) {
  return guard("attn_decoder_new", [&]() -> attn_status {
    if (!out)
      return setError(ATTN_ERROR_ARGUMENT, "attn_decoder_new: out is NULL");
    *out = nullptr;
    bool stepped = layout && layout->unit_rows > 1;
    if (!layout || !layout->run_block || layout->block_rows < 1 ||
        layout->inputs < 1 || layout->outputs < 0 || layout->carries < 0 ||
        !positive(layout->input_row_elements, layout->inputs) ||
        !positive(layout->output_row_elements, layout->outputs) ||
        !positive(layout->carry_elements, layout->carries) ||
        layout->unit_rows < 0 || layout->block_rows < layout->unit_rows ||
        (stepped && (!layout->run_step || layout->step_rows < 1 ||
                     layout->unit_rows % layout->step_rows != 0)))
      return setError(ATTN_ERROR_ARGUMENT,
                      "attn_decoder_new: the layout is not one of a model "
                      "(block rows at least the unit, inputs, row and carry "
                      "sizes >= 1, a block function, and for a unit above 1 "
                      "a step function whose rows divide it)");
    std::string name = layout->model ? layout->model : "model";
    bool cached = false;
    for (int32_t i = 0; layout->carry_caches && i < layout->carries; ++i)
      if (layout->carry_caches[i] < 0 || layout->carry_caches[i] > 2)
        return setError(ATTN_ERROR_ARGUMENT,
                        "attn_decoder_new: carry_caches[" +
                            std::to_string(i) + "] is " +
                            std::to_string(layout->carry_caches[i]) +
                            "; 0, 1 (a key/value cache) or 2 (a chunk's)");
      else if (layout->carry_caches[i] == 1) {
        cached = true;
        if (Result fits = checkCacheCapacity(name, layout->capacity,
                                             layout->carry_elements[i]);
            !fits.ok())
          return report(fits);
      }
    auto decoder = std::make_unique<attn_decoder>(
        layout->block_rows, stepped ? layout->unit_rows : 1,
        stepped ? layout->step_rows : 0,
        cached ? layout->capacity : kMaxDecodedRows);
    decoder->model = name;
    decoder->runBlock = layout->run_block;
    decoder->runStep = stepped ? layout->run_step : nullptr;
    decoder->weights = model;
    int64_t rows = layout->block_rows;
    for (int32_t i = 0; i < layout->inputs; ++i) {
      decoder->inElements.push_back(layout->input_row_elements[i]);
      decoder->inputs.emplace_back(size_t(rows * decoder->inElements.back()));
    }
    for (int32_t i = 0; i < layout->outputs; ++i) {
      decoder->outElements.push_back(layout->output_row_elements[i]);
      decoder->outputs.emplace_back(
          size_t(rows * decoder->outElements.back()));
    }
    for (int32_t i = 0; i < layout->carries; ++i) {
      int32_t cache = layout->carry_caches ? layout->carry_caches[i] : 0;
      size_t elements = size_t(layout->carry_elements[i]);
      decoder->caches.push_back(cache != 0);
      // A key/value cache: one array of `capacity` rows; caches are
      // written in place.
      decoder->carries.emplace_back(
          cache == 1 ? elements * size_t(layout->capacity) : elements);
      decoder->nexts.emplace_back(cache ? 0 : elements);
    }
    *out = decoder.release();
    return ATTN_OK;
  });
}

void attn_decoder_free(attn_decoder *decoder) { delete decoder; }

void attn_decoder_reset(attn_decoder *decoder) {
  if (decoder)
    decoder->reset();
}

int64_t attn_decoder_length(const attn_decoder *decoder) {
  return decoder ? decoder->sequence.length() : 0;
}

int64_t attn_decoder_state_bytes(const attn_decoder *decoder) {
  if (!decoder)
    return 0;
  int64_t floats = 0;
  for (const auto *list : {&decoder->carries, &decoder->nexts})
    for (const std::vector<float> &buffer : *list)
      floats += int64_t(buffer.size());
  return floats * int64_t(sizeof(float));
}

attn_status attn_decoder_append(attn_decoder *decoder, int64_t rows,
                                const void *const *inputs,
                                float *const *outputs) {
  return guard("attn_decoder_append", [&]() -> attn_status {
    if (!decoder || !inputs)
      return setError(ATTN_ERROR_ARGUMENT,
                      "attn_decoder_append: the decoder or the inputs are "
                      "NULL");
    for (size_t i = 0; i < decoder->inputs.size(); ++i)
      if (!inputs[i])
        return setError(ATTN_ERROR_ARGUMENT,
                        "attn_decoder_append: input " + std::to_string(i) +
                            " of model '" + decoder->model + "' is NULL");
    if (rows < 1)
      return setError(ATTN_ERROR_ARGUMENT,
                      "attn_decoder_append: rows is " + std::to_string(rows) +
                          "; an append takes at least one row");
    BlockSequence &sequence = decoder->sequence;
    auto copyIn = [&](int64_t from, int count) {
      for (size_t i = 0; i < decoder->inputs.size(); ++i) {
        size_t row = size_t(decoder->inElements[i]) * 4;
        std::memcpy(decoder->inputs[i].data(),
                    static_cast<const char *>(inputs[i]) + from * row,
                    size_t(count) * row);
      }
    };
    auto run = [&](int count, bool step) {
      std::vector<const void *> in;
      std::vector<float *> out, next;
      std::vector<const float *> carry;
      for (const std::vector<float> &input : decoder->inputs)
        in.push_back(input.data());
      for (std::vector<float> &output : decoder->outputs)
        out.push_back(output.data());
      for (size_t c = 0; c < decoder->carries.size(); ++c) {
        carry.push_back(decoder->carries[c].data());
        next.push_back(decoder->caches[c] ? decoder->carries[c].data()
                                          : decoder->nexts[c].data());
      }
      attn_status status = (step ? decoder->runStep : decoder->runBlock)(
          decoder->weights, count, sequence.length(), in.data(), out.data(),
          carry.data(), next.data());
      if (status != ATTN_OK)
        return Result::error(status, attn_error_message());
      advanceCarries(decoder->carries, decoder->nexts, decoder->caches);
      return Result::success();
    };
    auto copyOut = [&](int64_t to, int count) {
      if (!outputs)
        return;
      for (size_t i = 0; i < decoder->outputs.size(); ++i)
        if (outputs[i])
          std::memcpy(outputs[i] + to * decoder->outElements[i],
                      decoder->outputs[i].data(),
                      size_t(count * decoder->outElements[i]) * 4);
    };
    return report(sequence.append(rows, copyIn, run, copyOut));
  });
}

} // extern "C"
