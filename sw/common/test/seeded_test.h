// SPDX-License-Identifier: Apache-2.0
// A test with a random generator: TPU_SEED=<n> fixes its seed, otherwise it
// is drawn; either way it is recorded with the test's result.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

namespace tpu::test {

class SeededTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* env = std::getenv("TPU_SEED");
    seed_ = env ? std::strtoull(env, nullptr, 0) : std::random_device{}();
    RecordProperty("seed", std::to_string(seed_));
    rng_.seed(seed_);
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace tpu::test
