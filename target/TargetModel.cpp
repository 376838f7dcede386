//===- TargetModel.cpp - what attnc compiles for --------------------------===//
//
// This file implements TargetModel (see TargetModel.h): the families'
// budgets and the one parser of target strings.
//
//===----------------------------------------------------------------------===//
#include "target/TargetModel.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ErrorHandling.h"

#include <Halide.h>

namespace attnc::target {

namespace {
/// The family of a Halide target.
TargetKind kindOf(const Halide::Target &target) {
  if (target.has_gpu_feature())
    return TargetKind::cuda;
  if (target.arch == Halide::Target::X86 &&
      target.has_feature(Halide::Target::AVX512))
    return TargetKind::avx512;
  if (target.arch == Halide::Target::X86 &&
      target.has_feature(Halide::Target::AVX2))
    return TargetKind::avx2;
  return TargetKind::generic;
}

/// The budgets of `kind` for the Halide target `halide`.
TargetModel withBudgets(TargetKind kind, Halide::Target halide) {
  TargetModel model;
  model.kind = kind;
  switch (kind) {
  case TargetKind::generic:
    break;
  case TargetKind::avx2:
    model.vectorLanes = 8;
    break;
  case TargetKind::avx512:
    model.vectorLanes = 16;
    model.vectorRegisters = 32;
    break;
  case TargetKind::cuda:
    model.vectorLanes = 1;
    model.vectorRegisters = 0;
    model.maxGpuThreads = 1024;
    model.maxThreadTile = 64;
    model.sharedMemoryBytes = 48 * 1024;
    model.maxThreadScores = 64;
    model.maxProductTile = 64 * 64;
    break;
  }
  return model.withHalide(std::move(halide));
}
} // namespace

TargetModel TargetModel::withHalide(Halide::Target halide) const {
  TargetModel model = *this;
  model.halideTarget = std::make_shared<const Halide::Target>(std::move(halide));
  return model;
}

llvm::StringRef TargetModel::getName() const {
  switch (kind) {
  case TargetKind::generic:
    return "generic";
  case TargetKind::avx2:
    return "x86-64-avx2";
  case TargetKind::avx512:
    return "x86-64-avx512";
  case TargetKind::cuda:
    return "cuda";
  }
  llvm_unreachable("unknown target kind");
}

const Halide::Target &TargetModel::halide() const { return *halideTarget; }

std::string TargetModel::halideString() const {
  return halideTarget->to_string();
}

TargetModel TargetModel::get(TargetKind kind) {
  Halide::Target host = Halide::get_host_target();
  Halide::Target halide(host.os, host.arch, host.bits);
  switch (kind) {
  case TargetKind::generic:
    break;
  case TargetKind::avx2:
    halide = Halide::Target(host.os, Halide::Target::X86, 64,
                            {Halide::Target::SSE41, Halide::Target::AVX,
                             Halide::Target::F16C, Halide::Target::FMA,
                             Halide::Target::AVX2});
    break;
  case TargetKind::avx512:
    halide = Halide::Target(host.os, Halide::Target::X86, 64,
                            {Halide::Target::SSE41, Halide::Target::AVX,
                             Halide::Target::F16C, Halide::Target::FMA,
                             Halide::Target::AVX2, Halide::Target::AVX512});
    break;
  case TargetKind::cuda:
    halide = host.with_feature(Halide::Target::CUDA)
                 .with_feature(Halide::Target::CUDACapability80);
    break;
  }
  return withBudgets(kind, halide);
}

TargetModel TargetModel::detectHost() {
  Halide::Target host = Halide::get_host_target();
  return withBudgets(kindOf(host), host);
}

std::optional<TargetModel> TargetModel::parse(llvm::StringRef spec,
                                              std::string &error) {
  std::optional<TargetKind> family =
      llvm::StringSwitch<std::optional<TargetKind>>(spec)
          .Case("generic", TargetKind::generic)
          .Case("x86-64-avx2", TargetKind::avx2)
          .Case("x86-64-avx512", TargetKind::avx512)
          .Case("cuda", TargetKind::cuda)
          .Default(std::nullopt);
  if (family)
    return get(*family);
  std::string halide = spec.empty() ? "host" : spec.str();
  if (!Halide::Target::validate_target_string(halide)) {
    error = "unknown target '" + spec.str() +
            "'; expected host, x86-64-linux-avx2, x86-64-linux-avx512, "
            "arm-64-linux, host-cuda-cuda_capability_80 or another Halide "
            "target string, or one of the families generic, x86-64-avx2, "
            "x86-64-avx512, cuda";
    return std::nullopt;
  }
  Halide::Target target(halide);
  return withBudgets(kindOf(target), target);
}

} // namespace attnc::target
