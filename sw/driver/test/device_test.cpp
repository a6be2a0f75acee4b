// SPDX-License-Identifier: Apache-2.0
// The driver's device API on the transport under test: opening, buffers,
// commands, completions, errors and timeouts.
#include <gtest/gtest.h>

#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "tpu/config.h"
#include "tpu/device.h"
#include "transport_under_test.h"

namespace {

namespace isa = tpu::isa;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tpu::Error& e) {
    return e.what();
  }
  return "";
}

// What the device reports is what the configuration table says, on every
// configuration the transport has (the simulator has the ones the build made).
TEST(DeviceOpen, ReportsTheConfigurationOfTheTable) {
  int opened = 0;
  for (const tpu::Config& c : tpu::kConfigs) {
    std::unique_ptr<tpu::Device> dev;
    try {
      dev = std::make_unique<tpu::Device>(tpu::Device::open(tpu_test::uri(std::string(c.name))));
    } catch (const tpu::Error& e) {
      EXPECT_NE(std::string(e.what()).find("is not built into this simulator"), std::string::npos) << e.what();
      continue;
    }
    ++opened;
    const tpu::DeviceInfo& i = dev->info();
    SCOPED_TRACE(i.name);
    if (tpu_test::transport() == "uart")  // the name is the port: uart:/dev/pts/N
      EXPECT_EQ(i.name, tpu_test::uri(std::string(c.name)));
    else
      EXPECT_EQ(i.name, tpu_test::transport() + ":config=" + std::string(c.name));
    EXPECT_EQ(i.id, 0x54505531u);
    EXPECT_EQ(i.version_major, 0);
    EXPECT_EQ(i.n, c.array_n);
    EXPECT_EQ(i.int8, tpu::has_int8(c.datapath));
    EXPECT_EQ(i.bf16, tpu::has_bf16(c.datapath));
    EXPECT_EQ(i.config, c.name);
    EXPECT_EQ(i.ub_rows, c.ub_rows);
    EXPECT_EQ(i.acc_rows, c.acc_rows);
    EXPECT_EQ(i.imem_depth, c.imem_depth);
    EXPECT_EQ(i.wgt_fifo_tiles, c.wgt_fifo_tiles);
    EXPECT_EQ(i.dma_tags, c.dma_tags);
  }
  // The model has every configuration; the simulator at least one (the build's).
  if (tpu_test::transport() == "model")
    EXPECT_EQ(opened, int(std::size(tpu::kConfigs)));
  else
    EXPECT_GE(opened, 1);
}

TEST(DeviceOpen, BadUrisSayWhatToUse) {
  const std::string schemes =
      "model:?config=NAME, sc:?config=NAME&latency=CYCLES, "
      "sim:?config=NAME&latency=CYCLES&seed=N&waves=FILE.fst, "
      "uart:/dev/ttyUSB0?baud=3000000&timeout=MS";
  EXPECT_EQ(error_of([] { tpu::Device::open("pcie:0000:01:00.0"); }),
            "device URI 'pcie:0000:01:00.0': unknown transport 'pcie'; the transports are " + schemes);
  EXPECT_EQ(error_of([] { tpu::Device::open("default"); }),
            "device URI 'default' has no scheme; write it as scheme:?key=value, e.g. " + schemes);
  EXPECT_EQ(error_of([] { tpu::Device::open("sim:?config=huge"); }),
            "sim device: unknown configuration 'huge'; the configurations are " + tpu::config_names());
  EXPECT_EQ(error_of([] { tpu::Device::open("model:?config=huge"); }),
            "model device: unknown configuration 'huge'; the configurations are " + tpu::config_names());
  EXPECT_EQ(error_of([] { tpu::Device::open("sim:?colour=red"); }),
            "sim device: unknown option 'colour'; the options are config, latency, seed and waves");
  EXPECT_EQ(error_of([] { tpu::Device::open("model:?latency=5"); }),
            "model device: unknown option 'latency'; the only option is config");
  EXPECT_EQ(error_of([] { tpu::Device::open("sim:?latency=-5"); }),
            "sim device: latency=-5 is not a non-negative number");
  EXPECT_EQ(error_of([] { tpu::Device::open("sim:config=tiny"); }),
            "sim device: unexpected 'config=tiny' in 'sim:config=tiny'; write sim:?config=NAME");
  EXPECT_EQ(error_of([] { tpu::Device::open("sim:?config"); }),
            "device URI 'sim:?config': 'config' is not key=value");
  EXPECT_EQ(error_of([] { tpu::Device::open("sim:?config=tiny&config=default"); }),
            "device URI 'sim:?config=tiny&config=default': 'config' is given twice");
  EXPECT_EQ(error_of([] { tpu::Device::open("sc:?seed=3"); }),
            "sc device: unknown option 'seed'; the options are config and latency");
  EXPECT_EQ(error_of([] { tpu::Device::open("sc:?config=huge"); }),
            "sc device: unknown configuration 'huge'; the configurations are " + tpu::config_names());
}

