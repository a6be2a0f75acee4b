// SPDX-License-Identifier: Apache-2.0
#include "tpu_model.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tpu::model {

using isa::ErrCode;
using isa::Instr;
using isa::Op;

// ---- TpuModel: state -----------------------------------------------------------------

TpuModel::TpuModel(CoreConfig config) : cfg_(config) {
  if (cfg_.n < 1 || cfg_.ub_rows < 1 || cfg_.acc_rows < 1 || cfg_.imem_depth < 1 ||
      cfg_.wgt_fifo_tiles < 0 || cfg_.n > 256 || (has_bf16(cfg_.datapath) && cfg_.n % 2 != 0))
    throw std::invalid_argument("TpuModel: bad CoreConfig");
  reset();
}

void TpuModel::reset() {
  imem_.assign(size_t(cfg_.imem_depth), Instr{});
  ub_.assign(size_t(cfg_.ub_rows) * cfg_.n, 0);
  acc_.assign(size_t(cfg_.acc_rows) * cfg_.n, 0);
  tiles_.clear();
  windows_.reset();
  bias_.assign(size_t(cfg_.n), 0);
  scale_.assign(size_t(cfg_.n), quant::LaneScale{});
  fparams_ = {};
  for (const isa::CfgInfo& r : isa::kCfgRegs) {
    if (r.fp32 && !has_bf16(cfg_.datapath)) continue;
    const int entries = r.count == isa::kCfgPerLane ? cfg_.n : r.count;
    for (int i = 0; i < entries; ++i) write_cfg(uint16_t(r.index + i), uint32_t(r.reset));
  }
}

void TpuModel::write_imem(uint32_t index, const Instr& in) { imem_.at(index) = in; }

void TpuModel::load_program(uint32_t start, const std::vector<Instr>& program) {
  if (uint64_t{start} + program.size() > imem_.size())
    throw std::out_of_range("TpuModel::load_program: program of " + std::to_string(program.size()) +
                            " instructions at " + std::to_string(start) +
                            " does not fit the instruction memory");
  std::copy(program.begin(), program.end(), imem_.begin() + start);
}

std::vector<int8_t> TpuModel::ub_row(uint32_t row) const {
  if (row >= uint32_t(cfg_.ub_rows)) throw std::out_of_range("TpuModel::ub_row");
  const auto first = ub_.begin() + ptrdiff_t(row) * cfg_.n;
  return {first, first + cfg_.n};
}

std::vector<int32_t> TpuModel::acc_row(uint32_t row) const {
  if (row >= uint32_t(cfg_.acc_rows)) throw std::out_of_range("TpuModel::acc_row");
  const auto first = acc_.begin() + ptrdiff_t(row) * cfg_.n;
  return {first, first + cfg_.n};
}

std::vector<bf16> TpuModel::ub_wide_row(uint32_t row) const {
  if (cfg_.n % 2 != 0 || uint64_t{row} + 2 > uint64_t(cfg_.ub_rows))
    throw std::out_of_range("TpuModel::ub_wide_row");
  std::vector<bf16> lanes(size_t(cfg_.n));
  read_wide(row, lanes.data());
  return lanes;
}

std::vector<fp32> TpuModel::acc_row_f32(uint32_t row) const {
  const std::vector<int32_t> bits = acc_row(row);
  return {bits.begin(), bits.end()};  // int32 -> uint32: the same bits
}

// A wide row is 2N bytes over UB rows row and row + 1, which the model
// stores one after the other: lane j is bytes 2j (low) and 2j + 1.
void TpuModel::read_wide(int64_t row, bf16* lanes) const {
  const int8_t* bytes = &ub_[size_t(row) * cfg_.n];
  for (int j = 0; j < cfg_.n; ++j)
    lanes[j] = bf16(uint8_t(bytes[2 * j]) | uint8_t(bytes[2 * j + 1]) << 8);
}

