//===- TargetModel.h - what attnc compiles for --------------------*- C++ -*-===//
//
// This file declares TargetModel: the user's target, parsed once, holding
// the Halide target that code generation compiles for and the budgets that
// attn-tile's cost model and the schedule verifier read (SIMD lanes and
// registers, cache sizes, and on CUDA the limits of a thread block). The
// compilation session parses it from `--target`; attn-tile's `target=`
// option parses the same strings with the same function.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TARGET_TARGETMODEL_H
#define ATTNC_TARGET_TARGETMODEL_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace Halide {
struct Target;
} // namespace Halide

namespace attnc::target {

/// The families whose budgets attnc knows.
enum class TargetKind { generic, avx2, avx512, cuda };

/// A target: its Halide target and its budgets.
struct TargetModel {
  TargetKind kind = TargetKind::generic;
  int64_t vectorLanes = 4;       ///< f32 lanes of a SIMD register; 1 on CUDA.
  int64_t vectorRegisters = 16;  ///< SIMD registers; 0 on CUDA.
  int64_t l1Bytes = 32 * 1024;   ///< L1 data cache per core.
  int64_t l2Bytes = 1024 * 1024; ///< L2 cache per core.
  int64_t maxGpuThreads = 0;     ///< Threads per block; 0 on a CPU.
  int64_t maxThreadTile = 0;     ///< Elements one GPU thread keeps in registers.
  int64_t sharedMemoryBytes = 0; ///< Shared memory per block without opting in; 0 on a CPU.
  /// Most score dot products one GPU thread keeps in registers (blocked
  /// attention); 0 on a CPU.
  int64_t maxThreadScores = 0;
  /// Most elements of a GPU product's block tile (Halide 14 gives every
  /// thread a local copy of the block's accumulators); 0 on a CPU.
  int64_t maxProductTile = 0;

  /// True for CUDA.
  bool isGpu() const { return kind == TargetKind::cuda; }
  /// The family's name: "generic", "x86-64-avx2", "x86-64-avx512" or "cuda".
  llvm::StringRef getName() const;
  /// The Halide target code generation compiles for.
  const Halide::Target &halide() const;
  /// halide()'s target string, features included: what tuning databases
  /// key their rows on (for code that does not include Halide).
  std::string halideString() const;

  /// The budgets of `kind`, with a Halide target of that family for this
  /// machine's OS (cuda: the host with CUDA capability 8.0).
  static TargetModel get(TargetKind kind);
  /// The running machine (Halide's host target): avx512 if it has
  /// AVX-512F, else avx2 if it has AVX2, else generic.
  static TargetModel detectHost();
  /// Parses `spec`: one of the family names of getName(), or a Halide
  /// target string (`host`, `x86-64-linux-avx2`,
  /// `host-cuda-cuda_capability_80`, ...), whose family is cuda with a GPU
  /// feature, else avx512 or avx2 by its x86 features, else generic. On an
  /// unknown spec, std::nullopt with `error` saying what is accepted.
  static std::optional<TargetModel> parse(llvm::StringRef spec,
                                          std::string &error);

  /// This model with another Halide target of the same family.
  TargetModel withHalide(Halide::Target halide) const;

private:
  std::shared_ptr<const Halide::Target> halideTarget;
};

} // namespace attnc::target

#endif // ATTNC_TARGET_TARGETMODEL_H
