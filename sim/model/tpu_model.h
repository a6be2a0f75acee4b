// Reference model of the core: executes the same binary programs as the RTL,
// one instruction at a time and completely, per docs/isa.md. The RTL overlaps
// its units but must end every valid program in the same state.
//
// HostMemory is independent of the model: the RTL testbench serves the
// core's memory port from it too.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "isa.h"
#include "quant.h"

namespace tpu::model {

// The model's vocabulary, so that users of tpu::model need not name tpu::isa.
using isa::ErrCode;
using isa::Instr;

struct CoreConfig {
  int n = 16;  // MXU array size: bytes per UB row, lanes per ACC row
  int ub_rows = 4096;
  int acc_rows = 1024;
  int imem_depth = 1024;
  int wgt_fifo_tiles = 16;  // an RW may leave up to wgt_fifo_tiles + 2 tiles unretired
};

// Sparse, byte-addressed 64-bit host memory in 4 KiB pages; unwritten bytes
// read as 0 and addresses wrap at 2^64. Fault ranges model memory-port errors.
class HostMemory {
 public:
  static constexpr uint64_t kPageBytes = 4096;

  HostMemory() = default;
  // Copies are deep: a test runs the model and the RTL on two copies of one image.
  HostMemory(const HostMemory& other) { *this = other; }
  HostMemory& operator=(const HostMemory& other);
  HostMemory(HostMemory&&) = default;
  HostMemory& operator=(HostMemory&&) = default;

  std::vector<uint8_t> read(uint64_t addr, size_t len) const;
  void read(uint64_t addr, std::span<uint8_t> out) const;
  void write(uint64_t addr, std::span<const uint8_t> data);
  void write(uint64_t addr, std::span<const int8_t> data);

  // Little-endian scalars.
  uint8_t read8(uint64_t addr) const { return uint8_t(read_le(addr, 1)); }
  uint16_t read16(uint64_t addr) const { return uint16_t(read_le(addr, 2)); }
  uint32_t read32(uint64_t addr) const { return uint32_t(read_le(addr, 4)); }
  uint64_t read64(uint64_t addr) const { return read_le(addr, 8); }
  void write8(uint64_t addr, uint8_t v) { write_le(addr, v, 1); }
  void write16(uint64_t addr, uint16_t v) { write_le(addr, v, 2); }
  void write32(uint64_t addr, uint32_t v) { write_le(addr, v, 4); }
  void write64(uint64_t addr, uint64_t v) { write_le(addr, v, 8); }

  // Any RHM/WHM/RW row access touching [addr, addr + len) fails (MEM_FAULT).
  void add_fault(uint64_t addr, uint64_t len);
  void clear_faults() { faults_.clear(); }
  // True when [addr, addr + len) overlaps a fault range (len >= 1).
  bool faults(uint64_t addr, uint64_t len) const;

  size_t pages() const { return pages_.size(); }

 private:
  using Page = std::array<uint8_t, kPageBytes>;
  struct Range {
    uint64_t addr, len;
  };

  uint64_t read_le(uint64_t addr, int bytes) const;
  void write_le(uint64_t addr, uint64_t v, int bytes);
  const Page* find_page(uint64_t addr) const;
  Page& page(uint64_t addr);

  std::unordered_map<uint64_t, std::unique_ptr<Page>> pages_;
  std::vector<Range> faults_;
};

struct RunResult {
  isa::ErrCode err = isa::ErrCode::kOk;
  uint32_t err_pc = 0;        // index of the faulting instruction; 0 on OK (as the RTL)
  uint64_t irqs = 0;          // IRQ instructions executed
  uint64_t instructions = 0;  // executed, counting each loop iteration's body; the
                              // LOOP and HALT count, a faulting instruction does not
};

class TpuModel {
 public:
  explicit TpuModel(CoreConfig config = {});

  const CoreConfig& config() const { return cfg_; }
  // Power-on state: zero memories, empty weights, CFG reset values, zero imem.
  void reset();

  void write_imem(uint32_t index, const isa::Instr& in);
  void load_program(uint32_t start, const std::vector<isa::Instr>& program);
  const isa::Instr& imem(uint32_t index) const { return imem_.at(index); }

  // Runs from start_pc until HALT or an error. Throws std::runtime_error after
  // max_steps instructions (programs cannot branch back, so only huge loop
  // counts get there). UB, ACC, CFG and (after HALT) weight tiles persist
  // into the next run; an error discards the tiles.
  RunResult run(uint32_t start_pc, HostMemory& mem, uint64_t max_steps = 10'000'000);

  std::vector<int8_t> ub_row(uint32_t row) const;
  std::vector<int32_t> acc_row(uint32_t row) const;
  uint32_t cfg(uint16_t index) const;  // std::out_of_range for an unknown index
  size_t pending_tiles() const { return tiles_.size(); }
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
  using Tile = std::vector<int8_t>;  // n x n, row r = K index

  isa::ErrCode issue(const isa::Instr& in, uint32_t pc, const LoopState& loop, HostMemory& mem,
                     RunResult& result);
  uint32_t next_pc(const isa::Instr& in, uint32_t pc, LoopState& loop) const;

  isa::ErrCode check_flags(const isa::Instr& in) const;
  isa::ErrCode check_count(const isa::Instr& in, uint32_t pc) const;
  isa::ErrCode check_cfg(const isa::Instr& in) const;
  isa::ErrCode check_ranges(const isa::Instr& in, const Offsets& off) const;
  isa::ErrCode check_weights(const isa::Instr& in) const;

  isa::ErrCode exec_rhm(const isa::Instr& in, const Offsets& off, HostMemory& mem);
  isa::ErrCode exec_whm(const isa::Instr& in, const Offsets& off, HostMemory& mem);
  isa::ErrCode exec_rw(const isa::Instr& in, const Offsets& off, HostMemory& mem);
  void exec_mmc(const isa::Instr& in, const Offsets& off);
  void exec_act(const isa::Instr& in, const Offsets& off);
  void exec_vop(const isa::Instr& in, const Offsets& off);
  void exec_cfg(const isa::Instr& in);
  void write_cfg(uint16_t index, uint32_t value);

  int8_t* ub(int64_t row) { return &ub_[size_t(row) * cfg_.n]; }
  int32_t* acc(int64_t row) { return &acc_[size_t(row) * cfg_.n]; }

  CoreConfig cfg_;
  std::vector<isa::Instr> imem_;
  std::vector<int8_t> ub_;
  std::vector<int32_t> acc_;
  std::deque<Tile> tiles_;  // oldest first: front() is the current tile
  quant::QuantParams params_;
  std::vector<int32_t> bias_;
  std::array<int8_t, 256> lut_{};
};

}  // namespace tpu::model
