// SPDX-License-Identifier: Apache-2.0
// Compute-core tests: programs run on the Verilated core and on the C++
// reference model; results are compared with each other and, for directed
// programs, with a plain C++ computation of what the program means.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "core_fixture.h"
#include "tpu/ref_matmul.h"

namespace {

using namespace core_tb;

// ---------------------------------------------------------------------------
// Directed programs
// ---------------------------------------------------------------------------

TEST_F(CoreTest, Gemm64x64x64) { check_gemm(64, 64, 64); }

TEST_F(CoreTest, GemmNotMultipleOfN) { check_gemm(37, 50, 29, {.latency = 20, .req_stall = 0.2}); }

// Plans with a head (the first K blocks of each pass's first group K block
// after K block, the first load in two RHMs, the first RW a tile or two
// ahead of it; tpu/plan/gemm.h), one and two blocks, in one pass and in
// several, with partial tiles, exact under random memory timing.
TEST_F(CoreTest, GemmsWithAHead) {
  using O = tpu::plan::GemmOptions;
  for (const int head : {1, 2})
    for (const int rows : {0, 2 * N}) {
      SCOPED_TRACE("head " + std::to_string(head) + (rows ? ", passes of 2N rows" : ", one pass"));
      check_gemm(6 * N + 3, 5 * N + 1, 4 * N + 2, {.latency = 15, .req_stall = 0.2, .rsp_gap = 0.2},
                 {.max_pass_rows = rows, .order = O::Order::kTileMajor, .head_blocks = head});
    }
}

TEST_F(CoreTest, GemmShapes) {
  for (auto [m, k, n] : {std::tuple{1, 1, 1}, {7, 13, 5}, {16, 8, 12}, {33, 9, 3}})
    check_gemm(m, k, n, {.latency = 3, .req_stall = 0.3, .rsp_gap = 0.3});
}

// Dense layer: int8 GEMM + bias + requantization + ReLU, compared with a loop
// over quant.h's act_lane.
TEST_F(CoreTest, DenseBiasRequantRelu) {
  constexpr int M = 24;
  HostMemory mem;
  const MatrixI8 a = random_matrix(M, N), w = random_matrix(N, N);
  tpu::test::write_matrix(mem, kInput, a);
  tpu::test::write_matrix(mem, kInput + 0x1000, w);
  tpu::quant::QuantParams p;
  p.multiplier = 0x5a3c1b2d;
  p.shift = 9;
  p.zero_point = -7;
  std::vector<int32_t> bias(N);
  for (auto& b : bias) b = int32_t(rand_int(-20000, 20000));

  std::vector<isa::Instr> prog{isa::rhm(0, M, kInput, N), isa::rw(kInput + 0x1000, 1, N),
                               isa::mmc(0, 0, M, false, true),
                               isa::cfg(0x000, uint32_t(p.multiplier)),
                               isa::cfg(0x001, uint32_t(p.shift)), isa::cfg(0x002, uint32_t(p.zero_point))};
  for (int j = 0; j < N; ++j) prog.push_back(isa::cfg(0x100 + j, uint32_t(bias[j])));
  prog.push_back(isa::act(0, 100, M, isa::Act::kRelu, true));
  prog.push_back(isa::whm(100, M, kOutput, N));
  prog.push_back(isa::halt());
  const tb::CoreRun r = run_rtl(prog, mem);
  ASSERT_EQ(r.err, ErrCode::kOk) << isa::err_name(r.err);

  const MatrixI32 acc = tpu::ref::matmul_i8(a, w);
  const MatrixI8 got = tpu::test::read_matrix_i8(mem, kOutput, M, N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      ASSERT_EQ(got.at(i, j), tpu::quant::act_lane(acc.at(i, j), bias[j], p, tpu::quant::Act::kRelu, nullptr))
          << "row " << i << " lane " << j;
}

// Per-channel requantization: every lane its own CH_MULT / CH_SHIFT (left
// shifts among them), then QMULT / QSHIFT back to one scale for all lanes.
// Each ACT is compared with quant.h's act_lane per lane, and the whole run
// with the reference model.
TEST_F(CoreTest, DensePerChannelRequant) {
  namespace q = tpu::quant;
  constexpr int M = 20;
  HostMemory mem;
  const MatrixI8 a = random_matrix(M, N), w = random_matrix(N, N);
  tpu::test::write_matrix(mem, kInput, a);
  tpu::test::write_matrix(mem, kInput + 0x1000, w);
  q::QuantParams p;
  p.zero_point = 5;
  std::vector<q::LaneScale> scale(N);
  std::vector<int32_t> bias(N);
  for (int j = 0; j < N; ++j) {
    // Real scales through quantize_multiplier: every fourth lane 2^0 .. 2^3
    // (left shifts, mostly clamped), the others 2^-14 .. 2^-8 (right shifts,
    // mostly inside the int8 range, where the rounding shows); lane 1 the
    // largest left shift in range, whose accumulators wrap.
    const bool left = j % 4 == 3;
    scale[size_t(j)] = q::quantize_multiplier(
        std::exp2(double(left ? rand_int(0, 3000) : rand_int(-14000, -8000)) / 1000.0));
    bias[size_t(j)] = int32_t(rand_int(-3000, 3000));
  }
  scale[1] = {int32_t(rand_int(1 << 30, INT32_MAX)), 31};
  std::vector<isa::Instr> prog{isa::rhm(0, M, kInput, N), isa::rw(kInput + 0x1000, 1, N),
                               isa::mmc(0, 0, M, false, true), isa::cfg(0x002, uint32_t(p.zero_point))};
  for (int j = 0; j < N; ++j) {
    prog.push_back(isa::cfg(0x100 + j, uint32_t(bias[size_t(j)])));
    prog.push_back(isa::cfg(0x300 + j, uint32_t(scale[size_t(j)].multiplier)));
    prog.push_back(isa::cfg(0x400 + j, uint32_t(scale[size_t(j)].exponent)));
  }
  prog.push_back(isa::act(0, 100, M, isa::Act::kNone, true));
  prog.push_back(isa::act(0, 100 + M, M, isa::Act::kRelu, false));
  // QMULT / QSHIFT write every lane again: per-tensor from here on.
  prog.push_back(isa::cfg(0x000, 0x6b2c1f00));
  prog.push_back(isa::cfg(0x001, 7));
  prog.push_back(isa::act(0, 100 + 2 * M, M, isa::Act::kNone, true));
  prog.push_back(isa::whm(100, 3 * M, kOutput, N));
  prog.push_back(isa::halt());

  tpu::model::TpuModel model(config());
  run_both(model, prog, mem, {.latency = 5, .req_stall = 0.2}, kOutput, 0x8000, "per-channel ACT");
  ASSERT_FALSE(HasFailure());

  const MatrixI32 acc = tpu::ref::matmul_i8(a, w);
  const MatrixI8 got = tpu::test::read_matrix_i8(mem, kOutput, 3 * M, N);
  q::QuantParams pt = p;
  pt.multiplier = 0x6b2c1f00;
  pt.shift = 7;
  int inside = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const int8_t want = q::act_lane(acc.at(i, j), bias[size_t(j)], scale[size_t(j)], p, q::Act::kNone, nullptr);
      ASSERT_EQ(got.at(i, j), want) << "row " << i << " lane " << j;
      ASSERT_EQ(got.at(M + i, j), q::act_lane(acc.at(i, j), 0, scale[size_t(j)], p, q::Act::kRelu, nullptr))
          << "ReLU row " << i << " lane " << j;
      ASSERT_EQ(got.at(2 * M + i, j), q::act_lane(acc.at(i, j), bias[size_t(j)], pt, q::Act::kNone, nullptr))
          << "per-tensor row " << i << " lane " << j;
      inside += want > -128 && want < 127;
    }
  EXPECT_GT(inside, M * N / 4) << "too few results inside the clamp range to show the rounding";
}

// Pooling and element-wise operations, compared with plain loops.
TEST_F(CoreTest, VectorOps) {
  constexpr int R = 16;
  HostMemory mem;
  const MatrixI8 x = random_matrix(R, N), y = random_matrix(R, N);
  tpu::test::write_matrix(mem, kInput, x);
  tpu::test::write_matrix(mem, kInput + 0x1000, y);
  const std::vector<isa::Instr> prog{isa::rhm(0, R, kInput, N),
                                     isa::rhm(R, R, kInput + 0x1000, N),
                                     isa::vop(isa::VopOp::kAdd, 0, R, 64, R),
                                     isa::vop(isa::VopOp::kMul, 0, R, 80, R, 5),
                                     isa::vop(isa::VopOp::kMax, 0, R, 96, R),
                                     isa::vop(isa::VopOp::kPoolMax, 0, 0, 112, R / 4, 2),
                                     isa::vop(isa::VopOp::kPoolAvg, 0, 0, 116, R / 2, 1),
                                     isa::vop(isa::VopOp::kMin, 0, R, 124, R),
                                     isa::whm(64, 60 + R, kOutput, N),
                                     isa::halt()};
  const tb::CoreRun r = run_rtl(prog, mem, {.latency = 5, .req_stall = 0.2});
  ASSERT_EQ(r.err, ErrCode::kOk) << isa::err_name(r.err);
  const MatrixI8 out = tpu::test::read_matrix_i8(mem, kOutput, 60 + R, N);
  namespace q = tpu::quant;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < N; ++j) {
      ASSERT_EQ(out.at(i, j), q::vop_add(x.at(i, j), y.at(i, j)));
      ASSERT_EQ(out.at(16 + i, j), q::vop_mul(x.at(i, j), y.at(i, j), 5));
      ASSERT_EQ(out.at(32 + i, j), q::vop_max(x.at(i, j), y.at(i, j)));
      ASSERT_EQ(out.at(60 + i, j), std::min(x.at(i, j), y.at(i, j)));
    }
  for (int i = 0; i < R / 4; ++i)
    for (int j = 0; j < N; ++j) {
      int8_t m = -128;
      for (int t = 0; t < 4; ++t) m = std::max(m, x.at(4 * i + t, j));
      ASSERT_EQ(out.at(48 + i, j), m) << "pool max " << i;
    }
  for (int i = 0; i < R / 2; ++i)
    for (int j = 0; j < N; ++j)
      ASSERT_EQ(out.at(52 + i, j), q::pool_avg(x.at(2 * i, j) + x.at(2 * i + 1, j), 1)) << "pool avg " << i;
}

