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

#include "tpu/host_if.h"
#include "tpu/isa.h"

namespace tpu {

// The formats' sizes, opcodes, flags, status codes and limits, generated
// from scripts/host_if_table.py (tpu/host_if.h).
using host_if::kCqEntryBytes;
using host_if::kOpRun;
using host_if::kSqEntryBytes;
// RUN entry flags (byte 1). KEEP_COUNTERS: the command's start does not
// clear the core's performance counters; they go on from the previous
// command's values (the completion's cycles are still the command's own).
using host_if::kRunFlagsMask;
using host_if::kRunKeepCounters;
// Completion status codes: 0 OK, the ISA's error codes, and the command
// processor's own.
using host_if::kStatusBadCommand;
using host_if::kStatusFetchFault;
using host_if::kStatusOk;

namespace detail {
inline uint64_t le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
inline void put_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = uint8_t(v >> (8 * i));
}
// A field of an entry (host_if::Field: bits, little-endian), up to 64 bits.
inline uint64_t get_field(const uint8_t* e, host_if::Field f) {
  uint64_t v = 0;
  for (unsigned i = 0; i < f.width; ++i) v |= uint64_t(e[(f.lsb + i) / 8] >> ((f.lsb + i) % 8) & 1) << i;
  return v;
}
inline void put_field(uint8_t* e, host_if::Field f, uint64_t v) {
  for (unsigned i = 0; i < f.width; ++i) {
    const uint8_t bit = uint8_t(1u << ((f.lsb + i) % 8));
    uint8_t& byte = e[(f.lsb + i) / 8];
    byte = (v >> i & 1) ? uint8_t(byte | bit) : uint8_t(byte & ~bit);
  }
}
}  // namespace detail

// DMA windows (docs/host_interface.md, "DMA windows"): the host memory a
// command's program may reach. kWindowBytes each, at most kMaxWindows a command.
constexpr size_t kWindowBytes = host_if::kWinEntryBytes;
using host_if::kMaxWindowLen;
using host_if::kMaxWindows;
using host_if::kWindowRead;   // RHM and RW may read it
using host_if::kWindowWrite;  // WHM may write it
constexpr uint8_t kWindowReadWrite = kWindowRead | kWindowWrite;

struct Window {
  uint64_t base = 0;
  uint64_t len = 0;      // bytes, 1 .. kMaxWindowLen
  uint8_t access = 0;    // kWindowRead, kWindowWrite or both
};

// True when the device accepts the window (else the entry is BAD_COMMAND).
inline bool window_valid(const Window& w) {
  return w.len >= 1 && w.len <= kMaxWindowLen && (w.access & host_if::kWindowAccessMask) != 0 &&
         (w.access & ~host_if::kWindowAccessMask) == 0 && w.base + (w.len - 1) >= w.base;  // ends at or before 2^64 - 1
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
    uint8_t* w = &bytes[i * kWindowBytes];
    detail::put_field(w, host_if::win::kBase, windows[i].base);
    detail::put_field(w, host_if::win::kLen, windows[i].len);
    detail::put_field(w, host_if::win::kAccess, windows[i].access);
  }
  return bytes;
}

inline Window decode_window(const uint8_t* p) {
  return Window{detail::get_field(p, host_if::win::kBase), detail::get_field(p, host_if::win::kLen),
                uint8_t(detail::get_field(p, host_if::win::kAccess))};
}

// A RUN submission entry: op, id, program length (instructions) and address,
// the window list's address and count, and the flags.
inline std::vector<uint8_t> encode_run(uint16_t id, uint32_t len, uint64_t addr, uint64_t win_addr = 0,
                                       uint8_t win_count = 0, uint8_t op = kOpRun, uint8_t flags = 0) {
  namespace sq = host_if::sq;
  std::vector<uint8_t> e(kSqEntryBytes, 0);
  detail::put_field(e.data(), sq::kOp, op);
  detail::put_field(e.data(), sq::kFlags, flags);
  detail::put_field(e.data(), sq::kId, id);
  detail::put_field(e.data(), sq::kLen, len);
  detail::put_field(e.data(), sq::kAddr, addr);
  detail::put_field(e.data(), sq::kWinAddr, win_addr);
  detail::put_field(e.data(), sq::kWinCount, win_count);
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
  bool reserved_zero = true;  // the reserved bytes are all zero
};

inline SqEntry decode_sq(const uint8_t* e) {
  namespace sq = host_if::sq;
  SqEntry s;
  s.op = uint8_t(detail::get_field(e, sq::kOp));
  s.flags = uint8_t(detail::get_field(e, sq::kFlags));
  s.id = uint16_t(detail::get_field(e, sq::kId));
  s.len = uint32_t(detail::get_field(e, sq::kLen));
  s.addr = detail::get_field(e, sq::kAddr);
  s.win_addr = detail::get_field(e, sq::kWinAddr);
  s.win_count = uint8_t(detail::get_field(e, sq::kWinCount));
  s.reserved_zero = detail::get_field(e, sq::kReserved) == 0;
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
  namespace cq = host_if::cq;
  CqEntry c;
  c.id = uint16_t(detail::get_field(e, cq::kId));
  c.status = uint16_t(detail::get_field(e, cq::kStatus));
  c.err_pc = uint32_t(detail::get_field(e, cq::kErrPc));
  c.cycles = uint32_t(detail::get_field(e, cq::kCycles));
  c.phase = detail::get_field(e, cq::kPhase) != 0;
  c.sq_head = uint16_t(detail::get_field(e, cq::kSqHead));
  return c;
}

inline std::vector<uint8_t> encode_cq(const CqEntry& c) {
  namespace cq = host_if::cq;
  std::vector<uint8_t> e(kCqEntryBytes, 0);
  detail::put_field(e.data(), cq::kId, c.id);
  detail::put_field(e.data(), cq::kStatus, c.status);
  detail::put_field(e.data(), cq::kErrPc, c.err_pc);
  detail::put_field(e.data(), cq::kCycles, c.cycles);
  detail::put_field(e.data(), cq::kPhase, c.phase ? 1 : 0);
  detail::put_field(e.data(), cq::kSqHead, c.sq_head);
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
