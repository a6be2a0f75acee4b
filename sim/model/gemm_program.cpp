#include "gemm_program.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tpu::model {

using isa::Instr;

namespace {

int round_up(int v, int multiple) { return (v + multiple - 1) / multiple * multiple; }
uint64_t align64(uint64_t v) { return (v + 63) / 64 * 64; }

uint64_t padded_a_bytes(const GemmShape& s, int n) {
  return align64(uint64_t(s.m) * round_up(s.k, n));
}

// UB rows per row of A in a pass: Kb blocks of A plus two result regions of 4 rows
// (an int32 row is 4 UB rows).
int ub_rows_per_a_row(int k_blocks) { return k_blocks + 2 * 4; }

void write_padded_a(HostMemory& mem, const GemmProgram& g, uint64_t a_addr) {
  const int kp = g.k_blocks * g.n;
  std::vector<uint8_t> row(size_t(kp), 0);
  for (int i = 0; i < g.shape.m; ++i) {
    mem.read(a_addr + uint64_t(i) * g.shape.k, std::span(row.data(), size_t(g.shape.k)));
    mem.write(g.a_padded + uint64_t(i) * kp, row);
  }
}

void write_weight_tiles(HostMemory& mem, const GemmProgram& g, uint64_t w_addr) {
  const int n = g.n;
  const MatrixI8 w = read_matrix_i8(mem, w_addr, g.shape.k, g.shape.n_out);
  std::vector<int8_t> tile(size_t(n) * n);
  for (int j = 0; j < g.col_tiles; ++j)
    for (int kb = 0; kb < g.k_blocks; ++kb) {
      for (int r = 0; r < n; ++r)
        for (int col = 0; col < n; ++col) {
          const int wr = kb * n + r, wc = j * n + col;
          tile[size_t(r) * n + col] = wr < w.rows && wc < w.cols ? w.at(wr, wc) : int8_t{0};
        }
      mem.write(g.w_tiles + uint64_t(j * g.k_blocks + kb) * n * n, std::span<const int8_t>(tile));
    }
}

int choose_pass_rows(const GemmShape& s, int k_blocks, const CoreConfig& core,
                     const GemmOptions& options) {
  const int per_row = ub_rows_per_a_row(k_blocks);
  int rows = std::min({s.m, core.ub_rows / per_row, core.acc_rows / 2,
                       65536 / per_row,  // UB addresses are 16-bit fields
                       0xFFFF / 4});     // WHM of 4 UB rows per result row
  if (options.max_pass_rows > 0) rows = std::min(rows, options.max_pass_rows);
  if (rows < 1)
    throw std::invalid_argument("build_gemm: K = " + std::to_string(s.k) + " needs " +
                                std::to_string(per_row) + " UB rows per row of A; the core has " +
                                std::to_string(core.ub_rows) + " UB rows");
  return rows;
}

// Appends instructions; repeat() uses a LOOP only when it saves instructions.
class ProgramWriter {
 public:
  void emit(const Instr& in) { program_.push_back(in); }

  // body (as for iteration 0) `times` times, with the LOOP's per-iteration offsets.
  void repeat(int times, const std::vector<Instr>& body, int32_t ub_inc, int64_t host_inc) {
    if (times <= 0) return;
    if (times > 1) emit(isa::loop(uint32_t(times), uint32_t(body.size()), ub_inc, 0, host_inc));
    for (const Instr& in : body) emit(in);
  }

  std::vector<Instr> take() { return std::move(program_); }

