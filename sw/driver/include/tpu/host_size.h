// SPDX-License-Identifier: Apache-2.0
// Sizes that come from files checked before anything is allocated: an array
// whose shape a file declares (a .npy header, a .tflite tensor, the product
// of two such arrays) fails with a message that names it and its size, never
// with the C++ library's length or allocation error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpu {

// The bytes of an array of `dims` elements of `elem_bytes` each. Throws
// tpu::Error "<what>, <dims> <type> (<size>), is larger than this machine's
// memory (<size>)" when it does not fit in memory, or overflows 64 bits.
uint64_t checked_bytes(const std::string& what, const std::vector<int64_t>& dims, uint64_t elem_bytes,
                       const char* type);

// "16 EiB", "23.4 GiB", "512 bytes": the binary unit that keeps 1..1023.
std::string byte_size(uint64_t bytes);

// This machine's physical memory in bytes (sysconf), or 0 if unknown.
uint64_t physical_memory_bytes();

}  // namespace tpu
