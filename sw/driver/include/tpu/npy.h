// SPDX-License-Identifier: Apache-2.0
// NumPy .npy files (format versions 1.0, 2.0 and 3.0), for the tools and
// tests. Only C-order (row-major) arrays of the dtypes the TPU uses are read:
// int8, uint8, int32 and float32, little-endian. Anything else is rejected
// with a tpu::Error that names the file and says what was expected.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tpu/error.h"

namespace tpu::npy {

enum class Dtype { kInt8, kUint8, kInt32, kFloat32 };

// "int8", ...; and the .npy descriptor "|i1", "<i4", ...
const char* dtype_name(Dtype d);
const char* dtype_descr(Dtype d);

struct Array {
  Dtype dtype = Dtype::kInt8;
  std::vector<int64_t> shape;  // empty for a 0-d array
  std::vector<uint8_t> data;   // raw little-endian elements, C order
  int64_t elements() const;
};

// Throws tpu::Error for a missing/unreadable file, a corrupt or truncated
// file, Fortran order, or an unsupported dtype ("A.npy: dtype float64 is not
// supported; use int8"-style messages).
Array load(const std::string& path);

// Writes atomically: to a temporary file in the same directory, then renamed,
// so a failure never leaves a partial file at path.
void save(const std::string& path, const Array& a);

// Convenience: 2-D arrays of a given dtype. load_matrix throws tpu::Error
// when the array is not 2-D or its dtype is not `want`.
Array load_matrix(const std::string& path, Dtype want);
// The same for 1-D arrays (a bias vector).
Array load_vector(const std::string& path, Dtype want);
template <class T>
std::vector<T> values(const Array& a);  // T = int8_t, uint8_t, int32_t, float
// Copies elements() items from data (zeros when data is null).
Array make(Dtype d, std::vector<int64_t> shape, const void* data);

// A whole file; tpu::Error "<path>: cannot open: <reason>" when it cannot be read.
std::vector<uint8_t> read_file(const std::string& path);
// Writes any file the way save() does: all of it, or nothing at path.
void write_atomic(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace tpu::npy
