// SPDX-License-Identifier: Apache-2.0
// The bf16 forms of the instructions on the RTL core (docs/numerics.md, "bf16
// through the core"), in configurations whose datapath is bf16 or both: the
// GEMM programs of bf16_gemm.h run on the RTL and on the reference model and
// everything they leave (UB, ACC, host memory, error code and instruction) is
// compared bit for bit; the GEMM results are also checked against
// bf16_gemm::reference, written from the documented order of additions. In
// int8 configurations every test is skipped (core_program_test.cpp checks
// that they reject the bf16 forms).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bf16_gemm.h"
#include "core_fixture.h"

namespace {

using namespace core_tb;
namespace gemm = tpu::model::bf16_gemm;
using gemm::MatrixBf16;
using gemm::MatrixF32;
using tpu::bf16;
using tpu::fp32;

class CoreBf16Test : public CoreTest {
 protected:
  void SetUp() override {
    CoreTest::SetUp();
    if (!tpu::has_bf16(config().datapath))
      GTEST_SKIP() << "an int8 configuration (" << TB_CONFIG_NAME << ")";
  }

  // A normal bf16 of magnitude 2^-7 .. 2^8, or now and then a special value:
  // zeros, infinities, NaNs, subnormals (read as zeros), the largest finite
  // value, the smallest normal, and large values whose products overflow.
  bf16 rand_bf16(double special = 0.0) {
    static constexpr bf16 kSpecial[] = {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81,
                                        0x0001, 0x8040, 0x007F, 0x7F7F, 0xFF7F, 0x0080, 0x8080,
                                        0x3F80, 0xBF80, 0x7F00, 0xFE80, 0x0100, 0x4000};
    if (chance(special)) return kSpecial[rand_int(0, int64_t(std::size(kSpecial)) - 1)];
    const uint32_t sign = uint32_t(rand_int(0, 1)), exp = uint32_t(rand_int(120, 135)),
                   frac = uint32_t(rand_int(0, 127));
    return bf16(sign << 15 | exp << 7 | frac);
  }
  MatrixBf16 random_bf16(int rows, int cols, double special = 0.0) {
    MatrixBf16 m(rows, cols);
    for (bf16& v : m.data) v = rand_bf16(special);
    return m;
  }

  // ACT F32 RAW with the fp32 registers at their reset values writes the
  // accumulators' bits unchanged, as ACT RAW does: the same programs through
  // the plain RAW copy (no CFG of the fp32 registers, ACT RAW instead).
  static std::vector<isa::Instr> through_act_raw(const std::vector<isa::Instr>& prog) {
    std::vector<isa::Instr> out;
    for (isa::Instr in : prog) {
      if (in.op == uint8_t(isa::Op::kCfg) && in.a >= isa::kCfgScale && in.a <= isa::kCfgFmax) continue;
      if (in.op == uint8_t(isa::Op::kAct) && (in.flags & isa::kFlagActF32Mask))
        in.flags = uint8_t(isa::kFlagActRawMask);
      out.push_back(in);
    }
    return out;
  }

