//===- GpuLoops.cpp - GPU loop mapping, on the device or on the host ------===//
//
// This file implements GpuLoops (see GpuLoops.h).
//
//===----------------------------------------------------------------------===//
#include "codegen/GpuLoops.h"

#include <cassert>

namespace attnc::codegen {

using namespace Halide;

void GpuLoops::blocks(Stage stage, const std::vector<VarOrRVar> &loops) const {
  if (onHost) {
    for (const VarOrRVar &loop : loops)
      stage.parallel(loop);
    return;
  }
  assert(!loops.empty() && loops.size() <= 3 && "1 to 3 block dimensions");
  if (loops.size() == 1)
    stage.gpu_blocks(loops[0]);
  else if (loops.size() == 2)
    stage.gpu_blocks(loops[0], loops[1]);
  else
    stage.gpu_blocks(loops[0], loops[1], loops[2]);
}

void GpuLoops::threads(Stage stage, const std::vector<VarOrRVar> &loops) const {
  if (onHost)
    return; // the threads of one block run one after the other
  assert(!loops.empty() && loops.size() <= 3 && "1 to 3 thread dimensions");
  if (loops.size() == 1)
    stage.gpu_threads(loops[0]);
  else if (loops.size() == 2)
    stage.gpu_threads(loops[0], loops[1]);
  else
    stage.gpu_threads(loops[0], loops[1], loops[2]);
}

void GpuLoops::tile(Stage stage, const VarOrRVar &x, const VarOrRVar &y,
                    const VarOrRVar &bx, const VarOrRVar &by,
                    const VarOrRVar &tx, const VarOrRVar &ty, int tileX,
                    int tileY, TailStrategy tail) const {
  stage.tile(x, y, bx, by, tx, ty, tileX, tileY, tail);
  blocks(stage, {bx, by});
  threads(stage, {tx, ty});
}

void GpuLoops::tile(Stage stage, const VarOrRVar &x, const VarOrRVar &bx,
                    const VarOrRVar &tx, int tileX, TailStrategy tail) const {
  stage.split(x, bx, tx, tileX, tail);
  blocks(stage, {bx});
  threads(stage, {tx});
}

void GpuLoops::shared(Func func) const {
  if (!onHost)
    func.store_in(MemoryType::GPUShared);
}

void GpuLoops::stage(Func panel, const LoopLevel &at, int threadsX,
                     int threadsY) const {
  std::vector<Var> args = panel.args(); // innermost first
  Var all("all"), dealt("dealt"), pass("pass"), x("sx"), y("sy");
  panel.compute_at(at)
      .fuse(args[0], args[1], all)
      .split(all, pass, dealt, threadsX * threadsY, TailStrategy::GuardWithIf)
      .split(dealt, y, x, threadsX, TailStrategy::GuardWithIf)
      .reorder(pass, x, y);
  shared(panel);
  threads(panel, {x, y});
}

void GpuLoops::registers(Func func) const {
  if (!onHost)
    func.store_in(MemoryType::Register);
}

} // namespace attnc::codegen
