// SPDX-License-Identifier: Apache-2.0
// The model: transport: the reference model of the core (sim/model) behind
// the device's BAR0 registers and rings, so the driver, the operators and
// the tool run unchanged and much faster than on the RTL. It takes the same
// submission entries, fetches the same programs from host memory, writes the
// same completion entries and status codes, and raises an interrupt per
// completion, as docs/host_interface.md describes for the device. Each
// command's DMA window list is read and checked as the device does
// (BAD_COMMAND for a bad list or window) and confines its program: an access
// outside the windows is MEM_FAULT with ERR_CAUSE.window_read/window_write
// and ERR_ADDR = the instruction's first host address.
//
//   model:?config=NAME
//
// What it does not model: timing. A command "takes" one cycle per
// instruction plus one per row of work (host rows read or written, rows
// through the MXU or the VPU), with no overlap; that figure is what the
// completion's cycles, the CYCLES counter and timeouts see. The link faults
// of the root-complex model do not exist here. After a soft reset the UB and
// accumulators read as zero (the RTL leaves them as they were).
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "tpu/config.h"
#include "tpu/error.h"
#include "tpu/host_memory.h"
#include "tpu/queue.h"
#include "tpu/transport.h"
#include "tpu_model.h"
#include "tpu_regs.h"

namespace tpu {
namespace {

#define REG(name) uint32_t(offsetof(tpu_regs_t, name))
#define PUT(reg, field, value) \
  ((uint32_t(value) << TPU_REGS__##reg##__##field##_bp) & TPU_REGS__##reg##__##field##_bm)

constexpr uint64_t kDmaBase = 0x1'0000'0000;  // as the sim: transport
constexpr uint64_t kDmaSize = 0x1'0000'0000;

class ModelTransport final : public Transport {
 public:
  explicit ModelTransport(const Config& cfg)
      : cfg_(cfg), name_("model:config=" + std::string(cfg.name)), model_(core_config(cfg)) {
    soft_reset();
  }

  std::string name() const override { return name_; }

  uint32_t mmio_read(uint32_t offset) override {
    switch (offset) {
      case REG(ID): return TPU_REGS__ID__ID_reset;
      case REG(VERSION):
        return PUT(VERSION, MAJOR, TPU_REGS__VERSION__MAJOR_reset) |
               PUT(VERSION, MINOR, TPU_REGS__VERSION__MINOR_reset) |
               PUT(VERSION, PATCH, TPU_REGS__VERSION__PATCH_reset);
      case REG(CAPS0):
        return PUT(CAPS0, ARRAY_N, cfg_.array_n) |
               PUT(CAPS0, DTYPE_INT8, has_int8(cfg_.datapath)) |
               PUT(CAPS0, DTYPE_BF16, has_bf16(cfg_.datapath));
      case REG(CAPS1): return PUT(CAPS1, UB_ROWS, cfg_.ub_rows) | PUT(CAPS1, ACC_ROWS, cfg_.acc_rows);
      case REG(CAPS2):
        return PUT(CAPS2, IMEM_DEPTH, cfg_.imem_depth) |
               PUT(CAPS2, WGT_FIFO_TILES, cfg_.wgt_fifo_tiles) | PUT(CAPS2, DMA_TAGS, cfg_.dma_tags);
      case REG(CTRL): return enable_ ? TPU_REGS__CTRL__ENABLE_bm : 0;
      case REG(STATUS): return (busy() ? TPU_REGS__STATUS__BUSY_bm : 0);
      case REG(ERR_CAUSE): return err_cause_;
      case REG(ERR_ADDR_LO): return uint32_t(err_addr_);
      case REG(ERR_ADDR_HI): return uint32_t(err_addr_ >> 32);
      case REG(INT_STATUS): return int_status_;
      case REG(INT_MASK): return int_mask_;
      case REG(SQ_BASE_LO): return uint32_t(sq_base_);
      case REG(SQ_BASE_HI): return uint32_t(sq_base_ >> 32);
      case REG(SQ_LOG2SIZE): return sq_log2_;
      case REG(SQ_TAIL): return sq_tail_;
      case REG(SQ_HEAD): return sq_head_;
      case REG(CQ_BASE_LO): return uint32_t(cq_base_);
      case REG(CQ_BASE_HI): return uint32_t(cq_base_ >> 32);
      case REG(CQ_LOG2SIZE): return cq_log2_;
      case REG(CQ_HEAD): return cq_head_;
      case REG(CQ_TAIL): return cq_tail_;
      case REG(COMMANDS_DONE): return commands_done_;
      case REG(DMA_DROPPED): return 0;
      default: break;
    }
    for (size_t i = 0; i < std::size(counters_); ++i) {
      const uint32_t lo = REG(CYCLES_LO) + uint32_t(8 * i);
      if (offset == lo) return uint32_t(counters_[i]);
      if (offset == lo + 4) return uint32_t(counters_[i] >> 32);
    }
    err_cause_ |= TPU_REGS__ERR_CAUSE__MMIO_UNMAPPED_bm;
    throw unmapped_register(name_, offset);
  }

  void mmio_write(uint32_t offset, uint32_t value) override {
    switch (offset) {
      case REG(CTRL):
        if (value & TPU_REGS__CTRL__SOFT_RESET_bm) soft_reset();
        enable_ = value & TPU_REGS__CTRL__ENABLE_bm;
        return;
      case REG(ERR_CAUSE): err_cause_ &= ~value; return;
      case REG(INT_STATUS): int_status_ &= ~value; return;
      case REG(INT_MASK): int_mask_ = value & (TPU_REGS__INT_STATUS__COMPLETION_bm |
                                                TPU_REGS__INT_STATUS__ERROR_bm); return;
      case REG(SQ_BASE_LO): sq_base_ = (sq_base_ & ~0xffff'ffffull) | (value & ~0x3fu); return;
      case REG(SQ_BASE_HI): sq_base_ = (sq_base_ & 0xffff'ffffull) | uint64_t(value) << 32; return;
      case REG(SQ_LOG2SIZE): sq_log2_ = std::min<uint32_t>(value & 0xf, 15); return;
      case REG(CQ_BASE_LO): cq_base_ = (cq_base_ & ~0xffff'ffffull) | (value & ~0x3fu); return;
      case REG(CQ_BASE_HI): cq_base_ = (cq_base_ & 0xffff'ffffull) | uint64_t(value) << 32; return;
      case REG(CQ_LOG2SIZE): cq_log2_ = std::min<uint32_t>(value & 0xf, 15); return;
      case REG(SQ_TAIL): doorbell(value, 1u << sq_log2_, &sq_tail_); return;
      case REG(CQ_HEAD): doorbell(value, 1u << cq_log2_, &cq_head_); return;
      default: return;  // read-only registers ignore writes
    }
  }

  uint64_t dma_base() const override { return kDmaBase; }
  uint64_t dma_size() const override { return kDmaSize; }
  void dma_write(uint64_t addr, std::span<const uint8_t> data) override { mem_.write(addr, data); }
  void dma_read(uint64_t addr, std::span<uint8_t> out) override { mem_.read(addr, out); }

  // Runs the next queued command, if the device may, within max_cycles.
  uint64_t wait_interrupt(uint64_t max_cycles) override {
    uint64_t used = 0;
    while (enable_ && !stuck_ && sq_head_ != sq_tail_ && used < max_cycles) {
      const uint32_t cq_size = 1u << cq_log2_;
      if ((cq_tail_ + 1) % cq_size == cq_head_) break;  // the CQ is full: the device waits
      used += run_next(max_cycles - used);
      if (stuck_) break;
      if ((int_status_ & ~int_mask_) != 0) {
        cycles_ += used;
        return used;  // the MSI
      }
    }
    cycles_ += max_cycles - used;
    return max_cycles;
  }

  uint64_t cycles() const override { return cycles_; }

 private:
  bool busy() const { return stuck_ || (enable_ && sq_head_ != sq_tail_); }

  void doorbell(uint32_t value, uint32_t size, uint32_t* reg) {
    if (value >= size) {
      err_cause_ |= TPU_REGS__ERR_CAUSE__BAD_DOORBELL_bm;
      err_addr_ = value;
      return;
    }
    *reg = value;
  }

  void soft_reset() {
    sq_tail_ = sq_head_ = cq_head_ = cq_tail_ = 0;
    phase_ = true;
    stuck_ = false;
    enable_ = false;
    model_.reset();
  }

  // Takes the entry at SQ_HEAD, runs it and writes its completion. Returns
  // the cycles it took; sets stuck_ when it would take more than budget.
  uint64_t run_next(uint64_t budget) {
    uint8_t raw[kSqEntryBytes];
    mem_.read(sq_base_ + uint64_t(sq_head_) * kSqEntryBytes, raw);
    const SqEntry e = decode_sq(raw);
    sq_head_ = (sq_head_ + 1) % (1u << sq_log2_);

    CqEntry c;
    c.id = e.id;
    uint64_t cycles = 1;
    const auto bad_command = [&] {
      c.status = kStatusBadCommand;
      err_cause_ |= TPU_REGS__ERR_CAUSE__BAD_COMMAND_bm;
    };
    // As the command processor: the entry, then its window list, then the
    // program (docs/host_interface.md, "Rings and commands").
    std::vector<Window> windows;
    if (e.op != kOpRun || (e.flags & ~kRunFlagsMask) != 0 || e.len == 0 || e.len > uint32_t(cfg_.imem_depth) ||
        !e.reserved_zero || !window_list_valid(e)) {
      bad_command();
    } else if (e.win_count && mem_.faults(e.win_addr, e.win_count * kWindowBytes)) {
      c.status = kStatusFetchFault;
    } else if (windows = read_windows(e); !std::all_of(windows.begin(), windows.end(), window_valid)) {
      bad_command();
    } else if (mem_.faults(e.addr, size_t(e.len) * 16)) {
      c.status = kStatusFetchFault;
    } else {
      model_.load_program(0, decode_program(mem_.read(e.addr, size_t(e.len) * 16)));
      model_.set_windows(std::move(windows));
      const model::RunResult r = model_.run(0, mem_, UINT64_MAX, budget);
      cycles = r.work();
      if (r.stopped || cycles > budget) {
        stuck_ = true;  // the driver times out and resets the device
        return budget;
      }
      c.status = uint16_t(r.err);
      c.err_pc = r.err_pc;
      if (r.err != isa::ErrCode::kOk) err_cause_ |= TPU_REGS__ERR_CAUSE__PROG_ERROR_bm;
      if (r.fault == model::RunResult::Fault::kWindowRead)
        record_error(TPU_REGS__ERR_CAUSE__WINDOW_READ_bm, r.fault_addr);
      if (r.fault == model::RunResult::Fault::kWindowWrite)
        record_error(TPU_REGS__ERR_CAUSE__WINDOW_WRITE_bm, r.fault_addr);
      if (!(e.flags & kRunKeepCounters)) std::fill(std::begin(counters_), std::end(counters_), 0);
      counters_[0] += cycles;
      counters_[1] += r.mmc_rows;                                  // MXU_BUSY
      counters_[2] += r.mmc_rows * uint64_t(cfg_.array_n * cfg_.array_n);  // USEFUL_MACS
    }
    c.cycles = uint32_t(cycles);
    c.phase = phase_;
    c.sq_head = uint16_t(sq_head_);
    mem_.write(cq_base_ + uint64_t(cq_tail_) * kCqEntryBytes, encode_cq(c));
    cq_tail_ = (cq_tail_ + 1) % (1u << cq_log2_);
    if (cq_tail_ == 0) phase_ = !phase_;
    ++commands_done_;
    int_status_ |= TPU_REGS__INT_STATUS__COMPLETION_bm;
    return std::min(cycles, budget);
  }

  std::vector<Window> read_windows(const SqEntry& e) const {
    const std::vector<uint8_t> bytes = mem_.read(e.win_addr, e.win_count * kWindowBytes);
    std::vector<Window> windows;
    for (size_t i = 0; i < e.win_count; ++i) windows.push_back(decode_window(&bytes[i * kWindowBytes]));
    return windows;
  }

  // Sets an ERR_CAUSE bit and ERR_ADDR (as the device: the latest error's).
  void record_error(uint32_t cause, uint64_t addr) {
    err_cause_ |= cause;
    err_addr_ = addr;
  }

  const Config& cfg_;
  std::string name_;
  model::TpuModel model_;
  HostMemory mem_;
  uint64_t cycles_ = 0;

  bool enable_ = false, phase_ = true, stuck_ = false;
  uint64_t sq_base_ = 0, cq_base_ = 0, err_addr_ = 0;
  uint32_t sq_log2_ = 0, cq_log2_ = 0;
  uint32_t sq_tail_ = 0, sq_head_ = 0, cq_head_ = 0, cq_tail_ = 0;
  uint32_t err_cause_ = 0, int_status_ = 0, int_mask_ = 0, commands_done_ = 0;
  // CYCLES, MXU_BUSY, USEFUL_MACS, WGT_STALL, WGT_SHIFT, DEP_STALL, MEM_STALL
  uint64_t counters_[7] = {};
};

std::unique_ptr<Transport> open_model(const DeviceUri& uri) {
  if (!uri.path.empty())
    throw Error("model device: unexpected '" + uri.path + "' in '" + uri.text +
                "'; write model:?config=NAME");
  const UriQuery& query = uri.query;
  std::string config(kDefaultConfig);
  for (const auto& [key, value] : query) {
    if (key == "config") config = value;
    else
      throw Error("model device: unknown option '" + key + "'; the only option is config");
  }
  const Config* cfg = find_config(config);
  if (!cfg)
    throw Error("model device: unknown configuration '" + config + "'; the configurations are " +
                config_names());
  return std::make_unique<ModelTransport>(*cfg);
}

[[maybe_unused]] const bool registered = register_transport(
    {"model", "model:?config=NAME",
     "the reference model behind the device's registers and rings: functional, fast", open_model});

}  // namespace
}  // namespace tpu
