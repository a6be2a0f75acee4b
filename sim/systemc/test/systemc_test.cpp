// SPDX-License-Identifier: Apache-2.0
// The SystemC/TLM-2.0 module of the device and its virtual platform
// (docs/systemc.md, "Tests"): TLM transactions on the BAR0 socket from the
// platform's host CPU (responses, annotated delay), the DMA socket and the
// interrupt pin under the driver, GEMMs exact against the reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "sc_platforms.h"
#include "tpu/device.h"
#include "tpu/error.h"
#include "tpu/isa.h"
#include "tpu/ops.h"
#include "tpu/ref_matmul.h"
#include "tpu_regs.h"

namespace {

using tpu::systemc::PlatformBase;

#define REG(name) uint32_t(offsetof(tpu_regs_t, name))

// Holds the tiny platform, out of reset with its clock running.
class SocketTest : public ::testing::Test {
 protected:
  SocketTest() : p_(tpu::systemc::acquire_platform("tiny")) {
    if (!p_) return;
    p_->clock.enable(true);
    p_->reset();
  }
  ~SocketTest() override {
    if (!p_) return;
    p_->clock.enable(false);
    tpu::systemc::release_platform(p_);
  }
  void SetUp() override { ASSERT_NE(p_, nullptr) << "this build has no tiny SystemC model"; }

  // Runs fn in the host CPU's thread, where b_transport may wait.
  void on_cpu(std::function<void()> fn) {
    p_->cpu.post(std::move(fn));
    p_->run_jobs(1'000'000);
  }

  // One transaction on the CPU's socket (through the router).
  tlm::tlm_response_status access(tlm::tlm_command cmd, uint64_t offset, uint32_t& value, unsigned len = 4,
                                  sc_core::sc_time delay = sc_core::SC_ZERO_TIME,
                                  sc_core::sc_time* returned_delay = nullptr) {
    tlm::tlm_response_status st = tlm::TLM_INCOMPLETE_RESPONSE;
    on_cpu([&] {
      unsigned char bytes[8] = {};
      for (int i = 0; i < 4; ++i) bytes[i] = uint8_t(value >> (8 * i));
      tlm::tlm_generic_payload gp;
      gp.set_command(cmd);
      gp.set_address(PlatformBase::kBar0Base + offset);
      gp.set_data_ptr(bytes);
      gp.set_data_length(len);
      gp.set_streaming_width(len);
      gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
      p_->cpu.socket->b_transport(gp, delay);
      if (returned_delay) *returned_delay = delay;
      st = gp.get_response_status();
      value = uint32_t(bytes[0]) | uint32_t(bytes[1]) << 8 | uint32_t(bytes[2]) << 16 | uint32_t(bytes[3]) << 24;
    });
    return st;
  }
  tlm::tlm_response_status read(uint64_t offset, uint32_t& value) {
    value = 0;
    return access(tlm::TLM_READ_COMMAND, offset, value);
  }
  tlm::tlm_response_status write(uint64_t offset, uint32_t value) {
    return access(tlm::TLM_WRITE_COMMAND, offset, value);
  }

