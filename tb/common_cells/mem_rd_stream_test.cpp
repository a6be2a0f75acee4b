// SPDX-License-Identifier: Apache-2.0
// mem_rd_stream against a memory that refuses requests at random and answers
// a granted one a cycle later: every address's word (and its user bits)
// comes out once and in order, the memory never answers into a full FIFO,
// and with FallThrough a word reaches an empty, ready unit in the cycle the
// memory answers (a cycle later without).
#include <deque>

#include "Vmem_rd_stream.h"
#include "Vmem_rd_stream_ft.h"
#include "verilated_fixture.h"

namespace {

uint16_t word_at(uint8_t addr) { return uint16_t(addr * 331u + 17u); }

template <class Model>
class MemRdStreamTest : public tb::VerilatedFixture<Model> {
 protected:
  void SetUp() override {
    tb::VerilatedFixture<Model>::SetUp();
    auto& d = this->dut();
    d.clear_i = 0;
    d.addr_valid_i = 0;
    d.req_ready_i = 0;
    d.rsp_valid_i = 0;
    d.data_ready_i = 0;
  }

  // Streams `words` addresses with the given rates of offering an address,
  // granting a request and taking a word; checks every word against its
  // address, in order.
  void check_stream(int words, double p_offer, double p_grant, double p_take) {
    auto& d = this->dut();
    std::deque<std::pair<uint16_t, uint8_t>> expect;  // {word, user} in request order
    uint8_t next = uint8_t(this->rand_int(0, 255));
    bool offer = false, answer = false;
    uint8_t answer_addr = 0;
    int asked = 0, got = 0;
    for (int c = 0; c < words * 20 && got < words; ++c) {
      if (!offer && asked < words) offer = this->chance(p_offer);
      d.addr_valid_i = offer;
      d.addr_i = next;
      d.addr_user_i = uint8_t(next & 0xF);
      d.req_ready_i = this->chance(p_grant);
      d.rsp_valid_i = answer;
      d.rsp_data_i = word_at(answer_addr);
      d.data_ready_i = this->chance(p_take);
      this->settle();
      if (d.data_valid_o && d.data_ready_i) {
        ASSERT_FALSE(expect.empty()) << "a word out of nothing at cycle " << c;
        EXPECT_EQ(d.data_o, expect.front().first) << "word " << got;
        EXPECT_EQ(d.data_user_o, expect.front().second) << "user bits of word " << got;
        expect.pop_front();
        ++got;
      }
      answer = d.req_valid_o && d.req_ready_i;
      if (answer) {
        answer_addr = uint8_t(d.req_addr_o);
        expect.push_back({word_at(answer_addr), uint8_t(answer_addr & 0xF)});
        EXPECT_TRUE(offer && d.addr_ready_o && d.req_addr_o == next) << "a request not offered, cycle " << c;
      }
      if (offer && d.addr_ready_o) {
        ++asked;
        ++next;
        offer = false;
      }
      this->tick();
    }
    EXPECT_EQ(got, words) << "words lost or stuck";
  }

  // Cycles from an address's grant to its word at an empty, ready unit.
  int latency() {
    auto& d = this->dut();
    d.addr_valid_i = 1;
    d.addr_i = 5;
    d.req_ready_i = 1;
    d.data_ready_i = 1;
    this->settle();
    EXPECT_TRUE(d.req_valid_o);
    this->tick();
    d.addr_valid_i = 0;
    d.rsp_valid_i = 1;
    d.rsp_data_i = word_at(5);
    for (int c = 1; c < 5; ++c) {
      this->settle();
      if (d.data_valid_o) {
        EXPECT_EQ(d.data_o, word_at(5));
        return c;
      }
      this->tick();
      d.rsp_valid_i = 0;
    }
    return -1;
  }
};

using Models = ::testing::Types<Vmem_rd_stream, Vmem_rd_stream_ft>;
TYPED_TEST_SUITE(MemRdStreamTest, Models);

TYPED_TEST(MemRdStreamTest, RandomTrafficKeepsOrder) { this->check_stream(3000, 0.7, 0.6, 0.5); }
TYPED_TEST(MemRdStreamTest, SlowUnitFillsTheFifo) { this->check_stream(1000, 0.9, 0.9, 0.15); }
TYPED_TEST(MemRdStreamTest, FullRate) { this->check_stream(1000, 1.0, 1.0, 1.0); }

TYPED_TEST(MemRdStreamTest, WordInTheAnswerCycleOnlyWithFallThrough) {
  const bool through = std::is_same_v<TypeParam, Vmem_rd_stream_ft>;
  EXPECT_EQ(this->latency(), through ? 1 : 2);
}

}  // namespace
