// SPDX-License-Identifier: Apache-2.0
// Every fp32 input of each elementary function of the training arithmetic
// against its stated bound (docs/numerics.md, "Error measure"): all 2^32
// inputs of exp and log, every significand of recip, rsqrt and sqrt (which
// stands for every input, train_f32_bounds.h), on every core (CTest
// common.train_f32_exhaustive, label long). The largest error and its input
// are printed; the table of docs/numerics.md has them.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "train_f32_bounds.h"

namespace tpu::train_bounds {
namespace {

Worst exhaustive(const Function& fn) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  constexpr uint64_t kChunk = uint64_t{1} << 20;  // handed out in turn
  std::vector<Worst> worst(threads);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (uint64_t lo = fn.every_lo + t * kChunk; lo < fn.every_hi; lo += threads * kChunk)
        worst[t].merge(sweep(fn, lo, std::min(lo + kChunk, fn.every_hi), 1));
    });
  for (std::thread& th : pool) th.join();
  Worst all;
  for (const Worst& w : worst) all.merge(w);
  return all;
}

class TrainF32Exhaustive : public ::testing::TestWithParam<Function> {};

TEST_P(TrainF32Exhaustive, EveryInputWithinTheBound) {
  const Function& fn = GetParam();
  const auto start = std::chrono::steady_clock::now();
  const Worst w = exhaustive(fn);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  w.print(fn, fn.every_hi - fn.every_lo == kAll ? "every fp32 input" : "every significand");
  std::printf("      %.0f s\n", seconds);
  RecordProperty("max_ulp", std::to_string(w.ulp));
  EXPECT_EQ(w.count, fn.every_hi - fn.every_lo);
  EXPECT_LE(w.ulp, fn.bound) << fn.name << "(0x" << std::hex << w.x << ") = 0x" << fn.f(w.x);
}

INSTANTIATE_TEST_SUITE_P(Functions, TrainF32Exhaustive, ::testing::ValuesIn(kFunctions),
                         [](const ::testing::TestParamInfo<Function>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tpu::train_bounds