void TpuModel::write_wide(int64_t row, const bf16* lanes) {
  int8_t* bytes = ub(row);
  for (int j = 0; j < cfg_.n; ++j) {
    bytes[2 * j] = int8_t(uint8_t(lanes[j]));
    bytes[2 * j + 1] = int8_t(uint8_t(lanes[j] >> 8));
  }
}

namespace {

// The register (or array) an index names, given N bias lanes and the
// datapath (the fp32 registers exist in bf16 and both cores); nullptr if none.
const isa::CfgInfo* find_cfg(uint16_t index, int n, Datapath datapath) {
  for (const isa::CfgInfo& r : isa::kCfgRegs) {
    if (r.fp32 && !has_bf16(datapath)) continue;
    const int entries = r.count == isa::kCfgPerLane ? n : r.count;
    if (index >= r.index && index < r.index + entries) return &r;
  }
  return nullptr;
}

}  // namespace

uint32_t TpuModel::cfg(uint16_t index) const {
  switch (index) {
    case isa::kCfgQmult:  // writes every lane; reads lane 0
      return uint32_t(scale_[0].multiplier);
    case isa::kCfgQshift:  // writes every lane's exponent as -s; reads lane 0's -e
      return uint32_t(-scale_[0].exponent);
    case isa::kCfgQzp:
      return uint32_t(params_.zero_point);
    case isa::kCfgQmin:
      return uint32_t(params_.qmin);
    case isa::kCfgQmax:
      return uint32_t(params_.qmax);
    case isa::kCfgRelu6Max:
      return uint32_t(params_.relu6_max);
    default:
      break;
  }
  const isa::CfgInfo* r = find_cfg(index, cfg_.n, cfg_.datapath);
  if (r && r->index == isa::kCfgScale) return fparams_.scale;
  if (r && r->index == isa::kCfgRelu6F32) return fparams_.relu6_max;
  if (r && r->index == isa::kCfgFmin) return fparams_.fmin;
  if (r && r->index == isa::kCfgFmax) return fparams_.fmax;
  if (r && r->index == isa::kCfgBiasBase) return uint32_t(bias_[index - r->index]);
  if (r && r->index == isa::kCfgLutBase) return uint8_t(lut_[index - r->index]);
  if (r && r->index == isa::kCfgChMultBase) return uint32_t(scale_[index - r->index].multiplier);
  if (r && r->index == isa::kCfgChShiftBase) return uint32_t(scale_[index - r->index].exponent);
  throw std::out_of_range("TpuModel::cfg: no register " + std::to_string(index));
}

void TpuModel::write_cfg(uint16_t index, uint32_t value) {
  const int32_t v = int32_t(value);
  switch (index) {
    case isa::kCfgQmult:
      for (quant::LaneScale& s : scale_) s.multiplier = v;
      return;
    case isa::kCfgQshift:
      for (quant::LaneScale& s : scale_) s.exponent = -v;
      return;
    case isa::kCfgQzp:
      params_.zero_point = v;
      return;
    case isa::kCfgQmin:
      params_.qmin = v;
      return;
    case isa::kCfgQmax:
      params_.qmax = v;
      return;
    case isa::kCfgRelu6Max:
      params_.relu6_max = v;
      return;
    case isa::kCfgScale:
      fparams_.scale = value;
      return;
    case isa::kCfgRelu6F32:
      fparams_.relu6_max = value;
      return;
    case isa::kCfgFmin:
      fparams_.fmin = value;
      return;
    case isa::kCfgFmax:
      fparams_.fmax = value;
      return;
    default:
      break;
  }
  if (index >= isa::kCfgChShiftBase)
    scale_[index - isa::kCfgChShiftBase].exponent = v;
  else if (index >= isa::kCfgChMultBase)
    scale_[index - isa::kCfgChMultBase].multiplier = v;
  else if (index >= isa::kCfgLutBase)
    lut_[index - isa::kCfgLutBase] = int8_t(value);
  else
    bias_[index - isa::kCfgBiasBase] = v;
}

