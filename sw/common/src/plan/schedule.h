// SPDX-License-Identifier: Apache-2.0
// What the GEMM planner's files share (private to sw/common/src/plan): the
// order of a group's MMCs, which both the weight image and the stream
// follow, and the stream itself, which the search builds for its best
// candidates to count their instructions.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stream.h"
#include "tpu/core_config.h"
#include "tpu/plan/gemm.h"

namespace tpu::plan {

constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
constexpr int round_up(int v, int multiple) { return ceil_div(v, multiple) * multiple; }

// "MxKxN", for messages.
std::string dims(const GemmShape& s);

// The (tile within the group, K block) of each MMC of group g, in the order
// of one pass (tpu/plan/gemm.h, "Loop nest").
std::vector<std::pair<int, int>> group_order(const GemmPlan& p, int g);

// gemm_programs' instructions, before they are cut into programs.
Stream gemm_stream(const GemmPlan& p, const GemmEpilogue& epi, uint64_t a, uint64_t w, uint64_t c,
                   const CoreConfig& core);

}  // namespace tpu::plan
