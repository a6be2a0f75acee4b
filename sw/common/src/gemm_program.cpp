// SPDX-License-Identifier: Apache-2.0
#include "tpu/gemm_program.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tpu::model {

using isa::Instr;

namespace {

// Cycles of host read latency (plus margin) the weight FIFO should cover:
// the default link's is 500.
constexpr int kWeightCoverCycles = 768;

int round_up(int v, int multiple) { return (v + multiple - 1) / multiple * multiple; }
int ceil_div(int a, int b) { return (a + b - 1) / b; }

std::string dims(const GemmShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n_out);
}

// Instructions in groups that must stay in one program (a LOOP and its body).
class Stream {
 public:
  void add(const Instr& in) { groups_.push_back({in}); }
  void add_group(std::vector<Instr> g) { groups_.push_back(std::move(g)); }

  // MMCs over `count` consecutive A blocks (UB rows ub, ub+step, ...) into
  // the same ACC rows: one MMC, or a LOOP around one.
  void mmc_run(int count, uint32_t ub, uint32_t step, uint32_t acc, uint32_t rows, bool accumulate) {
    const Instr mmc = isa::mmc(ub, acc, rows, accumulate, true);
    if (count == 1) add(mmc);
    else add_group({isa::loop(uint32_t(count), 1, int32_t(step)), mmc});
  }

  // Cuts the stream into programs of at most `depth` instructions with HALT.
  std::vector<std::vector<Instr>> programs(int depth) const {
    std::vector<std::vector<Instr>> out(1);
    for (const auto& g : groups_) {
      if (out.back().size() + g.size() + 1 > size_t(depth)) {
        if (out.back().empty())
          throw std::invalid_argument("gemm: an instruction group of " + std::to_string(g.size()) +
                                      " does not fit an instruction memory of " + std::to_string(depth));
        out.back().push_back(isa::halt());
        out.emplace_back();
      }
      out.back().insert(out.back().end(), g.begin(), g.end());
    }
    out.back().push_back(isa::halt());
    return out;
  }

 private:
  std::vector<std::vector<Instr>> groups_;
};

// Weight tiles in the order the MMCs retire them, RWs issued ahead within
// the capacity.
class WeightStream {
 public:
  WeightStream(Stream& out, const GemmPlan& plan, uint64_t w)
      : out_(out), w_(w), tile_bytes_(uint64_t(plan.n) * plan.n), per_pass_(int64_t(plan.col_tiles) * plan.k_blocks),
        total_(per_pass_ * plan.passes), cap_(plan.wgt_capacity), batch_(std::max(1, plan.wgt_capacity / 2)),
        n_(uint32_t(plan.n)) {}

  // Before an MMC: its tile must have been requested.
  void need_one() {
    if (issued_ == retired_) issue(std::min<int64_t>(cap_, total_ - issued_));
  }
  // After an MMC that POPs its tile: request more once a batch fits.
  void retire_one() {
    ++retired_;
    top_up();
  }
  int64_t available() const { return issued_ - retired_; }
  // Retirements until top_up() would issue an RW (a large number if none is left).
  int64_t retires_until_rw() const {
    const int64_t left = total_ - issued_;
    if (left == 0) return INT64_MAX;
    const int64_t room = cap_ - (issued_ - retired_);
    return std::max<int64_t>(1, std::min(batch_, left) - room);
  }
  void top_up() {
    const int64_t room = cap_ - (issued_ - retired_), left = total_ - issued_;
    if (left > 0 && room >= std::min<int64_t>(batch_, left)) issue(std::min(room, left));
  }

 private:
  // Tiles issued_ .. issued_+count-1; an RW never crosses a pass (tiles restart).
  void issue(int64_t count) {
    while (count > 0) {
      const int64_t s = issued_ % per_pass_, c = std::min(count, per_pass_ - s);
      out_.add(isa::rw(w_ + uint64_t(s) * tile_bytes_, uint32_t(c), n_));
      issued_ += c;
      count -= c;
    }
  }

  Stream& out_;
  uint64_t w_, tile_bytes_;
  int64_t per_pass_, total_, cap_, batch_;
  uint32_t n_;
  int64_t issued_ = 0, retired_ = 0;
};

}  // namespace

// ---- plan ---------------------------------------------------------------------------

int GemmPlan::rows_of_pass(int p) const { return std::min(pass_rows, shape.m - p * pass_rows); }
uint64_t GemmPlan::a_bytes() const { return uint64_t(shape.m) * k_blocks * n; }
uint64_t GemmPlan::w_bytes() const { return uint64_t(col_tiles) * k_blocks * n * n; }
uint64_t GemmPlan::c_bytes() const { return uint64_t(col_tiles) * shape.m * out_row_bytes(); }

