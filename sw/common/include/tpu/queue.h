// SPDX-License-Identifier: Apache-2.0
// The host interface's ring entries and program image, byte for byte
// (docs/host_interface.md): what the driver writes and reads, and what the
// device testbench uses to drive the rings directly.
#pragma once

#include <cstddef>
#include <cstdint>
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

// A RUN submission entry: op, id, program length (instructions), address.
inline std::vector<uint8_t> encode_run(uint16_t id, uint32_t len, uint64_t addr, uint8_t op = kOpRun) {
  std::vector<uint8_t> e(kSqEntryBytes, 0);
  e[0] = op;
  e[2] = uint8_t(id);
  e[3] = uint8_t(id >> 8);
  for (int i = 0; i < 4; ++i) e[size_t(4 + i)] = uint8_t(len >> (8 * i));
  for (int i = 0; i < 8; ++i) e[size_t(8 + i)] = uint8_t(addr >> (8 * i));
  return e;
}

// A completion entry as the device writes it.
struct CqEntry {
  uint16_t id = 0, status = 0;
  uint32_t err_pc = 0, cycles = 0;
  bool phase = false;
  uint16_t sq_head = 0;
};

inline CqEntry decode_cq(const uint8_t* e) {
  const auto le32 = [&](int at) {
    return uint32_t(e[at]) | uint32_t(e[at + 1]) << 8 | uint32_t(e[at + 2]) << 16 | uint32_t(e[at + 3]) << 24;
  };
  CqEntry c;
  c.id = uint16_t(le32(0));
  c.status = uint16_t(le32(0) >> 16);
  c.err_pc = le32(4);
  c.cycles = le32(8);
  c.phase = e[12] & 1;
  c.sq_head = uint16_t(le32(12) >> 16);
  return c;
}

// The program as the device fetches it: 16 bytes per instruction, w0 then
// w1, each little-endian.
inline std::vector<uint8_t> encode_program(const std::vector<isa::Instr>& program) {
  std::vector<uint8_t> bytes(program.size() * 16);
  for (size_t i = 0; i < program.size(); ++i) {
    const auto w = program[i].encode();
    for (int b = 0; b < 8; ++b) {
      bytes[i * 16 + size_t(b)] = uint8_t(w[0] >> (8 * b));
      bytes[i * 16 + 8 + size_t(b)] = uint8_t(w[1] >> (8 * b));
    }
  }
  return bytes;
}

}  // namespace tpu
