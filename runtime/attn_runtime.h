/*===- attn_runtime.h - C API of the attnc runtime ----------------*- C -*-===*\
|*                                                                            *|
|* This file declares the C API that applications use together with the       *|
|* kernels attnc generates: status codes and thread-local error messages,     *|
|* caller-owned tensor descriptors with shape checks, and weight sets loaded  *|
|* from safetensors files. The header is valid C99 and C++; the library       *|
|* behind it depends on nothing but the C++17 standard library.               *|
|*                                                                            *|
|* Conventions: every fallible function returns an attn_status; on anything   *|
|* but ATTN_OK, attn_error_message() describes what went wrong. Tensors are   *|
|* dense f32 arrays in C (row-major) order.                                   *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef ATTNC_RUNTIME_ATTN_RUNTIME_H
#define ATTNC_RUNTIME_ATTN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===-- Status and errors -------------------------------------------------===*/

/// Result of every fallible runtime call (and of generated entry points).
typedef enum attn_status {
  ATTN_OK = 0,         ///< success
  ATTN_ERROR_IO,       ///< a file could not be opened, read or written
  ATTN_ERROR_FORMAT,   ///< a file is malformed (safetensors, npy)
  ATTN_ERROR_MISSING,  ///< a named weight is not in the weight set
  ATTN_ERROR_SHAPE,    ///< a tensor has the wrong rank or shape
  ATTN_ERROR_DTYPE,    ///< a tensor has an element type that is not supported
  ATTN_ERROR_ARGUMENT, ///< a caller passed an invalid argument (NULL, bad rank)
  ATTN_ERROR_RUNTIME,  ///< a kernel or the runtime failed while running
  ATTN_ERROR_OUT_OF_MEMORY ///< an allocation failed
} attn_status;

/// Maximum rank of an attn_tensor.
#define ATTN_MAX_RANK 8

/// Returns a static, lowercase name of \p status ("ok", "io error", ...);
/// never NULL, also for values outside the enum.
const char *attn_status_string(attn_status status);

/// Returns the message of the last call on this thread that failed (returned
/// a status other than ATTN_OK). The text names the file, tensor or argument
/// and the offending values. After a successful call the returned text is
/// unspecified (it may still hold an older message), so read it only right
/// after a failure. The pointer stays valid until the next failing call on
/// this thread; never NULL.
const char *attn_error_message(void);

/// Records \p message (NULL reads as "") as this thread's last error message
/// and returns \p status unchanged, so generated code can write
/// `return attn_set_error(ATTN_ERROR_SHAPE, "...");`.
attn_status attn_set_error(attn_status status, const char *message);

/*===-- Tensors -----------------------------------------------------------===*/

/// A caller-owned dense f32 tensor in C order: element (i0, ..., ik) lives at
/// data[((i0 * shape[1] + i1) * shape[2] + ...) + ik]. Only the first `rank`
/// entries of `shape` are meaningful. The runtime never frees `data`.
typedef struct attn_tensor {
  float *data;                  ///< first element; must not be NULL
  int32_t rank;                 ///< number of axes, 0..ATTN_MAX_RANK
  int64_t shape[ATTN_MAX_RANK]; ///< size of each axis, each >= 1
} attn_tensor;

/// Checks that \p t is a usable tensor of rank \p rank whose shape matches
/// \p expected_shape. An entry < 0 in \p expected_shape is a runtime
/// dimension that accepts any size >= 1; other entries must match exactly.
/// A size of 0 on any axis is always an error. \p name describes the tensor
/// in messages and is used verbatim (for example "input 'x'"; NULL reads as
/// "tensor"). \p dim_names, if not NULL, holds \p rank entries naming the
/// runtime dimensions (NULL entries allowed) for the message, which reads:
///   input 'x' has shape [2, 7, 256] but the model expects [b, n, 512]
/// Returns ATTN_ERROR_ARGUMENT for a NULL tensor or data pointer or a rank
/// out of range, ATTN_ERROR_SHAPE for a rank or shape mismatch, and
/// ATTN_ERROR_OUT_OF_MEMORY for a tensor over 2^31 - 1 bytes (the most one
/// buffer of a generated kernel holds).
attn_status attn_tensor_check(const attn_tensor *t, const char *name,
                              int32_t rank, const int64_t *expected_shape,
                              const char *const *dim_names);

/*===-- Weight sets -------------------------------------------------------===*/

/// An immutable set of named f32 tensors loaded from a safetensors file.
/// Safe to read from several threads at once.
typedef struct attn_weights attn_weights;

/// Loads every tensor of the safetensors file at \p path into a new weight
/// set stored in \p *out (set to NULL on failure). F32 tensors are loaded as
/// they are, F16 and BF16 tensors are converted to f32; any other dtype makes
/// the whole load fail with ATTN_ERROR_DTYPE. A malformed file gives
/// ATTN_ERROR_FORMAT, an unreadable one ATTN_ERROR_IO. Free the set with
/// attn_weights_free.
attn_status attn_weights_load(const char *path, attn_weights **out);

/// Frees \p weights and every tensor it owns; NULL is a no-op.
void attn_weights_free(attn_weights *weights);

/// Returns the number of tensors in \p weights (0 for NULL).
size_t attn_weights_count(const attn_weights *weights);

/// Returns the name of tensor \p index (tensors are sorted by name), or NULL
/// if \p weights is NULL or \p index >= attn_weights_count(weights). The
/// string is owned by the set.
const char *attn_weights_name(const attn_weights *weights, size_t index);

/// Returns the shape of tensor \p index and stores its rank in \p *rank, or
/// returns NULL (rank 0) if \p index is out of range. Owned by the set.
const int64_t *attn_weights_shape(const attn_weights *weights, size_t index,
                                  int32_t *rank);

/// Looks up tensor \p name and checks that it has rank \p rank and shape
/// \p shape (an entry < 0 accepts any size). On success stores a pointer to
/// its contiguous f32 data, in C order and owned by the set, in \p *data.
/// Returns ATTN_ERROR_MISSING if no tensor has that name (the message
/// suggests a similar name if there is one), ATTN_ERROR_SHAPE with both
/// shapes on a mismatch, ATTN_ERROR_ARGUMENT for NULL arguments.
attn_status attn_weights_get(const attn_weights *weights, const char *name,
                             int32_t rank, const int64_t *shape,
                             const float **data);

/// Writes \p count f32 tensors to a new safetensors file at \p path
/// (replacing it). Tensor i is called names[i], has rank ranks[i] (0 to
/// ATTN_MAX_RANK), shape shapes[i][0..ranks[i]) and data data[i] in C order.
/// Names must be unique and non-empty. Returns ATTN_ERROR_ARGUMENT for bad
/// arguments, ATTN_ERROR_IO if the file cannot be written.
attn_status attn_weights_save(const char *path, size_t count,
                              const char *const *names, const int32_t *ranks,
                              const int64_t *const *shapes,
                              const float *const *data);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // ATTNC_RUNTIME_ATTN_RUNTIME_H
