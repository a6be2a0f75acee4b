// SPDX-License-Identifier: Apache-2.0
// `ASSERT checks what the flops take at the edge (docs/decisions.md,
// "Assertions are immediate, in a clocked block"): the probe's assertion
// fails in the cycle whose inputs break it, in a harness that settles before
// the edge and in one that sets the inputs and the edge in one evaluation.
#include <gtest/gtest.h>

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

}  // namespace
