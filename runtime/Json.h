//===- Json.h - strict JSON parsing for file headers ------------*- C++ -*-===//
//
// This file declares the JSON parser behind the safetensors reader, a thin
// layer over nlohmann/json's SAX parser (Json.cpp; nlohmann stays out of
// this header). It accepts exactly RFC 8259 JSON (no comments, no trailing
// commas, no NaN, no byte order mark, no NUL bytes), validates UTF-8 and
// \uXXXX escapes including surrogate pairs, keeps integers exact (with an
// overflow flag) and keeps other numbers as their source text. Nesting is
// limited, so no input can build a tree deep enough to exhaust the stack;
// every input either parses or yields a message with the byte offset of the
// problem.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_JSON_H
#define ATTNC_RUNTIME_JSON_H

#include "runtime/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnc::runtime {

/// A parsed JSON value. Objects keep their members in file order, duplicate
/// keys included (callers decide whether duplicates are an error).
struct JsonValue {
  /// The kind of a value; Integer is a number without fraction or exponent,
  /// Number any other number.
  enum class Kind { Null, Bool, Integer, Number, String, Array, Object };

  Kind kind = Kind::Null;
  /// The value of a Bool.
  bool boolean = false;
  /// The value of an Integer (valid unless integerOverflow).
  int64_t integer = 0;
  /// True if an Integer does not fit in int64_t.
  bool integerOverflow = false;
  /// The text of a String (decoded, UTF-8) or the source text of a number.
  std::string text;
  /// The elements of an Array, or the member values of an Object.
  std::vector<JsonValue> items;
  /// The member keys of an Object, parallel to items.
  std::vector<std::string> keys;

  /// Returns the value of member \p key of an Object (the first one if the
  /// key repeats), or nullptr.
  const JsonValue *find(std::string_view key) const;

  /// Returns a short name of the kind ("an object", "a string", ...) for
  /// messages.
  const char *kindName() const;
};

/// The deepest nesting of arrays and objects that parseJson accepts.
constexpr int kMaxJsonDepth = 64;

/// Parses \p text as one JSON value surrounded by optional whitespace. On
/// failure returns ATTN_ERROR_FORMAT with a lowercase message that includes
/// the byte offset ("unterminated string at byte 17"), except for nesting
/// deeper than kMaxJsonDepth ("nesting deeper than 64"). Numbers beyond the
/// range of a double (1e400) are errors.
Result parseJson(std::string_view text, JsonValue &out);

/// Appends \p text to \p out as a JSON string literal (quotes included),
/// escaping quotes, backslashes and control characters.
void appendJsonString(std::string &out, std::string_view text);

} // namespace attnc::runtime

#endif // ATTNC_RUNTIME_JSON_H
