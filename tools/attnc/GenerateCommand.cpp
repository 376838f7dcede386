//===- GenerateCommand.cpp - attnc generate -------------------------------===//
//
// This file implements `attnc generate`: a causal language model (token
// ids in, logits out) decoded incrementally (codegen/Decode.h). The prompt
// is prefilled, then each step appends the token chosen from the last
// logits (greedy, or sampled from their softmax with a seed). It prints the
// generated ids, the prefill's and the steps' speed, and the decoder's
// state bytes, which do not grow with the context.
//
//===----------------------------------------------------------------------===//
#include "tools/attnc/Commands.h"
#include "driver/Session.h"

#include "codegen/Decode.h"
#include "codegen/Jit.h"
#include "codegen/Stopwatch.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>

namespace attnc::driver {

using codegen::HostTensor;
using runtime::Result;

namespace {

/// `1,2,3` as ids, or an error naming the bad item.
Result parseIds(const std::string &text, std::vector<int32_t> &ids) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, comma - start);
    char *end = nullptr;
    errno = 0;
    long long value = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno == ERANGE ||
        value < INT32_MIN || value > INT32_MAX)
      return commandUsage("--prompt-ids takes comma-separated integers, "
                          "got '" + item + "' in '" + text + "'");
    ids.push_back(int32_t(value));
    start = comma + 1;
  }
  return Result::success();
}

/// The model's one input of token ids and one output of logits
/// ([..., n, vocab]), or an error saying what generate needs.
Result checkLanguageModel(const codegen::ModelPipeline &model,
                          int64_t &vocab) {
  const auto &inputs = model.inputs();
  const auto &outputs = model.outputs();
  if (inputs.size() != 1 || inputs[0].dtype != "i32" || outputs.size() != 1)
    return commandUsage(
        "attnc generate runs a language model: one input of token ids "
        "(`input ids : i32[b, n]`) and one output of logits; model '" +
        model.name() + "' has " + std::to_string(inputs.size()) +
        " inputs" +
        (inputs.empty() ? std::string()
                        : " (first: '" + inputs[0].name + "' " +
                              inputs[0].dtype + ")") +
        " and " + std::to_string(outputs.size()) + " outputs");
  const codegen::TensorInfo &logits = outputs[0];
  if (logits.shape.size() != inputs[0].shape.size() + 1 ||
      logits.shape.back() < 0)
    return commandUsage("attnc generate reads the next token from the last "
                        "row of the logits, [..., n, vocab] with a static "
                        "vocab; output '" + logits.name + "' is " +
                        logits.shapeString());
  vocab = logits.shape.back();
  return Result::success();
}

/// The ids [1..., count] (ids' rank) as the decoder's input.
HostTensor idsTensor(const codegen::TensorInfo &info, const int32_t *ids,
                     int64_t count) {
  std::vector<int64_t> shape(info.shape.size(), 1);
  shape.back() = count;
  HostTensor t(shape);
  t.dtype = "i32";
  std::memcpy(t.data.data(), ids, size_t(count) * 4);
  return t;
}

/// Appends `count` ids to `decoder`; `last` receives the logits of the
/// last one.
Result append(codegen::Decoder &decoder, const codegen::TensorInfo &idsInfo,
              const int32_t *ids, int64_t count, int64_t vocab,
              std::vector<float> &last) {
  HostTensor in = idsTensor(idsInfo, ids, count);
  std::vector<int64_t> outShape = in.shape;
  outShape.push_back(vocab);
  HostTensor out(outShape);
  std::vector<Halide::Buffer<float>> ins{
      codegen::hostView(in.data.data(), in.shape)},
      outs{codegen::hostView(out.data.data(), out.shape)};
  if (Result ran = decoder.append(ins, outs); !ran.ok())
    return ran;
  last.assign(out.data.end() - vocab, out.data.end());
  return Result::success();
}

/// The next token: the largest logit, or a draw from their softmax; -1
/// when the largest is not finite.
int32_t choose(const std::vector<float> &logits, bool greedy,
               std::mt19937_64 &random) {
  auto largest = std::max_element(logits.begin(), logits.end());
  if (!std::isfinite(*largest))
    return -1; // the caller reports it
  if (greedy)
    return int32_t(largest - logits.begin());
  float top = *largest;
  std::vector<double> weights;
  for (float logit : logits)
    weights.push_back(std::exp(double(logit - top)));
  std::discrete_distribution<int32_t> draw(weights.begin(), weights.end());
  return draw(random);
}

std::string tokensPerSecond(int64_t tokens, double ms) {
  return llvm::formatv("{0:f1}", tokens * 1000.0 / std::max(ms, 1e-9)).str();
}

} // namespace

