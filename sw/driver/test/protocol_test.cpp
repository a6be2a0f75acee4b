// SPDX-License-Identifier: Apache-2.0
// The driver does not trust the completion ring or the interrupts: a
// transport that wraps the real one (sim or model, TPU_TEST_TRANSPORT)
// corrupts completion entries on their way to the driver, plants entries the
// device never wrote, or raises interrupts that bring nothing. Each case must
// end in a ProtocolError that says what was wrong, quickly (never a silent
// wait for the timeout), and the device must work again afterwards.
#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tpu/device.h"
#include "tpu/queue.h"
#include "tpu/transport.h"
#include "tpu_regs.h"
#include "transport_under_test.h"

namespace {

namespace isa = tpu::isa;

#define REG(name) uint32_t(offsetof(tpu_regs_t, name))

// Passes everything to the real transport, except what a test asks to change.
class MeddlingTransport final : public tpu::Transport {
 public:
  explicit MeddlingTransport(std::unique_ptr<tpu::Transport> inner) : inner_(std::move(inner)) {}

  // Called with each completion entry the driver reads whose phase bit is
  // set, with its slot; returns true when it changed the entry and is done.
  std::function<bool(uint32_t slot, uint8_t* entry)> rewrite;
  // Each wait_interrupt lets the device run one cycle and reports an
  // interrupt, with no completion behind it.
  bool storm = false;
  int interrupts = 0;  // reported by the storm

  uint64_t cq_base() const { return cq_base_; }
  // Writes a completion entry into the ring as if the device had.
  void plant(uint32_t slot, uint16_t id, bool phase) {
    std::vector<uint8_t> e(tpu::kCqEntryBytes, 0);
    e[0] = uint8_t(id);
    e[1] = uint8_t(id >> 8);
    e[12] = phase ? 1 : 0;
    inner_->dma_write(cq_base_ + uint64_t(slot) * tpu::kCqEntryBytes, e);
  }