 private:
  std::vector<Instr> program_;
};

// One pass: rows [m0, m0 + rows) of A against all of W.
void emit_pass(ProgramWriter& out, const GemmProgram& g, const CoreConfig& core, int m0, int rows) {
  const int n = g.n, kb = g.k_blocks, kp = kb * n;
  const uint64_t tile_bytes = uint64_t(n) * n;
  const auto tile_addr = [&](int s) { return g.w_tiles + uint64_t(s) * tile_bytes; };

  // A's column block k goes to UB rows [k*rows, (k+1)*rows).
  out.repeat(kb, {isa::rhm(0, uint32_t(rows), g.a_padded + uint64_t(m0) * kp, uint32_t(kp))}, rows,
             n);

  // Tile s (= j*kb + k) is used by the s-th MMC; each RW runs `ahead` tiles
  // in front, never leaving more than the capacity unretired.
  const int total = g.col_tiles * kb;
  const int ahead = std::min(core.wgt_fifo_tiles + isa::kWgtBanks, total);
  out.emit(isa::rw(tile_addr(0), uint32_t(ahead), uint32_t(n)));

  for (int j = 0; j < g.col_tiles; ++j) {
    const uint32_t acc_region = uint32_t((j % 2) * rows);
    const uint32_t ub_result = uint32_t(kb * rows + (j % 2) * 4 * rows);
    const int s0 = j * kb;
    out.emit(isa::mmc(0, acc_region, uint32_t(rows), false, true));
    if (s0 + ahead < total) out.emit(isa::rw(tile_addr(s0 + ahead), 1, uint32_t(n)));
    // k = 1 .. kb-1: first those that still fetch a tile, then the rest.
    const int with_rw = std::clamp(total - s0 - ahead - 1, 0, kb - 1);
    const Instr mmc_k1 = isa::mmc(uint32_t(rows), acc_region, uint32_t(rows), true, true);
    out.repeat(with_rw, {mmc_k1, isa::rw(tile_addr(s0 + 1 + ahead), 1, uint32_t(n))}, rows,
               int64_t(tile_bytes));
    out.repeat(kb - 1 - with_rw,
               {isa::mmc(uint32_t((1 + with_rw) * rows), acc_region, uint32_t(rows), true, true)},
               rows, 0);
    out.emit(isa::act(acc_region, ub_result, uint32_t(rows), isa::Act::kNone, false, true));
    out.emit(isa::whm(ub_result, uint32_t(4 * rows), g.c + (uint64_t(j) * g.shape.m + m0) * 4 * n,
                      uint32_t(n)));
  }
}

}  // namespace

uint64_t gemm_scratch_bytes(const GemmShape& s, int n) {
  const uint64_t tiles = uint64_t(round_up(s.k, n) / n) * (round_up(s.n_out, n) / n);
  return padded_a_bytes(s, n) + tiles * n * n;
}

uint64_t gemm_result_bytes(const GemmShape& s, int n) {
  return uint64_t(s.m) * round_up(s.n_out, n) * 4;
}

GemmProgram build_gemm(HostMemory& mem, const GemmShape& shape, const GemmAddrs& addrs,
                       const CoreConfig& core, const GemmOptions& options) {
  if (shape.m < 1 || shape.k < 1 || shape.n_out < 1)
    throw std::invalid_argument("build_gemm: every dimension must be >= 1");
  if (round_up(shape.k, core.n) > 0xFFFF)
    throw std::invalid_argument("build_gemm: K too large for a 16-bit host stride");
  GemmProgram g;
  g.shape = shape;
  g.n = core.n;
  g.k_blocks = round_up(shape.k, core.n) / core.n;
  g.col_tiles = round_up(shape.n_out, core.n) / core.n;
  g.pass_rows = choose_pass_rows(shape, g.k_blocks, core, options);
  g.passes = (shape.m + g.pass_rows - 1) / g.pass_rows;
  g.a_padded = addrs.scratch;
  g.w_tiles = addrs.scratch + padded_a_bytes(shape, core.n);
  g.c = addrs.c;

  write_padded_a(mem, g, addrs.a);
  write_weight_tiles(mem, g, addrs.w);

  ProgramWriter out;
  for (int m0 = 0; m0 < shape.m; m0 += g.pass_rows)
    emit_pass(out, g, core, m0, std::min(g.pass_rows, shape.m - m0));
  out.emit(isa::halt());
  g.program = out.take();
  if (g.program.size() > size_t(core.imem_depth))
    throw std::invalid_argument(
        "build_gemm: the program needs " + std::to_string(g.program.size()) +
        " instructions; the instruction memory holds " + std::to_string(core.imem_depth));
  return g;
}

MatrixI32 read_gemm_result(const HostMemory& mem, const GemmProgram& g) {
  MatrixI32 c(g.shape.m, g.shape.n_out);
  const int n = g.n;
  for (int i = 0; i < g.shape.m; ++i)
    for (int j = 0; j < g.shape.n_out; ++j)
      c.at(i, j) =
          int32_t(mem.read32(g.c + ((uint64_t(j / n) * g.shape.m + i) * n + uint64_t(j % n)) * 4));
  return c;
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