int generateCommand(const GenerateOptions &options) {
  const RunOptions &run = options.run;
  if (options.steps < 0)
    return commandFail(commandUsage("--steps must be 0 or more"));
  if (options.sample != "greedy" && options.sample != "random")
    return commandFail(commandUsage("--sample is greedy or random, got '" +
                                    options.sample + "'"));
  if (run.streamRows < 0)
    return commandFail(commandUsage(
        "--stream-rows must be positive, or 0 for blocks of the model's "
        "chunk"));
  // Positions reach the kernels as floats: exact below 2^24.
  constexpr int64_t kMaxRows = int64_t(1) << 24;
  if (options.context >= kMaxRows || options.steps >= kMaxRows ||
      options.context + options.steps > kMaxRows)
    return commandFail(commandUsage(
        "a decoded sequence holds at most 2^24 tokens; --context " +
        std::to_string(options.context) + " and --steps " +
        std::to_string(options.steps) + " would pass it"));
  std::vector<int32_t> prompt;
  std::mt19937_64 random(options.seed);
  if (!options.promptIds.empty() && options.context > 0)
    return commandFail(commandUsage(
        "give the prompt as --prompt-ids or --context N (N random ids), "
        "not both"));
  if (!options.promptIds.empty()) {
    if (Result parsed = parseIds(options.promptIds, prompt); !parsed.ok())
      return commandFail(parsed);
  } else if (options.context <= 0) {
    return commandFail(commandUsage(
        "attnc generate needs a prompt: --prompt-ids 1,2,3 or --context N "
        "(N random ids)"));
  }

  SessionOptions sessionOptions;
  sessionOptions.model = run.model;
  sessionOptions.cache = run.cache;
  sessionOptions.decode = true;
  sessionOptions.streamRows = run.streamRows;
  sessionOptions.threads = runThreads(run.threads);
  Session session(sessionOptions, llvm::errs());
  if (!session.loadFile(run.file))
    return 1;
  auto start = SteadyClock::now();
  std::unique_ptr<codegen::JitModel> jit = session.jit();
  if (!jit)
    return 1;
  double compileMs = millisSince(start);
  codegen::ModelPipeline &model = jit->pipeline();
  int64_t vocab = 0;
  if (Result ok = checkLanguageModel(model, vocab); !ok.ok())
    return commandFail(ok);
  const codegen::TensorInfo &idsInfo = model.inputs()[0];
  if (options.context > 0) {
    // Random ids below the embedding table's rows.
    std::uniform_int_distribution<int32_t> id(
        0, int32_t(std::max<int64_t>(idsInfo.idBound, 1) - 1));
    for (int64_t i = 0; i < options.context; ++i)
      prompt.push_back(id(random));
  }
  codegen::TensorMap weights;
  if (Result loaded = loadRunWeights(run, model, weights); !loaded.ok())
    return commandFail(loaded);
  std::unique_ptr<codegen::Decoder> decoder;
  // A key/value cache (GAU, MHSA) holds the prompt and the steps.
  int64_t capacity = int64_t(prompt.size()) + options.steps;
  if (Result made = jit->decoder(weights, capacity, decoder); !made.ok())
    return commandFail(made);

  // The prompt, a block at a time: the logits kept are one block's.
  std::vector<float> last;
  start = SteadyClock::now();
  for (size_t at = 0; at < prompt.size();) {
    int64_t count =
        std::min<int64_t>(decoder->blockRows(), int64_t(prompt.size() - at));
    if (Result ran = append(*decoder, idsInfo, prompt.data() + at, count,
                            vocab, last);
        !ran.ok())
      return commandFail(ran);
    at += size_t(count);
  }
  double prefillMs = millisSince(start);
  std::vector<int32_t> generated;
  std::vector<double> stepMs;
  bool greedy = options.sample == "greedy";
  for (int64_t k = 0; k < options.steps; ++k) {
    int32_t next = choose(last, greedy, random);
    if (next < 0)
      return commandFail(Result::error(
          ATTN_ERROR_RUNTIME, "the logits after " +
                                  std::to_string(decoder->length()) +
                                  " tokens are not finite: nothing to "
                                  "sample from"));
    generated.push_back(next);
    if (k + 1 == options.steps)
      break; // its logits are not needed
    start = SteadyClock::now();
    if (Result ran = append(*decoder, idsInfo, &next, 1, vocab, last);
        !ran.ok())
      return commandFail(ran);
    stepMs.push_back(millisSince(start));
  }

  if (!options.bench) {
    llvm::outs() << "generated:";
    for (int32_t id : generated)
      llvm::outs() << " " << id;
    llvm::outs() << "\n";
  }
  llvm::outs() << "prompt " << prompt.size() << " tokens, prefill "
               << llvm::format("%.1f", prefillMs) << " ms ("
               << tokensPerSecond(int64_t(prompt.size()), prefillMs)
               << " tokens/s); blocks of " << decoder->blockRows()
               << " rows\n";
  if (!stepMs.empty()) {
    std::vector<double> sorted = stepMs;
    std::sort(sorted.begin(), sorted.end());
    double median = sorted[sorted.size() / 2];
    double total = std::accumulate(sorted.begin(), sorted.end(), 0.0);
    // A step computes its one row (the step kernel, or a model without
    // chunks over its cache); the mean is the rate a long generation sees.
    llvm::outs() << "steps " << stepMs.size() << " at context "
                 << prompt.size() << ".." << decoder->length() << ": "
                 << tokensPerSecond(int64_t(stepMs.size()), total)
                 << " tokens/s (mean "
                 << llvm::format("%.3f", total / double(stepMs.size()))
                 << " ms), median " << llvm::format("%.3f", median)
                 << " ms, min " << llvm::format("%.3f", sorted.front())
                 << " ms, max " << llvm::format("%.3f", sorted.back())
                 << " ms\n";
  }
  llvm::outs() << "state " << decoder->stateBytes() << " bytes ("
               << (model.decodesWithCache()
                       ? "key/value caches of " + std::to_string(capacity) +
                             " tokens, the prompt and the steps"
                       : std::string("the carries, with the current "
                                     "chunk's keys and values; constant in "
                                     "the context"))
               << ")\n";
  llvm::outs() << "time: compile " << llvm::format("%.1f", compileMs)
               << " ms\n";
  return 0;
}

} // namespace attnc::driver
