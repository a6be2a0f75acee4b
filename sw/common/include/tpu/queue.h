// SPDX-License-Identifier: Apache-2.0
// The host interface's ring entries and program image, byte for byte
// (docs/host_interface.md): what the driver writes and reads, what the
// device testbench uses to drive the rings directly, and what the model:
// transport reads and writes in the device's place.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tpu/isa.h"

namespace tpu {

constexpr size_t kSqEntryBytes = 32;
constexpr size_t kCqEntryBytes = 16;
constexpr uint8_t kOpRun = 0x01;
// RUN entry flags (byte 1). KEEP_COUNTERS: the command's start does not
// clear the core's performance counters; they go on from the previous
// command's values (the completion's cycles are still the command's own).
constexpr uint8_t kRunKeepCounters = 0x01;
constexpr uint8_t kRunFlagsMask = kRunKeepCounters;

// Completion status codes: 0 OK, 1..11 the ISA's error codes, and these two
// from the command processor.
constexpr uint16_t kStatusOk = 0;
constexpr uint16_t kStatusBadCommand = 0x10;
constexpr uint16_t kStatusFetchFault = 0x11;

namespace detail {
inline uint64_t le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
inline void put_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = uint8_t(v >> (8 * i));
}
}  // namespace detail

// DMA windows (docs/host_interface.md, "DMA windows"): the host memory a
// command's program may reach. 16 bytes each, at most kMaxWindows a command.
constexpr size_t kWindowBytes = 16;
constexpr size_t kMaxWindows = 8;
constexpr uint64_t kMaxWindowLen = (uint64_t{1} << 56) - 1;
constexpr uint8_t kWindowRead = 1;   // RHM and RW may read it
constexpr uint8_t kWindowWrite = 2;  // WHM may write it
constexpr uint8_t kWindowReadWrite = kWindowRead | kWindowWrite;

struct Window {
  uint64_t base = 0;
  uint64_t len = 0;      // bytes, 1 .. kMaxWindowLen
  uint8_t access = 0;    // kWindowRead, kWindowWrite or both
};

// True when the device accepts the window (else the entry is BAD_COMMAND).
inline bool window_valid(const Window& w) {
  return w.len >= 1 && w.len <= kMaxWindowLen && w.access >= 1 && w.access <= 3 &&
         w.base + (w.len - 1) >= w.base;  // ends at or before 2^64 - 1
}

// True when [first, last] lies inside one window that grants the direction.
inline bool windows_allow(std::span<const Window> windows, uint64_t first, uint64_t last, bool write) {
  if (last < first) return false;  // the span wrapped past 2^64 - 1
  const uint8_t need = write ? kWindowWrite : kWindowRead;
  return std::any_of(windows.begin(), windows.end(), [&](const Window& w) {
    return (w.access & need) && first >= w.base && last <= w.base + (w.len - 1);
  });
}

inline std::vector<uint8_t> encode_windows(std::span<const Window> windows) {
  std::vector<uint8_t> bytes(windows.size() * kWindowBytes, 0);
  for (size_t i = 0; i < windows.size(); ++i) {
    detail::put_le(&bytes[i * kWindowBytes], windows[i].base, 8);
    detail::put_le(&bytes[i * kWindowBytes + 8], windows[i].len, 7);
    bytes[i * kWindowBytes + 15] = windows[i].access;
  }
  return bytes;
}

inline Window decode_window(const uint8_t* p) {
  return Window{detail::le(p, 8), detail::le(p + 8, 7), p[15]};
}

// A RUN submission entry: op, id, program length (instructions) and address,
// the window list's address and count, and the flags.
inline std::vector<uint8_t> encode_run(uint16_t id, uint32_t len, uint64_t addr, uint64_t win_addr = 0,
                                       uint8_t win_count = 0, uint8_t op = kOpRun, uint8_t flags = 0) {
  std::vector<uint8_t> e(kSqEntryBytes, 0);
  e[0] = op;
  e[1] = flags;
  detail::put_le(&e[2], id, 2);
  detail::put_le(&e[4], len, 4);
  detail::put_le(&e[8], addr, 8);
  detail::put_le(&e[16], win_addr, 8);
  e[24] = win_count;
  return e;
}

// A submission entry as the device reads it.
struct SqEntry {
  uint8_t op = 0, flags = 0;
  uint16_t id = 0;
  uint32_t len = 0;
  uint64_t addr = 0;
  uint64_t win_addr = 0;
  uint8_t win_count = 0;
  bool reserved_zero = true;  // bytes 25..31 are all zero
};

inline SqEntry decode_sq(const uint8_t* e) {
  SqEntry s;
  s.op = e[0];
  s.flags = e[1];
  s.id = uint16_t(detail::le(e + 2, 2));
  s.len = uint32_t(detail::le(e + 4, 4));
  s.addr = detail::le(e + 8, 8);
  s.win_addr = detail::le(e + 16, 8);
  s.win_count = e[24];
  s.reserved_zero = std::all_of(e + 25, e + kSqEntryBytes, [](uint8_t b) { return b == 0; });
  return s;
}

// True when the device takes the entry's window fields (else BAD_COMMAND).
inline bool window_list_valid(const SqEntry& s) {
  return s.win_count <= kMaxWindows && (s.win_count == 0 || s.win_addr % kWindowBytes == 0);
}

// A completion entry as the device writes it.
struct CqEntry {
  uint16_t id = 0, status = 0;
  uint32_t err_pc = 0, cycles = 0;
  bool phase = false;
  uint16_t sq_head = 0;
};

inline CqEntry decode_cq(const uint8_t* e) {
  CqEntry c;
  c.id = uint16_t(detail::le(e, 2));
  c.status = uint16_t(detail::le(e + 2, 2));
  c.err_pc = uint32_t(detail::le(e + 4, 4));
  c.cycles = uint32_t(detail::le(e + 8, 4));
  c.phase = e[12] & 1;
  c.sq_head = uint16_t(detail::le(e + 14, 2));
  return c;
}

inline std::vector<uint8_t> encode_cq(const CqEntry& c) {
  std::vector<uint8_t> e(kCqEntryBytes, 0);
  detail::put_le(&e[0], c.id, 2);
  detail::put_le(&e[2], c.status, 2);
  detail::put_le(&e[4], c.err_pc, 4);
  detail::put_le(&e[8], c.cycles, 4);
  e[12] = c.phase ? 1 : 0;
  detail::put_le(&e[14], c.sq_head, 2);
  return e;
}

// The program as the device fetches it: 16 bytes per instruction, w0 then
// w1, each little-endian.
inline std::vector<uint8_t> encode_program(const std::vector<isa::Instr>& program) {
  std::vector<uint8_t> bytes(program.size() * 16);
  for (size_t i = 0; i < program.size(); ++i) {
    const auto w = program[i].encode();
    detail::put_le(&bytes[i * 16], w[0], 8);
    detail::put_le(&bytes[i * 16 + 8], w[1], 8);
  }
  return bytes;
}

// The program as the device fetched it; whole instructions only.
inline std::vector<isa::Instr> decode_program(std::span<const uint8_t> bytes) {
  std::vector<isa::Instr> program(bytes.size() / 16);
  for (size_t i = 0; i < program.size(); ++i)
    program[i] = isa::decode(detail::le(&bytes[i * 16], 8), detail::le(&bytes[i * 16 + 8], 8));
  return program;
}

}  // namespace tpu