// A LOOP that multiplies four row blocks of A by one tile W, with UB, ACC and
// host increments. Block b reads UB rows b*Rows (ub_inc) and accumulates
// into ACC rows b*Rows (acc_inc); its RAW results land in UB rows
// 100 + b*Rows and go to host memory one block apart. The host increment is
// shared by RHM and WHM, so the input blocks are laid out that far apart too.
struct LoopBlocks {
  static constexpr int Rows = 6, Blocks = 4;
  int n;
  MatrixI8 a, w;

  std::vector<isa::Instr> program() const {
    return {isa::rw(kInput + 0x1000, 1, uint32_t(n)),
            isa::loop(Blocks, 4, Rows, Rows, Rows * n * 4),
            isa::rhm(0, Rows, kInput, uint32_t(n)),
            isa::mmc(0, 0, Rows, false, false),
            isa::act(0, 100, Rows, isa::Act::kNone, false, true),
            isa::whm(100, Rows * 4, kOutput, uint32_t(n)),
            isa::sync(0),
            isa::halt()};
  }
  HostMemory memory() const {
    HostMemory mem;
    for (int b = 0; b < Blocks; ++b)
      for (int r = 0; r < Rows; ++r)
        mem.write(kInput + uint64_t(b) * Rows * n * 4 + uint64_t(r) * n,
                  std::span<const int8_t>(&a.at(b * Rows + r, 0), size_t(n)));
    tpu::test::write_matrix(mem, kInput + 0x1000, w);
    return mem;
  }
  // The results in host memory equal the reference matmul, block by block.
  void expect_results(const HostMemory& mem) const {
    const MatrixI32 expect = tpu::ref::matmul_i8(a, w);
    for (int b = 0; b < Blocks; ++b)
      for (int i = 0; i < Rows; ++i)
        for (int j = 0; j < n; ++j) {
          const uint64_t addr = kOutput + uint64_t(b) * Rows * n * 4 + uint64_t(i) * n * 4 + uint64_t(j) * 4;
          ASSERT_EQ(int32_t(mem.read32(addr)), expect.at(b * Rows + i, j)) << "block " << b << " row " << i;
        }
  }
};

