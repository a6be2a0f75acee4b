// SPDX-License-Identifier: Apache-2.0
// Stream primitives against a queue model: random valid/ready on both sides,
// every word must come out once, in order, and the handshake rules hold.
// The two FIFOs (flops, RAM-backed) run the same tests.
#include <algorithm>
#include <deque>

#include "Vstream_fifo.h"
#include "Vstream_fifo_ram.h"
#include "Vstream_fifo_ram_d2.h"
#include "Vstream_spill.h"
#include "verilated_fixture.h"

namespace {

template <class Model>
class StreamTest : public tb::VerilatedFixture<Model> {
 protected:
  // Pushes `words` words through the block with the given valid/ready rates
  // and checks order, loss and duplication against a queue.
  void check_stream(int words, double p_valid, double p_ready, uint64_t max_cycles) {
    auto& dut = this->dut();
    dut.clear_i = 0;
    std::deque<uint16_t> in_flight;
    uint16_t next = uint16_t(this->rand_int(0, 0xffff));
    int sent = 0, received = 0;
    bool offer = false;
    for (uint64_t c = 0; c < max_cycles && received < words; ++c) {
      if (!offer && sent < words) offer = this->chance(p_valid);
      dut.valid_i = offer;
      dut.data_i = next;
      dut.ready_i = this->chance(p_ready);
      this->settle();
      if (dut.valid_o && dut.ready_i) {
        ASSERT_FALSE(in_flight.empty()) << "word out of nothing at cycle " << c;
        EXPECT_EQ(dut.data_o, in_flight.front()) << "word " << received;
        in_flight.pop_front();
        ++received;
      }
      if (offer && dut.ready_o) {
        in_flight.push_back(next);
        next = uint16_t(next * 31 + 7);
        ++sent;
        offer = false;
      }
      this->tick();
    }
    EXPECT_EQ(received, words) << "words lost or stuck";
  }