GemmPlan plan_gemm(const GemmShape& shape, GemmOutput output, const CoreConfig& core,
                   const GemmOptions& options) {
  if (shape.m < 1 || shape.k < 1 || shape.n_out < 1)
    throw std::invalid_argument("gemm " + dims(shape) + ": every dimension must be at least 1");
  GemmPlan p;
  p.shape = shape;
  p.output = output;
  p.n = core.n;
  p.k_blocks = ceil_div(shape.k, core.n);
  p.col_tiles = ceil_div(shape.n_out, core.n);
  p.wgt_capacity = core.wgt_fifo_tiles + isa::kWgtBanks;
  const int out_rows = output == GemmOutput::kInt32 ? 4 : 1;  // UB rows per result row
  const int kb = p.k_blocks;

  // Rows per pass with `regions` A regions and two result regions in the UB,
  // two ACC regions, and 16-bit counts.
  const auto max_rows = [&](int regions) {
    int rows = std::min({core.ub_rows / (regions * kb + 2 * out_rows), core.acc_rows / 2,
                         0xFFFF / out_rows, 0xFFFF / kb});
    if (options.max_pass_rows > 0) rows = std::min(rows, options.max_pass_rows);
    return rows;
  };
  if (max_rows(1) >= shape.m) {
    p.a_regions = 1;  // one pass
    p.pass_rows = shape.m;
  } else {
    // Two A regions hide the next pass's load, but halve the rows per pass;
    // each weight tile then serves fewer rows, and the weight FIFO must still
    // cover the host's read latency (kWeightCoverCycles). Prefer one region
    // (an exposed load per pass) when two would starve the weights.
    const bool weights_covered = max_rows(2) * core.wgt_fifo_tiles >= kWeightCoverCycles;
    p.a_regions = max_rows(2) >= 1 && (weights_covered || max_rows(1) <= max_rows(2)) ? 2 : 1;
    const int rows = max_rows(p.a_regions);
    if (rows < 1)
      throw std::invalid_argument(
          "gemm " + dims(shape) + ": K = " + std::to_string(shape.k) + " needs " +
          std::to_string(kb + 2 * out_rows) + " unified-buffer rows per row of A; the core has " +
          std::to_string(core.ub_rows) + " (K can be at most " +
          std::to_string((core.ub_rows - 2 * out_rows) * core.n) + ")");
    p.pass_rows = ceil_div(shape.m, ceil_div(shape.m, rows));  // balanced passes
  }
  p.passes = ceil_div(shape.m, p.pass_rows);
  if (round_up(shape.k, core.n) > 0xFFFF)
    throw std::invalid_argument("gemm " + dims(shape) + ": K is too large for the core");
  return p;
}

// ---- host images ----------------------------------------------------------------------

std::vector<int8_t> pack_a(const GemmPlan& p, const MatrixI8& a) {
  if (a.rows != p.shape.m || a.cols != p.shape.k) throw std::invalid_argument("pack_a: A's shape differs from the plan");
  const int n = p.n, kp = p.k_blocks * n;
  std::vector<int8_t> out(p.a_bytes(), 0);
  for (int pass = 0; pass < p.passes; ++pass) {
    const int m0 = p.pass_begin(pass), r = p.rows_of_pass(pass);
    for (int kb = 0; kb < p.k_blocks; ++kb)
      for (int i = 0; i < r; ++i) {
        int8_t* dst = out.data() + size_t(m0) * kp + (size_t(kb) * r + i) * n;
        const int c0 = kb * n, c1 = std::min(c0 + n, a.cols);
        for (int c = c0; c < c1; ++c) dst[c - c0] = a.at(m0 + i, c);
      }
  }
  return out;
}

std::vector<int8_t> pack_w(const GemmPlan& p, const MatrixI8& w) {
  if (w.rows != p.shape.k || w.cols != p.shape.n_out) throw std::invalid_argument("pack_w: W's shape differs from the plan");
  const int n = p.n;
  std::vector<int8_t> out(p.w_bytes(), 0);
  for (int j = 0; j < p.col_tiles; ++j)
    for (int kb = 0; kb < p.k_blocks; ++kb) {
      int8_t* tile = out.data() + (size_t(j) * p.k_blocks + kb) * n * n;
      for (int r = 0; r < n && kb * n + r < w.rows; ++r)
        for (int c = 0; c < n && j * n + c < w.cols; ++c) tile[r * n + c] = w.at(kb * n + r, j * n + c);
    }
  return out;
}

MatrixI32 unpack_c_i32(const GemmPlan& p, std::span<const uint8_t> c) {
  if (p.output != GemmOutput::kInt32 || c.size() < p.c_bytes()) throw std::invalid_argument("unpack_c_i32: not an int32 result of this plan");
  MatrixI32 out(p.shape.m, p.shape.n_out);
  const size_t row = size_t(p.out_row_bytes());
  for (int i = 0; i < p.shape.m; ++i)
    for (int j = 0; j < p.shape.n_out; ++j) {
      const uint8_t* b = c.data() + (size_t(j / p.n) * p.shape.m + i) * row + size_t(j % p.n) * 4;
      out.at(i, j) = int32_t(uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24);
    }
  return out;
}