TEST_F(CoreTest, LoopWithIncrements) {
  const LoopBlocks t{N, random_matrix(LoopBlocks::Rows * LoopBlocks::Blocks, N), random_matrix(N, N)};
  HostMemory mem = t.memory();
  const tb::CoreRun r = run_rtl(t.program(), mem, {.latency = 4});
  ASSERT_EQ(r.err, ErrCode::kOk) << isa::err_name(r.err) << " at " << r.err_pc;
  t.expect_results(mem);
}

// A program that starts before all of it is in instruction memory (as the
// command processor starts one on its first word): fetch waits for each
// word, a LOOP's body included, and the results are those of the whole
// program. When the rest never comes, the program ends with ILLEGAL_OPCODE
// at the first missing word, after the words before it ran.
// The ACT RAW results of ACC rows [0, rows), written by a WHM at out with a
// host row every stride bytes (ACC row i's N int32 in UB rows 4i .. 4i+3),
// against rows [first, first + rows) of want; stops at the first difference.
void expect_raw_results(const HostMemory& mem, uint64_t out, uint32_t stride, const MatrixI32& want, int first,
                        int rows) {
  constexpr int N = CoreCfg::N;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < N; ++j) {
      const int row = 4 * i + j / (N / 4), byte = (j % (N / 4)) * 4;  // RAW: lane j of ACC row i
      const int32_t got = int32_t(mem.read32(out + uint64_t(row) * stride + uint64_t(byte)));
      if (got != want.at(first + i, j)) {
        ADD_FAILURE() << "C[" << first + i << "][" << j << "] is " << got << ", not " << want.at(first + i, j);
        return;
      }
    }
}

