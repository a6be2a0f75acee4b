// SPDX-License-Identifier: Apache-2.0
#include "tpu/host_size.h"

#include <unistd.h>

#include <cstdio>
#include <limits>

#include "tpu/error.h"

namespace tpu {

std::string byte_size(uint64_t bytes) {
  static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  double v = double(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 6) v /= 1024, ++unit;
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 && v != double(uint64_t(v)) ? "%.1f %s" : "%.0f %s", v, kUnits[unit]);
  return buf;
}

uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

uint64_t checked_bytes(const std::string& what, const std::vector<int64_t>& dims, uint64_t elem_bytes,
                       const char* type) {
  std::string shape;
  // The exact size while it fits 64 bits; past that, 2^64 (the message then
  // says "more than 16 EiB"), which a later dimension of 0 still makes 0.
  using u128 = unsigned __int128;
  constexpr u128 kPast64 = u128(std::numeric_limits<uint64_t>::max()) + 1;
  u128 bytes = elem_bytes;
  for (const int64_t d : dims) {
    shape += (shape.empty() ? "" : "x") + std::to_string(d);
    if (d < 0) throw Error(what + " has a negative dimension (" + shape + ")");
    bytes *= uint64_t(d);
    if (bytes > kPast64) bytes = kPast64;
  }
  const bool overflow = bytes == kPast64;
  const uint64_t have = physical_memory_bytes();
  if (overflow || (have > 0 && bytes > have)) {
    const std::string size = overflow ? "more than 16 EiB" : byte_size(uint64_t(bytes));
    throw Error(what + ", " + shape + " " + type + " (" + size + "), is larger than this machine's memory (" +
                byte_size(have) + ")");
  }
  return uint64_t(bytes);
}

}  // namespace tpu