class DeviceTest : public ::testing::Test {
 protected:
  DeviceTest() : dev_(tpu::Device::open(tpu_test::uri("tiny", "latency=100"))) {}
  tpu::Device dev_;
};

TEST_F(DeviceTest, BuffersHoldBytesAndCheckBounds) {
  tpu::Buffer a = dev_.alloc(100), b = dev_.alloc(1);
  EXPECT_EQ(a.addr() % 64, 0u);
  EXPECT_GE(b.addr(), a.addr() + 100);
  std::vector<uint8_t> data(100);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7);
  a.write(data);
  EXPECT_EQ(a.read(0, 100), data);
  EXPECT_EQ(a.read(99, 1), std::vector<uint8_t>{uint8_t(99 * 7)});
  EXPECT_EQ(error_of([&] { a.write(data, 1); }),
            "buffer write of 100 bytes at offset 1 does not fit the 100-byte buffer");
  EXPECT_THROW(a.read(101, 0), tpu::Error);
  EXPECT_THROW(dev_.alloc(0), tpu::Error);
  // Freed memory is reused.
  const uint64_t addr = a.addr();
  a = tpu::Buffer();
  EXPECT_EQ(dev_.alloc(64).addr(), addr);
}

TEST_F(DeviceTest, RunsAProgramThatCopiesThroughTheUnifiedBuffer) {
  const int n = dev_.info().n;
  tpu::Buffer in = dev_.alloc(size_t(8 * n)), out = dev_.alloc(size_t(8 * n));
  std::vector<uint8_t> data(size_t(8 * n));
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(200 - i);
  in.write(data);
  const tpu::Completion c = dev_.run({isa::rhm(3, 8, in.addr(), uint32_t(n)),
                                      isa::whm(3, 8, out.addr(), uint32_t(n)), isa::halt()},
                                     {in.read_only(), out.write_only()});
  EXPECT_TRUE(c.ok());
  EXPECT_GT(c.cycles, 0u);
  EXPECT_EQ(out.read(0, data.size()), data);
  EXPECT_GT(dev_.counters().cycles, 0u);
}

TEST_F(DeviceTest, CommandsQueueAndCompleteInOrder) {
  std::vector<tpu::Command> cmds;
  for (int i = 0; i < 5; ++i) cmds.push_back(dev_.submit({isa::irq(), isa::halt()}));
  // Waiting for the last one collects the others' completions on the way.
  EXPECT_TRUE(dev_.wait(cmds[4]).ok());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(dev_.wait(cmds[size_t(i)]).id, cmds[size_t(i)].id);
  EXPECT_THROW(dev_.wait(cmds[0]), tpu::Error);  // already waited for
}