// An ACT starts while the MMC it waits for still writes its ACC rows, and a
// WHM while that ACT still writes its UB rows; each reads a row once it has
// been written. The chain MMC -> ACT RAW -> WHM is exact under any memory
// timing, and a SYNC that makes the ACT (the WHM) wait for the end of the
// command before it costs about what following saves: the MMC's rows (the
// ACT's four UB rows a row). A WHM whose host rows lie apart (a request
// per row) waits for its ACT instead: its requests would hold the port.
TEST_F(CoreTest, CommandsFollowTheRowsTheyWaitFor) {
  constexpr int M = 32, kRes = 64;  // ACC rows; the results' first UB row
  const MatrixI8 a = random_matrix(M, N), w = random_matrix(N, N);
  const MatrixI32 want = tpu::ref::matmul_i8(a, w);
  const auto program = [&](uint8_t sync_before_act, uint8_t sync_before_whm, uint32_t stride) {
    std::vector<isa::Instr> p{isa::rw(kInput + 0x1000, 1, N), isa::rhm(0, M, kInput, N), isa::mmc(0, 0, M, false, true)};
    if (sync_before_act) p.push_back(isa::sync(sync_before_act));
    p.push_back(isa::act(0, kRes, M, isa::Act::kNone, false, true));
    if (sync_before_whm) p.push_back(isa::sync(sync_before_whm));
    p.push_back(isa::whm(kRes, 4 * M, kOutput, stride));
    p.push_back(isa::halt());
    return p;
  };
  // Runs a program; checks its results (row i of the WHM at kOutput + i * stride).
  const auto run = [&](const std::vector<isa::Instr>& prog, uint32_t stride, const tb::MemoryTiming& timing) {
    HostMemory mem;
    tpu::test::write_matrix(mem, kInput, a);
    tpu::test::write_matrix(mem, kInput + 0x1000, w);
    const tb::CoreRun r = run_rtl(prog, mem, timing);
    EXPECT_EQ(r.err, ErrCode::kOk) << isa::err_name(r.err);
    SCOPED_TRACE("stride " + std::to_string(stride));
    expect_raw_results(mem, kOutput, stride, want, 0, M);
    return r.cycles;
  };
  const uint8_t mmc = isa::unit_bit(isa::Unit::kMmc), vpu = isa::unit_bit(isa::Unit::kVpu);
  const tb::MemoryTiming steady{.latency = 20};
  run(program(0, 0, N), N, steady);  // (the first ACT after reset waits for the LUT's clear)
  const uint64_t follows = run(program(0, 0, N), N, steady);
  const uint64_t act_waits = run(program(mmc, 0, N), N, steady);
  const uint64_t whm_waits = run(program(0, vpu, N), N, steady);
  std::printf("MMC -> ACT -> WHM: %llu cycles; %llu with a SYNC before the ACT, %llu before the WHM\n",
              (unsigned long long)follows, (unsigned long long)act_waits, (unsigned long long)whm_waits);
  EXPECT_GE(act_waits, follows + M / 2) << "the ACT did not follow the MMC";
  EXPECT_GE(whm_waits, follows + 3 * M) << "the WHM did not follow the ACT";
  const uint64_t apart = run(program(0, 0, 2 * N), 2 * N, steady);
  // (Following would save about 4 * M cycles, as above; the SYNC costs a few.)
  EXPECT_GE(apart + M, run(program(0, vpu, 2 * N), 2 * N, steady)) << "a WHM of a request per row followed the ACT";
  for (const uint32_t stride : {uint32_t(N), uint32_t(2 * N)})
    run(program(0, 0, stride), stride, {.latency = 7, .req_stall = 0.3, .rsp_gap = 0.3});
}

