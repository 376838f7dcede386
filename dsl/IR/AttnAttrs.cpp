//===- AttnAttrs.cpp - attn dialect enums and attributes ------------------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the generated enum and attribute classes of the attn
// dialect and the custom syntax and verifier of `#attn.mask<kind [size]>`.
//
//===----------------------------------------------------------------------===//

#include "dsl/IR/AttnDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#include "dsl/IR/AttnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dsl/IR/AttnAttrs.cpp.inc"

void AttnDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dsl/IR/AttnAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// MaskAttr
//===----------------------------------------------------------------------===//

/// True for the mask kinds that carry a size.
static bool hasSize(MaskKind kind) {
  return kind != MaskKind::none && kind != MaskKind::causal;
}

/// Parses `<none>`, `<causal>`, `<window 64>`, `<chunk 256>`, `<band 64>` or
/// `<causal_chunk 256>`.
Attribute MaskAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return {};
  std::optional<MaskKind> kind = symbolizeMaskKind(keyword);
  if (!kind) {
    parser.emitError(loc) << "unknown mask kind '" << keyword
                          << "', expected none, causal, window, chunk, band or causal_chunk";
    return {};
  }
  int64_t size = 0;
  OptionalParseResult sizeResult = parser.parseOptionalInteger(size);
  if (sizeResult.has_value() && failed(*sizeResult))
    return {};
  if (hasSize(*kind) && !sizeResult.has_value()) {
    parser.emitError(loc) << "mask kind " << keyword
                          << " needs a size, as in #attn.mask<" << keyword
                          << " 64>";
    return {};
  }
  if (parser.parseGreater())
    return {};
  return MaskAttr::getChecked([&] { return parser.emitError(loc); },
                              parser.getContext(), *kind, size);
}

void MaskAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyMaskKind(getKind());
  if (hasSize(getKind()) || getSize() != 0)
    printer << ' ' << getSize();
  printer << '>';
}

LogicalResult MaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               MaskKind kind, int64_t size) {
  if (hasSize(kind) && size < 1)
    return emitError() << "mask " << stringifyMaskKind(kind)
                       << " size must be positive but is " << size;
  if (!hasSize(kind) && size != 0)
    return emitError() << "mask kind " << stringifyMaskKind(kind)
                       << " takes no size but has " << size;
  return success();
}
