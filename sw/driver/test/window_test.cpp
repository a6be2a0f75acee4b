// SPDX-License-Identifier: Apache-2.0
// DMA windows on the transport under test (docs/host_interface.md, "DMA
// windows"; docs/driver.md): a program reaches only the host memory its
// command grants. Every escape attempt ends in MEM_FAULT at the right
// instruction with nothing moved, the bytes it aimed at are unchanged, and
// the next command runs exactly. The driver refuses windows that would give
// a program its rings or another command's program.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tpu/device.h"
#include "tpu/queue.h"
#include "tpu_regs.h"
#include "transport_under_test.h"

namespace {

namespace isa = tpu::isa;
using tpu::Window;

#define REG(name) uint32_t(offsetof(tpu_regs_t, name))

constexpr uint8_t kR = tpu::kWindowRead, kW = tpu::kWindowWrite;

std::vector<uint8_t> pattern(size_t len, int seed) {
  std::vector<uint8_t> v(len);
  for (size_t i = 0; i < len; ++i) v[i] = uint8_t(seed + 37 * i + (i >> 3));
  return v;
}

class WindowTest : public ::testing::Test {
 protected:
  WindowTest() : dev_(tpu::Device::open(tpu_test::uri("tiny", "latency=100"))), n_(dev_.info().n) {}

  tpu::Transport& t() { return dev_.transport(); }
  uint64_t reg64(uint32_t lo) { return t().mmio_read(lo) | uint64_t(t().mmio_read(lo + 4)) << 32; }
  uint64_t sq_base() { return reg64(REG(SQ_BASE_LO)); }
  uint64_t cq_base() { return reg64(REG(CQ_BASE_LO)); }
  std::vector<uint8_t> peek(uint64_t addr, size_t len) {
    std::vector<uint8_t> v(len);
    t().dma_read(addr, v);
    return v;
  }
  // The program address of the command in submission-ring slot `slot`.
  uint64_t program_addr(uint32_t slot) {
    return tpu::decode_sq(peek(sq_base() + uint64_t(slot) * tpu::kSqEntryBytes, tpu::kSqEntryBytes).data())
        .addr;
  }

  // Runs a program that must end in MEM_FAULT outside its windows at pc,
  // for a read or write whose span starts at addr.
  void expect_window_fault(const std::vector<isa::Instr>& program, std::span<const Window> windows,
                           uint32_t pc, bool write, uint64_t addr) {
    try {
      dev_.run(program, windows);
      ADD_FAILURE() << "the program completed OK";
    } catch (const tpu::DeviceError& e) {
      EXPECT_EQ(e.status(), uint16_t(isa::ErrCode::kMemFault)) << e.what();
      EXPECT_EQ(e.err_pc(), pc) << e.what();
      EXPECT_TRUE(e.fault().outside_windows) << e.what();
      EXPECT_EQ(e.fault().write, write) << e.what();
      EXPECT_EQ(e.fault().addr, addr) << e.what();
      EXPECT_NE(std::string(e.what()).find("outside the command's DMA windows"), std::string::npos)
          << e.what();
    }
  }
  void expect_window_fault(const std::vector<isa::Instr>& program, std::initializer_list<Window> windows,
                           uint32_t pc, bool write, uint64_t addr) {
    expect_window_fault(program, std::span<const Window>(windows.begin(), windows.size()), pc, write, addr);
  }

  // UB rows [0, rows) get `fill`, through a buffer of their own.
  void fill_ub(int rows, uint8_t fill) {
    tpu::Buffer b = dev_.alloc(size_t(rows * n_));
    b.write(std::vector<uint8_t>(size_t(rows * n_), fill));
    ASSERT_TRUE(dev_.run({isa::rhm(0, uint32_t(rows), b.addr(), uint32_t(n_)), isa::halt()}, {b.read_only()}).ok());
  }
  // UB rows [0, rows), read back through a buffer of their own.
  std::vector<uint8_t> ub(int rows) {
    tpu::Buffer b = dev_.alloc(size_t(rows * n_));
    EXPECT_TRUE(dev_.run({isa::whm(0, uint32_t(rows), b.addr(), uint32_t(n_)), isa::halt()}, {b.write_only()}).ok());
    return b.read(0, size_t(rows * n_));
  }

