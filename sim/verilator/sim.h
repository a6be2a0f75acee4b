// SPDX-License-Identifier: Apache-2.0
// A Verilated model with its context, clock, reset, optional FST waves and a
// seeded random source. Tests use it through VerilatedFixture; benches and
// demos use it directly.
//
//   tick()                 one clock cycle (inputs are read at the rising edge)
//   settle()               re-evaluate after changing inputs
//   tick_settled()         tick() when no input changed since settle(): one
//                          evaluation per cycle fewer
//   tick_unsettled()       tick() in one evaluation, for a harness that reads
//                          only registered outputs before the edge
//   reset(cycles)          hold rst_ni low for a few cycles
//   run_until(pred, max)   tick until pred() holds; false on timeout
#pragma once

#include <verilated.h>
#include <verilated_fst_c.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "coverage.h"

namespace tb {

template <class Model>
class Sim {
 public:
  static constexpr uint64_t kHalfPeriodNs = 5;  // 100 MHz, so waves read in ns

  // wave_path empty: no tracing. The model is reset before returning.
  // state_seed other than 0: every variable starts random (drawn from that
  // seed) instead of zero, as a register without a reset does in hardware.
  explicit Sim(uint64_t seed, const std::string& wave_path = "", uint64_t state_seed = 0)
      : seed_(seed), rng_(seed) {
    ctx_ = std::make_unique<VerilatedContext>();
    ctx_->randReset(state_seed ? 2 : 0);
    if (state_seed) ctx_->randSeed(int(state_seed % 0x7fffffff) + 1);  // 0 would mean "any seed"
    ctx_->fatalOnError(false);  // a failed SV assertion is counted, not fatal
    if (!wave_path.empty()) ctx_->traceEverOn(true);
    Verilated::threadContextp(ctx_.get());
    dut_ = std::make_unique<Model>(ctx_.get(), "TOP");
    if (!wave_path.empty()) {
      // A bare file name has no directory to create.
      const std::filesystem::path dir = std::filesystem::path(wave_path).parent_path();
      if (!dir.empty()) std::filesystem::create_directories(dir);
      trace_ = std::make_unique<VerilatedFstC>();
      dut_->trace(trace_.get(), 99);
      trace_->open(wave_path.c_str());
      wave_path_ = wave_path;
    }
    reset();
  }

  // Verilator's runtime reaches the model's context through a thread-local
  // "current context" (scope teardown, assertion errors). With several models
  // in one thread it must point at this one whenever this model runs or dies.
  // A coverage build writes the model's coverage here (coverage.h).
  ~Sim() {
    Verilated::threadContextp(ctx_.get());
    dut_->final();
    write_coverage(*ctx_);
    if (trace_) trace_->close();
    trace_.reset();
    dut_.reset();
  }

  Sim(const Sim&) = delete;
  Sim& operator=(const Sim&) = delete;

  // The test sets inputs while the clock is low; the rising edge samples them;
  // the falling edge ends the cycle.
  void tick() {
    settle();
    tick_settled();
  }

  // The rising edge on inputs settle() has already evaluated, then the fall
  // (evaluated with the next cycle's inputs). For a harness that settles to
  // read the outputs before the edge: tick() would evaluate the same inputs a
  // second time, and the model's evaluation is most of a simulation's time.
  void tick_settled() {
    Verilated::threadContextp(ctx_.get());
    dump();
    ctx_->timeInc(kHalfPeriodNs);
    dut_->clk_i = 1;
    dut_->eval();
    dump();
    ctx_->timeInc(kHalfPeriodNs);
    dut_->clk_i = 0;
    ++cycle_;
    if (ctx_->gotError()) {
      ctx_->gotError(false);
      ++assertion_failures_;
    }
  }

  // tick() without the evaluation with the clock low. Verilator 5.006 finds
  // a rising edge by comparing clk_i with its value at the previous eval(),
  // so a cycle otherwise takes two evaluations, and each runs all the logic
  // the top-level inputs feed. This one sets that remembered value to low
  // instead. It is for a harness whose reads between setting the inputs and
  // the edge see no output the new inputs reach without a register: those
  // outputs would still show the old inputs (tb::Device checks this on
  // request). With waves on it settles, so that the low half of each cycle
  // shows the new inputs. Needs the model's root header (<Vname>___024root.h);
  // another Verilator version evaluates twice, as tick() does.
  void tick_unsettled() {
#if VERILATOR_VERSION_INTEGER == 5006000
    if (!trace_) {
      dut_->rootp->__Vtrigrprev__TOP__clk_i = 0;
      tick_settled();
      return;
    }
#endif
    tick();
  }

  void settle() {
    Verilated::threadContextp(ctx_.get());
    dut_->eval();
  }

  void reset(int cycles = 4) {
    dut_->clk_i = 0;
    dut_->rst_ni = 0;
    for (int i = 0; i < cycles; ++i) tick();
    dut_->rst_ni = 1;
    tick();
  }

  template <class Pred>
  bool run_until(Pred pred, uint64_t max_cycles) {
    for (uint64_t i = 0; i < max_cycles; ++i) {
      settle();
      if (pred()) return true;
      tick_settled();
    }
    settle();
    return pred();
  }

  Model& dut() { return *dut_; }
  uint64_t cycle() const { return cycle_; }
  uint64_t seed() const { return seed_; }
  const std::string& wave_path() const { return wave_path_; }
  // SystemVerilog assertions that failed since the last call.
  uint64_t take_assertion_failures() { return std::exchange(assertion_failures_, 0); }

  std::mt19937_64& rng() { return rng_; }
  int64_t rand_int(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return p > 0 && std::bernoulli_distribution(p)(rng_); }

 private:
  void dump() {
    if (trace_) trace_->dump(ctx_->time());
  }

  uint64_t seed_;
  std::mt19937_64 rng_;
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Model> dut_;
  std::unique_ptr<VerilatedFstC> trace_;
  std::string wave_path_;
  uint64_t cycle_ = 0;
  uint64_t assertion_failures_ = 0;
};

}  // namespace tb
