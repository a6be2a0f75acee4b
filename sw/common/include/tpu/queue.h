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

// A RUN submission entry: op, id, program length (instructions), address.
inline std::vector<uint8_t> encode_run(uint16_t id, uint32_t len, uint64_t addr, uint8_t op = kOpRun) {
  std::vector<uint8_t> e(kSqEntryBytes, 0);
  e[0] = op;
  detail::put_le(&e[2], id, 2);
  detail::put_le(&e[4], len, 4);
  detail::put_le(&e[8], addr, 8);
  return e;
}

// A submission entry as the device reads it.
struct SqEntry {
  uint8_t op = 0, flags = 0;
  uint16_t id = 0;
  uint32_t len = 0;
  uint64_t addr = 0;
  bool reserved_zero = true;  // bytes 16..31 are all zero
};

inline SqEntry decode_sq(const uint8_t* e) {
  SqEntry s;
  s.op = e[0];
  s.flags = e[1];
  s.id = uint16_t(detail::le(e + 2, 2));
  s.len = uint32_t(detail::le(e + 4, 4));
  s.addr = detail::le(e + 8, 8);
  s.reserved_zero = std::all_of(e + 16, e + kSqEntryBytes, [](uint8_t b) { return b == 0; });
  return s;
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