// An MMC starts while the RHM it reads is still loading and asks for each
// row once the RHM has written it, so it runs behind the load row by row. A
// SYNC that makes the MMC wait for the whole load costs about the load's
// rows. Exact under any memory timing, with the MMC's rows inside the load,
// from rows before it into it, and from it into rows past its end.
TEST_F(CoreTest, AnMmcFollowsItsLoadRowByRow) {
  constexpr int M = std::min(48, CoreCfg::UbRows / 8), kRes = 3 * M;  // rows of a block; the results' first UB row
  const MatrixI8 a = random_matrix(3 * M, N), w = random_matrix(N, N);  // UB row r holds A's row r
  const MatrixI32 want = tpu::ref::matmul_i8(a, w);
  const auto block = [&](int b) { return isa::rhm(uint32_t(b * M), M, kInput + uint64_t(b) * M * N, N); };
  const uint8_t mem_unit = isa::unit_bit(isa::Unit::kMem);
  // Blocks 0 and 2 of A are in the UB before; the last RHM loads block 1;
  // the MMC reads UB rows [first, first + M).
  const auto program = [&](bool sync_before_mmc, int first) {
    std::vector<isa::Instr> p{block(0), block(2), isa::sync(mem_unit), isa::rw(kInput + 0x10000, 1, N), block(1)};
    if (sync_before_mmc) p.push_back(isa::sync(mem_unit));
    p.push_back(isa::mmc(uint32_t(first), 0, M, false, true));
    p.push_back(isa::act(0, kRes, M, isa::Act::kNone, false, true));
    p.push_back(isa::whm(kRes, 4 * M, kOutput, N));
    p.push_back(isa::halt());
    return p;
  };
  const auto run = [&](const std::vector<isa::Instr>& prog, int first, const tb::MemoryTiming& timing) {
    HostMemory mem;
    tpu::test::write_matrix(mem, kInput, a);
    tpu::test::write_matrix(mem, kInput + 0x10000, w);
    const tb::CoreRun r = run_rtl(prog, mem, timing);
    EXPECT_EQ(r.err, ErrCode::kOk) << isa::err_name(r.err);
    SCOPED_TRACE("the MMC from UB row " + std::to_string(first));
    expect_raw_results(mem, kOutput, N, want, first, M);
    return r.cycles;
  };
  const tb::MemoryTiming steady{.latency = 20};
  run(program(false, M), M, steady);  // (the first ACT after reset waits for the LUT's clear)
  const uint64_t follows = run(program(false, M), M, steady);
  const uint64_t waits = run(program(true, M), M, steady);
  std::printf("RHM -> MMC: %llu cycles; %llu with a SYNC before the MMC\n", (unsigned long long)follows,
              (unsigned long long)waits);
  EXPECT_GE(waits, follows + M / 2) << "the MMC did not follow the load";
  for (const int first : {M, M / 2, M + M / 2})
    for (const bool sync : {false, true})
      run(program(sync, first), first, {.latency = 7, .req_stall = 0.3, .rsp_gap = 0.3});
}

