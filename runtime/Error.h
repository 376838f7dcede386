//===- Error.h - statuses and messages inside the runtime -------*- C++ -*-===//
//
// This file declares the C++ side of the runtime's error handling: setError,
// which records the thread-local message behind attn_error_message(), the
// Result type that the readers and writers return, a guard that turns C++
// exceptions into statuses at the C API boundary, and small formatting
// helpers for messages. Generated kernels include it to report their own
// errors.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_ERROR_H
#define ATTNC_RUNTIME_ERROR_H

#include "runtime/attn_runtime.h"

#include <cstdint>
#include <exception>
#include <new>
#include <string>
#include <utility>

namespace attnc::runtime {

/// Records \p message as this thread's last error message and returns
/// \p status. Never throws (falls back to a fixed text if memory runs out).
attn_status setError(attn_status status, std::string message);

/// The outcome of a reader or writer: a status and, unless ok(), a message
/// that names the file and what is wrong.
struct Result {
  attn_status status = ATTN_OK;
  std::string message;

  /// Returns true if the operation succeeded.
  bool ok() const { return status == ATTN_OK; }

  /// Returns a successful result.
  static Result success() { return Result(); }

  /// Returns a failed result with \p status and \p message.
  static Result error(attn_status status, std::string message) {
    Result r;
    r.status = status;
    r.message = std::move(message);
    return r;
  }
};

/// Records \p result's message if it failed and returns its status.
inline attn_status report(const Result &result) {
  if (result.ok())
    return ATTN_OK;
  return setError(result.status, result.message);
}

/// Runs \p body (returning attn_status) and converts any escaping C++
/// exception into ATTN_ERROR_OUT_OF_MEMORY or ATTN_ERROR_RUNTIME, so that no
/// exception crosses the C API.
template <typename Body> attn_status guard(const char *what, Body &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return setError(ATTN_ERROR_OUT_OF_MEMORY,
                    std::string(what) + ": out of memory");
  } catch (const std::exception &e) {
    return setError(ATTN_ERROR_RUNTIME, std::string(what) + ": " + e.what());
  } catch (...) {
    return setError(ATTN_ERROR_RUNTIME,
                    std::string(what) + ": unknown internal error");
  }
}

/// Formats \p rank sizes as "[2, 7, 256]".
std::string formatShape(const int64_t *shape, size_t rank);

/// Returns the number of elements of \p shape in \p count, or false if a
/// size is negative or the product overflows int64_t.
bool shapeElementCount(const int64_t *shape, size_t rank, int64_t &count);

/// Returns \p text in single quotes with control and non-ASCII bytes escaped
/// as \xNN, so that names from untrusted files print safely.
std::string quote(const std::string &text);

} // namespace attnc::runtime

#endif // ATTNC_RUNTIME_ERROR_H
