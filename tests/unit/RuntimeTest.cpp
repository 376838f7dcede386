//===- RuntimeTest.cpp - tests of the attnc runtime library ---------------===//
//
// This file tests the runtime that applications link: safetensors and .npy
// round trips, exact F16/BF16 conversion, the C API of weight sets and
// tensor checks, the C++ wrapper, one test per kind of malformed input (each
// asserting the status and a distinctive part of the message), and a
// mutation smoke test that feeds thousands of corrupted files to the
// readers with a fixed seed.
//
//===----------------------------------------------------------------------===//
#include "runtime/Error.h"
#include "runtime/Json.h"
#include "runtime/Npy.h"
#include "runtime/Safetensors.h"
#include "runtime/attn_runtime.h"
#include "runtime/attn_runtime.hpp"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <unistd.h>

using namespace attnc::runtime;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

/// A safetensors file from a raw header and data section.
std::string safetensorsBytes(const std::string &header,
                             const std::string &data = "") {
  std::string bytes;
  for (int i = 0; i < 8; ++i)
    bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header + data;
}

/// Little-endian bytes of 16-bit values (F16 or BF16 data).
std::string halfBytes(const std::vector<uint16_t> &values) {
  std::string out;
  for (uint16_t v : values) {
    out += static_cast<char>(v & 0xff);
    out += static_cast<char>(v >> 8);
  }
  return out;
}

Result parseSt(const std::string &bytes, SafetensorsFile &out) {
  return parseSafetensors(bytes.data(), bytes.size(), "w.safetensors", out);
}

Result parseSt(const std::string &bytes) {
  SafetensorsFile file;
  return parseSt(bytes, file);
}

Result parseNp(const std::string &bytes) {
  HostTensor array;
  return parseNpy(bytes.data(), bytes.size(), "x.npy", array);
}

/// A .npy file from a header dict (padded by hand) and raw data.
std::string npyBytes(const std::string &dict, const std::string &data,
                     const char *version = "\x01\x00") {
  std::string out("\x93NUMPY", 6);
  out.append(version, 2);
  std::string header = dict + "\n";
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  if (version[0] != 1)
    out.append(2, '\0');
  return out + header + data;
}

/// Expects \p r to have failed with \p status and a message containing
/// \p part.
void expectError(const Result &r, attn_status status, const std::string &part) {
  EXPECT_EQ(r.status, status) << r.message;
  EXPECT_THAT(r.message, HasSubstr(part));
}

/// A fixture with a fresh temporary directory.
class RuntimeFiles : public ::testing::Test {
protected:
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("attn-runtime-test-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string path(const std::string &name) const {
    return (dir / name).string();
  }

  std::filesystem::path dir;
};

//===-- round trips -------------------------------------------------------===//

TEST_F(RuntimeFiles, WeightsSaveThenLoadRoundTripsThroughCApi) {
  std::vector<float> wq = {1, -2, 3.5f, 4, 5, 6};
  std::vector<float> bias = {0.25f, -0.5f};
  float scale = 3.0f;
  const char *names[] = {"layer0.wq", "layer0.bias", "scale"};
  int32_t ranks[] = {2, 1, 0};
  int64_t wqShape[] = {2, 3}, biasShape[] = {2};
  const int64_t *shapes[] = {wqShape, biasShape, nullptr};
  const float *data[] = {wq.data(), bias.data(), &scale};
  std::string file = path("w.safetensors");
  ASSERT_EQ(attn_weights_save(file.c_str(), 3, names, ranks, shapes, data),
            ATTN_OK)
      << attn_error_message();

  attn_weights *weights = nullptr;
  ASSERT_EQ(attn_weights_load(file.c_str(), &weights), ATTN_OK)
      << attn_error_message();
  ASSERT_EQ(attn_weights_count(weights), 3u);
  EXPECT_STREQ(attn_weights_name(weights, 0), "layer0.bias");
  EXPECT_STREQ(attn_weights_name(weights, 1), "layer0.wq");
  EXPECT_STREQ(attn_weights_name(weights, 2), "scale");
  EXPECT_EQ(attn_weights_name(weights, 3), nullptr);
  int32_t rank = -1;
  const int64_t *shape = attn_weights_shape(weights, 1, &rank);
  ASSERT_EQ(rank, 2);
  EXPECT_EQ(shape[0], 2);
  EXPECT_EQ(shape[1], 3);

  const float *got = nullptr;
  ASSERT_EQ(attn_weights_get(weights, "layer0.wq", 2, wqShape, &got), ATTN_OK);
  EXPECT_EQ(std::vector<float>(got, got + 6), wq);
  int64_t anyShape[] = {-1};
  ASSERT_EQ(attn_weights_get(weights, "layer0.bias", 1, anyShape, &got),
            ATTN_OK);
  EXPECT_EQ(std::vector<float>(got, got + 2), bias);
  ASSERT_EQ(attn_weights_get(weights, "scale", 0, nullptr, &got), ATTN_OK);
  EXPECT_EQ(*got, 3.0f);
  attn_weights_free(weights);
}

TEST(SafetensorsWriter, HeaderMatchesReferenceLayoutAndIsPaddedTo8) {
  std::vector<float> a = {1, 2};
  std::string bytes;
  ASSERT_TRUE(serializeSafetensors({{"a", {2}, a.data()}}, {}, bytes).ok());
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})");
  EXPECT_EQ(bytes.size(), 8 + n + 8);
}

TEST(SafetensorsWriter, MetadataAndEscapedNamesRoundTrip) {
  std::vector<float> a = {1, 2, 3, 4};
  std::string bytes;
  std::string name = "odd \"name\"\\\n\xc3\xa9";
  ASSERT_TRUE(serializeSafetensors({{name, {2, 2}, a.data()}},
                                   {{"format", "pt"}}, bytes)
                  .ok());
  SafetensorsFile file;
  Result r = parseSt(bytes, file);
  ASSERT_TRUE(r.ok()) << r.message;
  ASSERT_EQ(file.tensors.size(), 1u);
  EXPECT_EQ(file.tensors[0].name, name);
  EXPECT_EQ(file.tensors[0].data, a);
  EXPECT_EQ(file.metadata.at("format"), "pt");
}

