// SPDX-License-Identifier: Apache-2.0
// Instructions as C++ values: encoding, builders, assembler and disassembler.
// The encodings come from isa_table.h (generated from scripts/isa_table.py);
// docs/isa.md is the contract and describes the assembly syntax.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tpu/isa_table.h"

namespace tpu::isa {

// One 128-bit instruction, field by field. Every bit pattern is representable,
// including reserved bits, so decode(encode(x)) == x always.
struct Instr {
  uint8_t op = 0;
  uint8_t flags = 0;
  uint16_t count = 0;
  uint16_t a = 0;
  uint16_t b = 0;
  uint64_t c = 0;

  // {w0, w1}: w0 = bits 63:0, w1 = bits 127:64.
  std::array<uint64_t, 2> encode() const;
  bool operator==(const Instr&) const = default;
};

Instr decode(uint64_t w0, uint64_t w1);
inline Instr decode(const std::array<uint64_t, 2>& w) { return decode(w[0], w[1]); }

// ---- Table lookups ------------------------------------------------------------

const OpInfo* find_op(uint8_t op);        // nullptr for an illegal opcode
const VopInfo* find_vop(uint8_t vop_op);  // nullptr for an unnamed VOP value
std::string_view err_name(ErrCode code);  // "NO_WEIGHTS"; "ERR_<n>" if unknown
std::string_view op_name(uint8_t op);     // "MMC"; "ILLEGAL" if unknown

// Field helpers.
inline uint8_t flag_field(uint8_t flags, int lsb, int width) {
  return uint8_t((flags >> lsb) & ((1u << width) - 1));
}
inline constexpr uint8_t unit_bit(Unit u) { return uint8_t(1u << uint8_t(u)); }

// True when the opcode is legal, every reserved bit is zero, count is 0 where
// it must be, and every named flag field holds a named value: the instructions
// the assembler writes by name. Others disassemble to `.word`.
bool is_canonical(const Instr& in);

// ---- Host spans ------------------------------------------------------------------

// The host bytes an RHM, WHM or RW touches, [first, last] (docs/host_interface.md,
// "DMA windows"): first = c + the LOOP's host offset (mod 2^64), last = first +
// (rows - 1) * b + row_bytes - 1 with rows = count (RHM, WHM) or count * n
// (RW), row_bytes = n, or 2n for a wide row (RHM/WHM WIDE, RW BF16). When
// the span runs past 2^64 - 1, `wraps` is set and `last` is 2^64 - 1; such a
// span is never inside a window.
struct HostSpan {
  uint64_t first = 0, last = 0;
  bool write = false;  // WHM; RHM and RW read
  bool wraps = false;
};

// The span of an RHM, WHM or RW with count >= 1 on an n x n array, with the
// current LOOP host offset; std::nullopt for any other instruction.
std::optional<HostSpan> host_span(const Instr& in, uint64_t host_offset, int n);

// UB rows that hold lanes 0 .. lanes-1 (1 <= lanes <= n) of a result row
// whose lanes take lane_bytes each on an n-lane core: ceil(lanes * lane_bytes / n).
int act_rows_for_lanes(uint64_t lanes, int lane_bytes, int n);

// UB rows an ACT writes per ACC row on an n-lane core: of the result's UB
// rows (RAW int32 or fp32 4, F32 bf16 2, else 1) those that hold lanes
// 0 .. lanes-1 (lanes 0 = n; act_rows_for_lanes). 0 when lanes > n
// (BAD_FLAGS).
int act_ub_rows_per_row(const Instr& act, int n);

// ---- Builders -------------------------------------------------------------------
// Each throws std::invalid_argument when a value does not fit its field. They
// do not check the ISA's rules (count >= 1, ranges): tests build faulty
// instructions with them. The last bool of each sets the flag of its bf16
// form (WIDE, BF16, F32), which only a bf16 or both datapath accepts.

Instr rhm(uint32_t ub_row, uint32_t rows, uint64_t host_addr, uint32_t stride, bool wide = false);
Instr whm(uint32_t ub_row, uint32_t rows, uint64_t host_addr, uint32_t stride, bool wide = false);
Instr rw(uint64_t host_addr, uint32_t tiles, uint32_t stride, bool bf16 = false);
Instr mmc(uint32_t ub_row, uint32_t acc_row, uint32_t rows, bool accumulate, bool pop,
          bool bf16 = false);
// lanes: the lanes of each result to write (0 = all N; docs/isa.md, ACT).
Instr act(uint32_t acc_row, uint32_t ub_row, uint32_t rows, Act func, bool bias, bool raw = false,
          bool f32 = false, uint32_t lanes = 0);
// src_b must be 0 for the pools; shift is SHIFT (pools: log2 of the window).
Instr vop(VopOp op, uint32_t src_a, uint32_t src_b, uint32_t dst, uint32_t rows, int shift = 0,
          bool bf16 = false);
Instr cfg(uint32_t index, uint32_t value);
Instr sync(uint8_t unit_mask);  // 0 = all units; see unit_bit()
Instr loop(uint32_t iterations, uint32_t body_len, int32_t ub_inc = 0, int32_t acc_inc = 0,
           int64_t host_inc = 0);
Instr irq();
Instr halt();

// ---- Assembler and disassembler --------------------------------------------------

// Thrown by assemble(); what() is "line <n>: <message>".
class AsmError : public std::runtime_error {
 public:
  AsmError(int line, const std::string& message);
  int line() const { return line_; }

 private:
  int line_;
};

// One instruction per line; syntax in docs/isa.md, "Assembly syntax".
std::vector<Instr> assemble(const std::string& source);

// One line without a newline; assemble(disassemble(x)) == {x} for every x.
std::string disassemble(const Instr& in);
// One instruction per line, each followed by '\n'.
std::string disassemble(const std::vector<Instr>& program);

}  // namespace tpu::isa