  // After a fault: the driver and the device take the next command and it is exact.
  void expect_device_works() {
    const size_t bytes = size_t(8 * n_);
    tpu::Buffer in = dev_.alloc(bytes), out = dev_.alloc(bytes);
    const std::vector<uint8_t> data = pattern(bytes, 91);
    in.write(data);
    out.write(std::vector<uint8_t>(bytes, 0));
    const tpu::Completion c = dev_.run({isa::rhm(3, 8, in.addr(), uint32_t(n_)),
                                        isa::whm(3, 8, out.addr(), uint32_t(n_)), isa::halt()},
                                       {in.read_only(), out.write_only()});
    EXPECT_TRUE(c.ok());
    EXPECT_EQ(out.read(0, bytes), data);
  }

  std::string refusal(const std::function<void()>& f) {
    try {
      f();
    } catch (const tpu::DeviceError& e) {
      ADD_FAILURE() << "the device ran it: " << e.what();
      return "";
    } catch (const tpu::Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "not refused";
    return "";
  }

  tpu::Device dev_;
  const int n_;
};

TEST_F(WindowTest, ReadingTheRingsFaults) {
  tpu::Buffer in = dev_.alloc(64);
  for (const uint64_t ring : {sq_base(), cq_base()}) {
    SCOPED_TRACE(ring == sq_base() ? "submission ring" : "completion ring");
    fill_ub(2, 0x5A);
    expect_window_fault({isa::irq(), isa::rhm(0, 2, ring, uint32_t(n_)), isa::halt()}, {in.read_only()}, 1,
                        false, ring);
    EXPECT_EQ(ub(2), std::vector<uint8_t>(size_t(2 * n_), 0x5A)) << "the rows moved";
    // An RW reads too.
    expect_window_fault({isa::rw(ring, 1, uint32_t(n_)), isa::halt()}, {in.read_only()}, 0, false, ring);
    expect_device_works();
  }
}

TEST_F(WindowTest, WritingTheRingsFaultsAndLeavesThemUnchanged) {
  tpu::Buffer out = dev_.alloc(64);
  fill_ub(4, 0xEE);
  // The rings' last slots: free while this runs, so only the program could change them.
  const uint64_t sq_last = sq_base() + 63 * tpu::kSqEntryBytes, cq_last = cq_base() + 63 * tpu::kCqEntryBytes;
  const std::vector<uint8_t> sq_before = peek(sq_last, tpu::kSqEntryBytes),
                             cq_before = peek(cq_last, tpu::kCqEntryBytes);
  expect_window_fault({isa::whm(0, 2, sq_last, uint32_t(n_)), isa::halt()}, {out.write_only()}, 0, true, sq_last);
  expect_window_fault({isa::irq(), isa::irq(), isa::whm(0, 1, cq_last, uint32_t(n_)), isa::halt()},
                      {out.write_only()}, 2, true, cq_last);
  EXPECT_EQ(peek(sq_last, tpu::kSqEntryBytes), sq_before);
  EXPECT_EQ(peek(cq_last, tpu::kCqEntryBytes), cq_before);
  expect_device_works();
}

TEST_F(WindowTest, WritingAnotherCommandsBufferFaults) {
  // `theirs` belongs to another command (granted to it, not to this one).
  tpu::Buffer mine = dev_.alloc(64), theirs = dev_.alloc(64);
  const std::vector<uint8_t> secret = pattern(64, 7);
  theirs.write(secret);
  ASSERT_TRUE(dev_.run({isa::rhm(0, 4, theirs.addr(), uint32_t(n_)), isa::halt()}, {theirs.read_only()}).ok());
  fill_ub(4, 0xC3);
  expect_window_fault({isa::whm(0, 4, mine.addr(), uint32_t(n_)), isa::whm(0, 4, theirs.addr(), uint32_t(n_)),
                       isa::halt()},
                      {mine.write_only()}, 1, true, theirs.addr());
  EXPECT_EQ(theirs.read(0, 64), secret);
  EXPECT_EQ(mine.read(0, size_t(4 * n_)), std::vector<uint8_t>(size_t(4 * n_), 0xC3)) << "the first WHM ran";
  // Reading it is refused as well.
  expect_window_fault({isa::rhm(0, 1, theirs.addr(), uint32_t(n_)), isa::halt()}, {mine.read_write()}, 0, false,
                      theirs.addr());
  expect_device_works();
}

TEST_F(WindowTest, NoProgramReachesTheProgramsOfQueuedCommands) {
  // Two probes show where command programs live: consecutive slots of the
  // driver's command memory.
  const tpu::Command a = dev_.submit({isa::halt()}), b = dev_.submit({isa::halt()});
  const uint64_t slot0 = std::min(program_addr(0), program_addr(1)),
                 slot_bytes = std::max(program_addr(0), program_addr(1)) - slot0;
  dev_.wait(a);
  dev_.wait(b);
  ASSERT_GT(slot_bytes, 0u);

  // The attacker writes the first row of each of 8 slots; the victim is
  // queued behind it, so its program sits in one of them meanwhile.
  tpu::Buffer out = dev_.alloc(64), in = dev_.alloc(64), victim_out = dev_.alloc(64);
  const std::vector<uint8_t> data = pattern(64, 3);
  in.write(data);
  fill_ub(8, 0xFF);
  const tpu::Command attacker =
      dev_.submit({isa::whm(0, 8, slot0, uint32_t(slot_bytes)), isa::halt()}, {out.write_only()});
  const uint32_t rows = uint32_t(64 / n_);
  const tpu::Command victim = dev_.submit({isa::rhm(0, rows, in.addr(), uint32_t(n_)),
                                           isa::whm(0, rows, victim_out.addr(), uint32_t(n_)), isa::halt()},
                                          {in.read_only(), victim_out.write_only()});
  const std::vector<uint8_t> before = peek(slot0, size_t(8 * slot_bytes));
  const tpu::Completion c = dev_.wait(attacker);
  EXPECT_EQ(c.status, uint16_t(isa::ErrCode::kMemFault));
  EXPECT_EQ(c.err_pc, 0u);
  EXPECT_EQ(peek(slot0, size_t(8 * slot_bytes)), before) << "command memory changed";
  EXPECT_TRUE(dev_.wait(victim).ok());
  EXPECT_EQ(victim_out.read(0, 64), data);
  expect_device_works();
}

TEST_F(WindowTest, MemoryNoBufferHoldsFaults) {
  tpu::Buffer buf = dev_.alloc(64);
  // Far past anything allocated, inside the device-visible region, and below it.
  const uint64_t never = t().dma_base() + (t().dma_size() / 2);
  const uint64_t low = t().dma_base() > 0x10000 ? 0x10000 : t().dma_base() + t().dma_size() + 0x10000;
  for (const uint64_t addr : {never, low}) {
    const std::vector<uint8_t> before = peek(addr, 64);
    fill_ub(4, 0x77);
    expect_window_fault({isa::rhm(0, 4, addr, uint32_t(n_)), isa::halt()}, {buf.read_write()}, 0, false, addr);
    expect_window_fault({isa::whm(0, 4, addr, uint32_t(n_)), isa::halt()}, {buf.read_write()}, 0, true, addr);
    EXPECT_EQ(peek(addr, 64), before);
    EXPECT_EQ(ub(4), std::vector<uint8_t>(size_t(4 * n_), 0x77));
  }
  expect_device_works();
}

TEST_F(WindowTest, DirectionsAreGrantedSeparately) {
  tpu::Buffer in = dev_.alloc(64), out = dev_.alloc(64);
  in.write(pattern(64, 1));
  out.write(pattern(64, 2));
  fill_ub(4, 0x21);
  // Reading a write-only window (RHM and RW).
  expect_window_fault({isa::rhm(0, 4, out.addr(), uint32_t(n_)), isa::halt()}, {in.read_only(), out.write_only()},
                      0, false, out.addr());
  expect_window_fault({isa::rw(out.addr(), 1, uint32_t(n_)), isa::halt()}, {out.write_only()}, 0, false, out.addr());
  EXPECT_EQ(ub(4), std::vector<uint8_t>(size_t(4 * n_), 0x21));
  // Writing a read-only window.
  expect_window_fault({isa::rhm(0, 4, in.addr(), uint32_t(n_)), isa::whm(0, 4, in.addr(), uint32_t(n_)),
                       isa::halt()},
                      {in.read_only(), out.write_only()}, 1, true, in.addr());
  EXPECT_EQ(in.read(0, 64), pattern(64, 1));
  EXPECT_EQ(out.read(0, 64), pattern(64, 2));
  // A read-write window takes both.
  EXPECT_TRUE(dev_.run({isa::rhm(0, 4, in.addr(), uint32_t(n_)), isa::whm(0, 4, in.addr() + 4 * n_, uint32_t(n_)),
                        isa::halt()},
                       {in.read_write()})
                  .ok());
  expect_device_works();
}

TEST_F(WindowTest, ASpanOneBytePastTheWindowFaults) {
  tpu::Buffer buf = dev_.alloc(256);
  buf.write(pattern(256, 5));
  const Window first64 = buf.window(0, 64, tpu::kWindowReadWrite);
  fill_ub(16, 0x3C);
  // 16 rows from byte 1: the last ends on byte 64, one past the window.
  expect_window_fault({isa::rhm(0, uint32_t(64 / n_), buf.addr() + 1, uint32_t(n_)), isa::halt()}, {first64}, 0,
                      false, buf.addr() + 1);
  EXPECT_EQ(ub(16), std::vector<uint8_t>(size_t(16 * n_), 0x3C));
  // The same for a write: not even the rows inside the window are written.
  expect_window_fault({isa::whm(0, uint32_t(64 / n_), buf.addr() + 1, uint32_t(n_)), isa::halt()}, {first64}, 0,
                      true, buf.addr() + 1);
  // A stride that puts the last row's end one byte out.
  expect_window_fault({isa::whm(0, 2, buf.addr(), uint32_t(64 - n_ + 1)), isa::halt()}, {first64}, 0, true,
                      buf.addr());
  EXPECT_EQ(buf.read(0, 256), pattern(256, 5));
  // Exactly the window is fine.
  EXPECT_TRUE(dev_.run({isa::rhm(0, uint32_t(64 / n_), buf.addr(), uint32_t(n_)),
                        isa::whm(0, 2, buf.addr(), uint32_t(64 - n_)), isa::halt()},
                       {first64})
                  .ok());
  expect_device_works();
}

TEST_F(WindowTest, LoopOffsetsWalkingOutOfTheWindowFault) {
  tpu::Buffer in = dev_.alloc(256), out = dev_.alloc(256);
  in.write(pattern(256, 9));
  out.write(std::vector<uint8_t>(256, 0));
  // Each iteration reads 2 rows, 2 rows further on; the window holds 3 iterations.
  const uint32_t step = uint32_t(2 * n_);
  const Window in3 = in.window(0, 3 * step, kR), out3 = out.window(0, 3 * step, kW);
  fill_ub(8, 0x44);
  expect_window_fault({isa::loop(4, 1, 2, 0, step), isa::rhm(0, 2, in.addr(), uint32_t(n_)), isa::halt()}, {in3},
                      1, false, in.addr() + 3 * step);
  // The first three iterations ran; the fourth moved nothing.
  std::vector<uint8_t> want = pattern(size_t(3 * step), 9);
  want.resize(size_t(8 * n_), 0x44);
  EXPECT_EQ(ub(8), want);
  // Writing: the iterations inside the window wrote, the bytes past it did not change.
  expect_window_fault({isa::loop(4, 1, 2, 0, step), isa::whm(0, 2, out.addr(), uint32_t(n_)), isa::halt()}, {out3},
                      1, true, out.addr() + 3 * step);
  EXPECT_EQ(out.read(0, 3 * step), std::vector<uint8_t>(want.begin(), want.begin() + 3 * step));
  EXPECT_EQ(out.read(3 * step, 256 - 3 * step), std::vector<uint8_t>(256 - 3 * step, 0));
  expect_device_works();
}

TEST_F(WindowTest, ACommandWithNoWindowsReachesNoHostMemory) {
  tpu::Buffer buf = dev_.alloc(64);
  buf.write(pattern(64, 4));
  expect_window_fault({isa::irq(), isa::rhm(0, 1, buf.addr(), uint32_t(n_)), isa::halt()}, {}, 1, false, buf.addr());
  try {
    dev_.run({isa::whm(0, 1, buf.addr(), uint32_t(n_)), isa::halt()});
    ADD_FAILURE() << "the program completed OK";
  } catch (const tpu::DeviceError& e) {
    EXPECT_EQ(e.status(), uint16_t(isa::ErrCode::kMemFault));
    EXPECT_TRUE(e.fault().outside_windows);
    EXPECT_TRUE(e.fault().write);
  }
  EXPECT_EQ(buf.read(0, 64), pattern(64, 4));
  // A program that stays in the core needs none.
  EXPECT_TRUE(dev_.run({isa::irq(), isa::vop(isa::VopOp::kAdd, 0, 1, 2, 1), isa::halt()}).ok());
  expect_device_works();
}

TEST_F(WindowTest, TheMessageNamesTheAddressTheDirectionAndTheWindows) {
  tpu::Buffer in = dev_.alloc(64);
  try {
    dev_.run({isa::irq(), isa::rhm(0, 1, in.addr() + 64, uint32_t(n_)), isa::halt()}, {in.read_only()});
    FAIL() << "no error";
  } catch (const tpu::DeviceError& e) {
    char addr[32];
    std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(in.addr() + 64));
    EXPECT_EQ(std::string(e.what()),
              "the program failed at instruction 1: " + tpu::status_text(8) + "; its read from host memory at " +
                  addr +
                  " is outside the command's DMA windows (no window grants reading all of the instruction's "
                  "rows); grant the buffers the program uses, inputs read-only and outputs write-only "
                  "(dev.run(program, {in.read_only(), out.write_only()})), or fix its addresses; see "
                  "docs/driver.md, \"DMA windows\"");
  }
  expect_device_works();
}

TEST_F(WindowTest, TheDriverRefusesWindowsItMustNotGrant) {
  tpu::Buffer buf = dev_.alloc(64);
  const std::vector<isa::Instr> halt = {isa::halt()};
  const std::vector<Window> nine(9, buf.read_only());
  EXPECT_EQ(refusal([&] { dev_.submit(halt, nine); }),
            "submit: 9 DMA windows; a command takes at most 8. Grant whole buffers, or split the work into "
            "several commands");
  EXPECT_NO_THROW(dev_.wait(dev_.submit(halt, std::span(nine).first(8))));

  const auto contains = [](const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
  };
  const std::string empty = refusal([&] { dev_.run(halt, {Window{buf.addr(), 0, kR}}); });
  EXPECT_TRUE(contains(empty, "is empty; a window covers 1 .. 2^56 - 1 bytes")) << empty;
  const std::string none = refusal([&] { dev_.run(halt, {Window{buf.addr(), 64, 0}}); });
  EXPECT_TRUE(contains(none, "grants neither reading nor writing")) << none;
  const std::string wraps = refusal([&] { dev_.run(halt, {Window{UINT64_MAX - 15, 17, kR}}); });
  EXPECT_TRUE(contains(wraps, "runs past the end of the address space")) << wraps;

  // The rings, whole or one byte of them.
  const std::string sq = refusal([&] { dev_.run(halt, {Window{sq_base() + 100, 1, kR}}); });
  EXPECT_TRUE(contains(sq, "overlaps the driver's submission ring")) << sq;
  const std::string cq = refusal([&] { dev_.run(halt, {buf.read_only(), Window{cq_base() + 1000, 100, kW}}); });
  EXPECT_TRUE(contains(cq, "DMA window 1 ")) << cq;
  EXPECT_TRUE(contains(cq, "overlaps the driver's completion ring")) << cq;
  // Another queued command's program.
  const tpu::Command queued = dev_.submit(halt);
  const uint64_t prog = program_addr(1);
  const std::string other = refusal([&] { dev_.run(halt, {Window{prog, 16, kR}}); });
  EXPECT_TRUE(contains(other, "overlaps the driver's command memory")) << other;
  EXPECT_TRUE(dev_.wait(queued).ok());
  // Memory no buffer holds: freed, or never allocated.
  Window stale;
  {
    tpu::Buffer gone = dev_.alloc(64);
    stale = gone.read_only();
  }
  const std::string freed = refusal([&] { dev_.run(halt, {stale}); });
  EXPECT_TRUE(contains(freed, "device-visible memory that no buffer holds")) << freed;
  const std::string never =
      refusal([&] { dev_.run(halt, {Window{t().dma_base() + t().dma_size() / 2, 64, kR}}); });
  EXPECT_TRUE(contains(never, "device-visible memory that no buffer holds")) << never;
  // Buffer windows stay inside the buffer.
  EXPECT_EQ(refusal([&] { (void)buf.window(60, 8, kR); }),
            "buffer window of 8 bytes at offset 60 does not fit the 64-byte buffer");
  EXPECT_EQ(refusal([&] { (void)buf.window(0, 0, kR); }),
            "buffer window of 0 bytes at offset 0 does not fit the 64-byte buffer; a window covers at least one "
            "byte");
  // Nothing refused was queued: the next commands run in order and exactly.
  expect_device_works();
  expect_device_works();
}

// The device checks the window list itself (BAD_COMMAND), whatever the
// driver wrote: a transport that rewrites submission entries and window
// lists on their way to host memory stands in for a broken driver.
class RewritingTransport final : public tpu::Transport {
 public:
  explicit RewritingTransport(std::unique_ptr<tpu::Transport> inner) : inner_(std::move(inner)) {}
  // Called with every host-memory write of the driver; may change the bytes.
  std::function<void(uint64_t addr, std::vector<uint8_t>& data)> rewrite;