TEST(SafetensorsWriter, RejectsDuplicateAndReservedNames) {
  float x = 1;
  std::string bytes;
  expectError(serializeSafetensors({{"a", {}, &x}, {"a", {}, &x}}, {}, bytes),
              ATTN_ERROR_ARGUMENT, "duplicate tensor name 'a'");
  expectError(serializeSafetensors({{"__metadata__", {}, &x}}, {}, bytes),
              ATTN_ERROR_ARGUMENT, "reserved");
  expectError(serializeSafetensors({{"b", {-1}, &x}}, {}, bytes),
              ATTN_ERROR_ARGUMENT, "invalid shape [-1]");
}

TEST(Safetensors, F16ConvertsExactlyOnRepresentableValues) {
  std::vector<uint16_t> bits = {0x3c00, 0xc000, 0x3800, 0x3555, 0x7bff,
                                0x0001, 0x03ff, 0x8000, 0x7c00, 0xfc00};
  std::string bytes = safetensorsBytes(
      R"({"h":{"dtype":"F16","shape":[10],"data_offsets":[0,20]}})",
      halfBytes(bits));
  SafetensorsFile file;
  Result r = parseSt(bytes, file);
  ASSERT_TRUE(r.ok()) << r.message;
  const std::vector<float> &v = file.tensors[0].data;
  EXPECT_EQ(file.tensors[0].dtype, "F16");
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(v[2], 0.5f);
  EXPECT_EQ(v[3], 0.333251953125f);
  EXPECT_EQ(v[4], 65504.0f);
  EXPECT_EQ(v[5], std::ldexp(1.0f, -24));
  EXPECT_EQ(v[6], std::ldexp(1023.0f, -24));
  EXPECT_EQ(v[7], 0.0f);
  EXPECT_TRUE(std::signbit(v[7]));
  EXPECT_EQ(v[8], INFINITY);
  EXPECT_EQ(v[9], -INFINITY);
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
}

TEST(Safetensors, BF16ConvertsExactlyOnRepresentableValues) {
  std::vector<uint16_t> bits = {0x3f80, 0xc040, 0x4049, 0x7f80, 0x0001};
  std::string bytes = safetensorsBytes(
      R"({"b":{"dtype":"BF16","shape":[5],"data_offsets":[0,10]}})",
      halfBytes(bits));
  SafetensorsFile file;
  Result r = parseSt(bytes, file);
  ASSERT_TRUE(r.ok()) << r.message;
  const std::vector<float> &v = file.tensors[0].data;
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -3.0f);
  EXPECT_EQ(v[2], 3.140625f);
  EXPECT_EQ(v[3], INFINITY);
  EXPECT_EQ(v[4], std::ldexp(1.0f, -133));
}

TEST_F(RuntimeFiles, NpyWriteThenReadRoundTripsRanks0To8) {
  for (size_t rank = 0; rank <= 8; ++rank) {
    std::vector<int64_t> shape(rank, 2);
    if (rank > 0)
      shape[0] = 3;
    size_t count = rank == 0 ? 1 : 3u << (rank - 1);
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i)
      data[i] = 0.5f * static_cast<float>(i) - 7.0f;
    std::string file = path("x" + std::to_string(rank) + ".npy");
    Result w = writeNpy(file, shape, data.data());
    ASSERT_TRUE(w.ok()) << w.message;
    HostTensor array;
    Result r = readNpy(file, array);
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(array.shape, shape);
    EXPECT_EQ(array.data, data);
  }
}

TEST(Npy, WriterMatchesNumpyLayout) {
  std::vector<float> data(6, 1.0f);
  std::string bytes;
  ASSERT_TRUE(serializeNpy({2, 3}, data.data(), bytes).ok());
  std::string expected("\x93NUMPY\x01\x00v\x00", 10);
  expected += "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(bytes.substr(0, expected.size()), expected);
  EXPECT_EQ(bytes[127], '\n');
  EXPECT_EQ(bytes.size(), 128u + 24u);
  std::string vector1;
  ASSERT_TRUE(serializeNpy({4}, data.data(), vector1).ok());
  EXPECT_THAT(vector1, HasSubstr("'shape': (4,), }"));
}

TEST(Npy, ReadsVersion2AndPython2Longs) {
  std::string data(8, '\0');
  HostTensor array;
  std::string bytes =
      npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2L,), }",
               data, "\x02\x00");
  Result r = parseNpy(bytes.data(), bytes.size(), "x.npy", array);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_THAT(array.shape, ElementsAre(2));
}

//===-- malformed safetensors ---------------------------------------------===//

TEST(SafetensorsErrors, TruncatedHeaderLength) {
  expectError(parseSt(std::string("\x10\x00\x00", 3)), ATTN_ERROR_FORMAT,
              "w.safetensors: file of 3 bytes is too short for the 8-byte "
              "header length");
}

TEST(SafetensorsErrors, HeaderLengthLargerThanFile) {
  std::string bytes = safetensorsBytes("{}");
  bytes[0] = 100;
  expectError(parseSt(bytes), ATTN_ERROR_FORMAT,
              "header length 100 exceeds the 2 bytes after the length field");
}

TEST(SafetensorsErrors, InvalidJsonOfSeveralKinds) {
  struct Case {
    const char *header;
    const char *message;
  } cases[] = {
      {R"({"a":{"dtype":"F32)", "unterminated string"},
      {R"({"a":1,})", "expected a string key"},
      {R"({"a" 1})", "expected ':' after key"},
      {R"({"a":"\q"})", "invalid escape \\q"},
      {R"({"a":"\ud800"})", "unpaired high surrogate"},
      {R"({"a":01})", "leading zero in number"},
      {R"({"a":tru})", "invalid literal"},
      {R"({} {})", "unexpected data after the top-level value"},
      {"{\"a\":\"\xff\"}", "invalid utf-8 in string"},
      {"{\"a\":\"\x01\"}", "unescaped control character"},
      {"{\"a\":[1 2]}", "expected ',' or ']' in array"},
  };
  for (const Case &c : cases)
    expectError(parseSt(safetensorsBytes(c.header)), ATTN_ERROR_FORMAT,
                std::string("invalid JSON header: ") + c.message);
  std::string deep = "{\"a\":" + std::string(100000, '[') + "}";
  expectError(parseSt(safetensorsBytes(deep)), ATTN_ERROR_FORMAT,
              "nesting deeper than 64");
}