  // Runs A x W through bf16_gemm's programs on the RTL and, with the same
  // state as the RTL core (one model per test, from program to program and
  // GEMM to GEMM), on the model, and checks the result against the
  // reference. Without `compare` (after programs run on the RTL alone) only
  // the result is checked. Returns the cycles of all programs on the RTL.
  uint64_t check_bf16_gemm(const MatrixBf16& a, const MatrixBf16& w, bool act_raw,
                           gemm::Output output = gemm::Output::kRawF32,
                           const gemm::Epilogue& epilogue = {}, const tb::MemoryTiming& timing = {},
                           bool compare = true) {
    HostMemory mem;
    if (!model_) model_ = std::make_unique<tpu::model::TpuModel>(config());
    tpu::model::TpuModel& model = *model_;
    const gemm::Programs p = gemm::build(mem, a, w, config(), output, epilogue);
    const std::string what = "bf16 GEMM " + std::to_string(a.rows) + "x" + std::to_string(a.cols) +
                             "x" + std::to_string(w.cols) + (act_raw ? " (ACT RAW)" : "");
    const uint64_t out_len = uint64_t(p.m) * uint64_t(p.jp) * (output == gemm::Output::kRawF32 ? 4 : 2);
    uint64_t cycles = 0;
    for (size_t i = 0; i < p.programs.size(); ++i) {
      const std::vector<isa::Instr> prog = act_raw ? through_act_raw(p.programs[i]) : p.programs[i];
      const tb::CoreRun r = compare ? run_both(model, prog, mem, timing, p.addrs.c, out_len,
                                               what + ", program " + std::to_string(i))
                                    : run_rtl(prog, mem, timing);
      EXPECT_EQ(r.err, ErrCode::kOk) << what << ": " << isa::err_name(r.err) << " at " << r.err_pc;
      cycles += r.cycles;
      if (HasFailure()) return cycles;
    }
    // With the default epilogue the fp32 results are the accumulators.
    const gemm::Epilogue plain;
    if (output == gemm::Output::kRawF32 && epilogue.bias.empty() && epilogue.func == isa::Act::kNone &&
        epilogue.scale == plain.scale && epilogue.fmin == plain.fmin && epilogue.fmax == plain.fmax) {
      const MatrixF32 got = gemm::read_result(mem, p), expect = gemm::reference(a, w, N);
      for (size_t i = 0; i < got.data.size(); ++i) {
        EXPECT_EQ(got.data[i], expect.data[i]) << what << ": element " << i / size_t(got.cols) << ","
                                               << i % size_t(got.cols) << " differs from the reference";
        if (HasFailure()) break;
      }
    }
    return cycles;
  }

  std::unique_ptr<tpu::model::TpuModel> model_;
};

// ---------------------------------------------------------------------------
// GEMMs: MMC BF16 with ACC accumulation, results through ACT RAW
// ---------------------------------------------------------------------------

struct Shape {
  int m, k, j;
};

TEST_F(CoreBf16Test, GemmShapesThroughActRaw) {
  // 1x1x1, primes, shapes that are not multiples of N, several K blocks.
  const Shape shapes[] = {{1, 1, 1}, {1, 2, 3}, {7, 5, 3}, {13, 11, 9}, {2 * N + 1, 3 * N - 1, N + 1},
                          {17, 37, 6}, {N, N, N}, {3, 2 * N, 2 * N}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.j));
    const tb::MemoryTiming timing{int(rand_int(1, 20)), double(rand_int(0, 3)) / 10, double(rand_int(0, 3)) / 10};
    check_bf16_gemm(random_bf16(s.m, s.k), random_bf16(s.k, s.j), true, gemm::Output::kRawF32, {}, timing);
    if (HasFailure()) return;
  }
}

TEST_F(CoreBf16Test, LongKAccumulatesInFp32ThroughActRaw) {
  // K from one block to a few thousand: K / N passes added into the ACC.
  for (const int k : {1, N - 1, N + 1, 257, 1031, 4099}) {
    SCOPED_TRACE("K = " + std::to_string(k));
    check_bf16_gemm(random_bf16(3, k), random_bf16(k, N + 1), true);
    if (HasFailure()) return;
  }
}

TEST_F(CoreBf16Test, Gemm64x64x64) {
  // bf16_gemm.h's plan (one tile per pass, no weight prefetch): correct,
  // and its cycles printed for docs/numerics.md.
  const MatrixBf16 a = random_bf16(64, 64), w = random_bf16(64, 64);
  const uint64_t raw = check_bf16_gemm(a, w, false, gemm::Output::kRawF32);
  const uint64_t bf = check_bf16_gemm(a, w, false, gemm::Output::kBf16);
  std::printf("[ core N=%d ] bf16 GEMM 64x64x64 with bf16_gemm.h's programs: %llu cycles with fp32 "
              "results (ACT F32 RAW), %llu with bf16 results\n",
              N, (unsigned long long)raw, (unsigned long long)bf);
  RecordProperty("cycles_fp32_out", std::to_string(raw));
}