  std::string name() const override { return inner_->name(); }
  uint32_t mmio_read(uint32_t offset) override { return inner_->mmio_read(offset); }
  void mmio_write(uint32_t offset, uint32_t value) override {
    if (offset == REG(CQ_BASE_LO)) cq_base_ = (cq_base_ & ~0xffff'ffffull) | value;
    if (offset == REG(CQ_BASE_HI)) cq_base_ = (cq_base_ & 0xffff'ffffull) | uint64_t(value) << 32;
    inner_->mmio_write(offset, value);
  }
  uint64_t dma_base() const override { return inner_->dma_base(); }
  uint64_t dma_size() const override { return inner_->dma_size(); }
  void dma_write(uint64_t addr, std::span<const uint8_t> data) override { inner_->dma_write(addr, data); }
  void dma_read(uint64_t addr, std::span<uint8_t> out) override {
    inner_->dma_read(addr, out);
    if (rewrite && cq_base_ && out.size() == tpu::kCqEntryBytes && addr >= cq_base_ &&
        (addr - cq_base_) % tpu::kCqEntryBytes == 0 && (out[12] & 1)) {
      if (rewrite(uint32_t((addr - cq_base_) / tpu::kCqEntryBytes), out.data())) rewrite = nullptr;
    }
  }
  uint64_t wait_interrupt(uint64_t max_cycles) override {
    if (!storm) return inner_->wait_interrupt(max_cycles);
    ++interrupts;
    inner_->wait_interrupt(1);
    return 1;  // one cycle passed, and "an interrupt" ended it early
  }
  uint64_t cycles() const override { return inner_->cycles(); }

 private:
  std::unique_ptr<tpu::Transport> inner_;
  uint64_t cq_base_ = 0;
};

class ProtocolTest : public ::testing::Test {
 protected:
  ProtocolTest() {
    auto t = std::make_unique<MeddlingTransport>(tpu::open_transport(tpu_test::uri("tiny", "latency=100")));
    fake_ = t.get();
    dev_ = std::make_unique<tpu::Device>(std::move(t));
  }

  // The ProtocolError's message, or a failure when something else happened.
  std::string protocol_error(const std::function<void()>& f) {
    try {
      f();
    } catch (const tpu::ProtocolError& e) {
      return e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a ProtocolError: " << e.what();
      return "";
    }
    ADD_FAILURE() << "no error";
    return "";
  }

  // After any of these the device was reset and runs programs again.
  void expect_device_works() {
    fake_->rewrite = nullptr;
    fake_->storm = false;
    EXPECT_TRUE(dev_->run({isa::irq(), isa::halt()}).ok());
    EXPECT_TRUE(dev_->run({isa::halt()}).ok());
  }

  static bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
  }

  MeddlingTransport* fake_ = nullptr;
  std::unique_ptr<tpu::Device> dev_;
};

// Rewrites the id of the first completed entry it sees at `slot`.
std::function<bool(uint32_t, uint8_t*)> set_id(uint32_t slot, uint16_t id) {
  return [slot, id](uint32_t s, uint8_t* e) {
    if (s != slot) return false;
    e[0] = uint8_t(id);
    e[1] = uint8_t(id >> 8);
    return true;
  };
}

TEST_F(ProtocolTest, ACompletionForACommandNeverSubmittedIsReported) {
  const tpu::Command cmd = dev_->submit({isa::halt()});
  fake_->rewrite = set_id(0, 0x7777);
  const std::string msg = protocol_error([&] { dev_->wait(cmd, 1'000'000); });
  EXPECT_TRUE(contains(msg, "completion entry 0 of the completion ring (host 0x")) << msg;
  EXPECT_TRUE(contains(msg, "names command 30583, which this driver never submitted (the oldest queued is " +
                                std::to_string(cmd.id) + ")"))
      << msg;
  EXPECT_TRUE(contains(msg, "the device was reset and its queued commands dropped")) << msg;
  // The command is gone with the reset: waiting for it again is an error, not a hang.
  EXPECT_THROW(dev_->wait(cmd), tpu::Error);
  expect_device_works();
}

TEST_F(ProtocolTest, ACompletionRepeatingACompletedCommandIsReported) {
  const tpu::Command first = dev_->submit({isa::halt()});
  EXPECT_TRUE(dev_->wait(first).ok());
  const tpu::Command second = dev_->submit({isa::halt()});
  fake_->rewrite = set_id(1, first.id);
  const std::string msg = protocol_error([&] { dev_->wait(second, 1'000'000); });
  EXPECT_TRUE(contains(msg, "completion entry 1 of the completion ring")) << msg;
  EXPECT_TRUE(contains(msg, "repeats command " + std::to_string(first.id) + ", which already completed"))
      << msg;
  expect_device_works();
}

TEST_F(ProtocolTest, ACompletionOutOfSubmissionOrderIsReported) {
  const tpu::Command a = dev_->submit({isa::halt()});
  const tpu::Command b = dev_->submit({isa::halt()});
  fake_->rewrite = set_id(0, b.id);
  const std::string msg = protocol_error([&] { dev_->wait(b, 1'000'000); });
  EXPECT_TRUE(contains(msg, "is for command " + std::to_string(b.id) + " while command " +
                                std::to_string(a.id) + " is older and not complete"))
      << msg;
  expect_device_works();
}

// An entry with the current phase where the device cannot have written one
// yet: one slot past the only command in flight. A driver that trusted the
// phase bit would take it as a second completion.
TEST_F(ProtocolTest, MoreCompletionsThanCommandsAreReported) {
  const tpu::Command cmd = dev_->submit({isa::halt()});
  fake_->plant(1, uint16_t(cmd.id + 1), true);
  const std::string msg = protocol_error([&] { dev_->wait(cmd, 1'000'000); });
  EXPECT_TRUE(contains(msg, "completion entry 1 of the completion ring")) << msg;
  EXPECT_TRUE(contains(msg, "has the current phase bit, but no command is left to complete")) << msg;
  expect_device_works();
}

// The same after the ring wrapped: the phase the driver expects has flipped,
// and a stale entry that flipped a second time is no completion either.
TEST_F(ProtocolTest, AnEntryFromAPhaseAheadAfterTheRingWrappedIsReported) {
  for (int i = 0; i < 70; ++i) ASSERT_TRUE(dev_->run({isa::halt()}).ok());  // the 64-entry ring wrapped
  // The driver expects phase 0 now at slot 6; slot 7 with phase 0 is
  // one completion more than the one command in flight.
  const tpu::Command cmd = dev_->submit({isa::halt()});
  fake_->plant(7, uint16_t(cmd.id + 1), false);
  const std::string msg = protocol_error([&] { dev_->wait(cmd, 1'000'000); });
  EXPECT_TRUE(contains(msg, "completion entry 7 of the completion ring")) << msg;
  EXPECT_TRUE(contains(msg, "no command is left to complete")) << msg;
  expect_device_works();
}

TEST_F(ProtocolTest, InterruptsThatBringNoCompletionAreReportedWithoutWaitingForTheTimeout) {
  // It cannot complete during the storm, which over a faulty serial line
  // lasts 210,000 device cycles alone and over a million while other tests
  // run beside it.
  const tpu::Command cmd = dev_->submit(tpu_test::long_program());
  fake_->storm = true;
  const std::string msg = protocol_error([&] { dev_->wait(cmd, 100'000); });
  EXPECT_TRUE(contains(msg, "waiting for command " + std::to_string(cmd.id) + ": " +
                                std::to_string(tpu::Device::kMaxSpuriousInterrupts) +
                                " interrupts in a row brought no new completion entry"))
      << msg;
  // Given up after the storm, not after 100000 cycles of it (the reset's own
  // polling adds a few interrupts).
  EXPECT_LT(fake_->interrupts, 1000) << msg;
  expect_device_works();
}

// A correct device gives none of these: long runs of commands with and
// without the meddling transport in between see no ProtocolError.
TEST_F(ProtocolTest, ACorrectDeviceIsNeverReported) {
  std::vector<tpu::Command> cmds;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 40; ++i) cmds.push_back(dev_->submit({isa::irq(), isa::halt()}));
    for (auto it = cmds.rbegin(); it != cmds.rend(); ++it) EXPECT_TRUE(dev_->wait(*it).ok());
    cmds.clear();
  }
}

}  // namespace