// As many commands in flight as the ring holds, more refused; each completes
// in order with its own status, a failing one among them.
TEST_F(DeviceTest, TheRingHoldsMaxInFlightCommands) {
  EXPECT_EQ(dev_.max_in_flight(), 63u);
  std::vector<tpu::Command> cmds;
  for (size_t i = 0; i < dev_.max_in_flight(); ++i) {
    cmds.push_back(dev_.submit(i == 7 ? std::vector<isa::Instr>{isa::mmc(0, 0, 1, false, true), isa::halt()}
                                      : std::vector<isa::Instr>{isa::irq(), isa::halt()}));
    EXPECT_EQ(dev_.in_flight(), i + 1);
  }
  EXPECT_NE(error_of([&] { dev_.submit({isa::halt()}); }).find("the ring is full"), std::string::npos);
  for (size_t i = 0; i < cmds.size(); ++i) {
    const tpu::Completion c = dev_.wait(cmds[i]);
    EXPECT_EQ(c.id, cmds[i].id);
    EXPECT_EQ(c.status, i == 7 ? uint16_t(isa::ErrCode::kNoWeights) : tpu::kStatusOk) << i;
    if (i == 7) EXPECT_THROW(dev_.check(c), tpu::DeviceError);
    else EXPECT_NO_THROW(dev_.check(c));
  }
  EXPECT_EQ(dev_.in_flight(), 0u);
}

TEST_F(DeviceTest, ProgramErrorsBecomeDeviceErrorsAndTheDeviceGoesOn) {
  try {
    dev_.run({isa::irq(), isa::mmc(0, 0, 1, false, true), isa::halt()});
    FAIL() << "no error";
  } catch (const tpu::DeviceError& e) {
    EXPECT_EQ(e.status(), uint16_t(isa::ErrCode::kNoWeights));
    EXPECT_EQ(e.err_pc(), 1u);
    EXPECT_EQ(std::string(e.what()),
              "the program failed at instruction 1: NO_WEIGHTS (an MMC when no weight tile is loaded or "
              "on its way); load weights with RW before each MMC that needs them");
  }
  EXPECT_TRUE(dev_.run({isa::irq(), isa::halt()}).ok());
}

TEST_F(DeviceTest, MalformedSubmissionsAreRefusedOnTheHost) {
  EXPECT_EQ(error_of([&] { dev_.submit({}); }), "submit: the program is empty; end it with HALT at least");
  const std::vector<isa::Instr> long_program(size_t(dev_.info().imem_depth) + 1, isa::halt());
  EXPECT_NE(error_of([&] { dev_.submit(long_program); }).find("the instruction memory holds 256"),
            std::string::npos);
}

TEST_F(DeviceTest, TimeoutResetsTheDeviceWhichThenWorks) {
  const tpu::Command cmd = dev_.submit(tpu_test::long_program());
  try {
    dev_.wait(cmd, 500);
    FAIL() << "no timeout";
  } catch (const tpu::TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("did not complete within 500 device cycles"), std::string::npos);
  }
  EXPECT_TRUE(dev_.run({isa::irq(), isa::halt()}).ok());
  // The device-wide limit applies when none is given.
  dev_.set_timeout(300);
  EXPECT_THROW(dev_.run(tpu_test::long_program()), tpu::TimeoutError);
  dev_.set_timeout(0);
  EXPECT_EQ(dev_.timeout(), tpu::Device::kDefaultTimeoutCycles);
  EXPECT_TRUE(dev_.run({isa::irq(), isa::halt()}).ok());
}

TEST(DeviceLifetime, BuffersMayOutliveAMovedDevice) {
  tpu::Buffer keep;
  {
    tpu::Device a = tpu::Device::open(tpu_test::uri("tiny"));
    tpu::Device b = std::move(a);
    keep = b.alloc(16);
    keep.write(std::vector<uint8_t>(16, 5));
    EXPECT_TRUE(b.run({isa::halt()}).ok());
  }
  EXPECT_EQ(keep.read(0, 16), std::vector<uint8_t>(16, 5));
}

}  // namespace
