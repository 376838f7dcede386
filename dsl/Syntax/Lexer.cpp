//===- Lexer.cpp - tokens of the .attn language ---------------------------===//
//
// This file implements the .attn lexer: identifiers, keywords, integer and
// floating-point literals, punctuation and `#` comments.
//
//===----------------------------------------------------------------------===//
#include "dsl/Syntax/Lexer.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace attnc::dsl {

llvm::StringRef spell(TokenKind kind) {
  switch (kind) {
  case TokenKind::Eof: return "end of file";
  case TokenKind::Error: return "invalid token";
  case TokenKind::Identifier: return "identifier";
  case TokenKind::Integer: return "integer";
  case TokenKind::Float: return "number";
  case TokenKind::LBrace: return "'{'";
  case TokenKind::RBrace: return "'}'";
  case TokenKind::LParen: return "'('";
  case TokenKind::RParen: return "')'";
  case TokenKind::LBracket: return "'['";
  case TokenKind::RBracket: return "']'";
  case TokenKind::Comma: return "','";
  case TokenKind::Colon: return "':'";
  case TokenKind::Equal: return "'='";
  case TokenKind::At: return "'@'";
  case TokenKind::Plus: return "'+'";
  case TokenKind::Minus: return "'-'";
  case TokenKind::Star: return "'*'";
  case TokenKind::Slash: return "'/'";
  case TokenKind::Caret: return "'^'";
  case TokenKind::Dot: return "'.'";
  case TokenKind::KwModel: return "'model'";
  case TokenKind::KwDim: return "'dim'";
  case TokenKind::KwInput: return "'input'";
  case TokenKind::KwOutput: return "'output'";
  case TokenKind::KwParam: return "'param'";
  case TokenKind::KwRepeat: return "'repeat'";
  case TokenKind::KwAs: return "'as'";
  case TokenKind::KwTrue: return "'true'";
  case TokenKind::KwFalse: return "'false'";
  case TokenKind::KwNone: return "'none'";
  }
  return "token";
}

Token Lexer::make(TokenKind kind, const char *start) const {
  Token tok;
  tok.kind = kind;
  tok.text = llvm::StringRef(start, cur - start);
  return tok;
}

Token Lexer::error(const char *start, const llvm::Twine &message) {
  diags.error(llvm::SMLoc::getFromPointer(start), message);
  return make(TokenKind::Error, start);
}

static bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool isDigit(char c) { return c >= '0' && c <= '9'; }
static bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

Token Lexer::next() {
  const char *end = buffer.end();
  // Skip whitespace and comments.
  while (cur < end) {
    char c = *cur;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
        c == '\v') {
      ++cur;
    } else if (c == '#') {
      while (cur < end && *cur != '\n')
        ++cur;
    } else {
      break;
    }
  }
  if (cur >= end)
    return make(TokenKind::Eof, end);

  const char *start = cur;
  char c = *cur++;
  switch (c) {
  case '{': return make(TokenKind::LBrace, start);
  case '}': return make(TokenKind::RBrace, start);
  case '(': return make(TokenKind::LParen, start);
  case ')': return make(TokenKind::RParen, start);
  case '[': return make(TokenKind::LBracket, start);
  case ']': return make(TokenKind::RBracket, start);
  case ',': return make(TokenKind::Comma, start);
  case ':': return make(TokenKind::Colon, start);
  case '=': return make(TokenKind::Equal, start);
  case '@': return make(TokenKind::At, start);
  case '+': return make(TokenKind::Plus, start);
  case '-': return make(TokenKind::Minus, start);
  case '*': return make(TokenKind::Star, start);
  case '/': return make(TokenKind::Slash, start);
  case '^': return make(TokenKind::Caret, start);
  case '.':
    if (cur < end && isDigit(*cur))
      return lexNumber(start);
    return make(TokenKind::Dot, start);
  default:
    break;
  }
  if (isDigit(c))
    return lexNumber(start);
  if (isIdentStart(c))
    return lexIdentifier(start);

  unsigned char byte = static_cast<unsigned char>(c);
  if (byte >= 0x20 && byte < 0x7f)
    return error(start, "unexpected character '" + llvm::Twine(c) + "'");
  std::string hex;
  llvm::raw_string_ostream(hex) << llvm::format_hex(byte, 4);
  return error(start, "unexpected byte " + hex +
                          " (only ASCII is allowed outside comments)");
}

Token Lexer::lexNumber(const char *start) {
  const char *end = buffer.end();
  cur = start;
  bool isFloat = false;
  while (cur < end && isDigit(*cur))
    ++cur;
  if (cur < end && *cur == '.') {
    isFloat = true;
    ++cur;
    while (cur < end && isDigit(*cur))
      ++cur;
  }
  if (cur < end && (*cur == 'e' || *cur == 'E')) {
    const char *expStart = cur;
    ++cur;
    if (cur < end && (*cur == '+' || *cur == '-'))
      ++cur;
    if (cur >= end || !isDigit(*cur))
      return error(expStart, "expected digits in the exponent of a number");
    while (cur < end && isDigit(*cur))
      ++cur;
    isFloat = true;
  }
  if (cur < end && isIdentStart(*cur))
    return error(cur, "unexpected character '" + llvm::Twine(*cur) +
                          "' after a number");
  std::string text(start, cur - start);
  Token tok = make(isFloat ? TokenKind::Float : TokenKind::Integer, start);
  if (isFloat) {
    errno = 0;
    tok.number = std::strtod(text.c_str(), nullptr);
    if (errno == ERANGE || !std::isfinite(tok.number))
      return error(start, "number '" + text + "' is out of range");
  } else {
    errno = 0;
    long long value = std::strtoll(text.c_str(), nullptr, 10);
    if (errno == ERANGE || value > (int64_t(1) << 53))
      return error(start, "integer '" + text + "' is too large (at most 2^53)");
    tok.integer = value;
    tok.number = static_cast<double>(value);
  }
  return tok;
}

Token Lexer::lexIdentifier(const char *start) {
  const char *end = buffer.end();
  while (cur < end && isIdentChar(*cur))
    ++cur;
  llvm::StringRef text(start, cur - start);
  TokenKind kind = llvm::StringSwitch<TokenKind>(text)
                       .Case("model", TokenKind::KwModel)
                       .Case("dim", TokenKind::KwDim)
                       .Case("input", TokenKind::KwInput)
                       .Case("output", TokenKind::KwOutput)
                       .Case("param", TokenKind::KwParam)
                       .Case("repeat", TokenKind::KwRepeat)
                       .Case("as", TokenKind::KwAs)
                       .Case("true", TokenKind::KwTrue)
                       .Case("false", TokenKind::KwFalse)
                       .Case("none", TokenKind::KwNone)
                       .Default(TokenKind::Identifier);
  return make(kind, start);
}

} // namespace attnc::dsl
