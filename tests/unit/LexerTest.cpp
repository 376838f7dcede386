//===- LexerTest.cpp - tests of the .attn lexer ---------------------------===//
//
// This file tests the token stream of the .attn lexer (keywords, numbers,
// punctuation, comments) and its lexical errors, each asserted with its
// exact line, column and message.
//
//===----------------------------------------------------------------------===//
#include "FrontendTestUtil.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace attnc::dsl;
using namespace attnc::dsl::test;
using ::testing::HasSubstr;

namespace {

std::vector<TokenKind> kinds(const std::vector<Token> &tokens) {
  std::vector<TokenKind> out;
  for (const Token &tok : tokens)
    out.push_back(tok.kind);
  return out;
}

std::vector<std::string> texts(const std::vector<Token> &tokens) {
  std::vector<std::string> out;
  for (const Token &tok : tokens)
    out.push_back(tok.text.str());
  return out;
}

TEST(LexerTest, TokenizesModelHeaderAndDeclarations) {
  FrontendRun run("model m { dim d = 512, n : seq input x : f32[n, d] }");
  std::vector<Token> tokens = run.lex();
  using K = TokenKind;
  EXPECT_EQ(kinds(tokens),
            (std::vector<K>{K::KwModel, K::Identifier, K::LBrace, K::KwDim,
                            K::Identifier, K::Equal, K::Integer, K::Comma,
                            K::Identifier, K::Colon, K::Identifier,
                            K::KwInput, K::Identifier, K::Colon,
                            K::Identifier, K::LBracket, K::Identifier,
                            K::Comma, K::Identifier, K::RBracket, K::RBrace,
                            K::Eof}));
  EXPECT_EQ(texts(tokens)[1], "m");
  EXPECT_EQ(texts(tokens)[10], "seq");
  EXPECT_EQ(tokens[6].integer, 512);
  EXPECT_TRUE(run.diagnostics().empty());
}

TEST(LexerTest, RecognizesEveryKeywordAndOperator) {
  FrontendRun run("model dim input output param repeat as true false none "
                  "@ + - * / ^ . ( ) [ ] { } , : =");
  using K = TokenKind;
  EXPECT_EQ(kinds(run.lex()),
            (std::vector<K>{K::KwModel, K::KwDim, K::KwInput, K::KwOutput,
                            K::KwParam, K::KwRepeat, K::KwAs, K::KwTrue,
                            K::KwFalse, K::KwNone, K::At, K::Plus, K::Minus,
                            K::Star, K::Slash, K::Caret, K::Dot, K::LParen,
                            K::RParen, K::LBracket, K::RBracket, K::LBrace,
                            K::RBrace, K::Comma, K::Colon, K::Equal,
                            K::Eof}));
}

TEST(LexerTest, KeywordPrefixesAreIdentifiers) {
  FrontendRun run("models dims input_x asx _none True");
  std::vector<Token> tokens = run.lex();
  ASSERT_EQ(tokens.size(), 7u);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(tokens[i].kind, TokenKind::Identifier) << tokens[i].text.str();
}

TEST(LexerTest, LexesIntegerAndFloatLiterals) {
  FrontendRun run("42 0.5 .25 3. 1e-5 2E+3 7e2");
  std::vector<Token> tokens = run.lex();
  ASSERT_EQ(tokens.size(), 8u);
  EXPECT_EQ(tokens[0].kind, TokenKind::Integer);
  EXPECT_EQ(tokens[0].integer, 42);
  EXPECT_DOUBLE_EQ(tokens[0].number, 42.0);
  EXPECT_EQ(tokens[1].kind, TokenKind::Float);
  EXPECT_DOUBLE_EQ(tokens[1].number, 0.5);
  EXPECT_EQ(tokens[2].kind, TokenKind::Float);
  EXPECT_DOUBLE_EQ(tokens[2].number, 0.25);
  EXPECT_EQ(tokens[3].kind, TokenKind::Float);
  EXPECT_EQ(tokens[3].text, "3.");
  EXPECT_DOUBLE_EQ(tokens[3].number, 3.0);
  EXPECT_EQ(tokens[4].kind, TokenKind::Float);
  EXPECT_DOUBLE_EQ(tokens[4].number, 1e-5);
  EXPECT_EQ(tokens[5].kind, TokenKind::Float);
  EXPECT_DOUBLE_EQ(tokens[5].number, 2000.0);
  EXPECT_EQ(tokens[6].kind, TokenKind::Float);
  EXPECT_DOUBLE_EQ(tokens[6].number, 700.0);
  EXPECT_TRUE(run.diagnostics().empty());
}

TEST(LexerTest, LargestAllowedIntegerIsTwoToThe53) {
  FrontendRun run("9007199254740992");
  std::vector<Token> tokens = run.lex();
  EXPECT_EQ(tokens[0].kind, TokenKind::Integer);
  EXPECT_EQ(tokens[0].integer, int64_t(1) << 53);
  EXPECT_TRUE(run.diagnostics().empty());
}

TEST(LexerTest, DotFollowedByNameIsATransposeDot) {
  FrontendRun run("x.T");
  using K = TokenKind;
  EXPECT_EQ(kinds(run.lex()),
            (std::vector<K>{K::Identifier, K::Dot, K::Identifier, K::Eof}));
}

TEST(LexerTest, SkipsCommentsIncludingNonAsciiText) {
  FrontendRun run("# header comment \xc3\xa9\xe2\x86\x92\n"
                  "dim # trailing\n"
                  "d#no space\n");
  std::vector<Token> tokens = run.lex();
  using K = TokenKind;
  EXPECT_EQ(kinds(tokens), (std::vector<K>{K::KwDim, K::Identifier, K::Eof}));
  EXPECT_EQ(run.lineColumn(tokens[1].loc()), std::make_pair(3u, 1u));
  EXPECT_TRUE(run.diagnostics().empty());
}

TEST(LexerTest, EofRepeatsAtTheEndOfTheBuffer) {
  FrontendRun run("x  ");
  Lexer lexer(run.source(), run.engine());
  EXPECT_EQ(lexer.next().kind, TokenKind::Identifier);
  for (int i = 0; i < 3; ++i) {
    Token eof = lexer.next();
    EXPECT_EQ(eof.kind, TokenKind::Eof);
    EXPECT_EQ(run.lineColumn(eof.loc()), std::make_pair(1u, 4u));
  }
}

TEST(LexerTest, TokenLocationsAreLineAndColumn) {
  FrontendRun run("model m {\n\tdim d = 4\n  }");
  std::vector<Token> tokens = run.lex();
  ASSERT_EQ(tokens.size(), 9u);
  EXPECT_EQ(run.lineColumn(tokens[3].loc()), std::make_pair(2u, 2u));
  EXPECT_EQ(run.lineColumn(tokens[7].loc()), std::make_pair(3u, 3u));
  EXPECT_EQ(run.lineColumn(tokens[8].loc()), std::make_pair(3u, 4u));
}

TEST(LexerTest, ReportsUnexpectedCharacter) {
  FrontendRun run("model m {\n  y = x $ 2\n}");
  std::vector<Token> tokens = run.lex();
  EXPECT_EQ(tokens[6].kind, TokenKind::Error);
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 2u);
  EXPECT_EQ(diag.column, 9u);
  EXPECT_THAT(diag.message, HasSubstr("unexpected character '$'"));
}

