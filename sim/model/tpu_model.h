// SPDX-License-Identifier: Apache-2.0
// Reference model of the core: executes the same binary programs as the RTL,
// one instruction at a time and completely, per docs/isa.md. The RTL overlaps
// its units but must end every valid program in the same state.
//
// CoreConfig::datapath selects the MXU's arithmetic. In an int8 core (every
// named configuration so far) the bf16 forms of the instructions (RHM/WHM
// WIDE, RW BF16, MMC BF16, ACT F32, VOP BF16) and the fp32 CFG registers are
// BAD_FLAGS / BAD_CFG, as in the RTL. A bf16 or both core implements them
// with the functions of tpu/bf16.h and tpu/vpu_f32.h in the order
// docs/numerics.md defines; a bf16-only core rejects the int8 forms of RW
// and MMC (BAD_FLAGS).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "tpu/bf16.h"
#include "tpu/core_config.h"
#include "tpu/host_memory.h"
#include "tpu/isa.h"
#include "tpu/quant.h"
#include "tpu/queue.h"
#include "tpu/vpu_f32.h"

namespace tpu::model {

// The model's vocabulary, so that users of tpu::model need not name tpu::isa.
using isa::ErrCode;
using isa::Instr;
using tpu::CoreConfig;
using tpu::HostMemory;
using tpu::Window;

struct RunResult {
  isa::ErrCode err = isa::ErrCode::kOk;
  uint32_t err_pc = 0;        // index of the faulting instruction; 0 on OK (as the RTL)
  uint64_t irqs = 0;          // IRQ instructions executed
  uint64_t instructions = 0;  // executed, counting each loop iteration's body; the
                              // LOOP and HALT count, a faulting instruction does not
  // Work done, in rows of N lanes: host rows read (RHM, and RW's N per tile)
  // and written (WHM), rows through the MXU (MMC) and the VPU (ACT, VOP).
  uint64_t rows_read = 0, rows_written = 0, mmc_rows = 0, vpu_rows = 0;
  bool stopped = false;  // run() gave up at max_work; the state is part-way
  // What a MEM_FAULT was: a memory-port error on the row at fault_addr, or an
  // instruction whose host span, starting at fault_addr, is outside the DMA
  // windows for its direction (nothing of it was moved).
  enum class Fault : uint8_t { kNone, kMemory, kWindowRead, kWindowWrite };
  Fault fault = Fault::kNone;
  uint64_t fault_addr = 0;
  uint64_t rows() const { return rows_read + rows_written + mmc_rows + vpu_rows; }
  // Instructions plus rows: a rough, overlap-free count of cycles.
  uint64_t work() const { return instructions + rows(); }
};

class TpuModel {
 public:
  // Throws std::invalid_argument for a bad configuration (a bf16 or both
  // datapath needs an even N: a wide row splits its lanes over two UB rows).
  explicit TpuModel(CoreConfig config = {});

  const CoreConfig& config() const { return cfg_; }
  // Power-on state: zero memories, empty weights, CFG reset values, zero imem.
  void reset();

  void write_imem(uint32_t index, const isa::Instr& in);
  void load_program(uint32_t start, const std::vector<isa::Instr>& program);
  const isa::Instr& imem(uint32_t index) const { return imem_.at(index); }

  // The DMA windows of the next runs (docs/host_interface.md, "DMA windows"):
  // an RHM, WHM or RW whose host span (isa::host_span) does not lie inside
  // one window granting its direction is a MEM_FAULT that moves nothing.
  // std::nullopt (the default, and after reset()) checks nothing: the core
  // alone, as the core-level tests use it. An empty list grants nothing.
  void set_windows(std::optional<std::vector<Window>> windows) { windows_ = std::move(windows); }
  const std::optional<std::vector<Window>>& windows() const { return windows_; }

  // Runs from start_pc until HALT or an error. Throws std::runtime_error after
  // max_steps instructions (programs cannot branch back, so only huge loop
  // counts get there). Stops (RunResult::stopped) before the first
  // instruction that would start past max_work (RunResult::work()). UB, ACC,
  // CFG and (after HALT) weight tiles persist into the next run; an error
  // discards the tiles.
  RunResult run(uint32_t start_pc, HostMemory& mem, uint64_t max_steps = 10'000'000,
                uint64_t max_work = UINT64_MAX);

