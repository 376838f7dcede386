//===- Error.cpp - statuses, messages and tensor checks -------------------===//
//
// This file implements the runtime's thread-local error message, the status
// names, the message formatting helpers, and attn_tensor_check and
// attn_ids_check, which generated entry points call on every caller-owned
// buffer before running.
//
//===----------------------------------------------------------------------===//
#include "runtime/Error.h"
#include "runtime/Tensor.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

using namespace attnc::runtime;

namespace {

/// The message behind attn_error_message(); one per thread.
thread_local std::string lastErrorMessage;

/// Formats the expected shape of attn_tensor_check: fixed sizes as numbers,
/// runtime sizes by their name, or "?" if they have none.
std::string formatExpected(const int64_t *shape, int32_t rank,
                           const char *const *dimNames) {
  std::string out = "[";
  for (int32_t i = 0; i < rank; ++i) {
    if (i)
      out += ", ";
    if (shape[i] >= 0)
      out += std::to_string(shape[i]);
    else if (dimNames && dimNames[i])
      out += dimNames[i];
    else
      out += "?";
  }
  return out + "]";
}

} // namespace

attn_status attnc::runtime::setError(attn_status status, std::string message) {
  try {
    lastErrorMessage = std::move(message);
  } catch (...) {
    // Fits the small-string buffer (or the old capacity): cannot allocate.
    lastErrorMessage.assign("out of memory");
  }
  return status;
}