TEST(LexerTest, ReportsNonAsciiByteOutsideComments) {
  FrontendRun run("model m {\n  dim d\xc3\xa9 = 4\n}");
  run.lex();
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 2u);
  EXPECT_EQ(diag.column, 8u);
  EXPECT_THAT(diag.message, HasSubstr("unexpected byte 0xc3"));
  EXPECT_THAT(diag.message, HasSubstr("only ASCII"));
}

TEST(LexerTest, ReportsExponentWithoutDigits) {
  FrontendRun run("model m {\n  dim d = 1e+\n}");
  run.lex();
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 2u);
  EXPECT_EQ(diag.column, 12u);
  EXPECT_THAT(diag.message,
              HasSubstr("expected digits in the exponent of a number"));
}

TEST(LexerTest, ReportsIntegerTooLarge) {
  FrontendRun run("model m {\n  dim d = 9007199254740993\n}");
  run.lex();
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 2u);
  EXPECT_EQ(diag.column, 11u);
  EXPECT_THAT(diag.message, HasSubstr("integer '9007199254740993' is too "
                                      "large (at most 2^53)"));
}

TEST(LexerTest, ReportsIntegerBeyondInt64) {
  FrontendRun run("dim d = 99999999999999999999999");
  run.lex();
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 1u);
  EXPECT_EQ(diag.column, 9u);
  EXPECT_THAT(diag.message, HasSubstr("is too large"));
}

TEST(LexerTest, ReportsLetterGluedToNumber) {
  FrontendRun run("dim d = 64d");
  run.lex();
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 1u);
  EXPECT_EQ(diag.column, 11u);
  EXPECT_THAT(diag.message, HasSubstr("unexpected character 'd' after a number"));
}

TEST(LexerTest, ReportsFloatOutOfRange) {
  FrontendRun run("eps = 1e999");
  run.lex();
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 1u);
  EXPECT_EQ(diag.column, 7u);
  EXPECT_THAT(diag.message, HasSubstr("number '1e999' is out of range"));
}

} // namespace