// ---- TpuModel: running ------------------------------------------------------------------

RunResult TpuModel::run(uint32_t start_pc, HostMemory& mem, uint64_t max_steps, uint64_t max_work) {
  RunResult result;
  LoopState loop;
  for (uint32_t pc = start_pc;;) {
    if (result.work() > max_work) {
      result.stopped = true;
      return result;
    }
    const ErrCode err =
        pc >= imem_.size() ? ErrCode::kPcRange : issue(imem_[pc], pc, loop, mem, result);
    if (err != ErrCode::kOk) {
      clear_weights();  // an error discards the tiles
      result.err = err;
      result.err_pc = pc;
      return result;
    }
    if (++result.instructions > max_steps)
      throw std::runtime_error("TpuModel::run: more than " + std::to_string(max_steps) +
                               " instructions");
    if (imem_[pc].op == uint8_t(Op::kHalt)) return result;
    pc = next_pc(imem_[pc], pc, loop);
  }
}

uint32_t TpuModel::next_pc(const Instr& in, uint32_t pc, LoopState& loop) const {
  if (in.op == uint8_t(Op::kLoop)) {
    loop.active = true;
    loop.start = pc + 1;
    loop.end = pc + 1 + in.a;
    loop.left = in.count - 1u;
    loop.ub_inc = int16_t(in.b);
    loop.acc_inc = int16_t(uint16_t(in.c));
    loop.host_inc = uint64_t(int64_t(int32_t(uint32_t(in.c >> 32))));
    loop.offsets = {};
    return loop.start;
  }
  if (loop.active && pc + 1 == loop.end) {
    if (loop.left == 0) {
      loop = {};  // instructions after the body are not offset
      return pc + 1;
    }
    --loop.left;
    loop.offsets.ub += loop.ub_inc;
    loop.offsets.acc += loop.acc_inc;
    loop.offsets.host += loop.host_inc;
    return loop.start;
  }
  return pc + 1;
}

// Checks in the order docs/isa.md gives for an instruction with several
// faults, then executes it.
ErrCode TpuModel::issue(const Instr& in, uint32_t pc, const LoopState& loop, HostMemory& mem,
                        RunResult& result) {
  if (!isa::find_op(in.op)) return ErrCode::kIllegalOpcode;
  for (ErrCode err : {check_flags(in), check_count(in, pc)})
    if (err != ErrCode::kOk) return err;
  if (in.op == uint8_t(Op::kLoop) && loop.active) return ErrCode::kNestedLoop;
  for (ErrCode err : {check_cfg(in), check_ranges(in, loop.offsets), check_weights(in)})
    if (err != ErrCode::kOk) return err;
  if (ErrCode err = check_windows(in, loop.offsets, result); err != ErrCode::kOk) return err;

  const Offsets& off = loop.offsets;
  switch (Op(in.op)) {
    case Op::kRhm:
      result.rows_read += in.count;
      return exec_rhm(in, off, mem, result);
    case Op::kWhm:
      result.rows_written += in.count;
      return exec_whm(in, off, mem, result);
    case Op::kRw:
      result.rows_read += uint64_t(in.count) * uint64_t(cfg_.n);
      return exec_rw(in, off, mem, result);
    case Op::kMmc:
      result.mmc_rows += in.count;
      exec_mmc(in, off);
      break;
    case Op::kAct:
      result.vpu_rows += in.count;
      exec_act(in, off);
      break;
    case Op::kVop:
      result.vpu_rows += in.count;
      exec_vop(in, off);
      break;
    case Op::kCfg:
      exec_cfg(in);
      break;
    case Op::kIrq:
      ++result.irqs;
      break;
    case Op::kSync:  // the model completes every instruction before the next
    case Op::kLoop:  // run() keeps the loop state
    case Op::kHalt:
      break;
  }
  return ErrCode::kOk;
}

// ---- Checks ----------------------------------------------------------------------------