MatrixI8 unpack_c_i8(const GemmPlan& p, std::span<const uint8_t> c) {
  if (p.output != GemmOutput::kInt8 || c.size() < p.c_bytes()) throw std::invalid_argument("unpack_c_i8: not an int8 result of this plan");
  MatrixI8 out(p.shape.m, p.shape.n_out);
  for (int i = 0; i < p.shape.m; ++i)
    for (int j = 0; j < p.shape.n_out; ++j)
      out.at(i, j) = int8_t(c[(size_t(j / p.n) * p.shape.m + i) * p.n + size_t(j % p.n)]);
  return out;
}

// ---- programs ---------------------------------------------------------------------------

std::vector<std::vector<Instr>> gemm_programs(const GemmPlan& p, const GemmEpilogue& epi, uint64_t a,
                                              uint64_t w, uint64_t c, const CoreConfig& core) {
  if (epi.output != p.output) throw std::invalid_argument("gemm: the epilogue's output type differs from the plan's");
  const bool int8 = p.output == GemmOutput::kInt8;
  if (!epi.bias.empty() && (!int8 || int(epi.bias.size()) != p.shape.n_out))
    throw std::invalid_argument("gemm: the bias needs one int32 per output column (" +
                                std::to_string(p.shape.n_out) + "), and an int8 output");
  if (!epi.scales.empty() && (!int8 || int(epi.scales.size()) != p.shape.n_out))
    throw std::invalid_argument("gemm: per-channel scales need one per output column (" +
                                std::to_string(p.shape.n_out) + "), and an int8 output");
  for (const quant::LaneScale& s : epi.scales)
    if (s.exponent < quant::kMinExponent || s.exponent > quant::kMaxExponent)
      throw std::invalid_argument("gemm: a per-channel shift of " + std::to_string(s.exponent) +
                                  " is outside " + std::to_string(quant::kMinExponent) + ".." +
                                  std::to_string(quant::kMaxExponent));
  const int n = p.n, kb = p.k_blocks, P = p.pass_rows, out_rows = int8 ? 1 : 4;
  const uint32_t result_base = uint32_t(p.a_regions * kb * P);
  const uint64_t row_bytes = uint64_t(p.out_row_bytes());

  Stream out;
  WeightStream weights(out, p, w);

  if (int8) {
    out.add(isa::cfg(isa::kCfgQmult, uint32_t(epi.q.multiplier)));
    out.add(isa::cfg(isa::kCfgQshift, uint32_t(epi.q.shift)));
    out.add(isa::cfg(isa::kCfgQzp, uint32_t(epi.q.zero_point)));
    out.add(isa::cfg(isa::kCfgQmin, uint32_t(epi.q.qmin)));
    out.add(isa::cfg(isa::kCfgQmax, uint32_t(epi.q.qmax)));
    out.add(isa::cfg(isa::kCfgRelu6Max, uint32_t(epi.q.relu6_max)));
  }
  weights.top_up();

  const auto a_region = [&](int pass) { return uint32_t((pass % p.a_regions) * kb * P); };
  // Blocks [b0, b1) of a pass's A: contiguous in the packed image and the UB.
  const auto load_a = [&](int pass, int b0, int b1) {
    if (b1 <= b0) return;
    const int rows = p.rows_of_pass(pass);
    out.add(isa::rhm(a_region(pass) + uint32_t(b0 * rows), uint32_t((b1 - b0) * rows),
                     a + (uint64_t(p.pass_begin(pass)) * kb + uint64_t(b0) * rows) * n, uint32_t(n)));
  };

  // ACT and WHM of output tile t (pass, column tile j).
  std::vector<int32_t> lane_bias(size_t(n), 0);  // the BIAS registers' values
  // The CH_MULT / CH_SHIFT registers' values: QMULT and QSHIFT above set every lane.
  std::vector<quant::LaneScale> lane_scale(size_t(n), quant::tensor_scale(epi.q));
  const auto epilogue = [&](int t) {
    const int pass = t / p.col_tiles, j = t % p.col_tiles, rows = p.rows_of_pass(pass);
    const uint32_t acc = uint32_t((t % 2) * P), ub = result_base + uint32_t((t % 2) * out_rows * P);
    // Per-channel scales of this tile's columns; padding lanes keep theirs
    // (their results are not read back).
    if (!epi.scales.empty())
      for (int l = 0; l < n && j * n + l < p.shape.n_out; ++l) {
        const quant::LaneScale& want = epi.scales[size_t(j * n + l)];
        quant::LaneScale& have = lane_scale[size_t(l)];
        if (want.multiplier != have.multiplier)
          out.add(isa::cfg(isa::kCfgChMultBase + uint32_t(l), uint32_t(want.multiplier)));
        if (want.exponent != have.exponent)
          out.add(isa::cfg(isa::kCfgChShiftBase + uint32_t(l), uint32_t(want.exponent)));
        have = want;
      }
    if (!epi.bias.empty())
      for (int l = 0; l < n; ++l) {
        const int col = j * n + l;
        const int32_t b = col < p.shape.n_out ? epi.bias[size_t(col)] : 0;
        if (b != lane_bias[size_t(l)]) out.add(isa::cfg(isa::kCfgBiasBase + uint32_t(l), uint32_t(b)));
        lane_bias[size_t(l)] = b;
      }
    if (int8) out.add(isa::act(acc, ub, uint32_t(rows), epi.act, !epi.bias.empty()));
    else out.add(isa::act(acc, ub, uint32_t(rows), isa::Act::kNone, false, true));
    out.add(isa::whm(ub, uint32_t(out_rows * rows),
                     c + (uint64_t(j) * p.shape.m + uint64_t(p.pass_begin(pass))) * row_bytes, uint32_t(n)));
  };

  int t = 0;  // output tile index over all passes
  for (int pass = 0; pass < p.passes; ++pass) {
    if (pass == 0 || p.a_regions == 1) load_a(pass, 0, kb);  // one region: waits for the last pass's MMCs
    const bool prefetch = pass + 1 < p.passes && p.a_regions == 2;
    const int rows = p.rows_of_pass(pass);
    const uint32_t a0 = a_region(pass);
    for (int j = 0; j < p.col_tiles; ++j, ++t) {
      const uint32_t acc = uint32_t((t % 2) * P);
      // k = 0 alone (it starts the accumulation), then runs of accumulating
      // MMCs, each ending where the weight stream has room for its next RW.
      int k = 0;
      while (k < kb) {
        weights.need_one();
        const int run = k == 0 ? 1 : int(std::min<int64_t>({kb - k, weights.available(), weights.retires_until_rw()}));
        out.mmc_run(run, a0 + uint32_t(k * rows), uint32_t(rows), acc, uint32_t(rows), k > 0);
        for (int r = 0; r < run; ++r) weights.retire_one();
        k += run;
        if (k == 1) {
          if (t > 0) epilogue(t - 1);  // the previous tile's ACT/WHM after this tile's first MMC
          // The next pass's A, spread over this pass's column tiles so that
          // weight reads and write-backs interleave with it.
          if (prefetch) load_a(pass + 1, j * kb / p.col_tiles, (j + 1) * kb / p.col_tiles);
        }
      }
    }
  }
  epilogue(t - 1);
  return out.programs(core.imem_depth);
}