// An ACT RAW of fewer lanes than N writes, of each result's four UB rows,
// only those that hold its lanes (R = ceil(lanes / (N / 4)) rows a result,
// at b + R*i) and leaves the rest of the region as it was; the RTL and the
// model agree on every UB row. Of one lane it writes a row a result, so the
// ACT and the WHM behind it take about a quarter of the full rows' cycles,
// and an ACT of M rows fits M UB rows at the UB's end.
TEST_F(CoreTest, AnActOfFewerLanesWritesOnlyTheirRows) {
  constexpr int M = 32, kRes = 64, kQuarter = N / 4;  // ACC rows; the results' first UB row; lanes a UB row
  const MatrixI8 a = random_matrix(M, N), w = random_matrix(N, N);
  const MatrixI32 want = tpu::ref::matmul_i8(a, w);
  std::vector<uint8_t> old(size_t(4 * M * N));  // the result region before the ACT
  for (auto& b : old) b = uint8_t(rand_int(0, 255));
  tpu::model::TpuModel model(config());
  // The WHM writes the whole region back (to see what the ACT left), or
  // with `written` only the ACT's rows.
  const auto run = [&](uint32_t lanes, uint32_t res, const tb::MemoryTiming& timing, bool written = false) {
    const int parts = lanes == 0 ? 4 : (int(lanes) + kQuarter - 1) / kQuarter;
    const uint32_t back = uint32_t(written ? parts * M : 4 * M);
    HostMemory mem;
    tpu::test::write_matrix(mem, kInput, a);
    tpu::test::write_matrix(mem, kInput + 0x1000, w);
    mem.write(kInput + 0x2000, old);
    const std::vector<isa::Instr> prog{
        isa::rhm(0, M, kInput, N), isa::rw(kInput + 0x1000, 1, N), isa::mmc(0, 0, M, false, true),
        isa::rhm(res, 4 * M, kInput + 0x2000, N), isa::sync(0),
        isa::act(0, res, M, isa::Act::kNone, false, true, false, lanes), isa::whm(res, back, kOutput, N),
        isa::halt()};
    const tb::CoreRun r = run_both(model, prog, mem, timing, kOutput, back * N, "lanes " + std::to_string(lanes));
    EXPECT_EQ(r.err, ErrCode::kOk) << isa::err_name(r.err);
    const std::vector<uint8_t> got = mem.read(kOutput, back * N);
    for (int i = 0; i < M && !HasFailure(); ++i)
      for (int j = 0; j < parts * kQuarter && !HasFailure(); ++j) {
        const size_t at = size_t(parts * i * N + 4 * j);  // lane j of result i
        const uint32_t v = uint32_t(got[at]) | uint32_t(got[at + 1]) << 8 | uint32_t(got[at + 2]) << 16 |
                           uint32_t(got[at + 3]) << 24;
        EXPECT_EQ(int32_t(v), want.at(i, j)) << "lanes " << lanes << ": C[" << i << "][" << j << "]";
      }
    EXPECT_TRUE(std::equal(got.begin() + parts * M * N, got.end(), old.begin() + parts * M * N))
        << "lanes " << lanes << ": the ACT wrote past its " << parts << " UB rows a result";
    return r.cycles;
  };
  const tb::MemoryTiming steady{.latency = 20};
  run(0, kRes, steady);  // (the first ACT after reset waits for the LUT's clear)
  const uint64_t all = run(0, kRes, steady, true), one = run(1, kRes, steady, true);
  std::printf("ACT RAW + WHM of %d rows: %llu cycles of all lanes, %llu of one\n", M, (unsigned long long)all,
              (unsigned long long)one);
  EXPECT_GE(all, one + 2 * M) << "an ACT of one lane took about as long as one of all lanes";
  for (const uint32_t lanes : {uint32_t(kQuarter), uint32_t(kQuarter + 1), uint32_t(N / 2 + 1), uint32_t(N)})
    run(lanes, kRes, {.latency = 7, .req_stall = 0.3, .rsp_gap = 0.3});

  // Of one lane, M results fit the UB's last M rows (of all lanes, 4M would not).
  HostMemory mem;
  tpu::test::write_matrix(mem, kInput, a);
  tpu::test::write_matrix(mem, kInput + 0x1000, w);
  const uint32_t last = uint32_t(CoreCfg::UbRows - M);
  const std::vector<isa::Instr> prog{isa::rhm(0, M, kInput, N), isa::rw(kInput + 0x1000, 1, N),
                                     isa::mmc(0, 0, M, false, true),
                                     isa::act(0, last, M, isa::Act::kNone, false, true, false, 1),
                                     isa::whm(last, M, kOutput, N), isa::halt()};
  ASSERT_EQ(run_both(model, prog, mem, {.latency = 5}, kOutput, M * N, "at the UB's end").err, ErrCode::kOk);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < kQuarter; ++j)
      ASSERT_EQ(int32_t(mem.read32(kOutput + uint64_t(i) * N + uint64_t(4 * j))), want.at(i, j))
          << "at the UB's end: C[" << i << "][" << j << "]";
}