TEST_F(CoreBf16Test, ComputeBoundGemmOverlap) {
  // CoreTest.ComputeBoundGemmOverlap in bf16: A and every weight tile loaded
  // ahead, MMC BF16 back to back (both halves of each wide row from the UB
  // in the same cycle), ACT F32 of one column tile beside the MMCs of the
  // next. Prints the counters.
  constexpr int M = 128, Kb = 8, Nb = 8;  // 128 x 8N x 8N, as the int8 test
  if (CoreCfg::UbRows < 2 * (Kb + Nb) * M || CoreCfg::AccRows < 2 * M)
    GTEST_SKIP() << "needs " << 2 * (Kb + Nb) * M << " UB rows and " << 2 * M << " ACC rows";
  HostMemory mem;
  const uint64_t row = 2 * uint64_t(N);  // bytes of a wide row
  for (int k = 0; k < Kb; ++k)
    for (int i = 0; i < M; ++i)
      for (int c = 0; c < N; ++c) mem.write16(kInput + uint64_t(k * M + i) * row + 2 * uint64_t(c), rand_bf16());
  const uint64_t tiles = kScratch;
  for (int t = 0; t < Nb * Kb; ++t)
    for (int r = 0; r < N; ++r)
      for (int c = 0; c < N; ++c) mem.write16(tiles + uint64_t(t * N + r) * row + 2 * uint64_t(c), rand_bf16());

  tpu::model::TpuModel model(config());
  run_both(model, {isa::rhm(0, Kb * M, kInput, uint32_t(row), true), isa::halt()}, mem, {}, kOutput, 16, "load A");
  std::vector<isa::Instr> prog{isa::rw(tiles, 2, uint32_t(row), true)};
  const int total = Nb * Kb;
  for (int t = 0; t < total; ++t) {
    const int j = t / Kb, k = t % Kb;
    if (t + 2 < total) prog.push_back(isa::rw(tiles + uint64_t(t + 2) * N * row, 1, uint32_t(row), true));
    prog.push_back(isa::mmc(uint32_t(2 * k * M), uint32_t((j % 2) * M), M, k > 0, true, true));
    if (k == Kb - 1)
      prog.push_back(isa::act(uint32_t((j % 2) * M), uint32_t(2 * Kb * M + 2 * j * M), M, isa::Act::kRelu,
                              false, false, true));
  }
  prog.push_back(isa::halt());
  const tb::CoreRun r = run_both(model, prog, mem, {}, kOutput, 16, "bf16 GEMM");
  ASSERT_EQ(r.err, ErrCode::kOk);
  const uint64_t window = r.cycles - r.first_mxu_cycle;
  const double util = double(r.perf.mxu_busy) / double(window);
  std::printf("[ core N=%d ] bf16 GEMM %dx%dx%d: cycles %llu, MXU busy %llu of %llu cycles between the "
              "first MMC row and the end (%.2f%%), useful MACs %llu, weight stall %llu, dependency stall "
              "%llu\n",
              N, M, Kb * N, Nb * N, (unsigned long long)r.perf.cycles, (unsigned long long)r.perf.mxu_busy,
              (unsigned long long)window, 100.0 * util, (unsigned long long)r.perf.useful_macs,
              (unsigned long long)r.perf.wgt_stall, (unsigned long long)r.perf.dep_stall);
  RecordProperty("mxu_utilization_percent", std::to_string(100.0 * util));
  EXPECT_EQ(r.perf.useful_macs, uint64_t(M) * Kb * Nb * N * N);
  EXPECT_GE(util, 0.95) << "the units do not overlap enough";
}

TEST_F(CoreBf16Test, SpecialValuesThroughActRaw) {
  // A fifth of the operands special: NaN in, inf x 0, inf - inf, products
  // and sums past the largest finite value, subnormals read as zeros.
  for (int rep = 0; rep < 6; ++rep) {
    const double special = rep < 3 ? 0.2 : 0.05;
    check_bf16_gemm(random_bf16(9, 3 * N + 1, special), random_bf16(3 * N + 1, N + 3, special), true);
    if (HasFailure()) return;
  }
}

