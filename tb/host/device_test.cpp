// SPDX-License-Identifier: Apache-2.0
// Device tests: programs submitted through the rings run end to end (program
// fetch, RHM/WHM/RW by DMA, completion entry, MSI) and are compared with the
// reference model; the host-interface negative checklist; a seeded fuzz run.
#include <cstdio>
#include <functional>

#include "device_harness.h"
#include "memory_peek.h"
#include "plan_testing.h"
#include "program_generator.h"
#include "tb_config.h"  // the configuration: tb::TopModel, tb::kConfig
#include "tpu/plan/gemm.h"
#include "tpu/plan/pack.h"
#include "tpu/ref_matmul.h"
#include "verilated_fixture.h"

namespace {

namespace top_peek {
TB_DEFINE_MEMORY_PEEK(tpu_top__DOT__u_core__DOT__)
}  // namespace top_peek

namespace isa = tpu::isa;
using isa::ErrCode;
using tpu::MatrixI8;
using tpu::host::FaultKind;
using tpu::host::FaultRule;
using tpu::host::RootComplexConfig;

constexpr uint64_t kSq = 0x4000'0000, kCq = 0x4100'0000, kProg = 0x4200'0000;
constexpr uint64_t kMsiAddr = 0xFEE0'0000;
constexpr uint32_t kMsiData = 0x4321;

// The device under test: its model and sizes, from the configuration table.
struct TopCfg {
  using Model = tb::TopModel;
  static constexpr int N = tb::kConfig.array_n, UbRows = tb::kConfig.ub_rows,
                       AccRows = tb::kConfig.acc_rows, Imem = tb::kConfig.imem_depth,
                       WgtFifoTiles = tb::kConfig.wgt_fifo_tiles;
  static constexpr tpu::Datapath Datapath = tb::kConfig.datapath;
};

template <class Cfg>
class DeviceFixture : public tb::VerilatedFixture<typename Cfg::Model> {
 protected:
  static constexpr int N = Cfg::N;

  void start(const RootComplexConfig& rc_cfg = {}, bool msi = false) {
    tpu::host::LinkCfg link;
    link.msi_en = msi;
    link.msi_addr = kMsiAddr;
    link.msi_data = kMsiData;
    dev_ = std::make_unique<tb::Device<typename Cfg::Model>>(this->sim(), rc_cfg, link);
    dev_->setup_rings(kSq, 3, kCq, 3);
  }

  static tpu::CoreConfig config() { return core_tb::model_config<Cfg>(); }

  // Runs one program through the rings and returns its completion; the
  // command is granted `windows` (by default the low 2^56 - 1 bytes).
  tb::CqEntry run(const std::vector<isa::Instr>& prog, uint16_t id = 1, uint64_t max_cycles = 2'000'000,
                  const std::vector<tpu::Window>& windows = tb::Device<typename Cfg::Model>::all_windows()) {
    dev_->submit(id, prog, kProg, true, windows);
    const auto cpl = dev_->wait_completion(max_cycles);
    if (!cpl) {
      ADD_FAILURE() << "no completion for command " << id << std::hex << ": STATUS 0x"
                    << reg(TPU_REG(STATUS)) << ", ERR_CAUSE 0x" << reg(TPU_REG(ERR_CAUSE))
                    << ", SQ_HEAD " << reg(TPU_REG(SQ_HEAD)) << ", CQ_TAIL " << reg(TPU_REG(CQ_TAIL))
                    << ", DMA reads " << std::dec << dev_->rc().reads().size();
      return {};
    }
    EXPECT_EQ(cpl->id, id);
    return *cpl;
  }

  uint32_t reg(uint32_t offset) { return dev_->mmio_read(offset); }

  // Requests a soft reset and waits until STATUS.reset_busy clears; false
  // when it never does.
  bool soft_reset() {
    dev_->mmio_write(TPU_REG(CTRL), TPU_REGS__CTRL__SOFT_RESET_bm);
    dev_->run(2);  // the request reaches STATUS
    for (int waited = 0; reg(TPU_REG(STATUS)) & TPU_REGS__STATUS__RESET_BUSY_bm; ++waited)
      if (waited >= 5000) return false;
    return true;
  }

  // The root complex's own random source, derived from the test's seed.
  uint64_t seed_for_rc() { return uint64_t(this->rand_int(1, 1 << 30)); }

  // start() with reordered, split and late completions, and backpressure on
  // all four streams.
  void start_on_a_rough_link() {
    RootComplexConfig cfg;
    cfg.latency = 40;
    cfg.jitter = 60;
    cfg.reorder = true;
    cfg.split = tpu::host::SplitMode::kRandom;
    cfg.rq_ready_prob = 0.7;
    cfg.rc_gap_prob = 0.3;
    cfg.seed = seed_for_rc();
    start(cfg);
    dev_->set_cc_stall(0.5);
  }

  std::vector<int8_t> ub_row(int r) { return top_peek::peek_ub_row(this->dut().rootp, N, tb::kConfig.ub_rows, r); }

  // A small GEMM through the rings; true when it equals the reference.
  void check_gemm(int m, int k, int n_out, uint16_t id) {
    auto& mem = dev_->mem();
    MatrixI8 a(m, k), w(k, n_out);
    for (auto& v : a.data) v = int8_t(this->rand_int(-128, 127));
    for (auto& v : w.data) v = int8_t(this->rand_int(-128, 127));
    tpu::test::write_matrix(mem, 0x100000, a);
    tpu::test::write_matrix(mem, 0x140000, w);
    const auto gemm = tpu::test::build_gemm(mem, {m, k, n_out}, {0x100000, 0x140000, 0x200000, 0x300000}, config());
    for (const std::vector<isa::Instr>& program : gemm.programs) {
      const tb::CqEntry cpl = run(program, id++);
      EXPECT_EQ(cpl.status, 0) << "GEMM ended with " << cpl.status << " at " << cpl.err_pc;
    }
    EXPECT_EQ(tpu::test::read_gemm_result(mem, gemm), tpu::ref::matmul_i8(a, w))
        << "GEMM " << m << "x" << k << "x" << n_out << " through the rings differs";
  }

  // Random valid programs through the rings, each compared with the model.
  void random_programs(int count, uint64_t out_len = 0x4000) {
    tpu::model::TpuModel model(config());
    model.set_windows(tb::Device<typename Cfg::Model>::all_windows());  // what run() grants
    std::vector<uint8_t> bytes(0x4000);
    for (auto& b : bytes) b = uint8_t(this->rand_int(0, 255));
    dev_->mem().write(core_tb::kGenInput, bytes);
    for (int p = 0; p < count; ++p) {
      const std::vector<isa::Instr> prog =
          core_tb::valid_program<N, Cfg::UbRows, Cfg::AccRows>(*this, model, dev_->mem(), 5, 30);
      ASSERT_FALSE(prog.empty()) << "the generator keeps making invalid programs";
      tpu::HostMemory model_mem = dev_->mem();
      model.load_program(0, prog);
      const auto expect = model.run(0, model_mem);
      const tb::CqEntry cpl = run(prog, uint16_t(p + 1));
      ASSERT_EQ(cpl.status, uint16_t(expect.err)) << "program " << p << "\n" << isa::disassemble(prog);
      for (int r = 0; r < Cfg::UbRows; ++r)
        ASSERT_EQ(ub_row(r), model.ub_row(uint32_t(r))) << "program " << p << ": UB row " << r << "\n"
                                                        << isa::disassemble(prog);
      ASSERT_EQ(dev_->mem().read(core_tb::kGenOutput, out_len), model_mem.read(core_tb::kGenOutput, out_len))
          << "program " << p << ": host output memory\n" << isa::disassemble(prog);
      ASSERT_EQ(reg(TPU_REG(COMMANDS_DONE)), uint32_t(p + 1));
    }
    EXPECT_TRUE(dev_->rc().protocol_errors().empty()) << dev_->rc().protocol_errors().front();
  }

  // ---- streams of commands (fetched ahead) ----

  // Submits the commands in order, each program at its own host slot, with
  // at most `depth` queued in the 8-entry rings, and returns their
  // completions (in order, ids id0, id0 + 1, ...). before_submit(i), when
  // given, runs just before command i is submitted (to plant a fault or a
  // malformed entry: it returns true when it submitted the entry itself).
  std::vector<tb::CqEntry> run_stream(const std::vector<std::vector<isa::Instr>>& progs,
                                      const std::vector<std::vector<tpu::Window>>& windows, uint16_t id0,
                                      size_t depth = 7, uint64_t max_cycles = 2'000'000,
                                      const std::function<bool(size_t)>& before_submit = {}) {
    std::vector<tb::CqEntry> out;
    size_t next = 0;
    while (out.size() < progs.size()) {
      while (next < progs.size() && next - out.size() < depth) {
        if (!before_submit || !before_submit(next))
          dev_->submit(uint16_t(id0 + next), progs[next], prog_slot(next), true, windows[next]);
        ++next;
      }
      const auto cpl = dev_->wait_completion(max_cycles);
      if (!cpl) {
        ADD_FAILURE() << "no completion for command " << id0 + out.size() << std::hex << ": STATUS 0x"
                      << reg(TPU_REG(STATUS)) << ", ERR_CAUSE 0x" << reg(TPU_REG(ERR_CAUSE));
        break;
      }
      EXPECT_EQ(cpl->id, uint16_t(id0 + out.size())) << "completions out of submission order";
      out.push_back(*cpl);
    }
    return out;
  }

