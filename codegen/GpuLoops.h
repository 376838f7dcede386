//===- GpuLoops.h - GPU loop mapping, on the device or on the host -*- C++ -*-===//
//
// This file declares GpuLoops, through which code generation marks loops as
// GPU blocks and threads and stages as GPU shared memory. On a CUDA target
// these are Halide's gpu_blocks, gpu_threads and MemoryType::GPUShared. With
// CodegenOptions::gpuOnHost the same loop nests run on the host instead:
// block loops in parallel, thread loops serially, shared stages in host
// memory. Halide 14 cannot run GPU loops on a CPU target, and a schedule
// does not change what a pipeline computes, so this is how the tests check
// the results of the GPU schedules (tiles, staging, tails) without a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_GPULOOPS_H
#define ATTNC_CODEGEN_GPULOOPS_H

#include <Halide.h>

#include <vector>

namespace attnc::codegen {

class GpuLoops {
public:
  explicit GpuLoops(bool onHost) : onHost(onHost) {}

  /// Marks 1 to 3 loops of `stage` (innermost first) as GPU block indices.
  void blocks(Halide::Stage stage,
              const std::vector<Halide::VarOrRVar> &loops) const;
  /// Marks 1 to 3 loops of `stage` (innermost first) as GPU thread indices.
  void threads(Halide::Stage stage,
               const std::vector<Halide::VarOrRVar> &loops) const;
  /// Splits x (and y) by the tile, blocks outside, threads inside.
  void tile(Halide::Stage stage, const Halide::VarOrRVar &x,
            const Halide::VarOrRVar &y, const Halide::VarOrRVar &bx,
            const Halide::VarOrRVar &by, const Halide::VarOrRVar &tx,
            const Halide::VarOrRVar &ty, int tileX, int tileY,
            Halide::TailStrategy tail) const;
  void tile(Halide::Stage stage, const Halide::VarOrRVar &x,
            const Halide::VarOrRVar &bx, const Halide::VarOrRVar &tx,
            int tileX, Halide::TailStrategy tail) const;
  /// Stores `func` in GPU shared memory (one copy per block).
  void shared(Halide::Func func) const;
  /// Computes `panel`, a 2-D (or more, the rest of extent 1) staging
  /// buffer, at block level `at` in shared memory, its two inner axes
  /// fused and dealt out over threadsX x threadsY threads, the innermost
  /// axis fastest (neighbouring threads read neighbouring addresses).
  void stage(Halide::Func panel, const Halide::LoopLevel &at, int threadsX,
             int threadsY) const;
  /// Keeps `func`, computed at block level, in each thread's registers
  /// (the part a thread owns).
  void registers(Halide::Func func) const;

private:
  bool onHost;
};

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_GPULOOPS_H