TEST_F(CoreBf16Test, ExactCancellationAndSignedZerosThroughActRaw) {
  // Row i: x, x, -x, ... against column j: u, -u, u, ...: every column sum
  // cancels exactly (+0), within a pass and across passes; a column of -0
  // products gives +0 (the top PE's +0 comes first); max finite values sum
  // to infinity; tiny products are flushed with their sign.
  const int k = 2 * N + 2;
  MatrixBf16 a(4, k), w(k, N);
  for (int c = 0; c < k; ++c) {
    a.at(0, c) = bf16(c % 2 ? 0x4040 : 0xC040);  // +-3
    a.at(1, c) = bf16(0x8000);                  // -0
    a.at(2, c) = bf16(0x7F7F);                  // max finite
    a.at(3, c) = bf16(0x0180);                  // 2^-124 (products flush)
  }
  for (int r = 0; r < k; ++r)
    for (int j = 0; j < N; ++j) w.at(r, j) = bf16(j % 2 ? 0x3F80 : (r % 2 ? 0x3FC0 : 0xBFC0));
  check_bf16_gemm(a, w, true);
}

// ---------------------------------------------------------------------------
// GEMMs through the VPU's fp32 path: ACT F32 (RAW: fp32 results; else bf16)
// ---------------------------------------------------------------------------

TEST_F(CoreBf16Test, GemmShapesThroughActF32) {
  const Shape shapes[] = {{1, 1, 1}, {7, 5, 3}, {2 * N + 1, 3 * N - 1, N + 1}, {17, 37, 6}, {3, 2 * N, 2 * N}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.j));
    const MatrixBf16 a = random_bf16(s.m, s.k, 0.03), w = random_bf16(s.k, s.j, 0.03);
    const tb::MemoryTiming timing{int(rand_int(1, 20)), double(rand_int(0, 3)) / 10, double(rand_int(0, 3)) / 10};
    check_bf16_gemm(a, w, false, gemm::Output::kRawF32, {}, timing);  // against the reference too
    check_bf16_gemm(a, w, false, gemm::Output::kBf16, {}, timing);
    if (HasFailure()) return;
  }
  // K = 1031: 1031 / N passes accumulated, then ACT F32 RAW.
  check_bf16_gemm(random_bf16(2, 1031), random_bf16(1031, N - 1), false);
}

TEST_F(CoreBf16Test, ActF32EpiloguesMatchTheModel) {
  // Bias, SCALE, ReLU, ReLU6 and the clamp, in their order, with special
  // values in the accumulators, the biases and the registers: NaN, infinities,
  // subnormals, a SCALE that flushes products, a ReLU6 bound below FMIN
  // (crossed bounds give hi), ties of the bf16 rounding.
  const fp32 kNan = 0x7FC00000u, kInf = 0x7F800000u, kNegInf = 0xFF800000u;
  const int j = N + 3;
  auto bias = [&](double special) {
    std::vector<fp32> b(static_cast<size_t>(j));
    for (fp32& v : b) v = chance(special) ? (chance(0.5) ? kNan : 0x00400000u) : tpu::bf16_to_fp32(rand_bf16()) | uint32_t(rand_int(0, 0xFFFF));
    return b;
  };
  struct Setting {
    const char* name;
    gemm::Epilogue e;
  };
  const Setting settings[] = {
      {"bias", {.bias = bias(0.0)}},
      {"bias with NaN and subnormals, ReLU", {.bias = bias(0.3), .func = isa::Act::kRelu}},
      {"SCALE 0.5, ReLU6", {.func = isa::Act::kRelu6, .scale = 0x3F000000u}},
      {"SCALE 1.00000012, ReLU6 2.5, clamp [-1, 4]",
       {.bias = bias(0.0), .func = isa::Act::kRelu6, .scale = 0x3F800001u, .relu6 = 0x40200000u,
        .fmin = 0xBF800000u, .fmax = 0x40800000u}},
      {"SCALE 2^-120 (products flush)", {.scale = 0x03800000u}},
      {"SCALE 2^100 (products overflow)", {.func = isa::Act::kRelu, .scale = 0x71800000u}},
      {"NaN SCALE", {.scale = kNan}},
      {"crossed bounds", {.fmin = 0x40000000u, .fmax = 0xC0000000u}},
      {"infinite bounds swapped", {.func = isa::Act::kRelu6, .relu6 = kNegInf, .fmin = kInf, .fmax = kNegInf}},
      {"subnormal SCALE", {.scale = 0x00000001u}},
  };
  for (const Setting& st : settings) {
    SCOPED_TRACE(st.name);
    const MatrixBf16 a = random_bf16(11, 2 * N + 1, 0.05), w = random_bf16(2 * N + 1, j, 0.05);
    check_bf16_gemm(a, w, false, gemm::Output::kRawF32, st.e);
    check_bf16_gemm(a, w, false, gemm::Output::kBf16, st.e);
    if (HasFailure()) return;
  }
}