  // The host address of command i's program in run_stream (8 slots in turn:
  // a slot is reused only after its previous command completed).
  static uint64_t prog_slot(size_t i) { return kProg + (i % 8) * 0x10000; }

  // A program of `len` instructions that copies 4 rows of random bytes from
  // kCopyIn to kCopyOut first and to kCopyOut2 last, SYNCs in between
  // (after `middle`); the bytes are written at kCopyIn.
  static constexpr uint64_t kCopyIn = 0x90000, kCopyOut = 0xA0000, kCopyOut2 = 0xB0000;
  struct LongCopy {
    std::vector<isa::Instr> prog;
    std::vector<uint8_t> bytes;
  };
  LongCopy long_copy(int len, const std::vector<isa::Instr>& middle = {}) {
    LongCopy c{{isa::rhm(0, 4, kCopyIn, N), isa::whm(0, 4, kCopyOut, N)}, std::vector<uint8_t>(4 * N)};
    for (auto& b : c.bytes) b = uint8_t(this->rand_int(0, 255));
    dev_->mem().write(kCopyIn, c.bytes);
    c.prog.insert(c.prog.end(), middle.begin(), middle.end());
    while (int(c.prog.size()) < len - 2) c.prog.push_back(isa::sync(0));
    c.prog.push_back(isa::whm(0, 4, kCopyOut2, N));
    c.prog.push_back(isa::halt());
    return c;
  }

  // A GEMM of its own: inputs, packed images and output at base.
  struct StreamGemm {
    MatrixI8 a, w;
    tpu::test::GemmProgram gemm;
    std::vector<tpu::Window> windows;  // exactly its buffers
  };
  StreamGemm make_gemm(uint64_t base, int m, int k, int n_out) {
    StreamGemm g{MatrixI8(m, k), MatrixI8(k, n_out), {}, {}};
    for (auto& v : g.a.data) v = int8_t(this->rand_int(-128, 127));
    for (auto& v : g.w.data) v = int8_t(this->rand_int(-128, 127));
    tpu::test::write_matrix(dev_->mem(), base, g.a);
    tpu::test::write_matrix(dev_->mem(), base + 0x40000, g.w);
    g.gemm = tpu::test::build_gemm(dev_->mem(), {m, k, n_out}, {base, base + 0x40000, base + 0x80000, base + 0xC0000},
                                   config());
    g.windows = {tpu::Window{base + 0xC0000, 0x40000, tpu::kWindowRead},
                 tpu::Window{base + 0x80000, 0x40000, tpu::kWindowWrite}};
    return g;
  }
  bool gemm_exact(const StreamGemm& g) {
    return tpu::test::read_gemm_result(dev_->mem(), g.gemm) == tpu::ref::matmul_i8(g.a, g.w);
  }

  // The rq sequence numbers of the device's reads at [addr, addr + len).
  std::vector<uint64_t> read_seqs(uint64_t addr, uint64_t len) {
    std::vector<uint64_t> seqs;
    for (const auto& r : dev_->rc().reads())
      if (r.addr >= addr && r.addr < addr + len) seqs.push_back(r.seq);
    return seqs;
  }
  // ... and of its writes there.
  std::vector<uint64_t> write_seqs(uint64_t addr, uint64_t len) {
    std::vector<uint64_t> seqs;
    for (const auto& w : dev_->rc().writes())
      if (w.addr >= addr && w.addr < addr + len) seqs.push_back(w.seq);
    return seqs;
  }