  // Measures the cycles needed to move `words` words with both sides always ready.
  uint64_t full_rate_cycles(int words) {
    auto& dut = this->dut();
    int received = 0, sent = 0;
    uint64_t c = 0;
    for (; received < words && c < uint64_t(words) * 4; ++c) {
      dut.valid_i = sent < words;
      dut.data_i = uint16_t(sent);
      dut.ready_i = 1;
      this->settle();
      if (dut.valid_o) ++received;
      if (dut.valid_i && dut.ready_o) ++sent;
      this->tick();
    }
    return c;
  }
};

using SpillTest = StreamTest<Vstream_spill>;

// Depth of each FIFO model (tb/CMakeLists.txt).
template <class Model>
constexpr int kDepth = 5;
template <>
constexpr int kDepth<Vstream_fifo_ram_d2> = 2;

template <class Model>
class FifoTest : public StreamTest<Model> {
 protected:
  // Random pushes, pops and (rarely) clears against a queue: data order,
  // count_o, valid_o and ready_o checked every cycle.
  void check_against_queue(int cycles, double p_valid, double p_ready, double p_clear) {
    auto& dut = this->dut();
    const int depth = kDepth<Model>;
    std::deque<uint16_t> q;
    uint16_t next = uint16_t(this->rand_int(0, 0xffff));
    int popped = 0;
    dut.clear_i = 1;  // start empty
    this->tick();
    for (int c = 0; c < cycles; ++c) {
      const bool clear = this->chance(p_clear);
      dut.clear_i = clear;
      dut.valid_i = this->chance(p_valid);
      dut.data_i = next;
      dut.ready_i = this->chance(p_ready);
      this->settle();
      ASSERT_EQ(dut.count_o, q.size()) << "cycle " << c;
      ASSERT_EQ(bool(dut.valid_o), !q.empty()) << "cycle " << c;
      ASSERT_EQ(bool(dut.ready_o), int(q.size()) < depth) << "cycle " << c;
      if (clear) {
        q.clear();
      } else {
        if (dut.valid_o && dut.ready_i) {
          ASSERT_EQ(dut.data_o, q.front()) << "word " << popped << " at cycle " << c;
          q.pop_front();
          ++popped;
        }
        if (dut.valid_i && dut.ready_o) {
          q.push_back(next);
          next = uint16_t(next * 31 + 7);
        }
      }
      this->tick();
    }
    dut.clear_i = 0;
  }
};

using FifoModels = ::testing::Types<Vstream_fifo, Vstream_fifo_ram, Vstream_fifo_ram_d2>;
TYPED_TEST_SUITE(FifoTest, FifoModels);

TYPED_TEST(FifoTest, RandomTrafficKeepsOrder) { this->check_stream(2000, 0.5, 0.5, 20000); }
TYPED_TEST(FifoTest, SlowConsumerFillsToDepth) { this->check_stream(500, 0.9, 0.1, 20000); }
TYPED_TEST(FifoTest, FastConsumer) { this->check_stream(500, 0.3, 0.9, 20000); }
TYPED_TEST(FifoTest, MatchesQueue) {
  this->check_against_queue(20000, 0.5, 0.5, 0.0);
  this->check_against_queue(20000, 0.8, 0.3, 0.0);
  this->check_against_queue(20000, 0.3, 0.8, 0.0);
  this->check_against_queue(20000, 0.6, 0.6, 0.01);
}
TYPED_TEST(FifoTest, FullRate) { EXPECT_LE(this->full_rate_cycles(100), 102u); }
// Filled first, then drained with the consumer always ready: one word a cycle
// out of storage, while the producer keeps pushing.
TYPED_TEST(FifoTest, FullRateFromFull) {
  auto& dut = this->dut();
  const int depth = kDepth<TypeParam>;
  dut.ready_i = 0;
  dut.valid_i = 1;
  for (int i = 0; i < depth; ++i) {
    dut.data_i = uint16_t(i);
    this->tick();
  }
  this->settle();
  ASSERT_EQ(dut.count_o, depth);
  int received = 0, sent = depth;
  for (int c = 0; c < 200; ++c) {
    dut.ready_i = 1;
    dut.valid_i = 1;
    dut.data_i = uint16_t(sent);
    this->settle();
    ASSERT_TRUE(dut.valid_o) << "bubble at cycle " << c;
    ASSERT_EQ(dut.data_o, uint16_t(received));
    ++received;
    if (dut.ready_o) ++sent;
    this->tick();
  }
}
TYPED_TEST(FifoTest, FallThroughInOneCycle) {
  auto& dut = this->dut();
  dut.ready_i = 0;
  dut.valid_i = 1;
  dut.data_i = 0xbeef;
  this->settle();
  EXPECT_FALSE(dut.valid_o);
  this->tick();
  dut.valid_i = 0;
  this->settle();
  EXPECT_TRUE(dut.valid_o);
  EXPECT_EQ(dut.data_o, 0xbeef);
}
TYPED_TEST(FifoTest, CountsAndStopsAtDepth) {
  auto& dut = this->dut();
  const int depth = kDepth<TypeParam>;
  dut.ready_i = 0;
  dut.valid_i = 1;
  int accepted = 0;
  for (int i = 0; i < 10; ++i) {
    this->settle();
    if (dut.ready_o) ++accepted;
    this->tick();
  }
  EXPECT_EQ(accepted, depth);
  EXPECT_EQ(dut.count_o, depth);
}

TYPED_TEST(FifoTest, ClearEmpties) {
  auto& dut = this->dut();
  dut.ready_i = 0;
  dut.valid_i = 1;
  dut.data_i = 0x1234;
  for (int i = 0; i < 3; ++i) this->tick();
  this->settle();
  EXPECT_EQ(dut.count_o, std::min(3, kDepth<TypeParam>));
  dut.valid_i = 0;
  dut.clear_i = 1;
  this->tick();
  dut.clear_i = 0;
  this->settle();
  EXPECT_EQ(dut.count_o, 0);
  EXPECT_FALSE(dut.valid_o);
  this->check_stream(200, 0.5, 0.5, 5000);  // still works afterwards
}

TEST_F(SpillTest, ClearEmpties) {
  auto& dut = this->dut();
  dut.ready_i = 0;
  dut.valid_i = 1;
  for (int i = 0; i < 3; ++i) tick();
  settle();
  EXPECT_TRUE(dut.valid_o);
  EXPECT_FALSE(dut.ready_o);
  dut.valid_i = 0;
  dut.clear_i = 1;
  tick();
  dut.clear_i = 0;
  settle();
  EXPECT_FALSE(dut.valid_o);
  EXPECT_TRUE(dut.ready_o);
  check_stream(200, 0.5, 0.5, 5000);
}

TEST_F(SpillTest, RandomTrafficKeepsOrder) { check_stream(2000, 0.5, 0.5, 20000); }
TEST_F(SpillTest, SlowConsumer) { check_stream(500, 0.9, 0.1, 20000); }
TEST_F(SpillTest, FullRate) { EXPECT_LE(full_rate_cycles(100), 102u); }

}  // namespace
