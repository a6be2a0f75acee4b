// SPDX-License-Identifier: Apache-2.0
// Compute-core program tests: seeded random programs compared with the
// reference model, every error code with its faulting instruction, the bf16
// forms rejected as in every int8 core, and the overlap of the units in a
// compute-bound GEMM.
#include <cstdio>

#include "core_fixture.h"
#include "program_generator.h"

namespace {

using namespace core_tb;

// ---------------------------------------------------------------------------
// Random valid programs
// ---------------------------------------------------------------------------

TEST_F(CoreTest, RandomProgramsMatchModel) {
  tpu::model::TpuModel model(config());
  HostMemory mem;
  std::vector<uint8_t> bytes(ProgramGenerator<CoreTest, N, CoreCfg::UbRows, CoreCfg::AccRows>::kInSize);
  for (auto& b : bytes) b = uint8_t(rand_int(0, 255));
  mem.write(kInput, bytes);
  int rejected = 0;
  constexpr int kPrograms = 60;
  for (int p = 0; p < kPrograms; ++p) {
    const std::vector<isa::Instr> prog = valid_program<N, CoreCfg::UbRows, CoreCfg::AccRows>(*this, model, mem, 5, 40, &rejected);
    ASSERT_FALSE(prog.empty()) << "the generator keeps making invalid programs";
    // Late write acknowledges (up to 60 cycles) keep two WHMs in flight.
    const tb::MemoryTiming timing{int(rand_int(1, 30)), double(rand_int(0, 3)) / 10,
                                  double(rand_int(0, 3)) / 10, int(rand_int(1, 60))};
    run_both(model, prog, mem, timing, kOutput, 0x4000,
             "program " + std::to_string(p) + ":\n" + isa::disassemble(prog));
    if (HasFailure()) return;
  }
  RecordProperty("rejected", rejected);
}

// ---------------------------------------------------------------------------
// Errors: every code, its faulting instruction, and a working next program
// ---------------------------------------------------------------------------

struct ErrorCase {
  const char* name;
  std::vector<isa::Instr> prog;
  ErrCode code;
  uint32_t pc;
  std::vector<std::pair<uint64_t, uint64_t>> faults = {};
  uint32_t start = 0;
};

// Each case sits at the edge of this configuration's memories.
std::vector<ErrorCase> error_cases() {
  using namespace isa;
  constexpr int n = CoreCfg::N, ub = CoreCfg::UbRows, acc = CoreCfg::AccRows, imem = CoreCfg::Imem,
                wgt = CoreCfg::WgtFifoTiles;
  const uint32_t nn = uint32_t(n);
  const bool bf16_core = tpu::has_bf16(CoreCfg::Datapath);
  Instr illegal{};
  illegal.op = 0x7f;
  Instr zero{};
  Instr bad_flags = rhm(0, 4, kInput, nn);
  bad_flags.flags = 0x80;
  Instr loop_long = loop(2, 200);
  std::vector<Instr> pc_range(6, sync(0));
  // A loop whose third iteration leaves the UB: 50 + 2 * inc + 60 > ub.
  const int32_t inc = ub / 2 - 20;
  // An instruction with one field set where its opcode allows none.
  auto with = [](Instr i, uint8_t flags, uint16_t count = 0, uint16_t a = 0) {
    i.flags = uint8_t(i.flags | flags);
    i.count = uint16_t(i.count + count);
    i.a = uint16_t(i.a | a);
    return i;
  };
  auto with_c = [](Instr i, uint64_t c) {
    i.c |= c;
    return i;
  };
  const Instr act0 = act(0, 0, 1, Act::kNone, false);
  const Instr vop0 = vop(VopOp::kAdd, 0, 1, 2, 1);
  return {
      // The decode checks of each opcode that the cases below this group
      // leave untried (tpu_ctrl.sv, decode; make coverage).
      {"RW of no tiles", {rw(kInput, 0, nn), halt()}, ErrCode::kBadCount, 0},
      {"MMC reserved flag", {with(mmc(0, 0, 1, false, false), 0x80), halt()}, ErrCode::kBadFlags, 0},
      {"MMC UB range", {rw(kInput, 1, nn), mmc(uint32_t(ub - 1), 0, 2, false, true), halt()},
       ErrCode::kUbRange, 1},
      {"ACT reserved flag", {with(act0, 0x80), halt()}, ErrCode::kBadFlags, 0},
      {"ACT of no rows", {act(0, 0, 0, Act::kNone, false), halt()}, ErrCode::kBadCount, 0},
      {"ACT UB range", {act(0, uint32_t(ub - 1), 2, Act::kNone, false), halt()}, ErrCode::kUbRange, 0},
      {"ACT ACC range", {act(uint32_t(acc - 1), 0, 2, Act::kNone, false), halt()}, ErrCode::kAccRange, 0},
      {"ACT RAW of more lanes than N", {act(0, 0, 1, Act::kNone, false, true, false, nn + 1), halt()},
       ErrCode::kBadFlags, 0},
      {"ACT c past the lanes", {with_c(act0, 1ull << 16), halt()}, ErrCode::kBadFlags, 0},
      // The UB range counts the rows of the lanes asked for (CoreTest.
      // AnActOfFewerLanesWritesOnlyTheirRows runs one of 1 lane at ub - 2).
      {"ACT RAW of N lanes past the UB", {act(0, uint32_t(ub - 2), 2, Act::kNone, false, true, false, nn), halt()},
       ErrCode::kUbRange, 0},
      // (every flag bit is used in a bf16 core: an undefined operation instead)
      {"VOP reserved flag", {with(vop0, bf16_core ? 0x07 : 0x08), halt()}, ErrCode::kBadFlags, 0},
      {"VOP of no rows", {vop(VopOp::kAdd, 0, 1, 2, 0), halt()}, ErrCode::kBadCount, 0},
      {"VOP UB range", {vop(VopOp::kAdd, 0, 1, uint32_t(ub - 1), 2), halt()}, ErrCode::kUbRange, 0},
      {"CFG reserved field", {with(cfg(0x001, 3), 0x01), halt()}, ErrCode::kBadFlags, 0},
      {"CFG with a count", {with(cfg(0x001, 3), 0, 1), halt()}, ErrCode::kBadCount, 0},
      {"SYNC with a count", {with(sync(0), 0, 1), halt()}, ErrCode::kBadCount, 0},
      {"LOOP reserved flag", {with(loop(2, 1), 0x01), sync(0), halt()}, ErrCode::kBadFlags, 0},
      {"IRQ reserved field", {with(irq(), 0, 0, 1), halt()}, ErrCode::kBadFlags, 0},
      {"HALT with a count", {with(halt(), 0, 1)}, ErrCode::kBadCount, 0},

      {"illegal opcode", {rw(kInput, 1, nn), illegal, halt()}, ErrCode::kIllegalOpcode, 1},
      {"zeroed instruction", {zero}, ErrCode::kIllegalOpcode, 0},
      {"reserved flag", {sync(0), bad_flags, halt()}, ErrCode::kBadFlags, 1},
      {"UB range", {rhm(uint32_t(ub - 6), 8, kInput, nn), halt()}, ErrCode::kUbRange, 0},
      {"UB range in a loop", {loop(3, 1, inc), rhm(50, 60, kInput, nn), halt()}, ErrCode::kUbRange, 1},
      {"ACC range", {rw(kInput, 1, nn), mmc(0, uint32_t(acc - 1), 2, false, true), halt()}, ErrCode::kAccRange, 1},
      {"bad count", {rw(kInput, 1, nn), mmc(0, 0, 0, false, true), halt()}, ErrCode::kBadCount, 1},
      {"loop body past the end", {loop_long}, ErrCode::kBadCount, imem - 6, {}, imem - 6},
      {"nested loop", {loop(2, 2), loop(2, 1), sync(0), halt()}, ErrCode::kNestedLoop, 1},
      {"bad CFG value", {cfg(0x001, 40), halt()}, ErrCode::kBadCfg, 0},
      {"bad CFG index", {cfg(0x100 + nn, 1), halt()}, ErrCode::kBadCfg, 0},
      {"CH_MULT past N", {cfg(0x300 + nn, 1), halt()}, ErrCode::kBadCfg, 0},
      {"CH_SHIFT 32", {cfg(0x400 + nn - 1, 32), halt()}, ErrCode::kBadCfg, 0},
      {"CH_SHIFT -32", {cfg(0x400, uint32_t(-32)), halt()}, ErrCode::kBadCfg, 0},
      {"RHM fault", {rhm(0, 16, kInput, nn), halt()}, ErrCode::kMemFault, 0, {{kInput + 5 * nn, 1}}},
      {"WHM fault", {rhm(0, 8, kInput, nn), whm(0, 8, kOutput, nn), halt()}, ErrCode::kMemFault, 1,
       {{kOutput + 7 * nn, 1}}},
      // The memory unit's two sides: the RHM's fault comes back first, but
      // the WHM before it faults too, and program order decides.
      {"WHM fault behind a younger RHM's",
       {rhm(0, 40, kInput, nn), whm(0, 40, kOutput, 2 * nn), rhm(40, 4, kInput + 0x1000, nn), halt()},
       ErrCode::kMemFault, 1, {{kOutput + 39 * 2 * nn, 1}, {kInput + 0x1000, 1}}},
      {"RW fault under a waiting MMC",
       {rw(kInput, 2, nn), rhm(0, 8, kInput + 0x1000, nn), mmc(0, 0, 8, false, true),
        mmc(0, 8, 8, false, true), halt()},
       ErrCode::kMemFault, 0, {{kInput + uint64_t(n) * n + 2 * nn, 1}}},
      {"PC range", pc_range, ErrCode::kPcRange, imem, {}, imem - 6},
      {"no weights", {rhm(0, 4, kInput, nn), mmc(0, 0, 4, false, false), halt()}, ErrCode::kNoWeights, 1},
      {"weight overflow", {rw(kInput, uint32_t(wgt), nn), rw(kInput, 3, nn), halt()}, ErrCode::kWgtOverflow, 1},
  };
}

TEST_F(CoreTest, EveryErrorCodeStopsAndRecovers) {
  std::vector<uint8_t> bytes(0x2000);
  for (auto& b : bytes) b = uint8_t(rand_int(0, 255));
  for (const ErrorCase& c : error_cases()) {
    SCOPED_TRACE(c.name);
    HostMemory mem;
    mem.write(kInput, bytes);
    for (auto [addr, len] : c.faults) mem.add_fault(addr, len);
    tpu::model::TpuModel model(config());
    model.load_program(c.start, c.prog);
    HostMemory model_mem = mem;
    const auto expect = model.run(c.start, model_mem);
    EXPECT_EQ(expect.err, c.code) << "model: " << isa::err_name(expect.err);
    EXPECT_EQ(expect.err_pc, c.pc) << "model";

    const tb::CoreRun got = run_rtl(c.prog, mem, {.latency = 6}, c.start);
    EXPECT_EQ(got.err, c.code) << "RTL: " << isa::err_name(got.err);
    EXPECT_EQ(got.err_pc, c.pc) << "RTL";
    // The next program runs normally on the same core.
    mem.clear_faults();
    check_gemm(9, 7, 6, {.latency = 4});
    if (HasFailure()) return;
  }
}

// ---------------------------------------------------------------------------
// The memory unit's write side starts a WHM while the one before it waits
// for its acknowledges (mem_wr_mover.sv). Acknowledges come back late here,
// so two WHMs are in flight: the second must not wait for the first's, and
// a fault must name the WHM whose acknowledge carried it.
// ---------------------------------------------------------------------------

TEST_F(CoreTest, TwoWhmsInFlightFinishAndFaultInProgramOrder) {
  using namespace isa;
  const uint32_t nn = uint32_t(N), rows = 16;
  const uint64_t out2 = kOutput + 0x1000;
  const std::vector<Instr> prog = {rhm(0, 2 * rows, kInput, nn), whm(0, rows, kOutput, nn),
                                   whm(rows, rows, out2, nn), halt()};
  std::vector<uint8_t> bytes(2 * rows * nn);
  for (auto& b : bytes) b = uint8_t(rand_int(0, 255));
  const int late = 40;

  // Both WHMs write their rows; with late acknowledges the program takes
  // one acknowledge delay longer, not two.
  uint64_t cycles[2] = {};
  for (int i = 0; i < 2; ++i) {
    HostMemory mem;
    mem.write(kInput, bytes);
    tpu::model::TpuModel model(config());
    const tb::CoreRun r = run_both(model, prog, mem, {.latency = 6, .ack_delay = i == 0 ? 1 : late},
                                   kOutput, 0x1000 + rows * nn, "two WHMs");
    ASSERT_EQ(r.err, ErrCode::kOk);
    EXPECT_EQ(mem.read(kOutput, rows * nn), std::vector<uint8_t>(bytes.begin(), bytes.begin() + rows * nn));
    EXPECT_EQ(mem.read(out2, rows * nn), std::vector<uint8_t>(bytes.begin() + rows * nn, bytes.end()));
    cycles[i] = r.cycles;
  }
  EXPECT_LT(cycles[1] - cycles[0], uint64_t(2 * (late - 1)))
      << "the second WHM waited for the first's acknowledge (" << cycles[0] << " and " << cycles[1]
      << " cycles)";

  struct Case {
    const char* name;
    std::vector<uint64_t> faults;  // host rows that fail
    uint32_t pc;
  };
  const Case cases[] = {
      {"the first WHM's last row", {kOutput + (rows - 1) * nn}, 1},
      {"the second WHM's first row", {out2}, 2},
      {"a row of each", {kOutput + 3 * nn, out2 + 5 * nn}, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    HostMemory mem;
    mem.write(kInput, bytes);
    for (uint64_t f : c.faults) mem.add_fault(f, 1);
    tpu::model::TpuModel model(config());
    model.load_program(0, prog);
    HostMemory model_mem = mem;
    const auto expect = model.run(0, model_mem);
    EXPECT_EQ(expect.err, ErrCode::kMemFault) << "model";
    EXPECT_EQ(expect.err_pc, c.pc) << "model";
    const tb::CoreRun got = run_rtl(prog, mem, {.latency = 6, .ack_delay = late});
    EXPECT_EQ(got.err, ErrCode::kMemFault) << "RTL: " << isa::err_name(got.err);
    EXPECT_EQ(got.err_pc, c.pc) << "RTL";
    check_gemm(9, 7, 6, {.latency = 6, .ack_delay = late});
    if (HasFailure()) return;
  }
}

// An MMC starts on the rows an RHM has already written (ctrl_scoreboard,
// unit_mmc): here it reads N of 16N rows, so it starts about when its first
// row is in, long before the load's last row; the results are the model's,
// with rows arriving at a steady rate or with gaps. An MMC that reads the
// load's last rows and then rows past its end starts no sooner than its
// first row is in. A fault in the load's last row is still the RHM's.
// (CoreTest.AnMmcFollowsItsLoadRowByRow measures the following itself.)
TEST_F(CoreTest, MmcStartsOnTheRowsAnRhmHasWritten) {
  using namespace isa;
  const uint32_t nn = uint32_t(N), rows = 16 * nn, lat = 20;
  if (CoreCfg::UbRows < int(rows) + int(nn)) GTEST_SKIP() << "needs " << rows + nn << " UB rows";
  const uint64_t tile = kInput + 0x10000;
  std::vector<uint8_t> a(rows * nn), w(nn * nn);
  for (auto& b : a) b = uint8_t(rand_int(0, 255));
  for (auto& b : w) b = uint8_t(rand_int(0, 255));
  const auto program = [&](uint32_t mmc_ub) {
    return std::vector<Instr>{rw(tile, 1, nn), rhm(0, rows, kInput, nn), mmc(mmc_ub, 0, nn, false, true),
                              halt()};
  };
  struct Case {
    const char* name;
    uint32_t mmc_ub;   // the MMC's first UB row
    double rsp_gap;    // rows held back
    bool early;        // it starts before the load's last row can be in
  };
  const Case cases[] = {
      {"the first rows, steady", 0, 0.0, true},
      {"the first rows, with gaps", 0, 0.3, true},
      {"rows in the middle", rows / 2, 0.0, true},
      {"the last rows and half past the end", rows - nn / 2, 0.0, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    HostMemory mem;
    mem.write(kInput, a);
    mem.write(tile, w);
    tpu::model::TpuModel model(config());
    const tb::CoreRun r = run_both(model, program(c.mmc_ub), mem, {.latency = int(lat), .rsp_gap = c.rsp_gap},
                                   kOutput, 16, c.name);
    ASSERT_EQ(r.err, ErrCode::kOk);
    ASSERT_NE(r.first_mxu_cycle, 0u);
    // The tile's N rows and then the load's cross the port one a cycle
    // after the latency: load row i lands after lat + N + i, the last after
    // lat + N + 16N.
    const uint64_t load_in = lat + nn + rows;
    EXPECT_GE(r.first_mxu_cycle, lat + nn + c.mmc_ub) << "the MMC started before its first row was in";
    if (c.early) EXPECT_LT(r.first_mxu_cycle, load_in) << "the MMC waited for the whole load";
  }

  HostMemory mem;
  mem.write(kInput, a);
  mem.write(tile, w);
  mem.add_fault(kInput + (rows - 1) * nn, 1);
  tpu::model::TpuModel model(config());
  const tb::CoreRun r = run_both(model, program(0), mem, {.latency = int(lat)}, kOutput, 16, "a fault");
  EXPECT_EQ(r.err, ErrCode::kMemFault);
  EXPECT_EQ(r.err_pc, 1u);
  check_gemm(9, 7, 6, {.latency = int(lat)});
}

// ---------------------------------------------------------------------------
// The bf16 forms of the instructions (docs/isa.md) in this int8 core: the RTL
// and the model both reject every one, BAD_FLAGS for the flags and BAD_CFG
// for the fp32 registers, and the core works on afterwards.
// ---------------------------------------------------------------------------

TEST_F(CoreTest, Bf16FormsAreRejectedInAnInt8Core) {
  using namespace isa;
  if (config().datapath != tpu::Datapath::kInt8) GTEST_SKIP() << "a bf16 configuration: core_bf16_test.cpp";
  const uint32_t nn = uint32_t(N);
  struct Case {
    const char* name;
    std::vector<Instr> prog;
    ErrCode code;
    uint32_t pc;
  };
  const Case cases[] = {
      {"RHM WIDE", {rhm(0, 1, kInput, 2 * nn, true), halt()}, ErrCode::kBadFlags, 0},
      {"WHM WIDE", {whm(0, 1, kOutput, 2 * nn, true), halt()}, ErrCode::kBadFlags, 0},
      {"RW BF16", {rw(kInput, 1, 2 * nn, true), halt()}, ErrCode::kBadFlags, 0},
      {"MMC BF16 on an int8 tile", {rw(kInput, 1, nn), mmc(0, 0, 1, false, true, true), halt()},
       ErrCode::kBadFlags, 1},
      {"ACT F32", {act(0, 0, 1, Act::kRelu, true, false, true), halt()}, ErrCode::kBadFlags, 0},
      {"ACT F32 RAW", {act(0, 0, 1, Act::kNone, false, true, true), halt()}, ErrCode::kBadFlags, 0},
      {"VOP BF16", {vop(VopOp::kAdd, 0, 2, 4, 1, 0, true), halt()}, ErrCode::kBadFlags, 0},
      {"VOP BF16 pool", {vop(VopOp::kPoolAvg, 0, 0, 4, 1, 1, true), halt()}, ErrCode::kBadFlags, 0},
      {"CFG SCALE", {cfg(kCfgScale, 0x3F800000), halt()}, ErrCode::kBadCfg, 0},
      {"CFG RELU6_F32", {cfg(kCfgRelu6F32, 0x40C00000), halt()}, ErrCode::kBadCfg, 0},
      {"CFG FMIN", {cfg(kCfgFmin, 0xFF800000), halt()}, ErrCode::kBadCfg, 0},
      {"CFG FMAX", {sync(0), cfg(kCfgFmax, 0x7F800000), halt()}, ErrCode::kBadCfg, 1},
  };
  std::vector<uint8_t> bytes(0x2000);
  for (auto& b : bytes) b = uint8_t(rand_int(0, 255));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    HostMemory mem;
    mem.write(kInput, bytes);
    tpu::model::TpuModel model(config());
    HostMemory model_mem = mem;
    model.load_program(0, c.prog);
    const auto expect = model.run(0, model_mem);
    EXPECT_EQ(expect.err, c.code) << "model: " << isa::err_name(expect.err);
    EXPECT_EQ(expect.err_pc, c.pc) << "model";
    const tb::CoreRun got = run_rtl(c.prog, mem, {.latency = 6});
    EXPECT_EQ(got.err, c.code) << "RTL: " << isa::err_name(got.err);
    EXPECT_EQ(got.err_pc, c.pc) << "RTL";
  }
  check_gemm(9, 7, 6, {.latency = 4});
}

// ---------------------------------------------------------------------------
// The memory unit's two sides: an RHM and a WHM run at once only when their
// UB rows and host bytes are apart.
// ---------------------------------------------------------------------------

TEST_F(CoreTest, ReadsAndWritesOverlapOnlyWhenApart) {
  constexpr uint32_t R = 32;  // rows of each transfer
  const uint64_t x = kOutput, y = kOutput + 0x1000, z = kOutput + 0x2000;
  HostMemory mem;
  std::vector<uint8_t> bytes(0x4000);
  for (auto& b : bytes) b = uint8_t(rand_int(0, 255));
  mem.write(kInput, bytes);
  mem.write(x, std::span<const uint8_t>(bytes).subspan(0x2000, R * N));
  // Reads answer late and writes trickle, so a side that ran ahead of the
  // other would be seen.
  const tb::MemoryTiming slow{60, 0.3, 0.2};
  tpu::model::TpuModel model(config());
  using namespace isa;
  const struct {
    const char* what;
    std::vector<Instr> prog;
  } cases[] = {
      {"a WHM to bytes an RHM before it reads",
       {rhm(R, R, kInput, N), rhm(0, R, x, N), whm(R, R, x, N), whm(0, R, y, N), halt()}},
      {"an RHM of bytes a WHM before it writes",
       {rhm(0, R, kInput, N), whm(0, R, y, N), rhm(2 * R, R, y, N), whm(2 * R, R, z, N), halt()}},
      {"an RHM into UB rows a WHM before it reads",
       {rhm(0, R, kInput, N), whm(0, R, y, N), rhm(0, R, kInput + 0x1000, N), whm(0, R, z, N), halt()}},
      {"a WHM of UB rows an RHM before it writes",
       {rhm(0, R, kInput, N), rhm(0, R, kInput + 0x1000, N), whm(0, R, y, N), halt()}},
  };
  for (const auto& c : cases) {
    run_both(model, c.prog, mem, slow, kOutput, 0x4000, c.what);
    if (HasFailure()) return;
  }

  // A younger RHM that faults while an older WHM moves: the WHM finishes
  // (program order), then the fault is reported.
  {
    const std::vector<Instr> prog{rhm(0, R, kInput, N), whm(0, R, z, 2 * N), rhm(R, 4, kInput + 0x1000, N), halt()};
    HostMemory rtl_mem = mem, model_mem = mem;
    rtl_mem.add_fault(kInput + 0x1000, 1);
    model_mem.add_fault(kInput + 0x1000, 1);
    model.load_program(0, prog);
    const auto expect = model.run(0, model_mem);
    // Reads answer fast, so the RHM's fault comes back while the WHM still
    // has rows to request.
    const tb::CoreRun got = run_rtl(prog, rtl_mem, {6, 0.3, 0.0});
    EXPECT_EQ(got.err, ErrCode::kMemFault);
    EXPECT_EQ(got.err_pc, expect.err_pc);
    EXPECT_EQ(rtl_mem.read(z, 2 * N * R), model_mem.read(z, 2 * N * R)) << "the older WHM did not finish";
    if (HasFailure()) return;
  }

  // Apart, they overlap: a read and a write together take well under the
  // two one after the other.
  const tb::MemoryTiming link{200, 0.0, 0.0};
  const auto cycles = [&](std::vector<Instr> prog) {
    prog.push_back(halt());
    return run_both(model, prog, mem, link, kOutput, 0x4000, disassemble(prog)).cycles;
  };
  const uint64_t rd = cycles({rhm(0, 4 * R, kInput, N)}), wr = cycles({whm(4 * R, 4 * R, z, N)});
  const uint64_t both = cycles({rhm(0, 4 * R, kInput, N), whm(4 * R, 4 * R, z, N)});
  EXPECT_LT(both, (rd + wr) * 3 / 4) << "RHM alone " << rd << " cycles, WHM alone " << wr << ", both " << both;
}

// ---------------------------------------------------------------------------
// Overlap: a compute-bound GEMM keeps the MXU busy between the first MMC and
// the last ACT.
// ---------------------------------------------------------------------------

TEST_F(CoreTest, ComputeBoundGemmOverlap) {
  constexpr int M = 128, Kb = 8, Nb = 8;  // 128 x 8N x 8N
  if (CoreCfg::UbRows < (Kb + Nb) * M || CoreCfg::AccRows < 2 * M)
    GTEST_SKIP() << "needs " << (Kb + Nb) * M << " UB rows and " << 2 * M << " ACC rows";
  HostMemory mem;
  const MatrixI8 a = random_matrix(M, Kb * N), w = random_matrix(Kb * N, Nb * N);
  // A as Kb column blocks of M rows; tile (j, k) stored contiguously.
  for (int k = 0; k < Kb; ++k)
    for (int i = 0; i < M; ++i)
      mem.write(kInput + uint64_t(k * M + i) * N, std::span<const int8_t>(&a.at(i, k * N), N));
  const uint64_t tiles = kScratch;
  for (int j = 0; j < Nb; ++j)
    for (int k = 0; k < Kb; ++k)
      for (int r = 0; r < N; ++r)
        mem.write(tiles + uint64_t((j * Kb + k) * N + r) * N, std::span<const int8_t>(&w.at(k * N + r, j * N), N));

  tpu::model::TpuModel model(config());
  const std::vector<isa::Instr> load{isa::rhm(0, Kb * M, kInput, N), isa::halt()};
  run_both(model, load, mem, {}, kOutput, 16, "load A");

  // Weights run two tiles ahead of the MMCs; ACC regions alternate per column
  // tile so the ACT of tile j overlaps the MMCs of tile j+1.
  std::vector<isa::Instr> prog{isa::cfg(0x000, 0x4c000000), isa::cfg(0x001, 12),
                               isa::rw(tiles, 2, N)};
  const int total = Nb * Kb;
  for (int t = 0; t < total; ++t) {
    const int j = t / Kb, k = t % Kb;
    if (t + 2 < total) prog.push_back(isa::rw(tiles + uint64_t(t + 2) * N * N, 1, N));
    prog.push_back(isa::mmc(uint32_t(k * M), uint32_t((j % 2) * M), M, k > 0, true));
    if (k == Kb - 1)
      prog.push_back(isa::act(uint32_t((j % 2) * M), uint32_t(Kb * M + j * M), M, isa::Act::kRelu, false));
  }
  prog.push_back(isa::halt());
  const tb::CoreRun r = run_both(model, prog, mem, {}, kOutput, 16, "GEMM");
  ASSERT_EQ(r.err, ErrCode::kOk);

  const uint64_t window = r.cycles - r.first_mxu_cycle;
  const double util = double(r.perf.mxu_busy) / double(window);
  std::printf("[ core N=%d ] GEMM %dx%dx%d: cycles %llu, MXU busy %llu of %llu cycles between the "
              "first MMC row and the end (%.2f%%), useful MACs %llu, weight stall %llu, weight shift "
              "%llu, dependency stall %llu, memory stall %llu\n",
              N, M, Kb * N, Nb * N, (unsigned long long)r.perf.cycles, (unsigned long long)r.perf.mxu_busy,
              (unsigned long long)window, 100.0 * util, (unsigned long long)r.perf.useful_macs,
              (unsigned long long)r.perf.wgt_stall, (unsigned long long)r.perf.wgt_shift,
              (unsigned long long)r.perf.dep_stall, (unsigned long long)r.perf.mem_stall);
  RecordProperty("mxu_utilization_percent", std::to_string(100.0 * util));
  EXPECT_EQ(r.perf.useful_macs, uint64_t(M) * Kb * Nb * N * N);
  EXPECT_GE(util, 0.95) << "the units do not overlap enough";
}

}  // namespace