  std::unique_ptr<tb::Device<typename Cfg::Model>> dev_;
};

using DeviceTest = DeviceFixture<TopCfg>;

// Instructions of a program the device fetches ahead into its buffer; one
// more is fetched after the command before it (docs/host_interface.md).
constexpr int kPrefetchProg = tb::kConfig.prefetch_depth - 8;

// A program of exactly `len` instructions (>= 3): an RHM of `rows` rows from
// `in`, SYNCs, a WHM of them to `out` as its second to last, HALT. Any
// instruction lost or stale on its way into instruction memory changes what
// it writes (or makes it fail).
std::vector<isa::Instr> copy_program(int len, uint32_t ub, uint32_t rows, uint64_t in, uint64_t out) {
  std::vector<isa::Instr> p{isa::rhm(ub, rows, in, uint32_t(TopCfg::N))};
  while (int(p.size()) < len - 2) p.push_back(isa::sync(0));
  p.push_back(isa::whm(ub, rows, out, uint32_t(TopCfg::N)));
  p.push_back(isa::halt());
  return p;
}

// A program that keeps the core busy for about `cycles` cycles (a LOOP of
// IRQs), then does `tail`.
std::vector<isa::Instr> busy_program(uint32_t cycles, std::vector<isa::Instr> tail = {}) {
  std::vector<isa::Instr> p{isa::loop(cycles, 1), isa::irq()};
  p.insert(p.end(), tail.begin(), tail.end());
  p.push_back(isa::halt());
  return p;
}

// ---------------------------------------------------------------------------
// Programs end to end
// ---------------------------------------------------------------------------

TEST_F(DeviceTest, RandomProgramsDefaultLink) {
  start();
  random_programs(12);
}

TEST_F(DeviceTest, RandomProgramsReorderedSplitCompletions) {
  start_on_a_rough_link();
  random_programs(30);
}

// Device::step() lets the root complex and the cc side read the device's
// outputs before the edge without evaluating the inputs it has just set (one
// evaluation per cycle). That is right only while every output they read is
// registered. Here each cycle also evaluates the new inputs and compares,
// with backpressure on all four streams, reordered split completions, and
// random programs that use every unit.
TEST_F(DeviceTest, OutputsReadBeforeTheEdgeAreRegistered) {
  start_on_a_rough_link();
  dev_->set_output_check(true);
  random_programs(10);
  EXPECT_GT(dev_->output_checked_cycles(), 3'000u);
  EXPECT_EQ(dev_->unregistered_output_cycles(), 0u);
}

TEST_F(DeviceTest, Gemm64x64x64ThroughRings) {
  start();
  check_gemm(64, 64, 64, 7);
  check_gemm(37, 50, 29, 8);
}

// ---------------------------------------------------------------------------
// Negative checklist: every case ends in a defined error and the next command works
// ---------------------------------------------------------------------------

TEST_F(DeviceTest, DmaFaultsDuringAProgram) {
  RootComplexConfig cfg;
  cfg.latency = 30;
  start(cfg);
  dev_->mmio_write(TPU_REG(INT_MASK), 0);
  const uint64_t src = 0x90000;
  struct Case { FaultKind kind; uint32_t err_bit; const char* name; };
  for (const Case c : {Case{FaultKind::kUr, TPU_REGS__ERR_CAUSE__DMA_UR_bm, "UR"},
                       Case{FaultKind::kCa, TPU_REGS__ERR_CAUSE__DMA_CA_bm, "CA"},
                       Case{FaultKind::kPoison, TPU_REGS__ERR_CAUSE__DMA_POISONED_bm, "poisoned"},
                       Case{FaultKind::kDrop, TPU_REGS__ERR_CAUSE__DMA_TIMEOUT_bm, "timeout"}}) {
    SCOPED_TRACE(c.name);
    // Known UB contents first, from another buffer.
    std::vector<uint8_t> fill(64 * N);
    for (auto& b : fill) b = uint8_t(rand_int(0, 255));
    dev_->mem().write(src + 0x1000, fill);
    ASSERT_EQ(run({isa::rhm(0, 64, src + 0x1000, N), isa::halt()}, 2).status, 0);
    std::vector<std::vector<int8_t>> before;
    for (int r = 0; r < 64; ++r) before.push_back(ub_row(r));
    // RHM of 64 rows = 64*N bytes read as one transfer; the fault hits its middle.
    dev_->rc().clear_faults();
    dev_->rc().add_fault(FaultRule{c.kind, src + 128, 16});
    dev_->mmio_write(TPU_REG(ERR_CAUSE), 0xffffffff);
    const tb::CqEntry cpl = run({isa::sync(0), isa::rhm(0, 64, src, N), isa::halt()}, 3, 200000);
    EXPECT_EQ(cpl.status, uint16_t(ErrCode::kMemFault));
    EXPECT_EQ(cpl.err_pc, 1u);
    EXPECT_TRUE(reg(TPU_REG(ERR_CAUSE)) & c.err_bit) << std::hex << reg(TPU_REG(ERR_CAUSE));
    const uint64_t err_addr = reg(TPU_REG(ERR_ADDR_LO)) | uint64_t(reg(TPU_REG(ERR_ADDR_HI))) << 32;
    EXPECT_LE(err_addr, src + 128) << "the faulting sub-request starts at or before the fault";
    EXPECT_GT(err_addr + 512, src + 128);
    if (c.kind == FaultKind::kPoison) {
      // The first completion is poisoned: nothing of the transfer may reach the UB.
      for (int r = 0; r < 64; ++r) EXPECT_EQ(ub_row(r), before[size_t(r)]) << "row " << r;
    }
    dev_->rc().clear_faults();
    check_gemm(9, 7, 6, 4);
  }
}

// ---------------------------------------------------------------------------
// DMA windows: a program reaches only the host memory its command grants
// ---------------------------------------------------------------------------

TEST_F(DeviceTest, WindowsConfineEveryTransfer) {
  RootComplexConfig cfg;
  cfg.latency = 20;
  start(cfg);
  auto& mem = dev_->mem();
  using tpu::Window;
  const uint32_t rows = 8;
  const uint64_t bytes = uint64_t(rows) * N;
  const uint64_t in = 0x100000, out = 0x200000, other = 0x300000;
  std::vector<uint8_t> data(bytes);
  for (auto& b : data) b = uint8_t(rand_int(0, 255));
  const std::vector<uint8_t> guard(2 * bytes, 0xA5), zero(2 * bytes, 0);
  const Window win_in{in, bytes, tpu::kWindowRead}, win_out{out, bytes, tpu::kWindowWrite};

  // Allowed: in -> UB -> out, exact. Run again after every fault.
  const auto copy_works = [&](uint16_t id) {
    mem.write(out, zero);
    const tb::CqEntry c = run({isa::rhm(0, rows, in, N), isa::whm(0, rows, out, N), isa::halt()}, id, 200000,
                              {win_in, win_out});
    EXPECT_EQ(c.status, 0) << "status " << c.status << " at " << c.err_pc;
    EXPECT_EQ(mem.read(out, bytes), data) << "the granted copy after a fault";
  };
  mem.write(in, data);
  copy_works(1);

  struct Case {
    const char* name;
    std::vector<isa::Instr> prog;
    std::vector<Window> windows;
    uint32_t err_pc;
    uint32_t cause;
    uint64_t err_addr;
  };
  const uint32_t rd = TPU_REGS__ERR_CAUSE__WINDOW_READ_bm, wr = TPU_REGS__ERR_CAUSE__WINDOW_WRITE_bm;
  const std::vector<Case> cases = {
      {"reads the submission ring", {isa::rhm(0, 1, kSq, N), isa::halt()}, {win_in, win_out}, 0, rd, kSq},
      {"reads the completion ring", {isa::rhm(0, rows, in, N), isa::rhm(0, 1, kCq, N), isa::halt()},
       {win_in, win_out}, 1, rd, kCq},
      {"writes another command's buffer", {isa::rhm(0, rows, in, N), isa::whm(0, rows, other, N), isa::halt()},
       {win_in, win_out}, 1, wr, other},
      {"writes the submission ring", {isa::rhm(0, rows, in, N), isa::whm(0, 1, kSq, N), isa::halt()},
       {win_in, win_out}, 1, wr, kSq},
      {"reads a write-only window", {isa::rhm(0, rows, out, N), isa::halt()}, {win_in, win_out}, 0, rd, out},
      {"writes a read-only window", {isa::rhm(0, rows, in, N), isa::whm(0, rows, in, N), isa::halt()},
       {win_in, win_out}, 1, wr, in},
      {"reads one byte past its window", {isa::rhm(0, rows, in + 1, N), isa::halt()}, {win_in}, 0, rd, in + 1},
      {"reads from below its window", {isa::rhm(0, rows, in - 1, N), isa::halt()}, {win_in}, 0, rd, in - 1},
      {"writes strided rows past its window",
       {isa::rhm(0, rows, in, N), isa::whm(0, rows, out, 2 * N), isa::halt()}, {win_in, win_out}, 1, wr, out},
      {"loads weights from outside", {isa::rw(other, 1, N), isa::halt()}, {win_in, win_out}, 0, rd, other},
      {"has no windows", {isa::rhm(0, 1, in, N), isa::halt()}, {}, 0, rd, in},
      {"is walked out by a loop",
       {isa::loop(2, 1, 0, 0, int64_t(bytes)), isa::rhm(0, rows, in, N), isa::halt()}, {win_in}, 1, rd,
       in + bytes},
      {"wraps past the top of memory", {isa::rhm(0, 2, ~uint64_t{0} - uint64_t(N) + 1, N), isa::halt()},
       {win_in, Window{~uint64_t{0} - 4095, 4096, tpu::kWindowRead}}, 0, rd, ~uint64_t{0} - uint64_t(N) + 1},
  };
  uint16_t id = 2;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    mem.write(other, guard);
    mem.write(out, zero);
    // The ring as it will be, less the slot this command's own entry takes.
    const uint32_t slot = dev_->sq_tail();
    const auto sq_others = [&] {
      std::vector<uint8_t> ring = mem.read(kSq, 8 * tpu::kSqEntryBytes);
      std::fill_n(ring.begin() + slot * tpu::kSqEntryBytes, tpu::kSqEntryBytes, 0);
      return ring;
    };
    const std::vector<uint8_t> sq_before = sq_others();
    dev_->mmio_write(TPU_REG(ERR_CAUSE), 0xffffffff);
    const tb::CqEntry cpl = run(c.prog, id++, 200000, c.windows);
    EXPECT_EQ(cpl.status, uint16_t(ErrCode::kMemFault));
    EXPECT_EQ(cpl.err_pc, c.err_pc);
    EXPECT_EQ(reg(TPU_REG(ERR_CAUSE)) & (rd | wr), c.cause) << std::hex << reg(TPU_REG(ERR_CAUSE));
    const uint64_t err_addr = reg(TPU_REG(ERR_ADDR_LO)) | uint64_t(reg(TPU_REG(ERR_ADDR_HI))) << 32;
    EXPECT_EQ(err_addr, c.err_addr);
    // Nothing outside the windows, and nothing of the denied instruction, was written.
    EXPECT_EQ(mem.read(other, 2 * bytes), guard);
    EXPECT_EQ(mem.read(out, 2 * bytes), zero);
    EXPECT_EQ(mem.read(in, bytes), data);
    EXPECT_EQ(sq_others(), sq_before);
    copy_works(id++);
  }
  // A command's windows end with it: the next command, granted nothing, reads nothing.
  EXPECT_EQ(run({isa::rhm(0, rows, in, N), isa::halt()}, id++, 200000, {}).status, uint16_t(ErrCode::kMemFault));
  // A window may end at the last byte of memory.
  EXPECT_EQ(run({isa::halt()}, id++, 200000, {Window{~uint64_t{0} - 15, 16, tpu::kWindowReadWrite}}).status, 0);
  check_gemm(9, 7, 6, id);
}

// The memory unit starts a WHM while the one before it waits for its
// acknowledge, and a denied write is acknowledged without a DMA: the bridge
// keeps the acknowledges in request order, so the fault names the denied WHM
// and not the allowed one still in flight ahead of it.
TEST_F(DeviceTest, AWriteDeniedBehindAnAllowedOneFaultsAtItsOwnPc) {
  RootComplexConfig cfg;
  cfg.latency = 20;
  start(cfg);
  auto& mem = dev_->mem();
  using tpu::Window;
  const uint32_t rows = 64;
  const uint64_t bytes = uint64_t(rows) * N;
  const uint64_t in = 0x100000, out = 0x200000, other = 0x300000;
  std::vector<uint8_t> data(bytes);
  for (auto& b : data) b = uint8_t(rand_int(0, 255));
  const std::vector<uint8_t> guard(bytes, 0xA5), zero(bytes, 0);
  const std::vector<Window> windows = {{in, bytes, tpu::kWindowRead}, {out, bytes, tpu::kWindowWrite}};
  mem.write(in, data);
  const uint32_t wr = TPU_REGS__ERR_CAUSE__WINDOW_WRITE_bm;

  struct Case {
    const char* name;
    std::vector<isa::Instr> prog;
    uint32_t err_pc;
    bool out_written;  // the allowed WHM is ahead of the denied one
  };
  const Case cases[] = {
      {"an allowed WHM, then a denied one",
       {isa::rhm(0, rows, in, N), isa::whm(0, rows, out, N), isa::whm(0, 1, other, N), isa::halt()}, 2, true},
      {"two allowed WHMs, then a denied one",
       {isa::rhm(0, rows, in, N), isa::whm(0, rows / 2, out, N),
        isa::whm(rows / 2, rows / 2, out + bytes / 2, N), isa::whm(0, 1, other, N), isa::halt()},
       3, true},
      {"a denied WHM, then an allowed one",
       {isa::rhm(0, rows, in, N), isa::whm(0, 1, other, N), isa::whm(0, rows, out, N), isa::halt()}, 1, false},
  };
  uint16_t id = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    mem.write(out, zero);
    mem.write(other, guard);
    dev_->mmio_write(TPU_REG(ERR_CAUSE), 0xffffffff);
    const tb::CqEntry cpl = run(c.prog, id++, 200000, windows);
    EXPECT_EQ(cpl.status, uint16_t(ErrCode::kMemFault));
    EXPECT_EQ(cpl.err_pc, c.err_pc);
    EXPECT_EQ(reg(TPU_REG(ERR_CAUSE)) & wr, wr);
    EXPECT_EQ(mem.read(other, bytes), guard);
    if (c.out_written) EXPECT_EQ(mem.read(out, bytes), data);
  }
  check_gemm(9, 7, 6, id);
}

