//===- Weights.cpp - weight sets of the C API -----------------------------===//
//
// This file implements attn_weights, the C API's weight set: a safetensors
// file loaded into f32 tensors sorted by name, looked up with shape checks.
// A missing name is reported together with the closest present name (by
// edit distance) when one is close enough to be a likely typo.
//
//===----------------------------------------------------------------------===//
#include "runtime/Error.h"
#include "runtime/Safetensors.h"

#include <algorithm>

using namespace attnc::runtime;

/// The weight set behind the opaque C handle.
struct attn_weights {
  /// The file it was loaded from, for messages.
  std::string path;
  /// The tensors, sorted by name.
  std::vector<SafetensorsTensor> tensors;
};

namespace {

/// Returns the Levenshtein distance between \p a and \p b, or \p limit + 1
/// as soon as it is known to exceed \p limit.
size_t editDistance(const std::string &a, const std::string &b, size_t limit) {
  size_t lengthGap =
      a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (lengthGap > limit)
    return limit + 1;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    size_t best = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
      best = std::min(best, row[j]);
    }
    if (best > limit)
      return limit + 1;
  }
  return row[b.size()];
}

/// Returns the present name closest to \p name, or "" if none is close.
std::string similarName(const attn_weights &weights, const std::string &name) {
  size_t limit = std::max<size_t>(2, name.size() / 3);
  std::string best;
  size_t bestDistance = limit + 1;
  for (const SafetensorsTensor &tensor : weights.tensors) {
    size_t distance = editDistance(name, tensor.name, limit);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = tensor.name;
    }
  }
  return best;
}

const SafetensorsTensor *findTensor(const attn_weights &weights,
                                    const std::string &name) {
  auto it =
      std::lower_bound(weights.tensors.begin(), weights.tensors.end(), name,
                       [](const SafetensorsTensor &t, const std::string &n) {
                         return t.name < n;
                       });
  if (it == weights.tensors.end() || it->name != name)
    return nullptr;
  return &*it;
}

/// Formats a weight shape where entries < 0 accept any size.
std::string formatWanted(const int64_t *shape, int32_t rank) {
  std::string out = "[";
  for (int32_t i = 0; i < rank; ++i)
    out += (i ? ", " : "") +
           (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return out + "]";
}

} // namespace

extern "C" {

attn_status attn_weights_load(const char *path, attn_weights **out) {
  if (out)
    *out = nullptr;
  return guard("attn_weights_load", [&]() -> attn_status {
    if (!path)
      return setError(ATTN_ERROR_ARGUMENT, "attn_weights_load: path is null");
    if (!out)
      return setError(ATTN_ERROR_ARGUMENT, "attn_weights_load: out is null");
    SafetensorsFile file;
    Result r = readSafetensors(path, file);
    if (!r.ok())
      return report(r);
    auto *weights = new attn_weights;
    weights->path = path;
    weights->tensors = std::move(file.tensors);
    *out = weights;
    return ATTN_OK;
  });
}

void attn_weights_free(attn_weights *weights) { delete weights; }

size_t attn_weights_count(const attn_weights *weights) {
  return weights ? weights->tensors.size() : 0;
}

const char *attn_weights_name(const attn_weights *weights, size_t index) {
  if (!weights || index >= weights->tensors.size())
    return nullptr;
  return weights->tensors[index].name.c_str();
}

const int64_t *attn_weights_shape(const attn_weights *weights, size_t index,
                                  int32_t *rank) {
  if (rank)
    *rank = 0;
  if (!weights || index >= weights->tensors.size())
    return nullptr;
  const SafetensorsTensor &tensor = weights->tensors[index];
  if (rank)
    *rank = static_cast<int32_t>(tensor.shape.size());
  // A non-null pointer even for rank 0, so callers can tell "found".
  static const int64_t scalarShape[1] = {0};
  return tensor.shape.empty() ? scalarShape : tensor.shape.data();
}

attn_status attn_weights_get(const attn_weights *weights, const char *name,
                             int32_t rank, const int64_t *shape,
                             const float **data) {
  if (data)
    *data = nullptr;
  return guard("attn_weights_get", [&]() -> attn_status {
    if (!weights || !name || !data)
      return setError(ATTN_ERROR_ARGUMENT, std::string("attn_weights_get: ") +
                                               (!weights ? "weights"
                                                : !name  ? "name"
                                                         : "data") +
                                               " is null");
    if (rank < 0 || (rank > 0 && !shape))
      return setError(ATTN_ERROR_ARGUMENT,
                      "attn_weights_get: invalid expected rank " +
                          std::to_string(rank) + " or null shape for " +
                          quote(name));
    const SafetensorsTensor *tensor = findTensor(*weights, name);
    if (!tensor) {
      std::string message =
          "weight " + quote(name) + " is missing from " + quote(weights->path);
      std::string similar = similarName(*weights, name);
      if (!similar.empty())
        message += "; did you mean " + quote(similar) + "?";
      return setError(ATTN_ERROR_MISSING, message);
    }
    bool matches = tensor->shape.size() == static_cast<size_t>(rank);
    for (int32_t i = 0; matches && i < rank; ++i)
      matches = shape[i] < 0 || shape[i] == tensor->shape[i];
    if (!matches)
      return setError(
          ATTN_ERROR_SHAPE,
          "weight " + quote(name) + " in " + quote(weights->path) +
              " has shape " +
              formatShape(tensor->shape.data(), tensor->shape.size()) +
              " but the model expects " + formatWanted(shape, rank));
    *data = tensor->data.data();
    return ATTN_OK;
  });
}

attn_status attn_weights_save(const char *path, size_t count,
                              const char *const *names, const int32_t *ranks,
                              const int64_t *const *shapes,
                              const float *const *data) {
  return guard("attn_weights_save", [&]() -> attn_status {
    if (!path)
      return setError(ATTN_ERROR_ARGUMENT, "attn_weights_save: path is null");
    if (count > 0 && (!names || !ranks || !shapes || !data))
      return setError(ATTN_ERROR_ARGUMENT,
                      "attn_weights_save: null array for " +
                          std::to_string(count) + " tensors");
    std::vector<SafetensorsTensorRef> tensors(count);
    for (size_t i = 0; i < count; ++i) {
      std::string where = "attn_weights_save: tensor " + std::to_string(i);
      if (!names[i])
        return setError(ATTN_ERROR_ARGUMENT, where + " has a null name");
      if (ranks[i] < 0 || ranks[i] > ATTN_MAX_RANK)
        return setError(ATTN_ERROR_ARGUMENT,
                        where + " (" + quote(names[i]) + ") has rank " +
                            std::to_string(ranks[i]) + " outside 0.." +
                            std::to_string(ATTN_MAX_RANK));
      if (ranks[i] > 0 && !shapes[i])
        return setError(ATTN_ERROR_ARGUMENT,
                        where + " (" + quote(names[i]) + ") has a null shape");
      tensors[i].name = names[i];
      tensors[i].shape.assign(shapes[i], shapes[i] + ranks[i]);
      tensors[i].data = data[i];
    }
    return report(writeSafetensors(path, tensors));
  });
}

} // extern "C"
