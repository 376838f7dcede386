//===- Json.cpp - strict JSON parsing for file headers --------------------===//
//
// This file implements parseJson on top of nlohmann/json's SAX parser: a
// handler builds the JsonValue tree (objects keep duplicate keys, integers
// stay exact with an overflow flag, other numbers keep their source text),
// refuses nesting deeper than kMaxJsonDepth, and turns nlohmann's error
// reports into the runtime's short lowercase messages with a byte offset.
// nlohmann's parser is iterative and validates UTF-8, escapes and
// surrogates itself; the only input it accepts that RFC 8259 parsers need
// not, a leading byte order mark, is refused before it runs.
//
//===----------------------------------------------------------------------===//
#include "runtime/Json.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <limits>

using namespace attnc::runtime;

const JsonValue *JsonValue::find(std::string_view key) const {
  if (kind != Kind::Object)
    return nullptr;
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key)
      return &items[i];
  return nullptr;
}

const char *JsonValue::kindName() const {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a boolean";
  case Kind::Integer:
    return "an integer";
  case Kind::Number:
    return "a non-integer number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "a value";
}

namespace {

/// Names byte \p c in a message: 'x' if printable, 0xNN otherwise.
std::string describeByte(unsigned char c) {
  char buf[16];
  if (c >= 0x20 && c < 0x7f)
    std::snprintf(buf, sizeof(buf), "'%c'", c);
  else
    std::snprintf(buf, sizeof(buf), "0x%02x", c);
  return buf;
}

bool startsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

/// Translates one error report of nlohmann's parser into the runtime's
/// wording. \p position is the number of bytes nlohmann had read (the
/// offending byte is the last of them), \p lastToken the text of the token
/// it stopped on, \p what its message ("[json.exception.parse_error.101]
/// parse error at line 1, column 9: syntax error while parsing object -
/// unexpected number literal; expected '}'"). Reports it does not recognize
/// keep nlohmann's own words.
std::string translateError(std::string_view text, size_t position,
                           const std::string &lastToken, int id,
                           std::string_view what) {
  auto at = [](std::string message, size_t offset) {
    return message + " at byte " + std::to_string(offset);
  };
  size_t last = position == 0 ? 0 : position - 1;
  auto byteAt = [&](size_t offset) {
    return offset < text.size() ? static_cast<unsigned char>(text[offset])
                                : static_cast<unsigned char>(0);
  };
  if (id == 406) // out_of_range: a number that overflows a double
    return at("number " + lastToken + " is out of range", last);

  // "syntax error while parsing <context> - <detail>"
  std::string_view context, detail = what;
  size_t syntax = what.find("syntax error ");
  if (syntax != std::string_view::npos) {
    detail = what.substr(syntax + 13);
    if (startsWith(detail, "while parsing ")) {
      detail.remove_prefix(14);
      size_t dash = detail.find(" - ");
      if (dash != std::string_view::npos) {
        context = detail.substr(0, dash);
        detail.remove_prefix(dash + 3);
      }
    } else if (startsWith(detail, "- ")) {
      detail.remove_prefix(2);
    }
  }

  // nlohmann reads "01" as the numbers 0 and 1.
  if (startsWith(detail, "unexpected number literal") && !lastToken.empty() &&
      lastToken[0] >= '0' && lastToken[0] <= '9' &&
      position >= lastToken.size()) {
    size_t tokenStart = position - lastToken.size();
    if (tokenStart > 0 && byteAt(tokenStart - 1) >= '0' &&
        byteAt(tokenStart - 1) <= '9')
      return at("leading zero in number", tokenStart - 1);
  }

  // Anything after the top-level value, even a malformed token.
  if (detail.find("; expected end of input") != std::string_view::npos)
    return at("unexpected data after the top-level value", last);

  // Where a separator or a key must come, any other token, malformed or
  // not, is reported by what was expected; only a key that is a malformed
  // string gets the string's error. nlohmann also reads a NUL byte as the
  // end of the input; that is not the end.
  bool endOfInput = startsWith(detail, "unexpected end of input") &&
                    text.find('\0') == std::string_view::npos;
  if (context == "array")
    return at(endOfInput ? "unterminated array"
                         : "expected ',' or ']' in array",
              last);
  if (context == "object")
    return at(endOfInput ? "unterminated object"
                         : "expected ',' or '}' in object",
              last);
  if (context == "object separator")
    return at("expected ':' after key", last);
  if (context == "object key" && !startsWith(detail, "invalid string: "))
    return at("expected a string key", last);

  // Errors of the lexer: a malformed token.
  struct LexerError {
    const char *prefix;
    const char *message;
  };
  static const LexerError lexerErrors[] = {
      {"invalid string: missing closing quote", "unterminated string"},
      {"invalid string: surrogate U+D800..U+DBFF must be followed",
       "unpaired high surrogate in \\u escape"},
      {"invalid string: surrogate U+DC00..U+DFFF must follow",
       "unpaired low surrogate in \\u escape"},
      {"invalid string: control character",
       "unescaped control character in string"},
      {"invalid string: ill-formed UTF-8 byte", "invalid utf-8 in string"},
      {"invalid number; expected digit after '.'",
       "expected a digit after '.'"},
      {"invalid number; expected digit after exponent",
       "expected a digit in exponent"},
      {"invalid number; expected '+', '-', or digit after exponent",
       "expected a digit in exponent"},
      {"invalid number", "invalid number"},
  };
  bool atEnd = position >= text.size();
  if (startsWith(detail, "invalid string: forbidden character after backslash"))
    return atEnd && (last >= text.size() || byteAt(last) == '\\')
               ? at("unterminated escape", last)
               : at(std::string("invalid escape \\") +
                        static_cast<char>(byteAt(last)),
                    last);
  if (startsWith(detail, "invalid string: '\\u' must be followed by 4 hex"))
    return at(atEnd ? "truncated \\u escape"
                    : "invalid hex digit in \\u escape",
              last);
  for (const LexerError &error : lexerErrors)
    if (startsWith(detail, error.prefix))
      return at(error.message, last);
  if (startsWith(detail, "invalid literal")) {
    // Either a word that starts like true, false or null but is none of
    // them (nlohmann stops at the first wrong letter), or a byte that
    // starts no value at all.
    size_t start = last;
    while (start > 0 && last - start < 4 &&
           std::string_view("truefalsn").find(text[start - 1]) !=
               std::string_view::npos)
      --start;
    unsigned char first = byteAt(start);
    if (first == 't' || first == 'f' || first == 'n')
      return at("invalid literal", start);
    return at("unexpected character " + describeByte(byteAt(last)), last);
  }

  // Errors of the parser where a value must come.
  if (endOfInput)
    return at("unexpected end of input", text.size());
  if (context == "value")
    return at("unexpected character " + describeByte(byteAt(last)), last);
  return at(std::string(detail), last);
}

/// The SAX handler that builds a JsonValue tree from nlohmann's events.
class TreeBuilder {
public:
  TreeBuilder(std::string_view text, JsonValue &root)
      : text(text), root(root) {}