TEST_F(DeviceTest, MalformedWindowListsAreBadCommands) {
  RootComplexConfig cfg;
  cfg.latency = 20;
  start(cfg);
  using tpu::Window;
  const Window ok{0x100000, 4096, tpu::kWindowRead};
  struct Case {
    const char* name;
    std::vector<Window> windows;
  };
  const std::vector<Case> cases = {
      {"nine windows", std::vector<Window>(9, ok)},
      {"a window of length 0", {ok, Window{0x100000, 0, tpu::kWindowRead}}},
      {"a window with no access", {Window{0x100000, 16, 0}}},
      {"a reserved access bit", {Window{0x100000, 16, 0x84}}},
      {"a window past the top of memory", {Window{~uint64_t{0} - 15, 17, tpu::kWindowRead}}},
  };
  uint16_t id = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    dev_->mmio_write(TPU_REG(ERR_CAUSE), 0xffffffff);
    const tb::CqEntry cpl = run({isa::halt()}, id++, 20000, c.windows);
    EXPECT_EQ(cpl.status, tb::kStatusBadCommand);
    EXPECT_TRUE(reg(TPU_REG(ERR_CAUSE)) & TPU_REGS__ERR_CAUSE__BAD_COMMAND_bm);
  }
  // A list address that is not 16-byte aligned.
  dev_->mem().write(kProg, tpu::encode_program({isa::halt()}));
  dev_->mem().write(kProg + 24, tpu::encode_windows(std::vector<Window>{ok}));
  dev_->submit_raw(tb::Device<TopCfg::Model>::run_entry(id++, 1, kProg, kProg + 24, 1));
  auto bad = dev_->wait_completion(20000);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->status, tb::kStatusBadCommand);
  // A list that cannot be read: FETCH_FAULT.
  dev_->rc().add_fault(FaultRule{FaultKind::kCa, kProg + 16, 16});
  EXPECT_EQ(run({isa::halt()}, id++, 20000, {ok}).status, tb::kStatusFetchFault);
  dev_->rc().clear_faults();
  check_gemm(5, 4, 3, id);
}

TEST_F(DeviceTest, ProgramFetchFaultAndBadCommand) {
  RootComplexConfig cfg;
  cfg.latency = 20;
  start(cfg);
  dev_->rc().add_fault(FaultRule{FaultKind::kCa, kProg, 16});
  tb::CqEntry cpl = run({isa::halt()}, 5);
  EXPECT_EQ(cpl.status, tb::kStatusFetchFault);
  dev_->rc().clear_faults();

  dev_->submit_raw(tb::Device<TopCfg::Model>::run_entry(6, 1, kProg, 0, 0, /*op=*/7));
  auto bad = dev_->wait_completion(10000);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->id, 6);
  EXPECT_EQ(bad->status, tb::kStatusBadCommand);
  dev_->submit_raw(tb::Device<TopCfg::Model>::run_entry(7, 0, kProg));  // no instructions
  bad = dev_->wait_completion(10000);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->status, tb::kStatusBadCommand);
  dev_->submit_raw(tb::Device<TopCfg::Model>::run_entry(8, TopCfg::Imem + 1, kProg));  // past instruction memory
  bad = dev_->wait_completion(10000);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->status, tb::kStatusBadCommand);
  EXPECT_TRUE(reg(TPU_REG(ERR_CAUSE)) & TPU_REGS__ERR_CAUSE__BAD_COMMAND_bm);
  // A program error is reported in the entry too.
  cpl = run({isa::Instr{}}, 9);
  EXPECT_EQ(cpl.status, uint16_t(ErrCode::kIllegalOpcode));
  check_gemm(5, 4, 3, 10);
}

// A command fetched while the device is idle starts on its program's first
// instruction: the core's first read goes out while most of the program is
// still on its way, and the program still runs whole.
TEST_F(DeviceTest, ProgramStartsBeforeItHasAllArrived) {
  RootComplexConfig cfg;
  cfg.latency = 100;
  start(cfg);
  const int len = std::min(TopCfg::Imem, 400);
  // A LOOP whose body arrives just behind it.
  const LongCopy c = long_copy(len, {isa::loop(50, 2), isa::sync(0), isa::sync(0)});
  const tb::CqEntry cpl = run(c.prog);
  EXPECT_EQ(cpl.status, 0);
  EXPECT_EQ(dev_->mem().read(kCopyOut, c.bytes.size()), c.bytes);
  EXPECT_EQ(dev_->mem().read(kCopyOut2, c.bytes.size()), c.bytes) << "the last instructions did not run";
  // The program's first read and the core's read of `in`: the program's
  // last word lands at least latency + len - 1 cycles after its first read
  // (a word a cycle); the core's read follows its first word.
  uint64_t prog_read = 0, data_read = 0;
  for (const auto& r : dev_->rc().reads()) {
    if (r.addr == kProg && prog_read == 0) prog_read = r.cycle;
    if (r.addr == kCopyIn && data_read == 0) data_read = r.cycle;
  }
  ASSERT_NE(prog_read, 0u);
  ASSERT_NE(data_read, 0u);
  EXPECT_LT(data_read, prog_read + cfg.latency + uint64_t(len) / 2)
      << "the core waited for the whole program";
}

// The rest of a program that had started cannot be read: the program ends at
// the first instruction missing, after the ones before it ran, and the
// command completes with FETCH_FAULT there; the next command runs.
TEST_F(DeviceTest, ProgramFetchFaultAfterItStartedEndsItThere) {
  RootComplexConfig cfg;
  cfg.latency = 100;
  start(cfg);
  dev_->mmio_write(TPU_REG(ERR_CAUSE), 0xffffffff);
  const LongCopy c = long_copy(152);  // its last WHM, beyond the fault, must not run
  const std::vector<uint8_t> untouched(c.bytes.size(), 0);
  dev_->mem().write(kCopyOut2, untouched);
  // Instructions 96..127 are one read request of 512 bytes (the default MRRS).
  const uint64_t fault_at = kProg + 96 * 16;
  dev_->rc().add_fault(FaultRule{FaultKind::kUr, fault_at, 16});
  const tb::CqEntry cpl = run(c.prog, 3);
  EXPECT_EQ(cpl.status, tb::kStatusFetchFault);
  EXPECT_GE(cpl.err_pc, 2u) << "the first instructions did not arrive before the fault";
  EXPECT_LE(cpl.err_pc, 96u);
  EXPECT_GT(cpl.cycles, 0u);
  EXPECT_EQ(dev_->mem().read(kCopyOut, c.bytes.size()), c.bytes) << "the instructions before the fault did not run";
  EXPECT_EQ(dev_->mem().read(kCopyOut2, c.bytes.size()), untouched) << "an instruction past the fault ran";
  const uint32_t cause = reg(TPU_REG(ERR_CAUSE));
  EXPECT_TRUE(cause & TPU_REGS__ERR_CAUSE__DMA_UR_bm) << std::hex << cause;
  const uint64_t err_addr = reg(TPU_REG(ERR_ADDR_LO)) | uint64_t(reg(TPU_REG(ERR_ADDR_HI))) << 32;
  EXPECT_EQ(err_addr, fault_at);
  dev_->rc().clear_faults();
  check_gemm(9, 40, 20, 4);
}

// Every program error code reaches the host in its completion entry, with
// the failing instruction's index, and the ring goes on (the cover points
// Cpl* of rtl/host/cmd_proc.sv). The core's tests check each error in depth
// (EveryErrorCodeStopsAndRecovers); MEM_FAULT is DmaFaultsDuringAProgram's.
TEST_F(DeviceTest, EveryProgramErrorCodeReachesItsCompletion) {
  RootComplexConfig cfg;
  cfg.latency = 20;
  start(cfg);
  constexpr uint32_t n = uint32_t(N), ub = TopCfg::UbRows, acc = TopCfg::AccRows,
                     imem = TopCfg::Imem, tiles = TopCfg::WgtFifoTiles;
  const uint64_t src = 0x90000;
  isa::Instr illegal{};
  illegal.op = 0x7f;
  isa::Instr bad_flags = isa::sync(0);
  bad_flags.flags = 0x80;
  struct Case {
    const char* name;
    std::vector<isa::Instr> prog;
    ErrCode code;
    uint32_t pc;
  };
  const Case cases[] = {
      {"illegal opcode", {isa::sync(0), illegal, isa::halt()}, ErrCode::kIllegalOpcode, 1},
      {"reserved flag", {bad_flags, isa::halt()}, ErrCode::kBadFlags, 0},
      {"UB range", {isa::rhm(ub - 6, 8, src, n), isa::halt()}, ErrCode::kUbRange, 0},
      {"ACC range", {isa::rw(src, 1, n), isa::mmc(0, acc - 1, 2, false, true), isa::halt()},
       ErrCode::kAccRange, 1},
      {"bad count", {isa::rhm(0, 0, src, n), isa::halt()}, ErrCode::kBadCount, 0},
      {"nested loop", {isa::loop(2, 2), isa::loop(2, 1), isa::sync(0), isa::halt()}, ErrCode::kNestedLoop, 1},
      {"bad CFG value", {isa::cfg(0x001, 40), isa::halt()}, ErrCode::kBadCfg, 0},
      {"PC range", std::vector<isa::Instr>(imem, isa::sync(0)), ErrCode::kPcRange, imem},
      {"no weights", {isa::rhm(0, 4, src, n), isa::mmc(0, 0, 4, false, false), isa::halt()},
       ErrCode::kNoWeights, 1},
      {"weight overflow", {isa::rw(src, tiles, n), isa::rw(src, 3, n), isa::halt()}, ErrCode::kWgtOverflow, 1},
  };
  uint16_t id = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const tb::CqEntry cpl = run(c.prog, id++);
    EXPECT_EQ(cpl.status, uint16_t(c.code)) << isa::err_name(ErrCode(cpl.status));
    EXPECT_EQ(cpl.err_pc, c.pc);
  }
  check_gemm(5, 4, 3, id);
}