TEST_F(CoreTest, ProgramArrivingWhileItRuns) {
  const LoopBlocks t{N, random_matrix(LoopBlocks::Rows * LoopBlocks::Blocks, N), random_matrix(N, N)};
  const std::vector<isa::Instr> prog = t.program();
  for (const uint64_t gap : {1, 7, 40}) {
    SCOPED_TRACE("a word every " + std::to_string(gap) + " cycles");
    HostMemory mem = t.memory();
    const tb::CoreRun r = harness_->run_arriving(prog, 1, gap, false, mem, {.latency = 4});
    ASSERT_FALSE(r.timed_out);
    ASSERT_EQ(r.err, ErrCode::kOk) << isa::err_name(r.err) << " at " << r.err_pc;
    if (gap == 40) EXPECT_GT(r.cycles, 40u * (prog.size() - 1)) << "the core did not wait for the words";
    t.expect_results(mem);
  }
  // Words 0..2 arrive, the rest never: the loop's body is cut at its MMC.
  HostMemory mem = t.memory();
  const std::vector<uint8_t> zeros(size_t(LoopBlocks::Rows) * N * 4, 0);
  mem.write(kOutput, zeros);
  const tb::CoreRun r = harness_->run_arriving(prog, 3, 1, true, mem, {.latency = 4});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.err, ErrCode::kIllegalOpcode);
  EXPECT_EQ(r.err_pc, 3u);
  EXPECT_EQ(mem.read(kOutput, zeros.size()), zeros) << "an instruction past the missing one ran";
  for (int i = 0; i < LoopBlocks::Rows; ++i)  // the RHM before the missing word ran (block 0 of A)
    EXPECT_EQ(harness_->ub_row(i), std::vector<int8_t>(&t.a.at(i, 0), &t.a.at(i, 0) + N)) << "UB row " << i;
  // The core runs the next program whole.
  HostMemory again = t.memory();
  EXPECT_EQ(run_rtl(prog, again, {.latency = 4}).err, ErrCode::kOk);
  t.expect_results(again);
}

}  // namespace