// ---------------------------------------------------------------------------
// Wide rows, weight formats and errors, RTL against the model
// ---------------------------------------------------------------------------

TEST_F(CoreBf16Test, WideRowsMoveWithAnyStride) {
  tpu::model::TpuModel model(config());
  HostMemory mem;
  std::vector<uint8_t> bytes(0x4000);
  for (auto& b : bytes) b = uint8_t(rand_int(0, 255));
  mem.write(kInput, bytes);
  const uint32_t nn = uint32_t(N);
  const std::vector<isa::Instr> prog{
      isa::rhm(0, 5, kInput, 2 * nn, true),          // contiguous: one burst
      isa::rhm(10, 3, kInput + 7, 3 * nn + 5, true), // one request per wide row
      isa::rhm(17, 2, kInput + 64, nn, false),       // narrow rows between
      isa::whm(0, 8, kOutput, 2 * nn, true),
      isa::whm(2, 4, kOutput + 0x1000, 5 * nn + 3, true),
      isa::whm(16, 3, kOutput + 0x2000, nn, false),
      isa::halt()};
  run_both(model, prog, mem, {.latency = 9, .req_stall = 0.2, .rsp_gap = 0.2}, kOutput, 0x3000, "wide rows");
}

TEST_F(CoreBf16Test, ErrorsOfTheBf16FormsMatchTheModel) {
  using namespace isa;
  const uint32_t nn = uint32_t(N), ub = uint32_t(CoreCfg::UbRows), acc = uint32_t(CoreCfg::AccRows);
  const uint32_t cap = uint32_t(CoreCfg::WgtFifoTiles) + 2;
  struct Case {
    const char* name;
    std::vector<Instr> prog;
    ErrCode code;
    uint32_t pc;
  };
  std::vector<Case> cases = {
      {"MMC BF16 on an int8 tile", {rw(kInput, 1, nn), mmc(0, 0, 1, false, true, true), halt()},
       ErrCode::kWgtFormat, 1},
      {"MMC int8 on a bf16 tile", {rw(kInput, 1, 2 * nn, true), mmc(0, 0, 1, false, true, false), halt()},
       ErrCode::kWgtFormat, 1},
      {"the second tile's format", {rw(kInput, 1, 2 * nn, true), rw(kInput, 1, nn), mmc(0, 0, 1, false, true, true),
                                    mmc(0, 0, 1, false, true, true), halt()},
       ErrCode::kWgtFormat, 3},
      {"NO_WEIGHTS before WGT_FORMAT", {mmc(0, 0, 1, false, true, true), halt()}, ErrCode::kNoWeights, 0},
      {"UB_RANGE before WGT_FORMAT", {rw(kInput, 1, nn), mmc(ub - 1, 0, 1, false, true, true), halt()},
       ErrCode::kUbRange, 1},
      {"ACC_RANGE of MMC BF16", {rw(kInput, 1, 2 * nn, true), mmc(0, acc, 1, false, true, true), halt()},
       ErrCode::kAccRange, 1},
      {"WGT_OVERFLOW over both formats", {rw(kInput, cap - 1, nn), rw(kInput, 2, 2 * nn, true), halt()},
       ErrCode::kWgtOverflow, 1},
      {"RHM WIDE past the UB", {rhm(ub - 3, 2, kInput, 2 * nn, true), halt()}, ErrCode::kUbRange, 0},
      {"WHM WIDE past the UB", {whm(ub - 1, 1, kOutput, 2 * nn, true), halt()}, ErrCode::kUbRange, 0},
      {"ACT F32 past the UB", {act(0, ub - 3, 2, Act::kNone, false, false, true), halt()}, ErrCode::kUbRange, 0},
      {"ACT F32 RAW past the UB", {act(0, ub - 4, 2, Act::kNone, false, true, true), halt()}, ErrCode::kUbRange, 0},
      {"ACT F32 LUT", {act(0, 0, 1, Act::kLut, false, false, true), halt()}, ErrCode::kBadFlags, 0},
      {"ACT RAW BIAS without F32", {act(0, 0, 1, Act::kNone, true, true, false), halt()}, ErrCode::kBadFlags, 0},
      {"VOP BF16 MUL with a shift", {vop(VopOp::kMul, 0, 2, 4, 1, 1, true), halt()}, ErrCode::kBadFlags, 0},
      {"VOP BF16 past the UB", {vop(VopOp::kAdd, 0, ub - 3, 4, 2, 0, true), halt()}, ErrCode::kUbRange, 0},
      {"VOP BF16 pool past the UB", {vop(VopOp::kPoolMax, ub - 6, 0, 0, 2, 1, true), halt()}, ErrCode::kUbRange, 0},
      {"a memory fault in the second half of a wide row", {rhm(0, 4, kScratch, 2 * nn, true), halt()},
       ErrCode::kMemFault, 0},
      {"a memory fault in an RW BF16 row", {rw(kScratch, 1, 2 * nn, true), halt()}, ErrCode::kMemFault, 0},
  };
  if (config().datapath == tpu::Datapath::kBf16)
    cases.push_back({"RW without BF16 in a bf16 core", {rw(kInput, 1, nn), halt()}, ErrCode::kBadFlags, 0});
  std::vector<uint8_t> bytes(0x4000);
  for (auto& b : bytes) b = uint8_t(rand_int(0, 255));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    HostMemory mem;
    mem.write(kInput, bytes);
    mem.write(kScratch, bytes);
    mem.add_fault(kScratch + 3 * N + 1, 1);  // the second half of wide row 1
    tpu::model::TpuModel model(config());
    HostMemory model_mem = mem;
    model.load_program(0, c.prog);
    const auto expect = model.run(0, model_mem);
    EXPECT_EQ(expect.err, c.code) << "model: " << isa::err_name(expect.err);
    EXPECT_EQ(expect.err_pc, c.pc) << "model";
    const tb::CoreRun got = run_rtl(c.prog, mem, {.latency = 6});
    EXPECT_EQ(got.err, c.code) << "RTL: " << isa::err_name(got.err);
    EXPECT_EQ(got.err_pc, c.pc) << "RTL";
    if (HasFailure()) return;
  }
  // The core works on: a bf16 and an int8 GEMM.
  check_bf16_gemm(random_bf16(5, N + 1), random_bf16(N + 1, 3), true, gemm::Output::kRawF32, {}, {}, false);
  if (tpu::has_int8(config().datapath)) check_gemm(9, 7, 6, {.latency = 4});
}

