// SPDX-License-Identifier: Apache-2.0
// The MLP model file of `tpu mlp` (docs/cli.md, "mlp"): a JSON object whose
// "layers" name int8 weights and int32 biases in .npy files and give each
// layer's requantization. Split from the command so that the fuzz target
// (sw/fuzz) can feed it any bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tpu/npy.h"
#include "tpu/ops.h"

namespace tpu::cli {

// One layer as the model file describes it, with where its weights came from.
struct LayerSource {
  DenseLayer layer;
  std::string w_path;
};

// Reads an array the model names: load(path, dtype, ndim) returns a checked
// npy::Array or throws tpu::Error (npy::load_matrix and npy::load_vector).
using ArrayLoader = std::function<npy::Array(const std::string& path, npy::Dtype dtype, int ndim)>;

// The layers of the model file `path` whose bytes are `bytes`; .npy names
// are relative to the file's directory. Throws tpu::Error naming the file
// (and the layer) for anything that is not a model the TPU runs.
std::vector<LayerSource> parse_model(const std::string& path, std::span<const uint8_t> bytes,
                                     const ArrayLoader& load);

// The file read (at most kMaxModelBytes, a regular file) and parsed, its
// arrays read with npy::load_matrix / load_vector.
std::vector<LayerSource> load_model(const std::string& path);

}  // namespace tpu::cli