namespace {

// [start, start + rows) inside a memory of `limit` rows; no wrapping.
bool rows_fit(int64_t start, int64_t rows, int limit) {
  return start >= 0 && start + rows <= limit;
}

// RHM/WHM WIDE: 2N host bytes per row, two UB rows.
bool is_wide_transfer(const Instr& in) {
  return in.flags & (in.op == uint8_t(Op::kRhm) ? isa::kFlagRhmWideMask : isa::kFlagWhmWideMask);
}

bool vop_is_pool(const Instr& in) {
  const isa::VopInfo* v =
      isa::find_vop(isa::flag_field(in.flags, isa::kFlagVopOpLsb, isa::kFlagVopOpWidth));
  return v && !v->binary;
}

}  // namespace

ErrCode TpuModel::check_flags(const Instr& in) const {
  const isa::OpInfo& info = *isa::find_op(in.op);
  if ((in.flags & ~info.flags_mask) || (in.a & ~info.a_mask) || (in.b & ~info.b_mask) ||
      (in.c & ~info.c_mask))
    return ErrCode::kBadFlags;
  // The bf16 forms need a bf16 or both datapath; a bf16-only one has no int8 MXU forms.
  if (!has_bf16(cfg_.datapath) && (in.flags & info.bf16_flags_mask)) return ErrCode::kBadFlags;
  if (!has_int8(cfg_.datapath) && (~in.flags & info.bf16_only_required_mask))
    return ErrCode::kBadFlags;
  if (in.op == uint8_t(Op::kAct)) {
    const bool raw = in.flags & isa::kFlagActRawMask, f32 = in.flags & isa::kFlagActF32Mask;
    // RAW alone copies the accumulator bits and takes no other flag; with
    // F32 it writes the fp32 result of the bias, scale and function.
    if (raw && !f32 && (in.flags & ~isa::kFlagActRawMask)) return ErrCode::kBadFlags;
    if (isa::act_ub_rows_per_row(in, cfg_.n) == 0) return ErrCode::kBadFlags;  // lanes > N
    const int func = isa::flag_field(in.flags, isa::kFlagActFuncLsb, isa::kFlagActFuncWidth);
    if (f32 && !(isa::kActF32Funcs >> func & 1)) return ErrCode::kBadFlags;  // no fp32 LUT
  }
  if (in.op == uint8_t(Op::kVop)) {
    const isa::VopInfo* v =
        isa::find_vop(isa::flag_field(in.flags, isa::kFlagVopOpLsb, isa::kFlagVopOpWidth));
    const int shift = isa::flag_field(in.flags, isa::kFlagVopShiftLsb, isa::kFlagVopShiftWidth);
    const bool bf16 = in.flags & isa::kFlagVopBf16Mask;
    if (!v || shift > (bf16 ? v->bf16_max_shift : v->max_shift) || (!v->binary && in.b != 0))
      return ErrCode::kBadFlags;
  }
  return ErrCode::kOk;
}

ErrCode TpuModel::check_count(const Instr& in, uint32_t pc) const {
  const isa::OpInfo& info = *isa::find_op(in.op);
  if ((info.count == isa::CountRule::kZero) != (in.count == 0)) return ErrCode::kBadCount;
  if (in.op == uint8_t(Op::kLoop) &&
      (in.a == 0 || in.a > isa::kLoopMaxBody || uint64_t{pc} + 1 + in.a > imem_.size()))
    return ErrCode::kBadCount;
  return ErrCode::kOk;
}

ErrCode TpuModel::check_cfg(const Instr& in) const {
  if (in.op != uint8_t(Op::kCfg)) return ErrCode::kOk;
  const isa::CfgInfo* r = find_cfg(in.a, cfg_.n, cfg_.datapath);
  const int32_t v = int32_t(uint32_t(in.c));
  return r && v >= r->lo && v <= r->hi ? ErrCode::kOk : ErrCode::kBadCfg;
}

