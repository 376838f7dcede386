//===- ModuleParts.h - a kernel's module in parts on threads ----*- C++ -*-===//
//
// Halide 14 compiles a module to one LLVM module on one thread: for one
// FLASH layer about half of a cold compile. Its functions (the kernel and
// the closures of its parallel loops) only refer to one another by symbol,
// so the module can be compiled as parts, each defining some of them: every
// part declares all of them (Halide resolves a closure by name within its
// module), defines its own, and has stand-ins for the others (a body that
// returns 0). The stand-ins' symbols are then made weak in the part's
// object, so that linking the parts keeps each function's one real
// definition.
//
// This rests on how Halide 14 refers to the functions: a closure only by
// its address, passed to the runtime's halide_do_par_for (never called
// directly), and the kernel only from its argv wrapper, which is always in
// the same part. LLVM optimises each part with its stand-ins as the
// definitions (ExternalLinkage, not interposable), so a direct call from a
// real function to a stand-in could be folded to its `return 0`; a Halide
// that made such calls would need this revisited. References go through
// the symbol (PIC, default visibility, never dso_local in Halide 14), so
// the linker binds them to the real definitions.
//
// Only for objects linked together at once (the JIT's shared objects): in a
// static archive the linker does not pull a member to replace a weak
// definition it already has, so lib<model>.a keeps one object per kernel.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_MODULEPARTS_H
#define ATTNC_CODEGEN_MODULEPARTS_H

#include <Halide.h>

#include <string>
#include <vector>

namespace attnc::codegen {

/// A part of a module: the module to compile, and the symbols of its
/// stand-ins, to be made weak in its object.
struct ModulePart {
  Halide::Module module;
  std::vector<std::string> standIns;
};

/// `module` in up to `count` parts of about equal size (its functions'
/// statements weighed by their loads, stores and calls): one part, the
/// module itself, when it has a single function, submodules or embedded
/// buffers, C++-mangled names, or a target whose objects are not ELF.
std::vector<ModulePart> splitModule(const Halide::Module &module, size_t count);

/// Makes the global definitions named `symbols` in the ELF object at
/// `path` weak. Returns an error message, or "" on success (every symbol
/// found and defined).
std::string weakenSymbols(const std::string &path,
                          const std::vector<std::string> &symbols);

/// Compiles `module` to objects in `directory`, its parts on threads of
/// their own (splitModule with `threads`), and returns their paths.
/// `millis` grows by each part's compile time (ms), added up. Throws what
/// Halide throws.
std::vector<std::string> compileObjects(const Halide::Module &module,
                                        const std::string &directory,
                                        size_t threads, double &millis);

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_MODULEPARTS_H
