// SPDX-License-Identifier: Apache-2.0
// GoogleTest fixture that owns a Sim<Model> for the duration of one test.
//
// Every block test derives from VerilatedFixture<Model> and drives the model
// through sim() (or the forwarding helpers tick(), settle(), ...).
// Run-time knobs, read from the environment:
//   TPU_SEED=<n>       fix the random seed (otherwise drawn and printed on failure)
//   TPU_WAVES=1        write an FST named after the test into $TPU_WAVE_DIR
//   TPU_WAVE_DIR=dir   default build/waves
// A failing test prints its seed and the command that reruns it with waves.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <string>

#include "sim.h"

namespace tb {

inline bool waves_enabled() {
  const char* v = std::getenv("TPU_WAVES");
  return v != nullptr && std::string(v) != "0" && std::string(v) != "";
}

inline std::string wave_dir() {
  const char* v = std::getenv("TPU_WAVE_DIR");
  return v ? v : "build/waves";
}

// Tests built once per configuration carry its name (tb/CMakeLists.txt), as
// CTest does: tiny.CoreTest.Gemm64x64x64.
inline std::string config_prefix() {
#ifdef TB_CONFIG_NAME
  return TB_CONFIG_NAME ".";
#else
  return "";
#endif
}

inline std::string current_test_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "." + info->name();
}

// Test names contain '/' (typed tests); file names must not.
inline std::string file_safe(std::string s) {
  for (char& c : s)
    if (c == '/') c = '_';
  return s;
}

inline uint64_t choose_seed() {
  if (const char* v = std::getenv("TPU_SEED")) return std::strtoull(v, nullptr, 0);
  return std::random_device{}();
}

template <class Model>
class VerilatedFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const uint64_t seed = choose_seed();
    RecordProperty("seed", std::to_string(seed));
    const std::string wave =
        waves_enabled() ? wave_dir() + "/" + file_safe(current_test_name()) + ".fst" : "";
    sim_ = std::make_unique<Sim<Model>>(seed, wave);
  }

  void TearDown() override {
    const uint64_t seed = sim_->seed();
    const std::string wave = sim_->wave_path();
    check_assertions();
    sim_.reset();  // closes the wave file
    if (!wave.empty()) std::cout << "waves: " << wave << "\n";
    if (HasFailure())
      std::cout << "seed: " << seed << "\nreproduce with waves: make wave TEST='"
                << config_prefix() << current_test_name() << "' SEED=" << seed << "\n";
  }

 public:
  Sim<Model>& sim() { return *sim_; }
  Model& dut() { return sim_->dut(); }
  void tick() {
    sim_->tick();
    check_assertions();
  }
  void settle() { sim_->settle(); }
  uint64_t cycle() const { return sim_->cycle(); }
  int64_t rand_int(int64_t lo, int64_t hi) { return sim_->rand_int(lo, hi); }
  bool chance(double p) { return sim_->chance(p); }
  // A new model whose variables start random instead of zero (the registers
  // without a reset), reset like the first one, with the same seed and waves.
  // Each `state` gives other random values, drawn from the test's seed.
  void restart_with_random_state(uint64_t state = 0) {
    const uint64_t seed = sim_->seed();
    const std::string wave = sim_->wave_path();
    sim_.reset();
    sim_ = std::make_unique<Sim<Model>>(seed, wave, seed * 8 + state + 1);
  }

 private:
  void check_assertions() {
    if (const uint64_t n = sim_->take_assertion_failures())
      ADD_FAILURE() << n << " RTL assertion failure(s) by cycle " << sim_->cycle();
  }

  std::unique_ptr<Sim<Model>> sim_;
};

}  // namespace tb
