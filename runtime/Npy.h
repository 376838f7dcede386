//===- Npy.h - read and write .npy arrays of float32 ------------*- C++ -*-===//
//
// This file declares the .npy reader and writer that the command line tools
// use for inputs and outputs. Little-endian float32 ('<f4') arrays in C
// order of rank 0 to 8 are supported, and for token ids the reader also
// takes '<i4' and '<i8'; the writer writes float32. A file is the magic "\x93NUMPY", a
// version (1.0, 2.0 or 3.0), a header length (2 bytes for 1.0, 4 otherwise),
// a Python dict literal with 'descr', 'fortran_order' and 'shape', and the
// raw data. The reader validates every part and checks that the data is
// exactly as long as the shape says; messages start with the file name.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_NPY_H
#define ATTNC_RUNTIME_NPY_H

#include "runtime/Error.h"
#include "runtime/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attnc::runtime {

/// The highest rank the reader and writer accept (ATTN_MAX_RANK).
constexpr size_t kMaxNpyRank = ATTN_MAX_RANK;

/// The largest header the reader accepts.
constexpr uint64_t kMaxNpyHeader = 1u << 20;

/// Reads the .npy file at \p path into \p out: '<f4' data, or token ids
/// ('<i4' or '<i8', each fitting int32), which \p out holds as int32 bits
/// with dtype "i32" (Tensor.h). Fails with ATTN_ERROR_IO if it cannot be
/// read, ATTN_ERROR_FORMAT if it is malformed or truncated or an int64 id
/// does not fit int32, ATTN_ERROR_DTYPE for any other dtype,
/// ATTN_ERROR_SHAPE if its rank exceeds kMaxNpyRank.
Result readNpy(const std::string &path, HostTensor &out);

/// Parses a .npy file held in memory; \p displayName stands for the file in
/// messages.
Result parseNpy(const void *bytes, size_t size, const std::string &displayName,
                HostTensor &out);

/// Serializes an array of \p shape with elements \p data (C order) as a
/// version 1.0 .npy file (2.0 if the header needs it) into \p bytes.
Result serializeNpy(const std::vector<int64_t> &shape, const float *data,
                    std::string &bytes);

/// Writes an array of \p shape with elements \p data (C order) to the .npy
/// file at \p path, replacing it.
Result writeNpy(const std::string &path, const std::vector<int64_t> &shape,
                const float *data);

/// Writes \p array to the .npy file at \p path; checks that its data has as
/// many elements as its shape.
Result writeNpy(const std::string &path, const HostTensor &array);

} // namespace attnc::runtime

#endif // ATTNC_RUNTIME_NPY_H