TEST(SafetensorsErrors, JsonHeaderRefusesNulBytesByteOrderMarksAndHugeNumbers) {
  // nlohmann/json, under parseJson, ends its input at a NUL byte and skips
  // a byte order mark; the header parser must refuse both.
  expectError(parseSt(safetensorsBytes(std::string("{}\0{", 4))),
              ATTN_ERROR_FORMAT,
              "invalid JSON header: unexpected data after the top-level "
              "value at byte 2");
  expectError(parseSt(safetensorsBytes(std::string("{\"a\":\0}", 7))),
              ATTN_ERROR_FORMAT, "unexpected character 0x00 at byte 5");
  expectError(parseSt(safetensorsBytes("\xef\xbb\xbf{}")), ATTN_ERROR_FORMAT,
              "unexpected character 0xef at byte 0");
  expectError(
      parseSt(safetensorsBytes(
          R"({"w":{"dtype":"F32","shape":[1e400],"data_offsets":[0,4]}})",
          "abcd")),
      ATTN_ERROR_FORMAT, "number 1e400 is out of range");
  // Integers past 64 bits stay integers that overflow, whatever their sign.
  expectError(parseSt(safetensorsBytes(
                  R"({"w":{"dtype":"F32","shape":[-99999999999999999999],)"
                  R"("data_offsets":[0,4]}})",
                  "abcd")),
              ATTN_ERROR_FORMAT, "has entry -99999999999999999999");
  expectError(parseSt(safetensorsBytes(
                  R"({"w":{"dtype":"F32","shape":[9223372036854775808],)"
                  R"("data_offsets":[0,4]}})",
                  "abcd")),
              ATTN_ERROR_FORMAT, "has entry 9223372036854775808");
}

TEST(Json, ParsesEscapesSurrogatesAndKeepsDuplicateKeys) {
  JsonValue root;
  Result parsed = parseJson(
      R"({"k":"\u00e9\ud83d\ude00\n","k":[true,null,-0,1.5]})", root);
  ASSERT_TRUE(parsed.ok()) << parsed.message;
  ASSERT_EQ(root.keys.size(), 2u);
  EXPECT_EQ(root.keys[0], "k");
  EXPECT_EQ(root.keys[1], "k");
  EXPECT_EQ(root.items[0].text, "\xc3\xa9\xf0\x9f\x98\x80\n");
  const JsonValue &array = root.items[1];
  ASSERT_EQ(array.items.size(), 4u);
  EXPECT_EQ(array.items[0].kind, JsonValue::Kind::Bool);
  EXPECT_EQ(array.items[1].kind, JsonValue::Kind::Null);
  EXPECT_EQ(array.items[2].kind, JsonValue::Kind::Integer);
  EXPECT_EQ(array.items[2].integer, 0);
  EXPECT_EQ(array.items[3].kind, JsonValue::Kind::Number);
  EXPECT_EQ(array.items[3].text, "1.5");
  std::string nested = std::string(64, '[') + std::string(64, ']');
  parsed = parseJson(nested, root);
  EXPECT_TRUE(parsed.ok()) << parsed.message;
  parsed = parseJson("[" + nested + "]", root);
  EXPECT_EQ(parsed.status, ATTN_ERROR_FORMAT);
  EXPECT_EQ(parsed.message, "nesting deeper than 64");
}

TEST(SafetensorsErrors, HeaderIsNotAnObject) {
  expectError(parseSt(safetensorsBytes("[1, 2]")), ATTN_ERROR_FORMAT,
              "header is an array, expected a JSON object");
}

TEST(SafetensorsErrors, MissingDtypeShapeOrOffsets) {
  expectError(parseSt(safetensorsBytes(
                  R"({"w":{"shape":[1],"data_offsets":[0,4]}})", "abcd")),
              ATTN_ERROR_FORMAT, "tensor 'w' has no \"dtype\"");
  expectError(parseSt(safetensorsBytes(
                  R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", "abcd")),
              ATTN_ERROR_FORMAT, "tensor 'w' has no \"shape\"");
  expectError(
      parseSt(safetensorsBytes(R"({"w":{"dtype":"F32","shape":[1]}})", "abcd")),
      ATTN_ERROR_FORMAT, "tensor 'w' has no \"data_offsets\"");
}

TEST(SafetensorsErrors, OffsetsOutOfRangeOrReversed) {
  expectError(
      parseSt(safetensorsBytes(
          R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "abcd")),
      ATTN_ERROR_FORMAT,
      "data_offsets [0, 8] of tensor 'w' lie outside the data section "
      "of 4 bytes");
  expectError(
      parseSt(safetensorsBytes(
          R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", "abcd")),
      ATTN_ERROR_FORMAT, "have begin > end");
  expectError(parseSt(safetensorsBytes(
                  R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,-4]}})",
                  "abcd")),
              ATTN_ERROR_FORMAT, "got [0, -4]");
}

TEST(SafetensorsErrors, OverlappingTensors) {
  expectError(parseSt(safetensorsBytes(
                  R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                  R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                  std::string(12, '\0'))),
              ATTN_ERROR_FORMAT, "tensors 'a' [0, 8] and 'b' [4, 12] overlap");
}

TEST(SafetensorsErrors, ByteSizeDoesNotMatchShape) {
  expectError(
      parseSt(safetensorsBytes(
          R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})",
          std::string(24, '\0'))),
      ATTN_ERROR_FORMAT,
      "tensor 'w' of dtype F32 and shape [2, 3] needs 24 bytes but "
      "data_offsets [0, 20] hold 20");
}

TEST(SafetensorsErrors, UnknownAndUnsupportedDtypes) {
  expectError(
      parseSt(safetensorsBytes(
          R"({"w":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}})", "abcd")),
      ATTN_ERROR_DTYPE, "tensor 'w' has unknown dtype 'Q7'");
  expectError(parseSt(safetensorsBytes(
                  R"({"ids":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
                  std::string(8, '\0'))),
              ATTN_ERROR_DTYPE,
              "tensor 'ids' has dtype I64; only F32, F16 and BF16 can be "
              "loaded");
}

TEST(SafetensorsErrors, DuplicateTensorName) {
  expectError(parseSt(safetensorsBytes(
                  R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                  R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                  std::string(8, '\0'))),
              ATTN_ERROR_FORMAT, "duplicate tensor name 'w'");
}

