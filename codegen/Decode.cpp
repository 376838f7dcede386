//===- Decode.cpp - a causal model run on a growing sequence --------------===//
//
// This file implements Decoder (Decode.h): each append cut into pieces
// (BlockSequence), each copied into the block's buffers and run.
//
//===----------------------------------------------------------------------===//
#include "codegen/Decode.h"

#include "runtime/Tensor.h"

#include <algorithm>

namespace attnc::codegen {

using Halide::Buffer;

/// A buffer for one block of `info` (Halide order): batch dims 1, `rows`
/// rows; or an error when another axis is not static.
static runtime::Result blockBuffer(const TensorInfo &info, int rows,
                                   Buffer<float> &buffer) {
  std::vector<int64_t> shape = info.shape;
  shape[streamRowAxis(info)] = rows;
  shape = blockShape(shape, streamRowAxis(info), rows);
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] < 0)
      return runtime::Result::error(
          ATTN_ERROR_ARGUMENT,
          "decoding keeps a block of '" + info.name + "' " +
              info.shapeString() + ", whose axis " + std::to_string(d) +
              " ('" + info.dims[d] + "') must then have a static size");
  buffer = Buffer<float>(std::vector<int>(shape.rbegin(), shape.rend()));
  buffer.fill(0.0f);
  return runtime::Result::success();
}

runtime::Result Decoder::create(const std::vector<TensorInfo> &inputs,
                                const std::vector<TensorInfo> &outputs,
                                int blockRows, int unitRows, int stepRows,
                                int64_t maxRows,
                                std::unique_ptr<SequenceBlocks> blocks,
                                std::unique_ptr<Decoder> &decoder) {
  std::unique_ptr<Decoder> made(
      new Decoder(blockRows, unitRows, stepRows, maxRows));
  made->inputInfos = inputs;
  made->outputInfos = outputs;
  made->blocks = std::move(blocks);
  for (auto [infos, rows, buffers] :
       {std::tie(inputs, made->inRows, made->blockInputs),
        std::tie(outputs, made->outRows, made->blockOutputs)})
    for (const TensorInfo &info : infos) {
      rows.push_back(streamRowDim(info));
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
  sequence.reset();
}

int64_t Decoder::stateBytes() const { return blocks->stateBytes(); }

/// Rows [from, from + count) of `source` into rows [to, to + count) of
/// `dest` (both with their rows in dim `dim`).
static void copyRows(const Buffer<float> &source, int from, Buffer<float> dest,
                     int to, int count, int dim) {
  Halide::Runtime::Buffer<float> rows =
      source.get()->cropped(dim, from, count);
  rows.translate(dim, to - from);
  dest.get()->cropped(dim, to, count).copy_from(rows);
}

/// Whether `buffer` (the `role` `info`) is one sequence's rows: the
/// block buffer's extents but in `rowDim`, where it has `rows` rows (the
/// first tensor sets them).
static runtime::Result checkRows(const char *role, const TensorInfo &info,
                                 const Buffer<float> &buffer,
                                 const Buffer<float> &block, int rowDim,
                                 int &rows) {
  bool fits = buffer.dimensions() == block.dimensions();
  for (int d = 0; fits && d < block.dimensions(); ++d)
    fits = d == rowDim ? buffer.dim(d).extent() >= 1 &&
                             (rows < 0 || buffer.dim(d).extent() == rows)
                       : buffer.dim(d).extent() == block.dim(d).extent();
  if (fits) {
    rows = buffer.dim(rowDim).extent();
    return runtime::Result::success();
  }
  std::vector<int64_t> shape;
  for (int d = buffer.dimensions(); d-- > 0;)
    shape.push_back(buffer.dim(d).extent());
  return runtime::Result::error(
      ATTN_ERROR_SHAPE,
      std::string(role) + " '" + info.name + "' has shape " +
          runtime::shapeString(shape) + "; a decoder takes " +
          info.shapeString() + " with batch dims 1" +
          (rows > 0 ? " and " + std::to_string(rows) + " rows" : ""));
}

runtime::Result Decoder::append(const std::vector<Buffer<float>> &inputs,
                                std::vector<Buffer<float>> &outputs) {
  if (inputs.size() != blockInputs.size() ||
      outputs.size() != blockOutputs.size())
    return runtime::Result::error(ATTN_ERROR_ARGUMENT,
                                  "decoder: wrong number of inputs or outputs");
  int rows = -1;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (runtime::Result fits = checkRows("input", inputInfos[i], inputs[i],
                                         blockInputs[i], inRows[i], rows);
        !fits.ok())
      return fits;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (runtime::Result fits =
            checkRows("output", outputInfos[i], outputs[i], blockOutputs[i],
                      outRows[i], rows);
        !fits.ok())
      return fits;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (runtime::Result ids = checkTokenIds(inputInfos[i], inputs[i]);
        !ids.ok())
      return ids;
  auto copyIn = [&](int64_t from, int count) {
    for (size_t i = 0; i < inputs.size(); ++i)
      copyRows(inputs[i], int(from), blockInputs[i], 0, count, inRows[i]);
  };
  auto run = [&](int count, bool step) {
    std::vector<Buffer<float>> in, out;
    for (size_t i = 0; i < blockInputs.size(); ++i)
      in.push_back(blockOf(blockInputs[i], inRows[i], 0, 0, count));
    for (size_t i = 0; i < blockOutputs.size(); ++i)
      out.push_back(blockOf(blockOutputs[i], outRows[i], 0, 0, count));
    return blocks->run(in, out, count, step);
  };
  auto copyOut = [&](int64_t to, int count) {
    for (size_t i = 0; i < outputs.size(); ++i)
      copyRows(blockOutputs[i], 0, outputs[i], int(to), count, outRows[i]);
  };
  return sequence.append(rows, copyIn, run, copyOut);
}

} // namespace attnc::codegen