  /// The message of the first error, empty while there is none.
  std::string message;

  // The interface nlohmann::json::sax_parse expects.
  bool null() {
    add().kind = JsonValue::Kind::Null;
    return true;
  }
  bool boolean(bool value) {
    JsonValue &v = add();
    v.kind = JsonValue::Kind::Bool;
    v.boolean = value;
    return true;
  }
  bool number_integer(int64_t value) {
    JsonValue &v = add();
    v.kind = JsonValue::Kind::Integer;
    v.integer = value;
    v.text = std::to_string(value);
    return true;
  }
  bool number_unsigned(uint64_t value) {
    JsonValue &v = add();
    v.kind = JsonValue::Kind::Integer;
    v.integerOverflow =
        value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    v.integer = v.integerOverflow ? 0 : static_cast<int64_t>(value);
    v.text = std::to_string(value);
    return true;
  }
  bool number_float(double, const std::string &source) {
    // nlohmann reads integers beyond 64 bits as doubles; they stay
    // integers here, flagged as overflowing.
    JsonValue &v = add();
    bool integral = source.find_first_of(".eE") == std::string::npos;
    v.kind = integral ? JsonValue::Kind::Integer : JsonValue::Kind::Number;
    v.integerOverflow = integral;
    v.text = source;
    return true;
  }
  bool string(std::string &value) {
    JsonValue &v = add();
    v.kind = JsonValue::Kind::String;
    v.text = std::move(value);
    return true;
  }
  bool binary(nlohmann::json::binary_t &) {
    return fail("unexpected binary value"); // never produced from JSON text
  }
  bool start_object(std::size_t) { return open(JsonValue::Kind::Object); }
  bool key(std::string &name) {
    openValues.back()->keys.push_back(std::move(name));
    return true;
  }
  bool end_object() {
    openValues.pop_back();
    return true;
  }
  bool start_array(std::size_t) { return open(JsonValue::Kind::Array); }
  bool end_array() {
    openValues.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string &lastToken,
                   const nlohmann::json::exception &error) {
    message = translateError(text, position, lastToken, error.id, error.what());
    return false;
  }

private:
  std::string_view text;
  JsonValue &root;
  /// The arrays and objects being filled, outermost first.
  std::vector<JsonValue *> openValues;

  bool fail(const std::string &what) {
    message = what;
    return false;
  }

  /// Returns the slot of the next value: the root, the next element of
  /// the innermost array, or the value of the key just read.
  JsonValue &add() {
    if (openValues.empty())
      return root;
    openValues.back()->items.emplace_back();
    return openValues.back()->items.back();
  }

  bool open(JsonValue::Kind kind) {
    if (openValues.size() >= static_cast<size_t>(kMaxJsonDepth))
      return fail("nesting deeper than " + std::to_string(kMaxJsonDepth));
    JsonValue &v = add();
    v.kind = kind;
    // The enclosing container does not grow until v is closed, so the
    // pointer stays valid.
    openValues.push_back(&v);
    return true;
  }
};

} // namespace

attnc::runtime::Result attnc::runtime::parseJson(std::string_view text,
                                                 JsonValue &out) {
  out = JsonValue();
  if (!text.empty() && static_cast<unsigned char>(text[0]) == 0xef)
    // nlohmann skips a UTF-8 byte order mark; safetensors headers have none.
    return Result::error(ATTN_ERROR_FORMAT,
                         "unexpected character 0xef at byte 0");
  TreeBuilder builder(text, out);
  bool ok = nlohmann::json::sax_parse(text.begin(), text.end(), &builder,
                                      nlohmann::json::input_format_t::json,
                                      /*strict=*/true,
                                      /*ignore_comments=*/false);
  if (ok) {
    // nlohmann ends the input at a NUL byte, which no JSON text contains
    // outside strings (and its strings refuse it).
    size_t nul = text.find('\0');
    if (nul != std::string_view::npos) {
      builder.message = "unexpected data after the top-level value at byte " +
                        std::to_string(nul);
      ok = false;
    }
  }
  if (!ok) {
    out = JsonValue();
    return Result::error(ATTN_ERROR_FORMAT, builder.message.empty()
                                                ? "invalid JSON"
                                                : builder.message);
  }
  return Result::success();
}

void attnc::runtime::appendJsonString(std::string &out, std::string_view text) {
  out += '"';
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  out += '"';
}