// ---------------------------------------------------------------------------
// VOP BF16: element-wise operations and pools on wide rows
// ---------------------------------------------------------------------------

TEST_F(CoreBf16Test, VopBf16MatchesTheModel) {
  // UB filled with bf16 lanes (a tenth of them special), then every
  // operation, every pool window, in place, overlapping (serial) and apart.
  const int ub = CoreCfg::UbRows;
  HostMemory mem;
  std::vector<uint8_t> bytes(size_t(ub) * N);
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    const bf16 v = rand_bf16(0.1);
    bytes[i] = uint8_t(v);
    bytes[i + 1] = uint8_t(v >> 8);
  }
  mem.write(kInput, bytes);
  using namespace isa;
  const uint32_t rows = uint32_t(ub / 2);  // wide rows in the UB
  tpu::model::TpuModel model(config());
  run_both(model, {rhm(0, rows, kInput, uint32_t(2 * N), true), halt()}, mem, {}, kOutput, 16, "load");
  const uint32_t q = rows / 8;  // a block of wide rows: 2q UB rows
  std::vector<Instr> prog{
      vop(VopOp::kAdd, 0, 2 * q, 4 * q, q, 0, true),
      vop(VopOp::kMul, 2, 2 * q + 6, 6 * q, q - 3, 0, true),
      vop(VopOp::kMax, 4 * q, 0, 4 * q, q, 0, true),          // in place
      vop(VopOp::kAdd, 6 * q, 2 * q, 6 * q + 2, q - 1, 0, true),  // overlapping: serial
      vop(VopOp::kMul, 2 * q, 2 * q, 2 * q, 3, 0, true),
      vop(VopOp::kMul, 2 * q, 0, 2 * q + 1, q - 1, 0, true),      // odd offset: a wide row reads
      vop(VopOp::kMax, 8 * q + 1, 8 * q, 8 * q, q - 1, 0, true),  // rows its result overwrites
  };
  for (int shift = 0; shift <= 4; ++shift) {
    const uint32_t groups = std::max(1u, (q >> shift) / 2);
    prog.push_back(vop(VopOp::kPoolMax, 0, 0, 10 * q + 2 * uint32_t(shift), groups, shift, true));
    prog.push_back(vop(VopOp::kPoolAvg, 2 * q, 0, 12 * q + 2 * uint32_t(shift), groups, shift, true));
  }
  prog.push_back(vop(VopOp::kPoolAvg, 4 * q, 0, 4 * q, q / 2, 1, true));      // in place
  prog.push_back(vop(VopOp::kPoolMax, 6 * q, 0, 6 * q + 1, q / 4, 2, true));  // odd offset: serial
  prog.push_back(vop(VopOp::kAdd, 0, 1, 2 * q + 1, q, 0, true));              // odd rows
  prog.push_back(whm(0, uint32_t(ub), kOutput, uint32_t(N)));
  prog.push_back(halt());
  run_both(model, prog, mem, {.latency = 3, .req_stall = 0.2}, kOutput, uint64_t(ub) * N,
           "VOP BF16:\n" + isa::disassemble(prog));
}

