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

/// Caller-owned token ids in C order, the input of a model that takes
/// `i32` ids (an embedding's rows): as attn_tensor, with int32 elements.
typedef struct attn_ids {
  const int32_t *data;          ///< first id; must not be NULL
  int32_t rank;                 ///< number of axes, 0..ATTN_MAX_RANK
  int64_t shape[ATTN_MAX_RANK]; ///< size of each axis, each >= 1
} attn_ids;

/// attn_tensor_check for ids, and then each id: one outside 0..bound - 1
/// (the rows of the embedding table that reads them; \p bound <= 0 checks
/// none) is ATTN_ERROR_ARGUMENT naming it and its position:
///   token id 50 at [0, 1] of input 'ids' is out of range: the embedding
///   table has 50 rows (ids 0..49)
attn_status attn_ids_check(const attn_ids *ids, const char *name, int32_t rank,
                           const int64_t *expected_shape,
                           const char *const *dim_names, int64_t bound);

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

/*===-- Incremental decoding ----------------------------------------------===*/

/// Runs one block of a decoded sequence: what `attnc compile --decode`
/// generates as <model>_decode_block (the block kernel: whole chunks) and,
/// for a model with chunks, <model>_decode_step (the step kernel: rows
/// within one chunk) for a causal model. The block holds `rows` rows
/// (1..block_rows) and starts at row `offset` of the sequence. inputs[i]
/// holds its rows of input i (input_row_elements[i] 4-byte elements each,
/// f32 or int32 ids, in C order), outputs[i] receives its rows of output i;
/// carries[i] holds what the earlier blocks carry into it (a chunk prefix,
/// a shifted row) and nexts[i] receives what the next block would carry
/// (carry_elements[i] floats each). A cache (carry_caches[i] nonzero) is
/// written in place: carries[i] and nexts[i] are both its first row. A
/// key/value cache (1) is an array of `capacity` rows of carry_elements[i]
/// floats: the block reads the rows before `offset` and writes its own
/// rows [offset, offset + rows). A chunk cache (2), carry_elements[i]
/// floats, holds the current chunk's rows, which the function knows.
typedef attn_status (*attn_decode_block_fn)(const void *model, int32_t rows,
                                            int64_t offset,
                                            const void *const *inputs,
                                            float *const *outputs,
                                            const float *const *carries,
                                            float *const *nexts);

/// What attn_decoder_new needs to know of a generated model; the arrays are
/// copied.
typedef struct attn_decoder_layout {
  const char *model;         ///< the model's name, for messages
  int32_t block_rows;        ///< most rows of one block
  int32_t inputs, outputs, carries;
  const int64_t *input_row_elements;
  const int64_t *output_row_elements;
  const int64_t *carry_elements; ///< a key/value cache's: per row
  attn_decode_block_fn run_block;
  /// run_block runs blocks whose rows are a multiple of this, starting at
  /// one (the model's chunk; 0 or 1: any). Above 1, run_step runs the
  /// rows between, in blocks within a multiple of step_rows (dividing it).
  int32_t unit_rows;
  attn_decode_block_fn run_step;
  int32_t step_rows;
  /// Per carry, 1 for a key/value cache of `capacity` rows, 2 for a chunk
  /// cache, 0 otherwise (NULL: none).
  const int32_t *carry_caches;
  int64_t capacity; ///< rows of each key/value cache: the most a sequence
                    ///< holds
} attn_decoder_layout;

/// One sequence of a causal model decoded incrementally (prefill, then a
/// step per token): the carries, constant in the sequence's length but for
/// key/value caches. An append runs whole chunks through the block
/// function and the rows between through the step function.
/// Not thread-safe; decoders of one model may run on different threads.
typedef struct attn_decoder attn_decoder;

/// A new decoder, at the start of a sequence, of the model `layout`
/// describes, whose block function reads \p model (its weights; they must
/// outlive the decoder). ATTN_ERROR_ARGUMENT for a bad layout.
attn_status attn_decoder_new(const attn_decoder_layout *layout,
                             const void *model, attn_decoder **out);

/// Frees \p decoder; NULL is a no-op.
void attn_decoder_free(attn_decoder *decoder);

/// Back to the start of a sequence (NULL: no-op).
void attn_decoder_reset(attn_decoder *decoder);

/// Rows appended since the start (0 for NULL).
int64_t attn_decoder_length(const attn_decoder *decoder);

/// The state's bytes: the carries with their next values (0 for NULL). The
/// same at every length.
int64_t attn_decoder_state_bytes(const attn_decoder *decoder);

/// Appends \p rows rows to the sequence: inputs[i] holds their rows of
/// input i, and outputs[i] (or NULL, not wanted) receives their outputs
/// (layout's row elements each). A prefill is an append of the prompt, a
/// step an append of one row. A sequence holds at most 2^24 rows, and with
/// key/value caches at most their capacity (ATTN_ERROR_ARGUMENT). On an
/// error the sequence is as before the block that failed.
attn_status attn_decoder_append(attn_decoder *decoder, int64_t rows,
                                const void *const *inputs,
                                float *const *outputs);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // ATTNC_RUNTIME_ATTN_RUNTIME_H