  PlatformBase* p_;
};

TEST_F(SocketTest, ReadsTheIdRegister) {
  uint32_t id = 0;
  EXPECT_EQ(read(REG(ID), id), tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(id, 0x54505531u);  // "TPU1"
  uint32_t version = 0;
  EXPECT_EQ(read(REG(VERSION), version), tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(version >> 24, 0u);
}

TEST_F(SocketTest, WritesAndReadsBackARegister) {
  EXPECT_EQ(write(REG(SQ_BASE_LO), 0x12345640u), tlm::TLM_OK_RESPONSE);
  uint32_t v = 0;
  EXPECT_EQ(read(REG(SQ_BASE_LO), v), tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(v, 0x12345640u);
}

TEST_F(SocketTest, UnmappedOffsetsAreAddressErrors) {
  uint32_t v = 0xdead;
  // A read the device answers UR: a free offset, an unaligned one.
  EXPECT_EQ(read(0x200, v), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(read(0x002, v), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  // An unaligned write is dropped by the device; the socket says so.
  EXPECT_EQ(write(0x042, 1), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  // The device saw them: ERR_CAUSE.mmio_unmapped.
  uint32_t cause = 0;
  EXPECT_EQ(read(REG(ERR_CAUSE), cause), tlm::TLM_OK_RESPONSE);
  EXPECT_NE(cause & TPU_REGS__ERR_CAUSE__MMIO_UNMAPPED_bm, 0u);
  // And it still answers.
  EXPECT_EQ(read(REG(ID), v), tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(v, 0x54505531u);
}

TEST_F(SocketTest, OtherLengthsAndCommandsAreRefused) {
  const tpu::systemc::TpuTlmStats before = p_->device().stats();
  uint32_t v = 0;
  EXPECT_EQ(access(tlm::TLM_READ_COMMAND, REG(ID), v, 2), tlm::TLM_BURST_ERROR_RESPONSE);
  EXPECT_EQ(access(tlm::TLM_WRITE_COMMAND, REG(CTRL), v, 8), tlm::TLM_BURST_ERROR_RESPONSE);
  EXPECT_EQ(access(tlm::TLM_IGNORE_COMMAND, REG(ID), v), tlm::TLM_COMMAND_ERROR_RESPONSE);
  EXPECT_EQ(p_->device().stats().mmio_reads + p_->device().stats().mmio_writes,
            before.mmio_reads + before.mmio_writes)
      << "refused accesses never reach the device";
}

// bar0 waits the annotated delay before the access and returns it consumed;
// an access takes device cycles.
TEST_F(SocketTest, HonoursTheAnnotatedDelay) {
  const sc_core::sc_time start = sc_core::sc_time_stamp();
  sc_core::sc_time returned;
  uint32_t v = 0;
  EXPECT_EQ(access(tlm::TLM_READ_COMMAND, REG(ID), v, 4, sc_core::sc_time(1, sc_core::SC_US), &returned),
            tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(returned, sc_core::SC_ZERO_TIME);
  EXPECT_GE(sc_core::sc_time_stamp() - start, sc_core::sc_time(1, sc_core::SC_US) + tpu::systemc::clock_period());
}

// ---- the driver over sc: -----------------------------------------------------------------

tpu::MatrixI8 random_matrix(int rows, int cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  tpu::MatrixI8 m(rows, cols);
  for (auto& x : m.data) x = int8_t(rng());
  return m;
}

// A GEMM through the platform: DMA reads, writes and MSIs over the sockets,
// every one an interrupt pulse, the result exact against the reference.
TEST(Platform, GemmIsExactAndEveryMsiPulsesTheInterrupt) {
  PlatformBase* p = tpu::systemc::find_platform("tiny");
  ASSERT_NE(p, nullptr);
  const tpu::systemc::TpuTlmStats before = p->device().stats();
  const uint64_t irqs = p->cpu.interrupts();
  {
    tpu::Device dev = tpu::Device::open("sc:?config=tiny");
    const tpu::MatrixI8 a = random_matrix(13, 21, 1), b = random_matrix(21, 11, 2);
    tpu::OpStats stats;
    EXPECT_EQ(tpu::matmul(dev, a, b, &stats), tpu::ref::matmul_i8(a, b));
    EXPECT_GT(stats.commands, 0u);
  }
  const tpu::systemc::TpuTlmStats& after = p->device().stats();
  EXPECT_GT(after.dma_reads, before.dma_reads);
  EXPECT_GT(after.dma_writes, before.dma_writes);
  EXPECT_GT(after.msis, before.msis);
  EXPECT_EQ(after.dma_errors, before.dma_errors);
  EXPECT_EQ(p->cpu.interrupts() - irqs, after.msis - before.msis);
}

TEST(Platform, GemmOnTheDefaultConfigurationIsExact) {
  if (!tpu::systemc::find_platform("default")) GTEST_SKIP() << "this build has no default SystemC model";
  tpu::Device dev = tpu::Device::open("sc:?config=default");
  const tpu::MatrixI8 a = random_matrix(40, 50, 3), b = random_matrix(50, 30, 4);
  EXPECT_EQ(tpu::matmul(dev, a, b), tpu::ref::matmul_i8(a, b));
}

// The memory's annotated read latency (latency=) is what the device waits for.
TEST(Platform, TheMemoryLatencyIsTheDevicesWait) {
  auto cycles = [](int latency) {
    tpu::Device dev = tpu::Device::open("sc:?config=tiny&latency=" + std::to_string(latency));
    const tpu::MatrixI8 a = random_matrix(8, 8, 5), b = random_matrix(8, 8, 6);
    tpu::OpStats stats;
    EXPECT_EQ(tpu::matmul(dev, a, b, &stats), tpu::ref::matmul_i8(a, b));
    return stats.cycles;
  };
  const uint64_t fast = cycles(50), slow = cycles(2000);
  EXPECT_GT(slow, fast + 2000) << "fast " << fast << ", slow " << slow;
}

// A read the memory answers with an error reaches the device as UR: the
// program fails with a DMA error and the device goes on.
TEST(Platform, AMemoryErrorIsAnUnsupportedRequest) {
  tpu::Device dev = tpu::Device::open("sc:?config=tiny");
  PlatformBase* p = tpu::systemc::find_platform("tiny");
  const int n = dev.info().n;
  tpu::Buffer in = dev.alloc(size_t(4 * n)), out = dev.alloc(size_t(4 * n));
  p->memory.storage().add_fault(in.addr(), 4);
  const uint64_t errors = p->device().stats().dma_errors;
  const std::string prog = "rhm ub=0 rows=4 host=" + std::to_string(in.addr()) + " stride=" + std::to_string(n) +
                           "\nwhm ub=0 rows=4 host=" + std::to_string(out.addr()) + " stride=" +
                           std::to_string(n) + "\nhalt\n";
  EXPECT_THROW(dev.run(tpu::isa::assemble(prog), {in.read_only(), out.write_only()}), tpu::DeviceError);
  EXPECT_GT(p->device().stats().dma_errors, errors);
  p->memory.storage().clear_faults();
  EXPECT_TRUE(dev.run({tpu::isa::halt()}).ok());
}

TEST(Platform, ASecondDeviceOfOneConfigurationIsRefused) {
  tpu::Device dev = tpu::Device::open("sc:?config=tiny");
  try {
    tpu::Device::open("sc:?config=tiny");
    FAIL() << "a second device opened";
  } catch (const tpu::Error& e) {
    EXPECT_NE(std::string(e.what()).find("is in use"), std::string::npos) << e.what();
  }
}

}  // namespace
