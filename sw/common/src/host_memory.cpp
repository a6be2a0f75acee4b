// SPDX-License-Identifier: Apache-2.0
#include "tpu/host_memory.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tpu {

HostMemory& HostMemory::operator=(const HostMemory& other) {
  if (this == &other) return *this;
  pages_.clear();
  for (const auto& [index, page] : other.pages_) pages_.emplace(index, std::make_unique<Page>(*page));
  faults_ = other.faults_;
  return *this;
}

const HostMemory::Page* HostMemory::find_page(uint64_t addr) const {
  const auto it = pages_.find(addr / kPageBytes);
  return it == pages_.end() ? nullptr : it->second.get();
}

HostMemory::Page& HostMemory::page(uint64_t addr) {
  auto& p = pages_[addr / kPageBytes];
  if (!p) p = std::make_unique<Page>(Page{});
  return *p;
}

void HostMemory::read(uint64_t addr, std::span<uint8_t> out) const {
  size_t done = 0;
  while (done < out.size()) {
    const uint64_t offset = addr % kPageBytes;
    const size_t chunk = std::min<size_t>(out.size() - done, kPageBytes - offset);
    if (const Page* p = find_page(addr))
      std::copy_n(p->begin() + offset, chunk, out.begin() + done);
    else
      std::fill_n(out.begin() + done, chunk, uint8_t{0});
    done += chunk;
    addr += chunk;  // wraps at 2^64
  }
}

std::vector<uint8_t> HostMemory::read(uint64_t addr, size_t len) const {
  std::vector<uint8_t> out(len);
  read(addr, out);
  return out;
}

void HostMemory::write(uint64_t addr, std::span<const uint8_t> data) {
  size_t done = 0;
  while (done < data.size()) {
    const uint64_t offset = addr % kPageBytes;
    const size_t chunk = std::min<size_t>(data.size() - done, kPageBytes - offset);
    std::copy_n(data.begin() + done, chunk, page(addr).begin() + offset);
    done += chunk;
    addr += chunk;
  }
}

void HostMemory::write(uint64_t addr, std::span<const int8_t> data) {
  write(addr, std::span(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
}

uint64_t HostMemory::read_le(uint64_t addr, int bytes) const {
  uint8_t buf[8];
  read(addr, std::span(buf, size_t(bytes)));
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | buf[i];
  return v;
}

void HostMemory::write_le(uint64_t addr, uint64_t v, int bytes) {
  uint8_t buf[8];
  for (int i = 0; i < bytes; ++i) buf[i] = uint8_t(v >> (8 * i));
  write(addr, std::span<const uint8_t>(buf, size_t(bytes)));
}

void HostMemory::add_fault(uint64_t addr, uint64_t len) {
  if (len == 0) throw std::invalid_argument("HostMemory::add_fault: empty range");
  faults_.push_back({addr, len});
}

bool HostMemory::faults(uint64_t addr, uint64_t len) const {
  // Intervals on the 2^64 circle overlap when either start lies in the other.
  return std::any_of(faults_.begin(), faults_.end(),
                     [&](const Range& f) { return addr - f.addr < f.len || f.addr - addr < len; });
}

}  // namespace tpu