// The submission entry itself cannot be read: the ring halts with no
// completion (STATUS.sq_error, the DMA class in ERR_CAUSE), and a soft reset
// starts it again.
TEST_F(DeviceTest, UnreadableSubmissionEntryHaltsTheRing) {
  RootComplexConfig cfg;
  cfg.latency = 20;
  start(cfg);
  dev_->rc().add_fault(FaultRule{FaultKind::kUr, kSq, 32});  // entry 0
  dev_->submit(1, {isa::halt()}, kProg);
  EXPECT_FALSE(dev_->wait_completion(20000).has_value()) << "a completion for an unreadable entry";
  EXPECT_TRUE(reg(TPU_REG(STATUS)) & TPU_REGS__STATUS__SQ_ERROR_bm);
  EXPECT_TRUE(reg(TPU_REG(ERR_CAUSE)) & TPU_REGS__ERR_CAUSE__DMA_UR_bm);
  dev_->rc().clear_faults();
  ASSERT_TRUE(soft_reset()) << "soft reset never finished";
  EXPECT_FALSE(reg(TPU_REG(STATUS)) & TPU_REGS__STATUS__SQ_ERROR_bm);
  dev_->setup_rings(kSq, 3, kCq, 3);
  check_gemm(4, 3, 5, 2);
}

TEST_F(DeviceTest, DoorbellBeyondRingIsIgnored) {
  RootComplexConfig cfg;
  cfg.latency = 20;
  start(cfg);
  dev_->mmio_write(TPU_REG(SQ_TAIL), 99);  // ring has 8 entries
  dev_->run(50);
  EXPECT_TRUE(reg(TPU_REG(ERR_CAUSE)) & TPU_REGS__ERR_CAUSE__BAD_DOORBELL_bm);
  EXPECT_EQ(reg(TPU_REG(ERR_ADDR_LO)), 99u);
  EXPECT_EQ(reg(TPU_REG(SQ_HEAD)), 0u) << "the device fetched commands nobody posted";
  dev_->mmio_write(TPU_REG(CQ_HEAD), 8);
  dev_->run(10);
  EXPECT_EQ(reg(TPU_REG(COMMANDS_DONE)), 0u);
  check_gemm(5, 6, 7, 11);
}

TEST_F(DeviceTest, RingWrapAndPhase) {
  RootComplexConfig cfg;
  cfg.latency = 10;
  start(cfg);
  for (uint16_t id = 1; id <= 20; ++id) {  // the 8-entry rings wrap twice
    const tb::CqEntry cpl = run({isa::sync(0), isa::halt()}, id, 100000);
    EXPECT_EQ(cpl.status, 0);
  }
  EXPECT_EQ(reg(TPU_REG(COMMANDS_DONE)), 20u);
  EXPECT_EQ(reg(TPU_REG(SQ_HEAD)), 20u % 8);
}

TEST_F(DeviceTest, FullCompletionRingWaitsAndOverwritesNothing) {
  RootComplexConfig cfg;
  cfg.latency = 10;
  start(cfg);
  dev_->setup_rings(kSq, 3, kCq, 2);  // 4 completion entries: 3 usable before full
  for (uint16_t id = 1; id <= 6; ++id) dev_->submit(id, {isa::sync(0), isa::halt()}, kProg + id * 64, id == 6);
  dev_->run(20000);
  EXPECT_EQ(reg(TPU_REG(COMMANDS_DONE)), 3u) << "the device must wait when the completion ring is full";
  const auto snapshot = dev_->mem().read(kCq, 64);
  dev_->run(5000);
  EXPECT_EQ(dev_->mem().read(kCq, 64), snapshot) << "an unconsumed completion was overwritten";
  for (uint16_t id = 1; id <= 6; ++id) {
    const auto cpl = dev_->wait_completion(50000);
    ASSERT_TRUE(cpl.has_value()) << "command " << id;
    EXPECT_EQ(cpl->id, id);
  }
  EXPECT_EQ(reg(TPU_REG(COMMANDS_DONE)), 6u);
}

TEST_F(DeviceTest, MsiAfterCompletionUnlessMasked) {
  RootComplexConfig cfg;
  cfg.latency = 10;
  start(cfg, /*msi=*/true);
  auto msis = [&] {
    int n = 0;
    for (const auto& w : dev_->rc().writes()) n += w.addr == kMsiAddr;
    return n;
  };
  run({isa::halt()}, 1);
  dev_->run(200);
  ASSERT_EQ(msis(), 1);
  // The completion entry's write precedes the MSI on rq.
  uint64_t cpl_seq = 0, msi_seq = 0;
  for (const auto& w : dev_->rc().writes()) {
    if (w.addr == kCq) cpl_seq = w.seq;
    if (w.addr == kMsiAddr) {
      msi_seq = w.seq;
      EXPECT_EQ(w.data.size(), 4u);
      EXPECT_EQ(w.data[0] | w.data[1] << 8, int(kMsiData));
    }
  }
  EXPECT_LT(cpl_seq, msi_seq);
  dev_->mmio_write(TPU_REG(INT_STATUS), 0xffffffff);
  dev_->mmio_write(TPU_REG(INT_MASK), TPU_REGS__INT_MASK__COMPLETION_bm | TPU_REGS__INT_MASK__ERROR_bm);
  run({isa::halt()}, 2);
  dev_->run(200);
  EXPECT_EQ(msis(), 1) << "a masked completion sent an MSI";
  EXPECT_TRUE(reg(TPU_REG(INT_STATUS)) & TPU_REGS__INT_STATUS__COMPLETION_bm);
}

TEST_F(DeviceTest, MmioUnmappedAndReservedBits) {
  start();
  int status = 0;
  EXPECT_EQ(dev_->mmio_read(TPU_REG(ID), &status), 0x54505531u);
  EXPECT_EQ(status, 0);
  dev_->mmio_read(0x7f0, &status);
  EXPECT_EQ(status, 1) << "an unmapped offset must complete with UR";
  dev_->mmio_read(0x10000, &status);
  EXPECT_EQ(status, 1) << "an offset past the BAR must complete with UR";
  dev_->mmio_read(0x41, &status);
  EXPECT_EQ(status, 1) << "an unaligned offset must complete with UR";
  dev_->mmio_write(0x7f0, 0x1234);
  EXPECT_TRUE(reg(TPU_REG(ERR_CAUSE)) & TPU_REGS__ERR_CAUSE__MMIO_UNMAPPED_bm);
  dev_->mmio_write(TPU_REG(SQ_LOG2SIZE), 0xffffffff);
  EXPECT_EQ(reg(TPU_REG(SQ_LOG2SIZE)), uint32_t(TPU_REGS__SQ_LOG2SIZE__LOG2SIZE_bm))
      << "reserved bits must read as zero";
  dev_->mmio_write(TPU_REG(ID), 0);
  EXPECT_EQ(reg(TPU_REG(ID)), 0x54505531u) << "a read-only register changed";
  EXPECT_EQ(reg(TPU_REG(CAPS0)) & TPU_REGS__CAPS0__ARRAY_N_bm, uint32_t(N));
  dev_->setup_rings(kSq, 3, kCq, 3);
  check_gemm(3, 3, 3, 12);
}

TEST_F(DeviceTest, SoftResetInTheMiddleOfDma) {
  RootComplexConfig cfg;  // default 500-cycle latency: the reset lands with reads in flight
  start(cfg);
  dev_->submit(1, {isa::rhm(0, 200, 0x90000, N), isa::rw(0x90000, 4, N), isa::halt()}, kProg);
  for (int i = 0; i < 4000 && dev_->rc().reads().size() < 3; ++i) dev_->step();
  ASSERT_GE(dev_->rc().reads().size(), 3u) << "the program's reads never started";
  ASSERT_TRUE(soft_reset()) << "soft reset never finished";
  const size_t reads = dev_->rc().reads().size(), writes = dev_->rc().writes().size();
  dev_->run(3000);  // late completions arrive and are dropped
  EXPECT_EQ(dev_->rc().reads().size(), reads) << "a read left the device after the reset";
  EXPECT_EQ(dev_->rc().writes().size(), writes) << "a write left the device after the reset";
  EXPECT_EQ(reg(TPU_REG(SQ_HEAD)), 0u);
  dev_->setup_rings(kSq, 3, kCq, 3);
  check_gemm(6, 5, 4, 13);
}

// ---------------------------------------------------------------------------
// Commands fetched ahead: the next entry, its windows and program are read
// while a command runs; nothing may be reordered, lost or mixed up
// ---------------------------------------------------------------------------