  std::vector<int8_t> ub_row(uint32_t row) const;
  std::vector<int32_t> acc_row(uint32_t row) const;
  // The wide row at UB rows row, row + 1: N bf16 lanes, little-endian, lanes
  // 0 .. N/2-1 in the first row (docs/isa.md, "Wide rows").
  std::vector<bf16> ub_wide_row(uint32_t row) const;
  // An ACC row's bits as fp32 (what MMC BF16 writes).
  std::vector<fp32> acc_row_f32(uint32_t row) const;
  // A CFG register's value; std::out_of_range for an unknown index (the fp32
  // registers are unknown in an int8 core). QMULT and QSHIFT, which write
  // every lane, read lane 0 (QSHIFT as -CH_SHIFT+0).
  uint32_t cfg(uint16_t index) const;
  size_t pending_tiles() const { return tiles_.size(); }
  // The format of the oldest pending tile (the current one); false if none.
  bool current_tile_is_bf16() const { return !tiles_.empty() && tiles_.front().is_bf16; }
  void clear_weights() { tiles_.clear(); }

 private:
  // Address offsets of the current LOOP iteration.
  struct Offsets {
    int64_t ub = 0, acc = 0;
    uint64_t host = 0;
  };
  struct LoopState {
    bool active = false;
    uint32_t start = 0, end = 0;  // body is [start, end)
    uint32_t left = 0;            // iterations after the current one
    int64_t ub_inc = 0, acc_inc = 0;
    uint64_t host_inc = 0;
    Offsets offsets;
  };
  // One weight tile, n x n, in its format (RW's BF16 flag): int8 row-major
  // (row r = K index), or bf16 column-major (column j's n weights top to
  // bottom, as the MXU's column c adds them).
  struct Tile {
    bool is_bf16 = false;
    std::vector<int8_t> i8;
    std::vector<bf16> columns;
  };

  isa::ErrCode issue(const isa::Instr& in, uint32_t pc, const LoopState& loop, HostMemory& mem,
                     RunResult& result);
  uint32_t next_pc(const isa::Instr& in, uint32_t pc, LoopState& loop) const;

  isa::ErrCode check_flags(const isa::Instr& in) const;
  isa::ErrCode check_count(const isa::Instr& in, uint32_t pc) const;
  isa::ErrCode check_cfg(const isa::Instr& in) const;
  isa::ErrCode check_ranges(const isa::Instr& in, const Offsets& off) const;
  isa::ErrCode check_weights(const isa::Instr& in) const;
  isa::ErrCode check_windows(const isa::Instr& in, const Offsets& off, RunResult& result) const;

  isa::ErrCode exec_rhm(const isa::Instr& in, const Offsets& off, HostMemory& mem, RunResult& result);
  isa::ErrCode exec_whm(const isa::Instr& in, const Offsets& off, HostMemory& mem, RunResult& result);
  isa::ErrCode exec_rw(const isa::Instr& in, const Offsets& off, HostMemory& mem, RunResult& result);
  void exec_mmc(const isa::Instr& in, const Offsets& off);
  void exec_act(const isa::Instr& in, const Offsets& off);
  void exec_act_f32(const isa::Instr& in, const Offsets& off);
  void exec_vop(const isa::Instr& in, const Offsets& off);
  void exec_vop_bf16(const isa::Instr& in, const Offsets& off);
  void exec_cfg(const isa::Instr& in);
  void write_cfg(uint16_t index, uint32_t value);

  int8_t* ub(int64_t row) { return &ub_[size_t(row) * cfg_.n]; }
  int32_t* acc(int64_t row) { return &acc_[size_t(row) * cfg_.n]; }
  // The wide row at UB row `row` as N bf16 lanes, and back.
  void read_wide(int64_t row, bf16* lanes) const;
  void write_wide(int64_t row, const bf16* lanes);

  CoreConfig cfg_;
  std::vector<isa::Instr> imem_;
  std::vector<int8_t> ub_;
  std::vector<int32_t> acc_;
  std::deque<Tile> tiles_;  // oldest first: front() is the current tile
  quant::QuantParams params_;  // zero point, clamps; multiplier/shift unused (scale_)
  std::vector<int32_t> bias_;
  std::vector<quant::LaneScale> scale_;  // per lane: CH_MULT, CH_SHIFT
  std::array<int8_t, 256> lut_{};
  vpu_f32::ActF32Params fparams_;  // SCALE, RELU6_F32, FMIN, FMAX (bf16/both cores)
  std::optional<std::vector<Window>> windows_;
};

}  // namespace tpu::model
