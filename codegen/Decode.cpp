//===- Decode.cpp - a causal model run on a growing sequence --------------===//
//
// This file implements Decoder (Decode.h): the current block's rows, run
// again with each append, its carries advanced when it fills.
//
//===----------------------------------------------------------------------===//
#include "codegen/Decode.h"

#include <algorithm>

namespace attnc::codegen {

using Halide::Buffer;

/// A buffer for one block of `info` (Halide order): batch dims 1, `rows`
/// rows; or an error when another axis is not static.
static runtime::Result blockBuffer(const TensorInfo &info, int rows,
                                   Buffer<float> &buffer) {
  size_t rowAxis = streamRowAxis(info);
  std::vector<int> sizes;
  for (size_t d = info.shape.size(); d-- > 0;) {
    if (d == rowAxis)
      sizes.push_back(rows);
    else if (d < rowAxis)
      sizes.push_back(1);
    else if (info.shape[d] < 0)
      return runtime::Result::error(
          ATTN_ERROR_ARGUMENT,
          "decoding keeps a block of '" + info.name + "' " +
              info.shapeString() + ", whose axis " + std::to_string(d) +
              " ('" + info.dims[d] + "') must then have a static size");
    else
      sizes.push_back(int(info.shape[d]));
  }
  buffer = Buffer<float>(sizes);
  buffer.fill(0.0f);
  return runtime::Result::success();
}

/// Halide dim of `info`'s rows.
static int rowDim(const TensorInfo &info) {
  return int(info.shape.size() - 1 - streamRowAxis(info));
}

runtime::Result Decoder::create(const std::vector<TensorInfo> &inputs,
                                const std::vector<TensorInfo> &outputs,
                                int blockRows,
                                std::unique_ptr<SequenceBlocks> blocks,
                                std::unique_ptr<Decoder> &decoder) {
  std::unique_ptr<Decoder> made(new Decoder());
  made->inputInfos = inputs;
  made->outputInfos = outputs;
  made->block = blockRows;
  made->blocks = std::move(blocks);
  for (auto [infos, rows, buffers] :
       {std::tie(inputs, made->inRows, made->blockInputs),
        std::tie(outputs, made->outRows, made->blockOutputs)})
    for (const TensorInfo &info : infos) {
      rows.push_back(rowDim(info));
      buffers.emplace_back();
      if (runtime::Result sized =
              blockBuffer(info, blockRows, buffers.back());
          !sized.ok())
        return sized;
    }
  decoder = std::move(made);
  return runtime::Result::success();
}

void Decoder::reset() {
  blocks->reset();
  pending = 0;
  committed = 0;
}

int64_t Decoder::stateBytes() const {
  int64_t total = blocks->stateBytes();
  for (const Buffer<float> &input : blockInputs)
    total += int64_t(input.size_in_bytes());
  return total;
}

/// Rows [from, from + count) of `source` into rows [to, to + count) of
/// `dest` (both with their rows in dim `dim`).
static void copyRows(const Buffer<float> &source, int from, Buffer<float> dest,
                     int to, int count, int dim) {
  Halide::Runtime::Buffer<float> rows =
      source.get()->cropped(dim, from, count);
  rows.translate(dim, to - from);
  dest.get()->cropped(dim, to, count).copy_from(rows);
}

runtime::Result Decoder::append(const std::vector<Buffer<float>> &inputs,
                                std::vector<Buffer<float>> &outputs) {
  if (inputs.size() != blockInputs.size() ||
      outputs.size() != blockOutputs.size())
    return runtime::Result::error(ATTN_ERROR_ARGUMENT,
                                  "decoder: wrong number of inputs or outputs");
  int rows = inputs.front().dim(inRows[0]).extent();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (int other = inputs[i].dim(inRows[i]).extent(); other != rows)
      return runtime::Result::error(
          ATTN_ERROR_SHAPE, "decoder: input '" + inputInfos[i].name +
                                "' has " + std::to_string(other) +
                                " rows and '" + inputInfos[0].name + "' " +
                                std::to_string(rows));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (runtime::Result ids = checkTokenIds(inputInfos[i], inputs[i]);
        !ids.ok())
      return ids;
  for (int done = 0; done < rows;) {
    int take = std::min(block - pending, rows - done);
    for (size_t i = 0; i < inputs.size(); ++i)
      copyRows(inputs[i], done, blockInputs[i], pending, take, inRows[i]);
    int filled = pending + take;
    bool full = filled == block;
    std::vector<Buffer<float>> in, out;
    for (size_t i = 0; i < blockInputs.size(); ++i)
      in.push_back(blockOf(blockInputs[i], inRows[i], 0, 0, filled));
    for (size_t i = 0; i < blockOutputs.size(); ++i)
      out.push_back(blockOf(blockOutputs[i], outRows[i], 0, 0, filled));
    // Appended rows stay pending until the block's carries advance: a
    // failed run leaves the sequence as it was.
    if (runtime::Result ran = blocks->run(in, out, filled, full); !ran.ok())
      return ran;
    for (size_t i = 0; i < outputs.size(); ++i)
      copyRows(blockOutputs[i], pending, outputs[i], done, take, outRows[i]);
    done += take;
    if (full) {
      committed += block;
      pending = 0;
    } else {
      pending = filled;
    }
  }
  return runtime::Result::success();
}

} // namespace attnc::codegen