  std::string name() const override { return inner_->name(); }
  uint32_t mmio_read(uint32_t offset) override { return inner_->mmio_read(offset); }
  void mmio_write(uint32_t offset, uint32_t value) override { inner_->mmio_write(offset, value); }
  uint64_t dma_base() const override { return inner_->dma_base(); }
  uint64_t dma_size() const override { return inner_->dma_size(); }
  void dma_write(uint64_t addr, std::span<const uint8_t> data) override {
    std::vector<uint8_t> bytes(data.begin(), data.end());
    if (rewrite) rewrite(addr, bytes);
    inner_->dma_write(addr, bytes);
  }
  void dma_read(uint64_t addr, std::span<uint8_t> out) override { inner_->dma_read(addr, out); }
  uint64_t wait_interrupt(uint64_t max_cycles) override { return inner_->wait_interrupt(max_cycles); }
  uint64_t cycles() const override { return inner_->cycles(); }

 private:
  std::unique_ptr<tpu::Transport> inner_;
};

TEST(WindowListTest, MalformedWindowFieldsAreBadCommands) {
  auto owned = std::make_unique<RewritingTransport>(tpu::open_transport(tpu_test::uri("tiny", "latency=100")));
  RewritingTransport& t = *owned;
  tpu::Device dev(std::move(owned));
  const uint64_t sq = t.mmio_read(REG(SQ_BASE_LO)) | uint64_t(t.mmio_read(REG(SQ_BASE_HI))) << 32;
  tpu::Buffer buf = dev.alloc(64);
  const std::vector<isa::Instr> program = {isa::halt()};  // 16 bytes: the list follows at +16

  struct Case {
    const char* what;
    std::function<void(std::vector<uint8_t>& entry)> entry;  // changes the submission entry
    std::function<void(std::vector<uint8_t>& list)> list;    // changes the window list
  };
  const auto set_le = [](std::vector<uint8_t>& b, size_t at, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) b[at + size_t(i)] = uint8_t(v >> (8 * i));
  };
  const Case cases[] = {
      {"a count over 8", [](std::vector<uint8_t>& e) { e[24] = 9; }, nullptr},
      {"a list address not 16-byte aligned", [](std::vector<uint8_t>& e) { e[16] += 8; }, nullptr},
      {"a reserved entry byte", [](std::vector<uint8_t>& e) { e[25] = 1; }, nullptr},
      {"access 0", nullptr, [](std::vector<uint8_t>& l) { l[15] = 0; }},
      {"a reserved access bit", nullptr, [](std::vector<uint8_t>& l) { l[15] = 0x05; }},
      {"length 0", nullptr, [&](std::vector<uint8_t>& l) { set_le(l, 8, 0, 7); }},
      {"a window past 2^64 - 1", nullptr, [&](std::vector<uint8_t>& l) { set_le(l, 0, UINT64_MAX - 7, 8); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    t.rewrite = [&](uint64_t addr, std::vector<uint8_t>& data) {
      const bool in_sq = addr >= sq && addr < sq + 64 * tpu::kSqEntryBytes;
      if (c.entry && in_sq && data.size() == tpu::kSqEntryBytes) c.entry(data);
      if (c.list && !in_sq && data.size() == 16 + tpu::kWindowBytes) {  // the program and its list
        std::vector<uint8_t> list(data.begin() + 16, data.end());
        c.list(list);
        std::copy(list.begin(), list.end(), data.begin() + 16);
      }
    };
    const tpu::Command cmd = dev.submit(program, {buf.read_only()});
    t.rewrite = nullptr;
    EXPECT_EQ(dev.wait(cmd).status, tpu::kStatusBadCommand);
    EXPECT_TRUE(dev.run(program, {buf.read_only()}).ok());
  }
  // A count of 0 ignores the list address.
  t.rewrite = [&](uint64_t addr, std::vector<uint8_t>& data) {
    if (data.size() == tpu::kSqEntryBytes && addr >= sq && addr < sq + 64 * tpu::kSqEntryBytes)
      set_le(data, 16, 0x1234'5678'9abc'def8, 8);
  };
  const tpu::Command cmd = dev.submit(program);
  t.rewrite = nullptr;
  EXPECT_TRUE(dev.wait(cmd).ok());
}

}  // namespace