ErrCode TpuModel::check_ranges(const Instr& in, const Offsets& off) const {
  const int64_t rows = in.count;
  bool ub_ok = true, acc_ok = true;
  switch (Op(in.op)) {
    case Op::kRhm:
    case Op::kWhm: {
      const int64_t per_row = is_wide_transfer(in) ? 2 : 1;
      ub_ok = rows_fit(in.a + off.ub, per_row * rows, cfg_.ub_rows);
      break;
    }
    case Op::kMmc: {
      const int64_t per_row = (in.flags & isa::kFlagMmcBf16Mask) ? 2 : 1;
      ub_ok = rows_fit(in.a + off.ub, per_row * rows, cfg_.ub_rows);
      acc_ok = rows_fit(in.b + off.acc, rows, cfg_.acc_rows);
      break;
    }
    case Op::kAct: {
      // UB rows per ACC row: of RAW's 4 (int32 or fp32), F32's 2 (a wide bf16
      // row) or 1, those that hold the lanes asked for.
      const int64_t per_row = isa::act_ub_rows_per_row(in, cfg_.n);
      ub_ok = rows_fit(in.b + off.ub, per_row * rows, cfg_.ub_rows);
      acc_ok = rows_fit(in.a + off.acc, rows, cfg_.acc_rows);
      break;
    }
    case Op::kVop: {
      const bool pool = vop_is_pool(in);
      const int shift = isa::flag_field(in.flags, isa::kFlagVopShiftLsb, isa::kFlagVopShiftWidth);
      const int64_t per_row = (in.flags & isa::kFlagVopBf16Mask) ? 2 : 1;
      ub_ok = rows_fit(in.a + off.ub, per_row * (pool ? rows << shift : rows), cfg_.ub_rows) &&
              (pool || rows_fit(in.b + off.ub, per_row * rows, cfg_.ub_rows)) &&
              rows_fit(int64_t(in.c) + off.ub, per_row * rows, cfg_.ub_rows);
      break;
    }
    default:
      break;
  }
  if (!ub_ok) return ErrCode::kUbRange;
  return acc_ok ? ErrCode::kOk : ErrCode::kAccRange;
}

ErrCode TpuModel::check_weights(const Instr& in) const {
  if (in.op == uint8_t(Op::kMmc) && tiles_.empty()) return ErrCode::kNoWeights;
  if (in.op == uint8_t(Op::kMmc) && tiles_.front().is_bf16 != bool(in.flags & isa::kFlagMmcBf16Mask))
    return ErrCode::kWgtFormat;
  const size_t capacity = size_t(cfg_.wgt_fifo_tiles) + isa::kWgtBanks;
  if (in.op == uint8_t(Op::kRw) && tiles_.size() + in.count > capacity)
    return ErrCode::kWgtOverflow;
  return ErrCode::kOk;
}

// Last, after every check of the instruction itself: the RTL's memory port
// sees only instructions the controller issued.
ErrCode TpuModel::check_windows(const Instr& in, const Offsets& off, RunResult& result) const {
  if (!windows_) return ErrCode::kOk;
  const std::optional<isa::HostSpan> span = isa::host_span(in, off.host, cfg_.n);
  if (!span || (!span->wraps && windows_allow(*windows_, span->first, span->last, span->write)))
    return ErrCode::kOk;
  result.fault = span->write ? RunResult::Fault::kWindowWrite : RunResult::Fault::kWindowRead;
  result.fault_addr = span->first;
  return ErrCode::kMemFault;
}

// ---- Execution ----------------------------------------------------------------------------

namespace {

ErrCode memory_fault(RunResult& result, uint64_t addr) {
  result.fault = RunResult::Fault::kMemory;
  result.fault_addr = addr;
  return ErrCode::kMemFault;
}

}  // namespace