TEST(SafetensorsErrors, BadShapeEntries) {
  const char *shapes[][2] = {{"[-1]", "has entry -1"},
                             {"[1.5]", "has entry 1.5"},
                             {"[\"2\"]", "has entry a string"},
                             {"[99999999999999999999]", "99999999999999999999"},
                             {"[4294967296,4294967296]", "overflows"}};
  for (auto &shape : shapes)
    expectError(parseSt(safetensorsBytes(
                    std::string(R"({"w":{"dtype":"F32","shape":)") + shape[0] +
                        R"(,"data_offsets":[0,4]}})",
                    "abcd")),
                ATTN_ERROR_FORMAT, shape[1]);
}

TEST(SafetensorsErrors, MetadataMustHoldStrings) {
  expectError(parseSt(safetensorsBytes(R"({"__metadata__":{"n":1}})")),
              ATTN_ERROR_FORMAT, "metadata entry 'n' is an integer");
}

TEST_F(RuntimeFiles, LoadReportsMissingFileAndDirectory) {
  attn_weights *weights = nullptr;
  std::string missing = path("absent.safetensors");
  EXPECT_EQ(attn_weights_load(missing.c_str(), &weights), ATTN_ERROR_IO);
  EXPECT_THAT(attn_error_message(), HasSubstr("absent.safetensors"));
  EXPECT_THAT(attn_error_message(), HasSubstr("no such file"));
  EXPECT_EQ(attn_weights_load(dir.string().c_str(), &weights), ATTN_ERROR_IO);
  EXPECT_THAT(attn_error_message(), HasSubstr("not a regular file"));
  EXPECT_EQ(weights, nullptr);
}

//===-- weight lookups ----------------------------------------------------===//

/// Saves two tensors and loads them as a weight set.
class WeightLookup : public RuntimeFiles {
protected:
  void SetUp() override {
    RuntimeFiles::SetUp();
    std::vector<float> zeros(6, 0.0f);
    const char *names[] = {"layer0.wq", "layer0.wk"};
    int32_t ranks[] = {2, 2};
    int64_t shape[] = {2, 3};
    const int64_t *shapes[] = {shape, shape};
    const float *data[] = {zeros.data(), zeros.data()};
    file = path("w.safetensors");
    ASSERT_EQ(attn_weights_save(file.c_str(), 2, names, ranks, shapes, data),
              ATTN_OK);
    ASSERT_EQ(attn_weights_load(file.c_str(), &weights), ATTN_OK);
  }
  void TearDown() override {
    attn_weights_free(weights);
    RuntimeFiles::TearDown();
  }
  std::string file;
  attn_weights *weights = nullptr;
};

TEST_F(WeightLookup, MissingWeightSuggestsASimilarName) {
  int64_t shape[] = {2, 3};
  const float *data = reinterpret_cast<const float *>(&shape);
  EXPECT_EQ(attn_weights_get(weights, "layer0.wv", 2, shape, &data),
            ATTN_ERROR_MISSING);
  EXPECT_EQ(data, nullptr);
  EXPECT_THAT(attn_error_message(), HasSubstr("weight 'layer0.wv' is missing"));
  EXPECT_THAT(attn_error_message(), HasSubstr("w.safetensors"));
  EXPECT_THAT(attn_error_message(), HasSubstr("did you mean 'layer0.w"));
  EXPECT_EQ(attn_weights_get(weights, "output.projection", 2, shape, &data),
            ATTN_ERROR_MISSING);
  EXPECT_THAT(attn_error_message(), Not(HasSubstr("did you mean")));
}

TEST_F(WeightLookup, WrongShapeNamesBothShapes) {
  int64_t shape[] = {3, 2};
  const float *data = nullptr;
  EXPECT_EQ(attn_weights_get(weights, "layer0.wq", 2, shape, &data),
            ATTN_ERROR_SHAPE);
  EXPECT_THAT(attn_error_message(),
              HasSubstr("weight 'layer0.wq' in '" + file +
                        "' has shape [2, 3] but the model expects [3, 2]"));
  int64_t rank3[] = {2, 3, -1};
  EXPECT_EQ(attn_weights_get(weights, "layer0.wq", 3, rank3, &data),
            ATTN_ERROR_SHAPE);
  EXPECT_THAT(attn_error_message(), HasSubstr("expects [2, 3, ?]"));
  EXPECT_EQ(attn_weights_get(weights, nullptr, 2, shape, &data),
            ATTN_ERROR_ARGUMENT);
}

TEST_F(WeightLookup, CppWrapperThrowsErrorsWithStatus) {
  attn::Weights loaded = attn::Weights::load(file);
  EXPECT_EQ(loaded.names(),
            (std::vector<std::string>{"layer0.wk", "layer0.wq"}));
  EXPECT_EQ(loaded.shape(0), (std::vector<int64_t>{2, 3}));
  EXPECT_NE(loaded.get("layer0.wk", {2, 3}), nullptr);
  try {
    loaded.get("layer0.wx", {2, 3});
    FAIL() << "expected attn::Error";
  } catch (const attn::Error &e) {
    EXPECT_EQ(e.status(), ATTN_ERROR_MISSING);
    EXPECT_THAT(e.what(), HasSubstr("did you mean"));
  }
  attn::Weights moved = std::move(loaded);
  EXPECT_FALSE(loaded);
  EXPECT_EQ(moved.size(), 2u);
  try {
    attn::Weights::load(path("none.safetensors"));
    FAIL() << "expected attn::Error";
  } catch (const attn::Error &e) {
    EXPECT_EQ(e.status(), ATTN_ERROR_IO);
  }
}

//===-- malformed npy -----------------------------------------------------===//

TEST(NpyErrors, BadMagic) {
  expectError(parseNp("PK\x03\x04 not numpy at all"), ATTN_ERROR_FORMAT,
              "x.npy: not a .npy file (bad magic)");
}

TEST(NpyErrors, TruncatedData) {
  std::vector<float> data(6, 1.0f);
  std::string bytes;
  ASSERT_TRUE(serializeNpy({2, 3}, data.data(), bytes).ok());
  bytes.resize(bytes.size() - 4);
  expectError(parseNp(bytes), ATTN_ERROR_FORMAT,
              "truncated data: shape [2, 3] needs 24 bytes of float32 data "
              "but 20 bytes follow the header");
  expectError(parseNp(bytes.substr(0, 40)), ATTN_ERROR_FORMAT,
              "exceeds the file size");
}

