// SPDX-License-Identifier: Apache-2.0
// Reads unified-buffer and accumulator rows straight out of a Verilated
// model's RAMs, for tests that check memory contents after a program.
//
// PREFIX is the hierarchy of the core inside the model (tpu_core__DOT__ for
// the core alone, tpu_top__DOT__u_core__DOT__ for the device). The UB
// (rtl/core/tpu_ub.sv) keeps row r in bank r % 4 at row r / 4, or, when the
// model has eight banks (the bf16 configurations: four parts of two banks),
// in bank 2 * part + r % 2 at row (r % part_rows) / 2 of its part; the
// accumulators keep a full copy in u_acc.u_vpu (rtl/core/tpu_acc.sv).
#pragma once

#include <cstdint>
#include <vector>

#include "bits.h"

#define TB_UB_BANK(ROOT, PREFIX, B) \
  ROOT->PREFIX##u_ub__DOT__gen_bank__BRA__##B##__KET____DOT__u_ram__DOT__gen_block__DOT__mem_q

#define TB_DEFINE_MEMORY_PEEK(PREFIX)                                                   \
  template <class Root>                                                                  \
  std::vector<int8_t> peek_ub_row(Root* root, int n, int rows, int r) {                  \
    constexpr bool kParts = requires(Root* x) { TB_UB_BANK(x, PREFIX, 7); };             \
    const int part_rows = kParts ? rows / 4 : rows, per_part = kParts ? 2 : 4;           \
    const int bank = (r / part_rows) * per_part + r % per_part;                          \
    const int row = (r % part_rows) / per_part;                                          \
    std::vector<int8_t> out(n);                                                          \
    auto fill = [&](const auto& word) {                                                  \
      for (int j = 0; j < n; ++j) out[j] = int8_t(tb::get_field(word, unsigned(j) * 8, 8)); \
    };                                                                                   \
    switch (bank) {                                                                      \
      case 0: fill(TB_UB_BANK(root, PREFIX, 0)[row]); break;                             \
      case 1: fill(TB_UB_BANK(root, PREFIX, 1)[row]); break;                             \
      case 2: fill(TB_UB_BANK(root, PREFIX, 2)[row]); break;                             \
      case 3: fill(TB_UB_BANK(root, PREFIX, 3)[row]); break;                             \
      default:                                                                           \
        if constexpr (kParts) {                                                          \
          switch (bank) {                                                                \
            case 4: fill(TB_UB_BANK(root, PREFIX, 4)[row]); break;                       \
            case 5: fill(TB_UB_BANK(root, PREFIX, 5)[row]); break;                       \
            case 6: fill(TB_UB_BANK(root, PREFIX, 6)[row]); break;                       \
            default: fill(TB_UB_BANK(root, PREFIX, 7)[row]); break;                      \
          }                                                                              \
        }                                                                                \
    }                                                                                    \
    return out;                                                                          \
  }                                                                                      \
  template <class Root>                                                                  \
  std::vector<int32_t> peek_acc_row(Root* root, int n, int r) {                          \
    std::vector<int32_t> out(n);                                                         \
    const auto& word = root->PREFIX##u_acc__DOT__u_vpu__DOT__gen_block__DOT__mem_q[r];   \
    for (int j = 0; j < n; ++j) out[j] = int32_t(tb::get_field(word, unsigned(j) * 32, 32)); \
    return out;                                                                          \
  }