TEST_F(CoreBf16Test, Int8AndBf16GemmsShareTheCore) {
  if (!tpu::has_int8(config().datapath)) GTEST_SKIP() << "a bf16-only configuration";
  // Tiles of both formats queued in one program, MMCs of both formats back
  // to back in the array.
  tpu::model::TpuModel model(config());
  HostMemory mem;
  std::vector<uint8_t> bytes(0x4000);
  for (auto& b : bytes) b = uint8_t(rand_int(0, 255));
  for (size_t i = 1; i < bytes.size(); i += 2) bytes[i] = uint8_t(0x38 + rand_int(0, 15));  // bf16 around 2^-15..2^8
  mem.write(kInput, bytes);
  const uint32_t nn = uint32_t(N);
  using namespace isa;
  const std::vector<Instr> prog{
      rhm(0, 8, kInput, 2 * nn, true),  // 8 wide rows in UB 0..15
      rhm(16, 8, kInput + 0x800, nn),   // 8 int8 rows in UB 16..23
      rw(kInput + 0x1000, 1, 2 * nn, true), rw(kInput + 0x1800, 1, nn), rw(kInput + 0x2000, 1, 2 * nn, true),
      mmc(0, 0, 8, false, true, true),
      mmc(16, 8, 8, false, true, false),
      mmc(0, 16, 8, false, true, true),
      rw(kInput + 0x2800, 2, nn), mmc(16, 8, 8, true, true, false), mmc(16, 8, 8, true, true, false),
      act(0, 32, 8, Act::kNone, false, true, false),
      act(8, 64, 16, Act::kNone, false, true, false),
      whm(32, 96, kOutput, nn),
      halt()};
  run_both(model, prog, mem, {.latency = 5, .req_stall = 0.1}, kOutput, 96 * N, "int8 and bf16");
}

}  // namespace