// GEMMs back to back, up to 7 queued in 8-entry rings (both wrap): each
// exact, completions in order, and the next entry read before the previous
// command's completion (fetched ahead) for most of them.
TEST_F(DeviceTest, StreamOfGemmsFetchedAheadIsExact) {
  start();
  std::vector<StreamGemm> gemms;
  std::vector<std::vector<isa::Instr>> progs;
  std::vector<std::vector<tpu::Window>> wins;
  // On tiny a GEMM may take several programs (run in order; state carries
  // over between them), some longer than the prefetch buffer.
  const int cube = N >= 16 ? 64 : 32;
  for (int i = 0; i < 14; ++i) {
    const bool big = i % 5 == 0;
    gemms.push_back(make_gemm(0x1000000 + uint64_t(i) * 0x100000, big ? cube : rand_int(1, 40),
                              big ? cube : rand_int(1, 48), big ? cube : rand_int(1, 40)));
    for (const auto& program : gemms.back().gemm.programs) {
      progs.push_back(program);
      wins.push_back(gemms.back().windows);
    }
  }
  const auto cpls = run_stream(progs, wins, 100);
  ASSERT_EQ(cpls.size(), progs.size());
  for (size_t i = 0; i < cpls.size(); ++i) {
    EXPECT_EQ(cpls[i].status, 0) << "command " << i << " ended with " << cpls[i].status;
    EXPECT_GT(cpls[i].cycles, 0u);
  }
  for (size_t i = 0; i < gemms.size(); ++i) EXPECT_TRUE(gemm_exact(gemms[i])) << "GEMM " << i << " differs";
  // Entry i + 1 read before command i's completion was written.
  const auto entries = read_seqs(kSq, 8 * 32), cpl_writes = write_seqs(kCq, 8 * 16);
  ASSERT_EQ(entries.size(), progs.size());
  ASSERT_EQ(cpl_writes.size(), progs.size());
  size_t ahead = 0;
  for (size_t i = 0; i + 1 < progs.size(); ++i) ahead += entries[i + 1] < cpl_writes[i];
  EXPECT_GE(ahead, progs.size() * 2 / 3) << "the device did not fetch commands ahead";
  EXPECT_EQ(reg(TPU_REG(COMMANDS_DONE)), uint32_t(progs.size()));
  EXPECT_EQ(reg(TPU_REG(SQ_HEAD)), uint32_t(progs.size() % 8));
  EXPECT_TRUE(dev_->rc().protocol_errors().empty());
}

// KEEP_COUNTERS (entry flag bit 0): a command's start leaves the core's
// performance counters as they are, so they add up over commands, while each
// completion still reports the command's own cycles. Any other flag bit is
// BAD_COMMAND.
TEST_F(DeviceTest, KeepCountersAddsUpOverCommands) {
  start();
  const StreamGemm g = make_gemm(0x1000000, 2 * N + 3, N + 5, N + 1);
  ASSERT_EQ(g.gemm.programs.size(), 1u);
  const auto& prog = g.gemm.programs[0];
  const auto read64 = [&](uint32_t lo) { return uint64_t(reg(lo)) | uint64_t(reg(lo + 4)) << 32; };
  struct Counters {
    uint64_t cycles, mxu_busy, useful_macs, wgt_shift;
  };
  const auto counters = [&] {
    return Counters{read64(TPU_REG(CYCLES_LO)), read64(TPU_REG(MXU_BUSY_LO)), read64(TPU_REG(USEFUL_MACS_LO)),
                    read64(TPU_REG(WGT_SHIFT_LO))};
  };
  const tb::CqEntry alone = run(prog, 1, 2'000'000, g.windows);
  ASSERT_EQ(alone.status, 0);
  const Counters one = counters();
  // The completion takes the cycle count in the cycle the core reports done,
  // which the counter still counts.
  const uint64_t extra = one.cycles - alone.cycles;
  EXPECT_LE(extra, 1u);
  ASSERT_GT(one.mxu_busy, 0u);

  // Three commands queued together: restart, keep, keep.
  for (int i = 0; i < 3; ++i)
    dev_->submit(uint16_t(10 + i), prog, prog_slot(i), i == 2, g.windows, i == 0 ? 0 : tpu::kRunKeepCounters);
  uint64_t cycles = 0;
  for (int i = 0; i < 3; ++i) {
    const auto cpl = dev_->wait_completion(2'000'000);
    ASSERT_TRUE(cpl.has_value());
    EXPECT_EQ(cpl->id, 10 + i);
    EXPECT_EQ(cpl->status, 0);
    EXPECT_GT(cpl->cycles, 0u);
    EXPECT_LT(cpl->cycles, 2 * alone.cycles) << "a kept command reported more than its own cycles";
    cycles += cpl->cycles;
  }
  const Counters three = counters();
  EXPECT_EQ(three.cycles, cycles + 3 * extra);
  EXPECT_EQ(three.mxu_busy, 3 * one.mxu_busy);
  EXPECT_EQ(three.useful_macs, 3 * one.useful_macs);
  EXPECT_EQ(three.wgt_shift, 3 * one.wgt_shift);
  EXPECT_TRUE(gemm_exact(g));

  // A command without the flag starts them again.
  const tb::CqEntry again = run(prog, 13, 2'000'000, g.windows);
  EXPECT_EQ(counters().cycles, again.cycles + extra);
  EXPECT_EQ(counters().mxu_busy, one.mxu_busy);

  for (const uint8_t flags : {uint8_t(0x02), uint8_t(0x80), uint8_t(0x03)}) {
    dev_->submit(20, prog, kProg, true, g.windows, flags);
    const auto bad = dev_->wait_completion(100000);
    ASSERT_TRUE(bad.has_value());
    EXPECT_EQ(bad->status, tb::kStatusBadCommand) << "flags 0x" << std::hex << int(flags);
  }
  EXPECT_EQ(run(prog, 21, 2'000'000, g.windows).status, 0);
  EXPECT_TRUE(gemm_exact(g));
}

// Every way a command can fail, each queued behind a running command and in
// front of a good one: each keeps its own status and err_pc, and the good
// ones' results are exact.
TEST_F(DeviceTest, FaultsInAStreamStayWithTheirCommand) {
  RootComplexConfig cfg;
  cfg.latency = 200;
  start(cfg);
  dev_->mmio_write(TPU_REG(ERR_CAUSE), 0xffffffff);
  const uint64_t src = 0x90000;
  std::vector<uint8_t> bytes(0x1000);
  for (auto& b : bytes) b = uint8_t(rand_int(0, 255));
  dev_->mem().write(src, bytes);
  const tpu::Window data_win{src, 0x1000, tpu::kWindowRead};
  isa::Instr illegal{};
  illegal.op = 0x7f;

  std::vector<StreamGemm> gemms;
  for (int i = 0; i < 5; ++i) {
    gemms.push_back(make_gemm(0x1000000 + uint64_t(i) * 0x100000, rand_int(8, 40), rand_int(8, 40),
                              rand_int(8, 40)));
    // One program each (on tiny too), so each GEMM is one command of the list.
    while (gemms.back().gemm.programs.size() != 1)
      gemms.back() = make_gemm(0x1000000 + uint64_t(i) * 0x100000, rand_int(4, 20), rand_int(4, 20),
                               rand_int(4, 20));
  }
  struct Cmd {
    std::vector<isa::Instr> prog;
    std::vector<tpu::Window> wins;
    uint16_t status;
    uint32_t err_pc;
    int gemm;  // index of its GEMM, or -1
  };
  const uint16_t mem_fault = uint16_t(ErrCode::kMemFault);
  const std::vector<Cmd> cmds = {
      {gemms[0].gemm.programs[0], gemms[0].windows, 0, 0, 0},
      // outside its windows: MEM_FAULT at the RHM
      {{isa::sync(0), isa::rhm(0, 8, src + 0x2000, N), isa::halt()}, {data_win}, mem_fault, 1, -1},
      {gemms[1].gemm.programs[0], gemms[1].windows, 0, 0, 1},
      // an illegal instruction
      {{isa::sync(0), illegal, isa::halt()}, {}, uint16_t(ErrCode::kIllegalOpcode), 1, -1},
      {gemms[2].gemm.programs[0], gemms[2].windows, 0, 0, 2},
      // its data read answered UR (fault planted below)
      {{isa::rhm(0, 16, src, N), isa::halt()}, {data_win}, mem_fault, 0, -1},
      {gemms[3].gemm.programs[0], gemms[3].windows, 0, 0, 3},
      // its program cannot be fetched (fault planted below)
      {{isa::halt()}, {}, tb::kStatusFetchFault, 0, -1},
      // a malformed entry (submitted raw below)
      {{isa::halt()}, {}, tb::kStatusBadCommand, 0, -1},
      // a malformed window list: a window of length 0
      {{isa::halt()}, {tpu::Window{src, 0, tpu::kWindowRead}}, tb::kStatusBadCommand, 0, -1},
      {gemms[4].gemm.programs[0], gemms[4].windows, 0, 0, 4},
  };
  std::vector<std::vector<isa::Instr>> progs;
  std::vector<std::vector<tpu::Window>> wins;
  for (const Cmd& c : cmds) progs.push_back(c.prog), wins.push_back(c.wins);
  const auto cpls = run_stream(progs, wins, 1, 7, 2'000'000, [&](size_t i) {
    if (i == 5) dev_->rc().add_fault(FaultRule{FaultKind::kUr, src, 16});
    if (i == 7) dev_->rc().add_fault(FaultRule{FaultKind::kCa, prog_slot(7), 16});
    if (i == 8) {
      dev_->submit_raw(tb::Device<TopCfg::Model>::run_entry(9, 1, prog_slot(8), 0, 0, /*op=*/7));
      return true;
    }
    return false;
  });
  ASSERT_EQ(cpls.size(), cmds.size());
  for (size_t i = 0; i < cmds.size(); ++i) {
    SCOPED_TRACE("command " + std::to_string(i));
    EXPECT_EQ(cpls[i].status, cmds[i].status);
    EXPECT_EQ(cpls[i].err_pc, cmds[i].err_pc);
    if (cmds[i].gemm >= 0) EXPECT_TRUE(gemm_exact(gemms[size_t(cmds[i].gemm)]));
  }
  const uint32_t cause = reg(TPU_REG(ERR_CAUSE));
  for (uint32_t bit : {TPU_REGS__ERR_CAUSE__WINDOW_READ_bm, TPU_REGS__ERR_CAUSE__DMA_UR_bm,
                       TPU_REGS__ERR_CAUSE__DMA_CA_bm, TPU_REGS__ERR_CAUSE__BAD_COMMAND_bm,
                       TPU_REGS__ERR_CAUSE__PROG_ERROR_bm})
    EXPECT_TRUE(cause & bit) << std::hex << "ERR_CAUSE 0x" << cause << " lacks 0x" << bit;
  dev_->rc().clear_faults();
  check_gemm(7, 9, 5, 20);
}

