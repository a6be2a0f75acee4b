// SPDX-License-Identifier: Apache-2.0
// Host memory as the device sees it over DMA: the reference model, the
// root-complex model, the model transport and the GEMM planner all read and
// write it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace tpu {

// Sparse, byte-addressed 64-bit host memory in 4 KiB pages; unwritten bytes
// read as 0 and addresses wrap at 2^64. Fault ranges model memory-port errors.
class HostMemory {
 public:
  static constexpr uint64_t kPageBytes = 4096;

  HostMemory() = default;
  // Copies are deep: a test runs the model and the RTL on two copies of one image.
  HostMemory(const HostMemory& other) { *this = other; }
  HostMemory& operator=(const HostMemory& other);
  HostMemory(HostMemory&&) = default;
  HostMemory& operator=(HostMemory&&) = default;

  std::vector<uint8_t> read(uint64_t addr, size_t len) const;
  void read(uint64_t addr, std::span<uint8_t> out) const;
  void write(uint64_t addr, std::span<const uint8_t> data);
  void write(uint64_t addr, std::span<const int8_t> data);

  // Little-endian scalars.
  uint8_t read8(uint64_t addr) const { return uint8_t(read_le(addr, 1)); }
  uint16_t read16(uint64_t addr) const { return uint16_t(read_le(addr, 2)); }
  uint32_t read32(uint64_t addr) const { return uint32_t(read_le(addr, 4)); }
  uint64_t read64(uint64_t addr) const { return read_le(addr, 8); }
  void write8(uint64_t addr, uint8_t v) { write_le(addr, v, 1); }
  void write16(uint64_t addr, uint16_t v) { write_le(addr, v, 2); }
  void write32(uint64_t addr, uint32_t v) { write_le(addr, v, 4); }
  void write64(uint64_t addr, uint64_t v) { write_le(addr, v, 8); }

  // Any RHM/WHM/RW row access touching [addr, addr + len) fails (MEM_FAULT).
  void add_fault(uint64_t addr, uint64_t len);
  void clear_faults() { faults_.clear(); }
  // True when [addr, addr + len) overlaps a fault range (len >= 1).
  bool faults(uint64_t addr, uint64_t len) const;

  size_t pages() const { return pages_.size(); }

 private:
  using Page = std::array<uint8_t, kPageBytes>;
  struct Range {
    uint64_t addr, len;
  };

  uint64_t read_le(uint64_t addr, int bytes) const;
  void write_le(uint64_t addr, uint64_t v, int bytes);
  const Page* find_page(uint64_t addr) const;
  Page& page(uint64_t addr);

  std::unordered_map<uint64_t, std::unique_ptr<Page>> pages_;
  std::vector<Range> faults_;
};

}  // namespace tpu