// A wide row (RHM/WHM WIDE) is 2N bytes at its host address, UB rows a + 2i
// and a + 2i + 1: the model keeps UB rows contiguous, so it is one span.
ErrCode TpuModel::exec_rhm(const Instr& in, const Offsets& off, HostMemory& mem, RunResult& result) {
  const int64_t per_row = is_wide_transfer(in) ? 2 : 1;
  const size_t bytes = size_t(per_row * cfg_.n);
  for (int64_t i = 0; i < in.count; ++i) {
    const uint64_t addr = in.c + off.host + uint64_t(i) * in.b;
    if (mem.faults(addr, bytes)) return memory_fault(result, addr);
    mem.read(addr, std::span(reinterpret_cast<uint8_t*>(ub(in.a + off.ub + per_row * i)), bytes));
  }
  return ErrCode::kOk;
}

ErrCode TpuModel::exec_whm(const Instr& in, const Offsets& off, HostMemory& mem, RunResult& result) {
  const int64_t per_row = is_wide_transfer(in) ? 2 : 1;
  const size_t bytes = size_t(per_row * cfg_.n);
  for (int64_t i = 0; i < in.count; ++i) {
    const uint64_t addr = in.c + off.host + uint64_t(i) * in.b;
    if (mem.faults(addr, bytes)) return memory_fault(result, addr);
    mem.write(addr, std::span<const int8_t>(ub(in.a + off.ub + per_row * i), bytes));
  }
  return ErrCode::kOk;
}

ErrCode TpuModel::exec_rw(const Instr& in, const Offsets& off, HostMemory& mem, RunResult& result) {
  const int n = cfg_.n;
  const bool bf16_tile = in.flags & isa::kFlagRwBf16Mask;
  const uint64_t row_bytes = uint64_t(n) * (bf16_tile ? 2 : 1);
  std::vector<uint8_t> row(row_bytes);
  for (int t = 0; t < in.count; ++t) {
    Tile tile;
    tile.is_bf16 = bf16_tile;
    if (bf16_tile)
      tile.columns.resize(size_t(n) * n);
    else
      tile.i8.resize(size_t(n) * n);
    for (int r = 0; r < n; ++r) {
      const uint64_t addr = in.c + off.host + (uint64_t(t) * n + r) * in.b;
      if (mem.faults(addr, row_bytes)) return memory_fault(result, addr);
      mem.read(addr, std::span(row));
      for (int j = 0; j < n; ++j) {
        if (bf16_tile)  // lane j little-endian; stored by column
          tile.columns[size_t(j) * n + r] = bf16(row[2 * j] | row[2 * j + 1] << 8);
        else
          tile.i8[size_t(r) * n + j] = int8_t(row[j]);
      }
    }
    tiles_.push_back(std::move(tile));
  }
  return ErrCode::kOk;
}

void TpuModel::exec_mmc(const Instr& in, const Offsets& off) {
  const int n = cfg_.n;
  const Tile& w = tiles_.front();
  const bool accumulate = in.flags & isa::kFlagMmcAccMask;
  if (w.is_bf16) {  // MMC BF16 (check_weights made sure the formats agree)
    std::vector<bf16> a(static_cast<size_t>(n));
    for (int64_t i = 0; i < in.count; ++i) {
      read_wide(in.a + off.ub + 2 * i, a.data());
      int32_t* out = acc(in.b + off.acc + i);
      for (int j = 0; j < n; ++j) {
        // Down column j from +0 in row order, then into the accumulator.
        const fp32 column = bf16_dot_column(a.data(), &w.columns[size_t(j) * n], size_t(n));
        out[j] = int32_t(accumulate ? fp32_add(uint32_t(out[j]), column) : column);
      }
    }
  } else {
    for (int64_t i = 0; i < in.count; ++i) {
      const int8_t* a = ub(in.a + off.ub + i);
      int32_t* out = acc(in.b + off.acc + i);
      for (int j = 0; j < n; ++j) {
        int64_t p = 0;
        for (int k = 0; k < n; ++k) p += int64_t{a[k]} * w.i8[size_t(k) * n + j];
        // int32 accumulation wraps.
        out[j] = int32_t(uint32_t(p) + (accumulate ? uint32_t(out[j]) : 0u));
      }
    }
  }
  if (in.flags & isa::kFlagMmcPopMask) tiles_.pop_front();
}