// Programs around the prefetch buffer's size, between GEMMs: up to
// kPrefetchProg instructions are fetched while the command before runs, a
// longer one after it completes; every one arrives whole.
TEST_F(DeviceTest, ProgramsTooLongForThePrefetchBufferRunAfterTheirPredecessor) {
  RootComplexConfig cfg;
  cfg.latency = 100;
  start(cfg);
  const uint64_t in = 0x90000, out = 0xA0000;
  std::vector<uint8_t> bytes(0x4000);
  for (auto& b : bytes) b = uint8_t(rand_int(0, 255));
  dev_->mem().write(in, bytes);
  // (A buffer that holds the whole instruction memory, as default's, has
  // no program too long for it: then only the lengths that fit.)
  std::vector<int> lengths;
  for (const int len : {kPrefetchProg - 1, kPrefetchProg, kPrefetchProg + 1, TopCfg::Imem})
    if (len <= TopCfg::Imem && (lengths.empty() || len > lengths.back())) lengths.push_back(len);
  std::vector<StreamGemm> gemms;
  std::vector<std::vector<isa::Instr>> progs;
  std::vector<std::vector<tpu::Window>> wins;
  std::vector<size_t> copies;  // command index of each copy program
  for (size_t j = 0; j < lengths.size(); ++j) {
    gemms.push_back(make_gemm(0x1000000 + uint64_t(j) * 0x100000, 48, 64, 48));
    for (const auto& program : gemms.back().gemm.programs) {
      progs.push_back(program);
      wins.push_back(gemms.back().windows);
    }
    const uint32_t rows = uint32_t(4 + j);
    copies.push_back(progs.size());
    progs.push_back(copy_program(lengths[j], uint32_t(16 * j), rows, in + 0x400 * j, out + 0x400 * j));
    wins.push_back({tpu::Window{in, 0x4000, tpu::kWindowRead}, tpu::Window{out, 0x4000, tpu::kWindowWrite}});
  }
  const auto cpls = run_stream(progs, wins, 1);
  ASSERT_EQ(cpls.size(), progs.size());
  for (size_t i = 0; i < cpls.size(); ++i) EXPECT_EQ(cpls[i].status, 0) << "command " << i;
  for (const StreamGemm& g : gemms) EXPECT_TRUE(gemm_exact(g));
  const auto cpl_writes = write_seqs(kCq, 8 * 16);
  for (size_t j = 0; j < lengths.size(); ++j) {
    SCOPED_TRACE("a program of " + std::to_string(lengths[j]) + " instructions");
    const size_t rows = 4 + j;
    EXPECT_EQ(dev_->mem().read(out + 0x400 * j, rows * N), dev_->mem().read(in + 0x400 * j, rows * N));
    // Its program read: during the GEMM before it when it fits the buffer,
    // after that GEMM's completion when it does not.
    // (Its slot's reads after command c - 8 completed and before c did: its own.)
    const size_t c = copies[j];
    std::vector<uint64_t> prog_reads;
    for (const uint64_t seq : read_seqs(prog_slot(c), uint64_t(lengths[j]) * 16))  // not its window list
      if ((c < 8 || seq > cpl_writes[c - 8]) && seq < cpl_writes[c]) prog_reads.push_back(seq);
    ASSERT_FALSE(prog_reads.empty());
    if (lengths[j] <= kPrefetchProg) EXPECT_LT(prog_reads.back(), cpl_writes[c - 1]);
    else EXPECT_GT(prog_reads.front(), cpl_writes[c - 1]);
  }
}

// A command fetched ahead starts while its program is still being copied
// from the prefetch buffer into instruction memory (the copy pauses for its
// window list): its first read goes out soon after the previous command's
// completion instead of after the copy, and the whole program runs.
TEST_F(DeviceTest, ProgramFetchedAheadStartsDuringItsCopy) {
  RootComplexConfig cfg;
  cfg.latency = 100;
  start(cfg);
  const int len = std::min({kPrefetchProg, TopCfg::Imem, 600});
  const LongCopy b = long_copy(len);
  const std::vector<tpu::Window> b_wins{tpu::Window{kCopyIn, 0x1000, tpu::kWindowRead},
                                        tpu::Window{kCopyOut, 0x1000, tpu::kWindowWrite},
                                        tpu::Window{kCopyOut2, 0x1000, tpu::kWindowWrite}};
  const auto cpls = run_stream({busy_program(3000), b.prog}, {{}, b_wins}, 1, 2);
  ASSERT_EQ(cpls.size(), 2u);
  EXPECT_EQ(cpls[0].status, 0);
  EXPECT_EQ(cpls[1].status, 0);
  EXPECT_EQ(dev_->mem().read(kCopyOut, b.bytes.size()), b.bytes);
  EXPECT_EQ(dev_->mem().read(kCopyOut2, b.bytes.size()), b.bytes);
  // B's program was read ahead, during A.
  const auto a_cpl = write_seqs(kCq, 16);
  ASSERT_EQ(a_cpl.size(), 1u);
  ASSERT_FALSE(read_seqs(prog_slot(1), 16).empty());
  EXPECT_LT(read_seqs(prog_slot(1), 16).back(), a_cpl[0]) << "B's program was not fetched ahead";
  uint64_t a_done = 0, b_read = 0;
  for (const auto& w : dev_->rc().writes())
    if (w.addr == kCq) a_done = w.cycle;
  for (const auto& r : dev_->rc().reads())
    if (r.addr == kCopyIn) b_read = r.cycle;
  ASSERT_NE(a_done, 0u);
  ASSERT_NE(b_read, 0u);
  EXPECT_LT(b_read, a_done + uint64_t(len) / 2) << "B waited for its whole program's copy";
}

// The next command's windows are fetched while the current one runs; the
// current one's late WHM is still checked against its own windows, and the
// next is held to its own.
TEST_F(DeviceTest, WindowsFetchedAheadDoNotReachTheRunningCommand) {
  start();
  const uint64_t z = 0x90000, x = 0xA0000, y = 0xB0000;
  std::vector<uint8_t> bytes(8 * N);
  for (auto& b : bytes) b = uint8_t(rand_int(1, 255));
  dev_->mem().write(z, bytes);
  const std::vector<uint8_t> zeros(8 * N, 0);
  dev_->mem().write(x, zeros);
  dev_->mem().write(y, zeros);
  const tpu::Window zr{z, uint64_t(8 * N), tpu::kWindowRead}, xw{x, uint64_t(8 * N), tpu::kWindowWrite},
      yw{y, uint64_t(8 * N), tpu::kWindowWrite};
  const auto cpls = run_stream(
      {busy_program(4000, {isa::rhm(0, 8, z, N), isa::whm(0, 8, x, N)}),  // A: late write to x
       {isa::whm(0, 8, x, N), isa::halt()},                                // B: x is not its own
       {isa::whm(0, 8, y, N), isa::halt()}},                               // C: y is
      {{zr, xw}, {yw}, {yw}}, 1);
  ASSERT_EQ(cpls.size(), 3u);
  EXPECT_EQ(cpls[0].status, 0);
  EXPECT_EQ(cpls[1].status, uint16_t(ErrCode::kMemFault));
  EXPECT_EQ(cpls[1].err_pc, 0u);
  EXPECT_EQ(cpls[2].status, 0);
  EXPECT_EQ(dev_->mem().read(x, 8 * N), bytes) << "A's write, checked against B's windows?";
  EXPECT_EQ(dev_->mem().read(y, 8 * N), bytes);
  EXPECT_TRUE(reg(TPU_REG(ERR_CAUSE)) & TPU_REGS__ERR_CAUSE__WINDOW_WRITE_bm);
  EXPECT_EQ(reg(TPU_REG(ERR_ADDR_LO)), uint32_t(x));
}

