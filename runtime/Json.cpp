//===- Json.cpp - a small strict JSON parser for file headers -------------===//
//
// This file implements a recursive-descent JSON parser over a byte buffer.
// Recursion is bounded by kMaxJsonDepth and every loop consumes input, so
// the parser terminates on any input without crashing.
//
//===----------------------------------------------------------------------===//
#include "runtime/Json.h"

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

/// The parser state: the text, the position, and the first error.
class JsonParser {
public:
  explicit JsonParser(std::string_view text) : text(text) {}

  bool parseDocument(JsonValue &out, std::string &error) {
    skipWhitespace();
    bool ok = parseValue(out, 0);
    if (ok) {
      skipWhitespace();
      if (pos != text.size())
        ok = fail("unexpected data after the top-level value");
    }
    if (!ok)
      error = message;
    return ok;
  }

private:
  std::string_view text;
  size_t pos = 0;
  std::string message;

  bool fail(const std::string &what) {
    message = what + " at byte " + std::to_string(pos);
    return false;
  }
  bool atEnd() const { return pos >= text.size(); }
  unsigned char peek() const { return static_cast<unsigned char>(text[pos]); }

  void skipWhitespace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
                        peek() == '\r'))
      ++pos;
  }

  bool expectLiteral(std::string_view word) {
    if (text.substr(pos, word.size()) != word)
      return fail("invalid literal");
    pos += word.size();
    return true;
  }

  bool parseValue(JsonValue &out, int depth) {
    if (atEnd())
      return fail("unexpected end of input");
    switch (peek()) {
    case '{':
      return parseObject(out, depth + 1);
    case '[':
      return parseArray(out, depth + 1);
    case '"':
      out.kind = JsonValue::Kind::String;
      return parseString(out.text);
    case 't':
      out.kind = JsonValue::Kind::Bool;
      out.boolean = true;
      return expectLiteral("true");
    case 'f':
      out.kind = JsonValue::Kind::Bool;
      out.boolean = false;
      return expectLiteral("false");
    case 'n':
      out.kind = JsonValue::Kind::Null;
      return expectLiteral("null");
    default:
      if (peek() == '-' || (peek() >= '0' && peek() <= '9'))
        return parseNumber(out);
      return fail("unexpected character " + describe(peek()));
    }
  }

  static std::string describe(unsigned char c) {
    char buf[16];
    if (c >= 0x20 && c < 0x7f)
      std::snprintf(buf, sizeof(buf), "'%c'", c);
    else
      std::snprintf(buf, sizeof(buf), "0x%02x", c);
    return buf;
  }

  bool parseObject(JsonValue &out, int depth) {
    if (depth > kMaxJsonDepth)
      return fail("nesting deeper than " + std::to_string(kMaxJsonDepth));
    out.kind = JsonValue::Kind::Object;
    ++pos; // '{'
    skipWhitespace();
    if (!atEnd() && peek() == '}') {
      ++pos;
      return true;
    }
    while (true) {
      skipWhitespace();
      if (atEnd() || peek() != '"')
        return fail("expected a string key");
      std::string key;
      if (!parseString(key))
        return false;
      skipWhitespace();
      if (atEnd() || peek() != ':')
        return fail("expected ':' after key");
      ++pos;
      skipWhitespace();
      out.keys.push_back(std::move(key));
      out.items.emplace_back();
      if (!parseValue(out.items.back(), depth))
        return false;
      skipWhitespace();
      if (atEnd())
        return fail("unterminated object");
      if (peek() == '}') {
        ++pos;
        return true;
      }
      if (peek() != ',')
        return fail("expected ',' or '}' in object");
      ++pos;
    }
  }

  bool parseArray(JsonValue &out, int depth) {
    if (depth > kMaxJsonDepth)
      return fail("nesting deeper than " + std::to_string(kMaxJsonDepth));
    out.kind = JsonValue::Kind::Array;
    ++pos; // '['
    skipWhitespace();
    if (!atEnd() && peek() == ']') {
      ++pos;
      return true;
    }
    while (true) {
      skipWhitespace();
      out.items.emplace_back();
      if (!parseValue(out.items.back(), depth))
        return false;
      skipWhitespace();
      if (atEnd())
        return fail("unterminated array");
      if (peek() == ']') {
        ++pos;
        return true;
      }
      if (peek() != ',')
        return fail("expected ',' or ']' in array");
      ++pos;
    }
  }

  bool parseHex4(uint32_t &value) {
    if (text.size() - pos < 4)
      return fail("truncated \\u escape");
    value = 0;
    for (int i = 0; i < 4; ++i) {
      unsigned char c = peek();
      uint32_t digit;
      if (c >= '0' && c <= '9')
        digit = c - '0';
      else if (c >= 'a' && c <= 'f')
        digit = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        digit = c - 'A' + 10;
      else
        return fail("invalid hex digit in \\u escape");
      value = value * 16 + digit;
      ++pos;
    }
    return true;
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  bool parseEscape(std::string &out) {
    ++pos; // '\\'
    if (atEnd())
      return fail("unterminated escape");
    unsigned char c = peek();
    ++pos;
    switch (c) {
    case '"':
      out += '"';
      return true;
    case '\\':
      out += '\\';
      return true;
    case '/':
      out += '/';
      return true;
    case 'b':
      out += '\b';
      return true;
    case 'f':
      out += '\f';
      return true;
    case 'n':
      out += '\n';
      return true;
    case 'r':
      out += '\r';
      return true;
    case 't':
      out += '\t';
      return true;
    case 'u':
      break;
    default:
      --pos;
      return fail("invalid escape \\" + std::string(1, static_cast<char>(c)));
    }
    uint32_t cp = 0;
    if (!parseHex4(cp))
      return false;
    if (cp >= 0xdc00 && cp <= 0xdfff)
      return fail("unpaired low surrogate in \\u escape");
    if (cp >= 0xd800 && cp <= 0xdbff) {
      if (text.substr(pos, 2) != "\\u")
        return fail("unpaired high surrogate in \\u escape");
      pos += 2;
      uint32_t low = 0;
      if (!parseHex4(low))
        return false;
      if (low < 0xdc00 || low > 0xdfff)
        return fail("invalid low surrogate in \\u escape");
      cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    }
    appendUtf8(out, cp);
    return true;
  }

  /// Copies one well-formed UTF-8 sequence starting at pos (lead >= 0x80).
  bool copyUtf8(std::string &out) {
    unsigned char lead = peek();
    size_t length;
    uint32_t cp = 0;
    if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2;
      cp = lead & 0x1f;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      cp = lead & 0x0f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      cp = lead & 0x07;
    } else {
      return fail("invalid utf-8 in string");
    }
    if (text.size() - pos < length)
      return fail("truncated utf-8 in string");
    for (size_t i = 1; i < length; ++i) {
      unsigned char c = static_cast<unsigned char>(text[pos + i]);
      if ((c & 0xc0) != 0x80)
        return fail("invalid utf-8 in string");
      cp = (cp << 6) | (c & 0x3f);
    }
    static const uint32_t minimum[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < minimum[length] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return fail("invalid utf-8 in string");
    out.append(text.data() + pos, length);
    pos += length;
    return true;
  }

  bool parseString(std::string &out) {
    ++pos; // opening quote
    while (true) {
      if (atEnd())
        return fail("unterminated string");
      unsigned char c = peek();
      if (c == '"') {
        ++pos;
        return true;
      }
      if (c == '\\') {
        if (!parseEscape(out))
          return false;
      } else if (c < 0x20) {
        return fail("unescaped control character in string");
      } else if (c >= 0x80) {
        if (!copyUtf8(out))
          return false;
      } else {
        out += static_cast<char>(c);
        ++pos;
      }
    }
  }

  bool parseNumber(JsonValue &out) {
    size_t start = pos;
    bool negative = false;
    if (peek() == '-') {
      negative = true;
      ++pos;
    }
    auto isDigit = [&] { return !atEnd() && peek() >= '0' && peek() <= '9'; };
    if (!isDigit())
      return fail("invalid number");
    if (peek() == '0' && pos + 1 < text.size() && text[pos + 1] >= '0' &&
        text[pos + 1] <= '9')
      return fail("leading zero in number");
    // Accumulate the magnitude as a negative number so INT64_MIN fits.
    int64_t value = 0;
    bool overflow = false;
    const int64_t lowest = std::numeric_limits<int64_t>::min();
    while (isDigit()) {
      int digit = peek() - '0';
      if (value < (lowest + digit) / 10)
        overflow = true;
      else
        value = value * 10 - digit;
      ++pos;
    }
    bool isInteger = true;
    if (!atEnd() && peek() == '.') {
      isInteger = false;
      ++pos;
      if (!isDigit())
        return fail("expected a digit after '.'");
      while (isDigit())
        ++pos;
    }
    if (!atEnd() && (peek() == 'e' || peek() == 'E')) {
      isInteger = false;
      ++pos;
      if (!atEnd() && (peek() == '+' || peek() == '-'))
        ++pos;
      if (!isDigit())
        return fail("expected a digit in exponent");
      while (isDigit())
        ++pos;
    }
    out.text.assign(text.data() + start, pos - start);
    if (!isInteger) {
      out.kind = JsonValue::Kind::Number;
      return true;
    }
    out.kind = JsonValue::Kind::Integer;
    if (!negative && value == lowest)
      overflow = true;
    out.integerOverflow = overflow;
    out.integer = overflow ? 0 : (negative ? value : -value);
    return true;
  }
};

} // namespace

bool attnc::runtime::parseJson(std::string_view text, JsonValue &out,
                               std::string &error) {
  out = JsonValue();
  JsonParser parser(text);
  return parser.parseDocument(out, error);
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
