// SPDX-License-Identifier: Apache-2.0
// The uart: transport against the board simulation (sim/board/): results
// exact over a clean line and over a faulty one, retransmissions counted,
// a cut line ending in a clear error within the timeout, and the device
// working again once the line is back.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "board_sim.h"
#include "tpu/device.h"
#include "tpu/ops.h"
#include "tpu/ref_matmul.h"
#include "tpu/uart_transport.h"

namespace {

using tpu::MatrixI8;
using tpu::board::BoardOptions;
using tpu::board::BoardSim;

MatrixI8 random_matrix(std::mt19937_64& rng, int rows, int cols) {
  MatrixI8 m(rows, cols);
  for (auto& v : m.data) v = int8_t(std::uniform_int_distribution<int>(-128, 127)(rng));
  return m;
}

BoardOptions options(const tpu::board::LineFaults& faults = {}, uint64_t seed = 1) {
  BoardOptions o;
  o.config = "tiny";
  o.div = 4;
  o.seed = seed;
  o.faults = faults;
  return o;
}

// A board whose RTL assertions (the device's and the bridge's) must hold to
// its end: the test checks them when it lets the board go.
struct AssertionsHeld {
  void operator()(BoardSim* b) const {
    EXPECT_FALSE(b->assertion_failure_cycle()) << "the board's RTL assertions failed";
    delete b;
  }
};
using Board = std::unique_ptr<BoardSim, AssertionsHeld>;

Board start(const BoardOptions& o) { return Board(BoardSim::start(o).release()); }

Board board(const tpu::board::LineFaults& faults = {}, uint64_t seed = 1) {
  return start(options(faults, seed));
}

using Shape = std::array<int, 3>;  // M, K, N
// 64³ crosses tiny's 4×4 array in many tiles; 20×36×14 in fewer, with
// partial ones at the edges.
const std::vector<Shape> kShapes = {{1, 1, 1}, {7, 13, 5}, {64, 64, 64}};
const std::vector<Shape> kSmallShapes = {{1, 1, 1}, {7, 13, 5}, {20, 36, 14}};

void expect_exact_matmuls(tpu::Device& dev, std::mt19937_64& rng, const std::vector<Shape>& shapes = kShapes) {
  for (const auto& [m, k, n] : shapes) {
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
    const MatrixI8 a = random_matrix(rng, m, k), b = random_matrix(rng, k, n);
    EXPECT_EQ(tpu::matmul(dev, a, b), tpu::ref::matmul_i8(a, b));
  }
}

TEST(UartTest, MatmulsAreExactOverTheLink) {
  auto sim = board();
  tpu::Device dev = tpu::Device::open("uart:" + sim->pty());
  EXPECT_EQ(dev.info().name, "uart:" + sim->pty());
  EXPECT_EQ(dev.info().config, "tiny");
  std::mt19937_64 rng(7);
  expect_exact_matmuls(dev, rng);
  const auto host = tpu::uart_counters(dev.transport());
  ASSERT_TRUE(host);
  EXPECT_GT(host->frames_received, 0u);
  EXPECT_EQ(host->crc_errors + host->bad_frames, 0u);
  EXPECT_GT(dev.cycles(), 0u);
}

// The board evaluates the device once a cycle unless the bridge offers it a
// request (sim/board/board_sim.cpp). With the check on, it also settles both
// models to their fixed point in every cycle, and what crosses between them
// is the same.
TEST(UartTest, TheBoardsOneEvaluationCycleWiresWhatTheFixedPointWires) {
  BoardOptions o = options();
  o.check_wiring = true;
  auto sim = start(o);
  tpu::Device dev = tpu::Device::open("uart:" + sim->pty());
  std::mt19937_64 rng(11);
  expect_exact_matmuls(dev, rng, kSmallShapes);
  const tpu::board::WiringCheck check = sim->wiring_check();
  EXPECT_GT(check.checked_cycles, 10000u);
  EXPECT_EQ(check.miswired_cycles, 0u);
}

// The board skips the device's evaluation while it rests (its state came out
// of a cycle unchanged, and its inputs stay the same). With the check on, it
// evaluates a parked device all the same: that never changes its state.
// Over a faulty line, so that the device also meets requests sent again.
// The share of cycles parked depends on how fast the host answers (20 % to
// 75 % in four runs, 150k to 300k cycles), so the test asks for enough
// checked cycles to make the check meaningful, not for a share;
// uart_link_bench prints the share.
TEST(UartTest, AParkedDeviceIsAtRest) {
  tpu::board::LineFaults f;
  f.bit_error = 1e-3;
  f.drop = 5e-4;
  f.stall = 2e-3;
  BoardOptions o = options(f, 5);
  o.check_parking = true;
  auto sim = start(o);
  tpu::Device dev = tpu::Device::open("uart:" + sim->pty());
  std::mt19937_64 rng(12);
  expect_exact_matmuls(dev, rng, {{1, 1, 1}, {7, 13, 5}});
  const tpu::board::ParkingStats p = sim->parking();  // the board runs on: read once
  EXPECT_GT(p.checked_cycles, 10000u) << "of " << sim->cycles() << " cycles";
  EXPECT_EQ(p.changed_cycles, 0u);
}

TEST(UartTest, AFaultyLineIsRecoveredByRetransmission) {
  tpu::board::LineFaults f;
  // Rates for the small shapes' traffic (about 30 KB): dozens of faults.
  f.bit_error = 1e-3;
  f.drop = 5e-4;
  f.dup = 5e-4;
  f.stall = 2e-3;
  auto sim = board(f, 3);
  tpu::Device dev = tpu::Device::open("uart:" + sim->pty());
  std::mt19937_64 rng(8);
  expect_exact_matmuls(dev, rng, kSmallShapes);
  const auto line = sim->counters();
  EXPECT_GT(line.flipped + line.dropped + line.duplicated, 0u);
  const auto host = tpu::uart_counters(dev.transport());
  const auto device = tpu::uart_device_counters(dev.transport());
  ASSERT_TRUE(host && device);
  // Damaged frames were seen and made up for on one side or the other.
  EXPECT_GT(host->crc_errors + host->bad_frames + device->crc_errors + device->bad_frames, 0u);
  EXPECT_GT(host->retransmits + device->retransmits, 0u);
}

TEST(UartTest, ACutLineEndsInAClearErrorAndTheDeviceWorksAfterReconnecting) {
  auto sim = board();
  const std::string uri = "uart:" + sim->pty() + "?timeout=1000";
  {
    tpu::Device dev = tpu::Device::open(uri);
    sim->set_cut(true);
    const auto start = std::chrono::steady_clock::now();
    std::string error;
    try {
      std::mt19937_64 rng(9);
      tpu::matmul(dev, random_matrix(rng, 8, 8), random_matrix(rng, 8, 8));
    } catch (const tpu::Error& e) {
      error = e.what();
    }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_NE(error.find("has not answered for 1000 ms"), std::string::npos) << error;
    EXPECT_NE(error.find("the link is down"), std::string::npos) << error;
    EXPECT_LT(waited, 3.0);
  }
  // Reopened with a longer timeout: the 1000 ms above is about noticing the
  // cut, and a board simulated on a busy machine can be slower than that.
  sim->set_cut(false);
  tpu::Device dev = tpu::Device::open("uart:" + sim->pty() + "?timeout=5000");
  std::mt19937_64 rng(10);
  expect_exact_matmuls(dev, rng);
}

// A link left idle for longer than the timeout (the host busy with other
// work, as when a test uses two boards in turn) is not a dead link. The
// timeout is long enough that a simulated board slowed by a busy machine
// still answers within it; the idle gap is longer still.
TEST(UartTest, AnIdleLinkIsNotADeadOne) {
  auto sim = board();
  tpu::Device dev = tpu::Device::open("uart:" + sim->pty() + "?timeout=1500");
  std::mt19937_64 rng(11);
  const MatrixI8 a = random_matrix(rng, 5, 6), b = random_matrix(rng, 6, 7);
  EXPECT_EQ(tpu::matmul(dev, a, b), tpu::ref::matmul_i8(a, b));
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  EXPECT_EQ(tpu::matmul(dev, a, b), tpu::ref::matmul_i8(a, b));
}

TEST(UartTest, NoBoardOnThePortIsAClearError) {
  auto sim = board();
  sim->set_cut(true);
  try {
    tpu::Device::open("uart:" + sim->pty() + "?timeout=300");
    FAIL() << "opened a device on a dead line";
  } catch (const tpu::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no answer from a TPU link"), std::string::npos) << e.what();
  }
  try {
    tpu::Device::open("uart:/nonexistent/ttyUSB9");
    FAIL();
  } catch (const tpu::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open /nonexistent/ttyUSB9"), std::string::npos) << e.what();
  }
  try {
    tpu::Device::open("uart:" + sim->pty() + "?baud=12345");
    FAIL();
  } catch (const tpu::Error& e) {
    EXPECT_NE(std::string(e.what()).find("baud=12345 is not a rate"), std::string::npos) << e.what();
  }
}

}  // namespace