TEST(NpyErrors, WrongDtype) {
  expectError(parseNp(npyBytes(
                  "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }",
                  std::string(8, '\0'))),
              ATTN_ERROR_DTYPE, "dtype '<f8' is not supported, expected '<f4'");
  expectError(parseNp(npyBytes("{'descr': [('a', '<f4')], 'fortran_order': "
                               "False, 'shape': (1,), }",
                               std::string(4, '\0'))),
              ATTN_ERROR_DTYPE, "structured dtypes are not supported");
}

TEST(NpyErrors, FortranOrder) {
  expectError(parseNp(npyBytes(
                  "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                  std::string(16, '\0'))),
              ATTN_ERROR_FORMAT, "fortran_order arrays are not supported");
}

TEST(NpyErrors, BadVersionKeysAndRank) {
  expectError(parseNp(npyBytes("{}", "", "\x07\x00")), ATTN_ERROR_FORMAT,
              "unsupported .npy version 7.0");
  expectError(parseNp(npyBytes("{'descr': '<f4', 'shape': (1,), }",
                               std::string(4, '\0'))),
              ATTN_ERROR_FORMAT, "header has no 'fortran_order' key");
  expectError(parseNp(npyBytes("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (1,1,1,1,1,1,1,1,1), }",
                               std::string(4, '\0'))),
              ATTN_ERROR_SHAPE, "rank exceeds the maximum of 8");
  expectError(parseNp(npyBytes("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (1,), }",
                               std::string(8, '\0'))),
              ATTN_ERROR_FORMAT, "4 unexpected bytes after the data");
}

//===-- tensor checks and statuses ----------------------------------------===//

TEST(TensorCheck, AcceptsRuntimeDimsAndNamesBothShapesOnMismatch) {
  float storage = 0;
  attn_tensor x = {&storage, 3, {2, 7, 256}};
  int64_t expected[] = {-1, -1, 512};
  const char *dims[] = {"b", "n", nullptr};
  EXPECT_EQ(attn_tensor_check(&x, "input 'x'", 3, expected, dims),
            ATTN_ERROR_SHAPE);
  EXPECT_STREQ(attn_error_message(),
               "input 'x' has shape [2, 7, 256] but the model expects "
               "[b, n, 512]");
  x.shape[2] = 512;
  EXPECT_EQ(attn_tensor_check(&x, "input 'x'", 3, expected, dims), ATTN_OK);
  EXPECT_EQ(attn_tensor_check(&x, "input 'x'", 2, expected, nullptr),
            ATTN_ERROR_SHAPE);
  EXPECT_THAT(attn_error_message(), HasSubstr("expects [?, ?]"));
}

TEST(TensorCheck, RejectsZeroSizesAndNullPointers) {
  float storage = 0;
  attn_tensor x = {&storage, 2, {4, 0}};
  int64_t expected[] = {-1, -1};
  EXPECT_EQ(attn_tensor_check(&x, "output 'y'", 2, expected, nullptr),
            ATTN_ERROR_SHAPE);
  EXPECT_THAT(attn_error_message(),
              HasSubstr("output 'y' has shape [4, 0] with size 0 on axis 1"));
  EXPECT_EQ(attn_tensor_check(nullptr, "output 'y'", 2, expected, nullptr),
            ATTN_ERROR_ARGUMENT);
  EXPECT_THAT(attn_error_message(), HasSubstr("null tensor"));
  x.shape[1] = 3;
  x.data = nullptr;
  EXPECT_EQ(attn_tensor_check(&x, "output 'y'", 2, expected, nullptr),
            ATTN_ERROR_ARGUMENT);
  x.data = &storage;
  x.rank = 9;
  EXPECT_EQ(attn_tensor_check(&x, "output 'y'", 2, expected, nullptr),
            ATTN_ERROR_ARGUMENT);
  attn::Tensor view(&storage, {1, 1});
  EXPECT_THROW(view.check("input 'q'", {1, 2}), attn::Error);
  EXPECT_NO_THROW(view.check("input 'q'", {-1, 1}, {"b", nullptr}));
}

// Ids are checked as tensors are, then each id against its table, with
// the position of the first one outside it.
TEST(IdsCheck, NamesTheFirstIdOutsideTheTableAndItsPosition) {
  const int32_t data[] = {0, 4, 2, 5, -1, 3};
  attn_ids ids = {data, 2, {2, 3}};
  const int64_t expected[] = {-1, -1};
  const char *const names[] = {"b", "n"};
  EXPECT_EQ(attn_ids_check(&ids, "input 'ids'", 2, expected, names, 6),
            ATTN_ERROR_ARGUMENT);
  EXPECT_STREQ(attn_error_message(),
               "token id -1 at [1, 1] of input 'ids' is out of range: the "
               "embedding table has 6 rows (ids 0..5)");
  EXPECT_EQ(attn_ids_check(&ids, "input 'ids'", 2, expected, names, 5),
            ATTN_ERROR_ARGUMENT);
  EXPECT_THAT(attn_error_message(), HasSubstr("token id 5 at [1, 0]"));
  const int32_t good[] = {0, 4, 2, 5, 1, 3};
  ids.data = good;
  EXPECT_EQ(attn_ids_check(&ids, "input 'ids'", 2, expected, names, 6),
            ATTN_OK);
  const int64_t three[] = {-1, 3, 1};
  EXPECT_EQ(attn_ids_check(&ids, "input 'ids'", 3, three, names, 6),
            ATTN_ERROR_SHAPE);
  EXPECT_EQ(attn_ids_check(nullptr, "input 'ids'", 2, expected, names, 6),
            ATTN_ERROR_ARGUMENT);
}

/// A causal "model" with chunks of 4 rows for attn_decoder: output row r
/// is the running sum of the input rows so far and the sum of its chunk's
/// rows up to r. Its carries: the sum of the earlier rows, and a chunk
/// cache (the current chunk's rows, in place). The block function runs
/// whole chunks and writes its last chunk's rows into the cache; the step
/// function runs rows within a chunk, reads its earlier rows from the
/// cache and writes its own. Each records its calls' offsets.
std::vector<int64_t> blockOffsets, stepOffsets;
int64_t failAt = -1; ///< The offset whose call fails, after its writes.
attn_status chunkSums(bool step, const void *model, int32_t rows,
                      int64_t offset, const void *const *inputs,
                      float *const *outputs, const float *const *carries,
                      float *const *nexts) {
  (step ? stepOffsets : blockOffsets).push_back(offset);
  if (model != &blockOffsets)
    return attn_set_error(ATTN_ERROR_RUNTIME, "wrong model");
  if (carries[1] != nexts[1])
    return attn_set_error(ATTN_ERROR_RUNTIME, "a cache is not in place");
  int64_t first = offset % 4;
  if (step ? first + rows > 4 : first != 0 || rows % 4 != 0)
    return attn_set_error(ATTN_ERROR_RUNTIME, "a block across chunks");
  const float *in = static_cast<const float *>(inputs[0]);
  float sum = carries[0][0], chunk = 0;
  for (int64_t j = 0; step && j < first; ++j)
    chunk += carries[1][j];
  for (int32_t r = 0; r < rows; ++r) {
    if (!step && r % 4 == 0)
      chunk = 0;
    sum += in[r];
    chunk += in[r];
    outputs[0][2 * r] = sum;
    outputs[0][2 * r + 1] = chunk;
    if (step || r >= rows - 4)
      nexts[1][(first + r) % 4] = in[r];
  }
  nexts[0][0] = sum;
  if (offset == failAt)
    return attn_set_error(ATTN_ERROR_RUNTIME, "failed where asked");
  return ATTN_OK;
}
attn_status chunkSumsBlock(const void *model, int32_t rows, int64_t offset,
                           const void *const *inputs, float *const *outputs,
                           const float *const *carries, float *const *nexts) {
  return chunkSums(false, model, rows, offset, inputs, outputs, carries,
                   nexts);
}
attn_status chunkSumsStep(const void *model, int32_t rows, int64_t offset,
                          const void *const *inputs, float *const *outputs,
                          const float *const *carries, float *const *nexts) {
  return chunkSums(true, model, rows, offset, inputs, outputs, carries,
                   nexts);
}

const int64_t kOneElement[] = {1}, kTwoElements[] = {2},
              kSumAndChunk[] = {1, 4};
const int32_t kChunkCache[] = {0, 2};
const attn_decoder_layout kChunkSums = {
    "chunk_sums", 8, 1, 1, 2, kOneElement, kTwoElements, kSumAndChunk,
    chunkSumsBlock, 4, chunkSumsStep, 2, kChunkCache, 0};

// Appends of any sizes (a prefill across chunks, steps, a prefill after
// steps) give the whole sequence's outputs: whole chunks run through the
// block function, the rows between through the step function within
// pieces of 2 rows; the state's size does not grow.
TEST(Decoder, AppendsOfAnySizeGiveTheWholeSequencesOutputs) {
  attn_decoder *decoder = nullptr;
  ASSERT_EQ(attn_decoder_new(&kChunkSums, &blockOffsets, &decoder), ATTN_OK)
      << attn_error_message();
  std::vector<float> input(23), output(46, -1.0f);
  for (size_t i = 0; i < input.size(); ++i)
    input[i] = float(i + 1);
  int64_t at = 0;
  blockOffsets.clear();
  stepOffsets.clear();
  for (int64_t rows : {6, 1, 1, 1, 9, 1, 4}) {
    const void *in[] = {input.data() + at};
    float *out[] = {output.data() + 2 * at};
    ASSERT_EQ(attn_decoder_append(decoder, rows, in, out), ATTN_OK)
        << attn_error_message();
    at += rows;
    EXPECT_EQ(attn_decoder_length(decoder), at);
    // The sum and its next value, and the chunk cache.
    EXPECT_EQ(attn_decoder_state_bytes(decoder), (1 + 1 + 4) * 4);
  }
  // 6 = [4] + [2]; 1; 1; 1; 9 = [1] + [2] + [4] + [2]; 1; 4 = [1] + [2]
  // + [1].
  EXPECT_THAT(blockOffsets, ElementsAre(0, 12));
  EXPECT_THAT(stepOffsets,
              ElementsAre(4, 6, 7, 8, 9, 10, 16, 18, 19, 20, 22));
  for (size_t r = 0; r < input.size(); ++r) {
    float want = float((r + 1) * (r + 2) / 2);
    size_t chunk = r - r % 4; // the chunk's first row
    EXPECT_EQ(output[2 * r], want) << r;
    EXPECT_EQ(output[2 * r + 1], want - float(chunk * (chunk + 1) / 2)) << r;
  }
  // Outputs not wanted; a reset starts a new sequence.
  const void *in[] = {input.data()};
  float *none[] = {nullptr};
  EXPECT_EQ(attn_decoder_append(decoder, 3, in, none), ATTN_OK);
  EXPECT_EQ(attn_decoder_append(decoder, 3, in, nullptr), ATTN_OK);
  attn_decoder_reset(decoder);
  EXPECT_EQ(attn_decoder_length(decoder), 0);
  float first[2];
  float *out[] = {first};
  ASSERT_EQ(attn_decoder_append(decoder, 1, in, out), ATTN_OK);
  EXPECT_EQ(first[0], 1.0f);
  EXPECT_EQ(first[1], 1.0f);
  attn_decoder_free(decoder);
}

/// A causal "model" with a key/value cache of one float a row: each output
/// is the sum of the rows so far, read from the cache for the rows before
/// the block; the block writes its rows into the cache in place.
attn_status cachedSumBlock(const void *, int32_t rows, int64_t offset,
                           const void *const *inputs, float *const *outputs,
                           const float *const *carries, float *const *nexts) {
  if (carries[0] != nexts[0])
    return attn_set_error(ATTN_ERROR_RUNTIME, "a cache is not in place");
  const float *in = static_cast<const float *>(inputs[0]);
  float sum = 0;
  for (int64_t j = 0; j < offset; ++j)
    sum += carries[0][j];
  for (int32_t r = 0; r < rows; ++r) {
    nexts[0][offset + r] = in[r];
    sum += in[r];
    outputs[0][2 * r] = sum;
    outputs[0][2 * r + 1] = 2 * sum;
  }
  return ATTN_OK;
}

// A key/value cache: its capacity is needed and kept to exactly (the
// append past it refused before anything runs); without chunks (a unit
// of 1) every append runs its own rows over the cache.
TEST(Decoder, KeyValueCacheHoldsItsCapacity) {
  const int32_t cache[] = {1};
  attn_decoder_layout layout = {"cached_sum", 4, 1, 1, 1, kOneElement,
                                kTwoElements, kOneElement, cachedSumBlock,
                                1, nullptr, 0, cache, 0};
  attn_decoder *decoder = nullptr;
  EXPECT_EQ(attn_decoder_new(&layout, nullptr, &decoder), ATTN_ERROR_ARGUMENT);
  EXPECT_THAT(attn_error_message(), HasSubstr("whose capacity"));
  layout.capacity = int64_t(1) << 30; // 4 GiB: over one buffer's limit
  EXPECT_EQ(attn_decoder_new(&layout, nullptr, &decoder), ATTN_ERROR_ARGUMENT);
  layout.capacity = 10;
  ASSERT_EQ(attn_decoder_new(&layout, nullptr, &decoder), ATTN_OK)
      << attn_error_message();
  EXPECT_EQ(attn_decoder_state_bytes(decoder), 10 * 4);
  std::vector<float> input(11), output(22);
  for (size_t i = 0; i < input.size(); ++i)
    input[i] = float(i + 1);
  int64_t at = 0;
  for (int64_t rows : {3, 1, 1, 5}) {
    const void *in[] = {input.data() + at};
    float *out[] = {output.data() + 2 * at};
    ASSERT_EQ(attn_decoder_append(decoder, rows, in, out), ATTN_OK)
        << attn_error_message();
    at += rows;
  }
  for (size_t r = 0; r < 10; ++r)
    EXPECT_EQ(output[2 * r], float((r + 1) * (r + 2) / 2)) << r;
  const void *in[] = {input.data() + 10};
  float *out[] = {output.data() + 20};
  EXPECT_EQ(attn_decoder_append(decoder, 1, in, out), ATTN_ERROR_ARGUMENT);
  EXPECT_STREQ(attn_error_message(),
               "the key/value cache holds 10 rows (the decoder's capacity); "
               "the sequence has 10 and the append adds 1");
  EXPECT_EQ(attn_decoder_length(decoder), 10);
  attn_decoder_free(decoder);
}

// A piece that fails in the middle of an append (after writing its cache
// rows and carries) leaves the sequence after the pieces before it, and
// appending the rest again gives the whole sequence's outputs.
TEST(Decoder, FailedPieceKeepsThePiecesBeforeIt) {
  attn_decoder *decoder = nullptr;
  ASSERT_EQ(attn_decoder_new(&kChunkSums, &blockOffsets, &decoder), ATTN_OK);
  std::vector<float> input(20), output(40, -1.0f);
  for (size_t i = 0; i < input.size(); ++i)
    input[i] = float(i + 1);
  auto append = [&](int64_t at, int64_t rows) {
    const void *in[] = {input.data() + at};
    float *out[] = {output.data() + 2 * at};
    return attn_decoder_append(decoder, rows, in, out);
  };
  ASSERT_EQ(append(0, 6), ATTN_OK); // [4] + [2]
  // 14 rows at 6 = [2] + [4] + [4] + [4]: the step at 6 fails.
  failAt = 6;
  EXPECT_EQ(append(6, 14), ATTN_ERROR_RUNTIME);
  EXPECT_STREQ(attn_error_message(), "failed where asked");
  EXPECT_EQ(attn_decoder_length(decoder), 6);
  // The block at 8 fails: the step before it is kept.
  failAt = 8;
  EXPECT_EQ(append(6, 14), ATTN_ERROR_RUNTIME);
  EXPECT_EQ(attn_decoder_length(decoder), 8);
  failAt = -1;
  ASSERT_EQ(append(8, 12), ATTN_OK) << attn_error_message();
  for (size_t r = 0; r < input.size(); ++r) {
    float want = float((r + 1) * (r + 2) / 2);
    size_t chunk = r - r % 4;
    EXPECT_EQ(output[2 * r], want) << r;
    EXPECT_EQ(output[2 * r + 1], want - float(chunk * (chunk + 1) / 2)) << r;
  }
  attn_decoder_free(decoder);
}

// A failed block leaves the sequence as it was; bad arguments and layouts
// are refused with a message, never a crash.
TEST(Decoder, RefusesBadArgumentsAndKeepsTheSequenceOnAFailure) {
  attn_decoder *decoder = nullptr;
  attn_decoder_layout bad = kChunkSums;
  bad.block_rows = 0;
  EXPECT_EQ(attn_decoder_new(&bad, nullptr, &decoder), ATTN_ERROR_ARGUMENT);
  EXPECT_THAT(attn_error_message(), HasSubstr("the layout is not one of"));
  EXPECT_EQ(decoder, nullptr);
  // Chunks of 4 rows need a step function, whose pieces divide them.
  bad = kChunkSums;
  bad.run_step = nullptr;
  EXPECT_EQ(attn_decoder_new(&bad, nullptr, &decoder), ATTN_ERROR_ARGUMENT);
  bad = kChunkSums;
  bad.step_rows = 3;
  EXPECT_EQ(attn_decoder_new(&bad, nullptr, &decoder), ATTN_ERROR_ARGUMENT);
  const int32_t unknown[] = {0, 3};
  bad = kChunkSums;
  bad.carry_caches = unknown;
  EXPECT_EQ(attn_decoder_new(&bad, nullptr, &decoder), ATTN_ERROR_ARGUMENT);
  EXPECT_THAT(attn_error_message(), HasSubstr("carry_caches[1] is 3"));
  EXPECT_EQ(attn_decoder_new(nullptr, nullptr, &decoder), ATTN_ERROR_ARGUMENT);
  EXPECT_EQ(attn_decoder_new(&kChunkSums, nullptr, nullptr),
            ATTN_ERROR_ARGUMENT);
  // The wrong model: its block function fails.
  int other = 0;
  ASSERT_EQ(attn_decoder_new(&kChunkSums, &other, &decoder), ATTN_OK);
  float row = 1, out[2];
  const void *in[] = {&row};
  float *outs[] = {out};
  EXPECT_EQ(attn_decoder_append(decoder, 1, in, outs), ATTN_ERROR_RUNTIME);
  EXPECT_STREQ(attn_error_message(), "wrong model");
  EXPECT_EQ(attn_decoder_length(decoder), 0);
  EXPECT_EQ(attn_decoder_append(decoder, 0, in, outs), ATTN_ERROR_ARGUMENT);
  EXPECT_THAT(attn_error_message(), HasSubstr("at least one row"));
  const void *null[] = {nullptr};
  EXPECT_EQ(attn_decoder_append(decoder, 1, null, outs), ATTN_ERROR_ARGUMENT);
  EXPECT_THAT(attn_error_message(), HasSubstr("input 0 of model "
                                              "'chunk_sums' is NULL"));
  EXPECT_EQ(attn_decoder_append(decoder, (int64_t(1) << 24) + 1, in, outs),
            ATTN_ERROR_ARGUMENT);
  EXPECT_THAT(attn_error_message(), HasSubstr("at most 2^24 rows"));
  EXPECT_EQ(attn_decoder_append(nullptr, 1, in, outs), ATTN_ERROR_ARGUMENT);
  attn_decoder_free(decoder);
  attn_decoder_free(nullptr);
  EXPECT_EQ(attn_decoder_length(nullptr), 0);
}

TEST(Status, StringsAndSetError) {
  EXPECT_STREQ(attn_status_string(ATTN_OK), "ok");
  EXPECT_STREQ(attn_status_string(ATTN_ERROR_MISSING), "missing weight");
  EXPECT_STREQ(attn_status_string(static_cast<attn_status>(99)),
               "unknown status");
  EXPECT_EQ(attn_set_error(ATTN_ERROR_RUNTIME, "kernel failed"),
            ATTN_ERROR_RUNTIME);
  EXPECT_STREQ(attn_error_message(), "kernel failed");
  EXPECT_EQ(setError(ATTN_ERROR_IO, "x"), ATTN_ERROR_IO);
  EXPECT_STREQ(attn_error_message(), "x");
}

//===-- mutation smoke test -----------------------------------------------===//

/// Returns \p bytes with one to four random mutations, most of them in the
/// first \p hot bytes (the length field and header).
std::string mutate(std::string bytes, size_t hot, std::mt19937 &rng) {
  static const char special[] = "{}[]\":,\\-0123456789e.u \x00\xff";
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    size_t range = (rng() % 5 != 0 && hot > 0) ? std::min(hot, bytes.size())
                                               : bytes.size();
    size_t at = range ? rng() % range : 0;
    switch (rng() % 6) {
    case 0: // flip a bit
      if (!bytes.empty())
        bytes[at] = static_cast<char>(bytes[at] ^ (1u << (rng() % 8)));
      break;
    case 1: // JSON-ish character
      if (!bytes.empty())
        bytes[at] = special[rng() % (sizeof(special) - 1)];
      break;
    case 2: // truncate
      bytes.resize(at);
      break;
    case 3: // insert
      bytes.insert(at, 1 + rng() % 3, special[rng() % (sizeof(special) - 1)]);
      break;
    case 4: // delete a range
      bytes.erase(at, 1 + rng() % 8);
      break;
    default: // random byte
      if (!bytes.empty())
        bytes[at] = static_cast<char>(rng());
      break;
    }
  }
  return bytes;
}

TEST(Mutation, ReadersNeverCrashOnCorruptedFiles) {
  std::mt19937 rng(20240601u);
  std::vector<float> w(12);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>(i) * 0.75f;
  std::string seed;
  ASSERT_TRUE(serializeSafetensors({{"wq", {3, 4}, w.data()},
                                    {"bias", {4}, w.data()},
                                    {"s", {}, w.data()}},
                                   {{"k", "v"}}, seed)
                  .ok());
  std::string halfSeed = safetensorsBytes(
      R"({"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
      R"("b":{"dtype":"BF16","shape":[1,2],"data_offsets":[4,8]}})",
      halfBytes({0x3c00, 0x7c01, 0x3f80, 0xffff}));
  std::string npySeed;
  ASSERT_TRUE(serializeNpy({3, 4}, w.data(), npySeed).ok());

  int accepted = 0, rejected = 0;
  for (int i = 0; i < 6000; ++i) {
    Result r;
    if (i % 3 == 2) {
      std::string bytes = mutate(npySeed, 128, rng);
      HostTensor array;
      r = parseNpy(bytes.data(), bytes.size(), "m.npy", array);
      if (r.ok()) {
        int64_t count = 0;
        ASSERT_TRUE(
            shapeElementCount(array.shape.data(), array.shape.size(), count));
        ASSERT_EQ(static_cast<size_t>(count), array.data.size());
      }
    } else {
      const std::string &base = i % 3 == 0 ? seed : halfSeed;
      std::string bytes;
      if (rng() % 2) {
        bytes = mutate(base, base.size() - 16, rng);
      } else {
        // Mutate the header alone and keep the length field consistent, so
        // that mutations reach the checks behind the JSON parser.
        uint64_t n = 0;
        std::memcpy(&n, base.data(), 8);
        std::string header = mutate(base.substr(8, n), n, rng);
        bytes = safetensorsBytes(header, base.substr(8 + n));
      }
      SafetensorsFile file;
      r = parseSt(bytes, file);
      for (const SafetensorsTensor &t : file.tensors) {
        int64_t count = 0;
        ASSERT_TRUE(shapeElementCount(t.shape.data(), t.shape.size(), count));
        ASSERT_EQ(static_cast<size_t>(count), t.data.size());
      }
    }
    if (r.ok()) {
      ++accepted;
    } else {
      ++rejected;
      ASSERT_FALSE(r.message.empty()) << "iteration " << i;
      ASSERT_NE(r.status, ATTN_OK);
    }
  }
  EXPECT_GT(rejected, 3000);
  EXPECT_GT(accepted, 0);
}

TEST_F(RuntimeFiles, LoaderNeverCrashesOnCorruptedFilesOnDisk) {
  std::vector<float> w(8, 1.0f);
  std::string seed;
  ASSERT_TRUE(serializeSafetensors({{"a", {2, 4}, w.data()}}, {}, seed).ok());
  std::mt19937 rng(7u);
  std::string file = path("m.safetensors");
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(writeWholeFile(file, mutate(seed, seed.size() - 32, rng)).ok());
    attn_weights *weights = nullptr;
    attn_status status = attn_weights_load(file.c_str(), &weights);
    if (status == ATTN_OK) {
      ASSERT_NE(weights, nullptr);
      attn_weights_free(weights);
    } else {
      ASSERT_EQ(weights, nullptr);
      ASSERT_STRNE(attn_error_message(), "");
    }
  }
}

} // namespace
