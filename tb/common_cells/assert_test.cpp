// SPDX-License-Identifier: Apache-2.0
// `ASSERT checks what the flops take at the edge (docs/decisions.md,
// "Assertions are immediate, in a clocked block"): the probe's assertion
// fails in the cycle whose inputs break it, in a harness that settles before
// the edge and in one that sets the inputs and the edge in one evaluation.
// `ASSERT_NEXT and `ASSERT_HELD fail in the cycle after a waiting one that
// drops the offer or changes its data, and not when a clear withdraws it.
// `ASSERT_IF fails only in a cycle whose condition holds (an offer taken
// with data 0), not for the same data when the condition does not.
#include <gtest/gtest.h>

#include <iterator>

#include "Vassert_probe.h"
#include "Vassert_probe___024root.h"
#include "sim.h"

namespace {

// Cycles of (a, b); `bad` = a && !b holds only in the third.
constexpr int kCycles[][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {0, 0}};

template <class Tick>
void expect_failure_only_in_the_bad_cycle(Tick tick) {
  tb::Sim<Vassert_probe> sim(1);
  for (int i = 0; i < 5; ++i) {
    sim.dut().a_i = kCycles[i][0];
    sim.dut().b_i = kCycles[i][1];
    tick(sim);
    EXPECT_EQ(sim.take_assertion_failures(), i == 2 ? 1u : 0u) << "cycle " << i;
  }
}

TEST(AssertMacro, FailsInTheCycleThatBreaksIt) {
  expect_failure_only_in_the_bad_cycle([](tb::Sim<Vassert_probe>& s) { s.tick(); });
}

TEST(AssertMacro, FailsInTheCycleThatBreaksItInOneEvaluation) {
  expect_failure_only_in_the_bad_cycle([](tb::Sim<Vassert_probe>& s) { s.tick_unsettled(); });
}

// One offer per row: valid, ready, clear, data; and whether an assertion
// fails in that cycle (the harness counts cycles with a failure).
struct StreamCycle {
  int valid, ready, clear, data, fails;
};
constexpr StreamCycle kStream[] = {
    {1, 0, 0, 5, 0},  // offered, waits
    {1, 0, 0, 5, 0},  // held
    {1, 0, 0, 6, 1},  // changed while waiting: DataHeld fails
    {1, 1, 0, 6, 0},  // taken (compared with the 6 it waited with)
    {0, 0, 0, 0, 0},  // idle
    {1, 0, 0, 7, 0},  // offered, waits
    {0, 0, 0, 7, 1},  // dropped while waiting: ValidHeld fails
    {1, 0, 0, 8, 0},  // offered, waits
    {1, 0, 1, 9, 0},  // a clear may change it
    {0, 0, 0, 0, 0},  // ... or withdraw it
    {1, 1, 0, 3, 0},  // taken at once: never waits
    {0, 0, 0, 4, 0},
    {0, 1, 0, 0, 0},  // data 0, nothing offered
    {1, 0, 0, 0, 0},  // offered with 0, waits: not taken
    {1, 1, 0, 0, 1},  // taken with 0: TakenNotZero fails
    {1, 1, 0, 2, 0},  // taken with 2
};

template <class Tick>
void expect_stream_failures(Tick tick) {
  tb::Sim<Vassert_probe> sim(1);
  sim.reset(2);
  for (size_t i = 0; i < std::size(kStream); ++i) {
    const StreamCycle& c = kStream[i];
    sim.dut().valid_i = c.valid;
    sim.dut().ready_i = c.ready;
    sim.dut().clear_i = c.clear;
    sim.dut().data_i = c.data;
    tick(sim);
    EXPECT_EQ(sim.take_assertion_failures(), unsigned(c.fails)) << "cycle " << i;
  }
}

TEST(AssertMacro, HeldNextAndIfFailOnlyInTheCyclesTheyCheck) {
  expect_stream_failures([](tb::Sim<Vassert_probe>& s) { s.tick(); });
}

TEST(AssertMacro, HeldNextAndIfFailOnlyInTheCyclesTheyCheckInOneEvaluation) {
  expect_stream_failures([](tb::Sim<Vassert_probe>& s) { s.tick_unsettled(); });
}

}  // namespace