// What the device learns while fetching ahead is reported in command order:
// A's late MEM_FAULT (at address a) before B's program fetch fault (at b),
// though B's fetch failed first. ERR_ADDR ends with b, as when commands were
// fetched one after the other.
TEST_F(DeviceTest, FaultsFoundAheadAreReportedInCommandOrder) {
  RootComplexConfig cfg;
  cfg.latency = 100;
  start(cfg);
  dev_->mmio_write(TPU_REG(ERR_CAUSE), 0xffffffff);
  const uint64_t a = 0xC0000;
  dev_->rc().add_fault(FaultRule{FaultKind::kCa, prog_slot(1), 16});
  const auto cpls = run_stream({busy_program(3000, {isa::rhm(0, 2, a, N)}), {isa::halt()}},
                               {{tpu::Window{0x90000, 64, tpu::kWindowRead}}, {}}, 1);
  ASSERT_EQ(cpls.size(), 2u);
  EXPECT_EQ(cpls[0].status, uint16_t(ErrCode::kMemFault));
  EXPECT_EQ(cpls[1].status, tb::kStatusFetchFault);
  const uint64_t b_fault = dev_->rc().faults_applied().at(0).seq;
  EXPECT_LT(b_fault, write_seqs(kCq, 16).at(0)) << "B's program was not fetched while A ran";
  const uint32_t cause = reg(TPU_REG(ERR_CAUSE));
  EXPECT_TRUE(cause & TPU_REGS__ERR_CAUSE__WINDOW_READ_bm) << std::hex << cause;
  EXPECT_TRUE(cause & TPU_REGS__ERR_CAUSE__DMA_CA_bm) << std::hex << cause;
  const uint64_t err_addr = reg(TPU_REG(ERR_ADDR_LO)) | uint64_t(reg(TPU_REG(ERR_ADDR_HI))) << 32;
  EXPECT_EQ(err_addr, prog_slot(1)) << "B's fault was reported before A's";
}

// An unreadable entry fetched while a command runs: that command completes
// as usual first, then the ring halts (not before).
TEST_F(DeviceTest, UnreadableEntryFetchedAheadHaltsTheRingAfterTheRunningCommand) {
  RootComplexConfig cfg;
  cfg.latency = 50;
  start(cfg);
  dev_->rc().add_fault(FaultRule{FaultKind::kUr, kSq + 32, 32});  // entry 1
  dev_->submit(1, busy_program(3000), prog_slot(0), false);
  dev_->submit(2, {isa::halt()}, prog_slot(1));
  // Until entry 1 has been read and refused, and while command 1 runs,
  // nothing of it shows.
  for (int i = 0; i < 20000 && dev_->rc().faults_applied().empty(); ++i) dev_->step();
  ASSERT_FALSE(dev_->rc().faults_applied().empty()) << "entry 1 was not read while command 1 ran";
  EXPECT_FALSE(reg(TPU_REG(STATUS)) & TPU_REGS__STATUS__SQ_ERROR_bm) << "halted before command 1 completed";
  EXPECT_FALSE(reg(TPU_REG(ERR_CAUSE)) & TPU_REGS__ERR_CAUSE__DMA_UR_bm);
  EXPECT_FALSE(reg(TPU_REG(INT_STATUS)) & TPU_REGS__INT_STATUS__ERROR_bm);
  const auto cpl = dev_->wait_completion(100000);
  ASSERT_TRUE(cpl.has_value());
  EXPECT_EQ(cpl->id, 1);
  EXPECT_EQ(cpl->status, 0);
  EXPECT_FALSE(dev_->wait_completion(5000).has_value()) << "a completion for an unreadable entry";
  EXPECT_TRUE(reg(TPU_REG(STATUS)) & TPU_REGS__STATUS__SQ_ERROR_bm);
  EXPECT_TRUE(reg(TPU_REG(ERR_CAUSE)) & TPU_REGS__ERR_CAUSE__DMA_UR_bm);
  EXPECT_TRUE(reg(TPU_REG(INT_STATUS)) & TPU_REGS__INT_STATUS__ERROR_bm);
  EXPECT_EQ(reg(TPU_REG(SQ_HEAD)), 1u);
  dev_->rc().clear_faults();
  ASSERT_TRUE(soft_reset());
  dev_->setup_rings(kSq, 3, kCq, 3);
  check_gemm(4, 5, 6, 3);
}

// A soft reset while one command runs and the next is fetched ahead: both
// are dropped, nothing leaves the device afterwards, the rings restart.
TEST_F(DeviceTest, SoftResetWithACommandFetchedAhead) {
  start();
  dev_->submit(1, busy_program(20000), prog_slot(0), false);
  dev_->submit(2, copy_program(40, 0, 8, 0x90000, 0xA0000), prog_slot(1));
  for (int i = 0; i < 20000 && read_seqs(prog_slot(1), 0x10000).empty(); ++i) dev_->step();
  ASSERT_FALSE(read_seqs(prog_slot(1), 0x10000).empty()) << "command 2 was not fetched ahead";
  dev_->run(600);  // its program has arrived
  ASSERT_TRUE(soft_reset()) << "soft reset never finished";
  const size_t reads = dev_->rc().reads().size(), writes = dev_->rc().writes().size();
  dev_->run(3000);
  EXPECT_EQ(dev_->rc().reads().size(), reads) << "a read left the device after the reset";
  EXPECT_EQ(dev_->rc().writes().size(), writes) << "a write left the device after the reset";
  EXPECT_EQ(reg(TPU_REG(COMMANDS_DONE)), 0u);
  dev_->setup_rings(kSq, 3, kCq, 3);
  check_gemm(6, 5, 4, 3);
}

// ---------------------------------------------------------------------------
// Fuzz: random valid and invalid commands, with a watchdog
// ---------------------------------------------------------------------------

TEST_F(DeviceTest, FuzzValidAndInvalidCommands) {
  RootComplexConfig cfg;
  cfg.latency = 30;
  cfg.jitter = 40;
  cfg.reorder = true;
  cfg.split = tpu::host::SplitMode::kRandom;
  cfg.rq_ready_prob = 0.8;
  cfg.seed = seed_for_rc();
  start(cfg);
  tpu::model::TpuModel model(config());
  model.set_windows(tb::Device<TopCfg::Model>::all_windows());  // what submit() grants
  std::vector<uint8_t> bytes(0x4000);
  for (auto& b : bytes) b = uint8_t(rand_int(0, 255));
  dev_->mem().write(core_tb::kGenInput, bytes);
  int valid = 0, invalid = 0;
  const uint64_t t0 = sim().cycle();
  for (uint16_t id = 1; id <= 60; ++id) {
    const int kind = int(rand_int(0, 9));
    if (kind == 0) {  // a malformed submission entry
      dev_->submit_raw(tb::Device<TopCfg::Model>::run_entry(id, uint32_t(rand_int(0, 1)) * 1000, kProg, 0, 0,
                                                          uint8_t(rand_int(2, 255))));
      const auto cpl = dev_->wait_completion(100000);
      ASSERT_TRUE(cpl.has_value()) << "watchdog: no completion for bad command " << id;
      EXPECT_EQ(cpl->status, tb::kStatusBadCommand);
      ++invalid;
      continue;
    }
    std::vector<isa::Instr> prog;
    if (kind == 1) {  // an invalid program: a random instruction word
      isa::Instr in = isa::decode(uint64_t(rand_int(0, INT64_MAX)), uint64_t(rand_int(0, INT64_MAX)));
      prog = {isa::sync(0), in, isa::halt()};
    } else {
      prog = core_tb::valid_program<N, TopCfg::UbRows, TopCfg::AccRows>(*this, model, dev_->mem(), 3, 15);
      ASSERT_FALSE(prog.empty()) << "the generator keeps making invalid programs";
    }
    tpu::HostMemory model_mem = dev_->mem();
    model.load_program(0, prog);
    const auto expect = model.run(0, model_mem);
    dev_->submit(id, prog, kProg);
    const auto cpl = dev_->wait_completion(400000);
    ASSERT_TRUE(cpl.has_value()) << "watchdog: command " << id << " never completed";
    ASSERT_EQ(cpl->status, uint16_t(expect.err)) << isa::disassemble(prog);
    if (expect.err == ErrCode::kOk) {
      ++valid;
      ASSERT_EQ(dev_->mem().read(core_tb::kGenOutput, 0x4000), model_mem.read(core_tb::kGenOutput, 0x4000));
    } else {
      ++invalid;
      EXPECT_EQ(cpl->err_pc, expect.err_pc);
      // The device discards tiles after an error, as the model does.
    }
  }
  std::printf("[ fuzz ] %d valid and %d invalid commands in %llu cycles\n", valid, invalid,
              (unsigned long long)(sim().cycle() - t0));
  EXPECT_TRUE(dev_->rc().protocol_errors().empty());
}

}  // namespace