// ---- one-program form -------------------------------------------------------------------

uint64_t gemm_scratch_bytes(const GemmShape& s, const CoreConfig& core) {
  const GemmPlan p = plan_gemm(s, GemmOutput::kInt32, core);
  return (p.a_bytes() + 63) / 64 * 64 + p.w_bytes();
}

GemmProgram build_gemm(HostMemory& mem, const GemmShape& shape, const GemmAddrs& addrs,
                       const CoreConfig& core, const GemmOptions& options) {
  GemmProgram g;
  g.plan = plan_gemm(shape, GemmOutput::kInt32, core, options);
  const GemmPlan& p = g.plan;
  const uint64_t a_packed = addrs.scratch, w_tiles = addrs.scratch + (p.a_bytes() + 63) / 64 * 64;
  g.c = addrs.c;
  mem.write(a_packed, std::span<const int8_t>(pack_a(p, read_matrix_i8(mem, addrs.a, shape.m, shape.k))));
  mem.write(w_tiles, std::span<const int8_t>(pack_w(p, read_matrix_i8(mem, addrs.w, shape.k, shape.n_out))));
  g.programs = gemm_programs(p, {}, a_packed, w_tiles, g.c, core);
  return g;
}

MatrixI32 read_gemm_result(const HostMemory& mem, const GemmProgram& g) {
  return unpack_c_i32(g.plan, mem.read(g.c, g.plan.c_bytes()));
}

void write_matrix(HostMemory& mem, uint64_t addr, const MatrixI8& m) {
  mem.write(addr, std::span<const int8_t>(m.data));
}

MatrixI8 read_matrix_i8(const HostMemory& mem, uint64_t addr, int rows, int cols) {
  MatrixI8 m(rows, cols);
  mem.read(addr, std::span(reinterpret_cast<uint8_t*>(m.data.data()), m.data.size()));
  return m;
}

}  // namespace tpu::model