void TpuModel::exec_act(const Instr& in, const Offsets& off) {
  const int n = cfg_.n;
  if (in.flags & isa::kFlagActF32Mask) {
    exec_act_f32(in, off);
    return;
  }
  if (in.flags & isa::kFlagActRawMask) {
    // ACC row i becomes 4N little-endian bytes, of which the first R UB rows
    // (those holding the lanes the ACT asks for) go to UB rows b+Ri ..
    // b+Ri+R-1.
    const int64_t rows = isa::act_ub_rows_per_row(in, n);
    std::vector<int8_t> bytes(size_t(4 * n));
    for (int64_t i = 0; i < in.count; ++i) {
      const int32_t* x = acc(in.a + off.acc + i);
      for (int j = 0; j < n; ++j)
        for (int byte = 0; byte < 4; ++byte)
          bytes[size_t(4 * j + byte)] = int8_t(uint32_t(x[j]) >> (8 * byte));
      std::copy_n(bytes.begin(), rows * n, ub(in.b + off.ub + rows * i));
    }
    return;
  }
  const auto func =
      quant::Act(isa::flag_field(in.flags, isa::kFlagActFuncLsb, isa::kFlagActFuncWidth));
  const bool use_bias = in.flags & isa::kFlagActBiasMask;
  for (int64_t i = 0; i < in.count; ++i) {
    const int32_t* x = acc(in.a + off.acc + i);
    int8_t* dst = ub(in.b + off.ub + i);
    for (int j = 0; j < n; ++j)
      dst[j] = quant::act_lane(x[j], use_bias ? bias_[size_t(j)] : 0, scale_[size_t(j)], params_,
                               func, lut_.data());
  }
}

// ACT F32: ACC row a + i as fp32 through vpu_f32::act_lane; the result as a
// wide bf16 row (2N bytes), or with RAW as fp32 bits (4N bytes, the layout
// of RAW int32 rows), of which the first R UB rows (those holding the lanes
// the ACT asks for) go to UB rows b + Ri .. b + Ri + R - 1.
void TpuModel::exec_act_f32(const Instr& in, const Offsets& off) {
  const int n = cfg_.n;
  const auto func =
      quant::Act(isa::flag_field(in.flags, isa::kFlagActFuncLsb, isa::kFlagActFuncWidth));
  const bool use_bias = in.flags & isa::kFlagActBiasMask;
  const bool raw = in.flags & isa::kFlagActRawMask;
  const int64_t rows = isa::act_ub_rows_per_row(in, n);
  std::vector<int8_t> bytes(size_t((raw ? 4 : 2) * n));
  for (int64_t i = 0; i < in.count; ++i) {
    const int32_t* x = acc(in.a + off.acc + i);
    for (int j = 0; j < n; ++j) {
      const fp32 y = vpu_f32::act_lane(uint32_t(x[j]), use_bias, uint32_t(bias_[size_t(j)]),
                                       fparams_, func);
      const uint32_t out = raw ? y : fp32_to_bf16(y);  // little-endian, 4 or 2 bytes a lane
      const int width = raw ? 4 : 2;
      for (int byte = 0; byte < width; ++byte) bytes[size_t(width * j + byte)] = int8_t(out >> (8 * byte));
    }
    std::copy_n(bytes.begin(), rows * n, ub(in.b + off.ub + rows * i));
  }
}

