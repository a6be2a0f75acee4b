// SPDX-License-Identifier: Apache-2.0
// Stream primitives against a queue model: random valid/ready on both sides,
// every word must come out once, in order, and the handshake rules hold.
#include <deque>

#include "Vstream_fifo.h"
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

using FifoTest = StreamTest<Vstream_fifo>;
using SpillTest = StreamTest<Vstream_spill>;

TEST_F(FifoTest, RandomTrafficKeepsOrder) { check_stream(2000, 0.5, 0.5, 20000); }
TEST_F(FifoTest, SlowConsumerFillsToDepth) {
  check_stream(500, 0.9, 0.1, 20000);
}
TEST_F(FifoTest, FullRate) { EXPECT_LE(full_rate_cycles(100), 102u); }
TEST_F(FifoTest, CountsAndStopsAtDepth) {
  auto& dut = this->dut();
  dut.ready_i = 0;
  dut.valid_i = 1;
  int accepted = 0;
  for (int i = 0; i < 10; ++i) {
    settle();
    if (dut.ready_o) ++accepted;
    tick();
  }
  EXPECT_EQ(accepted, 5);
  EXPECT_EQ(dut.count_o, 5);
}

TEST_F(FifoTest, ClearEmpties) {
  auto& dut = this->dut();
  dut.ready_i = 0;
  dut.valid_i = 1;
  dut.data_i = 0x1234;
  for (int i = 0; i < 3; ++i) tick();
  settle();
  EXPECT_EQ(dut.count_o, 3);
  dut.valid_i = 0;
  dut.clear_i = 1;
  tick();
  dut.clear_i = 0;
  settle();
  EXPECT_EQ(dut.count_o, 0);
  EXPECT_FALSE(dut.valid_o);
  check_stream(200, 0.5, 0.5, 5000);  // still works afterwards
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