std::string attnc::runtime::formatShape(const int64_t *shape, size_t rank) {
  std::string out = "[";
  for (size_t i = 0; i < rank; ++i) {
    if (i)
      out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

bool attnc::runtime::shapeElementCount(const int64_t *shape, size_t rank,
                                       int64_t &count) {
  int64_t n = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      return false;
    if (shape[i] != 0 && n > std::numeric_limits<int64_t>::max() / shape[i])
      return false;
    n *= shape[i];
  }
  count = n;
  return true;
}

std::string attnc::runtime::quote(const std::string &text) {
  std::string out = "'";
  for (unsigned char c : text) {
    if (c < 0x20 || c >= 0x7f || c == '\\' || c == '\'') {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "'";
}

extern "C" {

const char *attn_status_string(attn_status status) {
  // A C caller may pass any int; reading it as an int keeps a value outside
  // the enum from being undefined behaviour in C++.
  static_assert(sizeof(attn_status) == sizeof(int), "attn_status is an int");
  int code;
  std::memcpy(&code, &status, sizeof(code));
  switch (code) {
  case ATTN_OK:
    return "ok";
  case ATTN_ERROR_IO:
    return "io error";
  case ATTN_ERROR_FORMAT:
    return "format error";
  case ATTN_ERROR_MISSING:
    return "missing weight";
  case ATTN_ERROR_SHAPE:
    return "shape error";
  case ATTN_ERROR_DTYPE:
    return "dtype error";
  case ATTN_ERROR_ARGUMENT:
    return "invalid argument";
  case ATTN_ERROR_RUNTIME:
    return "runtime error";
  case ATTN_ERROR_OUT_OF_MEMORY:
    return "out of memory";
  }
  return "unknown status";
}

const char *attn_error_message(void) { return lastErrorMessage.c_str(); }

attn_status attn_set_error(attn_status status, const char *message) {
  // No exception (an allocation that fails) may leave the C API.
  return guard("attn_set_error", [&] {
    return setError(status, message ? std::string(message) : std::string());
  });
}

attn_status attn_tensor_check(const attn_tensor *t, const char *name,
                              int32_t rank, const int64_t *expected_shape,
                              const char *const *dim_names) {
  return guard("attn_tensor_check", [&]() -> attn_status {
    std::string what = name ? name : "tensor";
    if (rank < 0 || rank > ATTN_MAX_RANK)
      return setError(ATTN_ERROR_ARGUMENT,
                      "expected rank " + std::to_string(rank) + " of " + what +
                          " is outside 0.." + std::to_string(ATTN_MAX_RANK));
    if (rank > 0 && !expected_shape)
      return setError(ATTN_ERROR_ARGUMENT,
                      "no expected shape given for " + what);
    if (!t)
      return setError(ATTN_ERROR_ARGUMENT, what + " is a null tensor");
    if (t->rank < 0 || t->rank > ATTN_MAX_RANK)
      return setError(ATTN_ERROR_ARGUMENT,
                      what + " has rank " + std::to_string(t->rank) +
                          " outside 0.." + std::to_string(ATTN_MAX_RANK));
    std::string actual = formatShape(t->shape, static_cast<size_t>(t->rank));
    std::string expected = formatExpected(expected_shape, rank, dim_names);
    if (!t->data)
      return setError(ATTN_ERROR_ARGUMENT,
                      what + " with shape " + actual + " has no data");
    for (int32_t i = 0; i < t->rank; ++i)
      if (t->shape[i] <= 0)
        return setError(ATTN_ERROR_SHAPE,
                        what + " has shape " + actual + " with size " +
                            std::to_string(t->shape[i]) + " on axis " +
                            std::to_string(i) +
                            "; every size must be at least 1");
    bool matches = t->rank == rank;
    for (int32_t i = 0; matches && i < rank; ++i)
      matches = expected_shape[i] < 0 || expected_shape[i] == t->shape[i];
    if (!matches)
      return setError(ATTN_ERROR_SHAPE, what + " has shape " + actual +
                                            " but the model expects " +
                                            expected);
    int64_t count = 0;
    if (!shapeElementCount(t->shape, static_cast<size_t>(t->rank), count))
      return setError(ATTN_ERROR_SHAPE, what + " has shape " + actual +
                                            " whose element count overflows");
    // Generated kernels address one buffer with 32-bit extents and strides
    // and at most 2^31 - 1 bytes (Halide 14 without large buffers).
    if (count > INT32_MAX / int64_t(sizeof(float)))
      return setError(ATTN_ERROR_OUT_OF_MEMORY,
                      what + " has shape " + actual + ", " +
                          std::to_string(count * int64_t(sizeof(float))) +
                          " bytes; a kernel's buffer is limited to " +
                          std::to_string(INT32_MAX) + " bytes");
    return ATTN_OK;
  });
}

attn_status attn_ids_check(const attn_ids *ids, const char *name, int32_t rank,
                           const int64_t *expected_shape,
                           const char *const *dim_names, int64_t bound) {
  if (!ids)
    return attn_tensor_check(nullptr, name, rank, expected_shape, dim_names);
  // The same checks of shape as a tensor's: the elements are 4 bytes too.
  attn_tensor view;
  view.data = const_cast<float *>(reinterpret_cast<const float *>(ids->data));
  view.rank = ids->rank;
  std::memcpy(view.shape, ids->shape, sizeof view.shape);
  if (attn_status status =
          attn_tensor_check(&view, name, rank, expected_shape, dim_names);
      status != ATTN_OK || bound <= 0)
    return status;
  return guard("attn_ids_check", [&]() -> attn_status {
    int64_t count = 1;
    for (int32_t i = 0; i < ids->rank; ++i)
      count *= ids->shape[i];
    for (int64_t k = 0; k < count; ++k) {
      int32_t id = ids->data[k];
      if (id >= 0 && id < bound)
        continue;
      std::vector<int64_t> position(size_t(ids->rank));
      for (int64_t i = ids->rank, rest = k; i-- > 0;) {
        position[size_t(i)] = rest % ids->shape[i];
        rest /= ids->shape[i];
      }
      return setError(ATTN_ERROR_ARGUMENT,
                      tokenIdOutOfRange(id, position,
                                        name ? name : "ids", bound));
    }
    return ATTN_OK;
  });
}

} // extern "C"