// VOP BF16: the int8 VOP's rows and order, on wide rows (row i of an operand
// is UB rows 2i, 2i + 1 from its base), with vpu_f32's lanes.
void TpuModel::exec_vop_bf16(const Instr& in, const Offsets& off) {
  const size_t n = size_t(cfg_.n);
  const auto op = isa::VopOp(isa::flag_field(in.flags, isa::kFlagVopOpLsb, isa::kFlagVopOpWidth));
  const int shift = isa::flag_field(in.flags, isa::kFlagVopShiftLsb, isa::kFlagVopShiftWidth);
  const bool binary = isa::find_vop(uint8_t(op))->binary;
  const int64_t window = int64_t{1} << shift;  // pools: wide rows reduced into one
  std::vector<bf16> a(binary ? n : n * size_t(window)), b(n), result(n);
  for (int64_t i = 0; i < in.count; ++i) {
    if (binary) {
      read_wide(in.a + off.ub + 2 * i, a.data());
      read_wide(in.b + off.ub + 2 * i, b.data());
    } else {
      for (int64_t r = 0; r < window; ++r)
        read_wide(in.a + off.ub + 2 * (i * window + r), &a[size_t(r) * n]);
    }
    for (size_t j = 0; j < n; ++j) {
      switch (op) {
        case isa::VopOp::kAdd:
          result[j] = vpu_f32::vop_add(a[j], b[j]);
          break;
        case isa::VopOp::kMul:
          result[j] = vpu_f32::vop_mul(a[j], b[j]);
          break;
        case isa::VopOp::kMax:
          result[j] = vpu_f32::vop_max(a[j], b[j]);
          break;
        case isa::VopOp::kMin: result[j] = vpu_f32::vop_min(a[j], b[j]); break;
        case isa::VopOp::kPoolMax:
          result[j] = vpu_f32::pool_max(&a[j], shift, int(n));
          break;
        case isa::VopOp::kPoolAvg:
          result[j] = vpu_f32::pool_avg(&a[j], shift, int(n));
          break;
      }
    }
    write_wide(int64_t(in.c) + off.ub + 2 * i, result.data());
  }
}

void TpuModel::exec_vop(const Instr& in, const Offsets& off) {
  if (in.flags & isa::kFlagVopBf16Mask) {
    exec_vop_bf16(in, off);
    return;
  }
  const int n = cfg_.n;
  const auto op = isa::VopOp(isa::flag_field(in.flags, isa::kFlagVopOpLsb, isa::kFlagVopOpWidth));
  const int shift = isa::flag_field(in.flags, isa::kFlagVopShiftLsb, isa::kFlagVopShiftWidth);
  const bool binary = isa::find_vop(uint8_t(op))->binary;
  const int64_t window = int64_t{1} << shift;  // pools: rows reduced into one
  std::vector<int8_t> result(static_cast<size_t>(n));
  // Row by row: a result row is written before the next row's sources are read.
  for (int64_t i = 0; i < in.count; ++i) {
    const int8_t* a = ub(in.a + off.ub + (binary ? i : i * window));
    const int8_t* b = binary ? ub(in.b + off.ub + i) : nullptr;
    for (int j = 0; j < n; ++j) {
      switch (op) {
        case isa::VopOp::kAdd:
          result[j] = quant::vop_add(a[j], b[j]);
          break;
        case isa::VopOp::kMul:
          result[j] = quant::vop_mul(a[j], b[j], shift);
          break;
        case isa::VopOp::kMax:
          result[j] = quant::vop_max(a[j], b[j]);
          break;
        case isa::VopOp::kMin: result[j] = quant::vop_min(a[j], b[j]); break;
        case isa::VopOp::kPoolMax: {
          int8_t m = a[j];
          for (int64_t r = 1; r < window; ++r) m = std::max(m, a[r * n + j]);
          result[j] = m;
          break;
        }
        case isa::VopOp::kPoolAvg: {
          int32_t sum = 0;
          for (int64_t r = 0; r < window; ++r) sum += a[r * n + j];
          result[j] = quant::pool_avg(sum, shift);
          break;
        }
      }
    }
    std::copy(result.begin(), result.end(), ub(int64_t(in.c) + off.ub + i));
  }
}

void TpuModel::exec_cfg(const Instr& in) { write_cfg(in.a, uint32_t(in.c)); }

}  // namespace tpu::model
