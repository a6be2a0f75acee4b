// SPDX-License-Identifier: Apache-2.0
#include "tpu/device.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <iterator>
#include <utility>

#include "tpu/config.h"
#include "tpu_regs.h"

namespace tpu {
namespace {

#define REG(name) uint32_t(offsetof(tpu_regs_t, name))
#define FIELD(value, reg, field) \
  (((value) & TPU_REGS__##reg##__##field##_bm) >> TPU_REGS__##reg##__##field##_bp)

constexpr uint32_t kDeviceId = TPU_REGS__ID__ID_reset;  // "TPU1"
constexpr int kSqLog2 = 6, kCqLog2 = 6;                // 64-entry rings
constexpr uint64_t kResetCycles = 100000;

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// What to do about each program error, for DeviceError messages.
std::string_view hint(uint16_t status) {
  switch (status) {
    case 1: case 2: case 6:
      return "the program holds an instruction the core does not accept; check it with `tpu disasm`";
    case 3: return "an instruction's UB rows run past the unified buffer; see `tpu info` for its size";
    case 4: return "an instruction's accumulator rows run past the accumulators; see `tpu info`";
    case 5: return "fix the instruction's count or the LOOP's body length";
    case 7: return "use a CFG register and value from docs/isa.md";
    case 8: return "a host address the program used could not be read or written; check the "
                   "addresses, that the buffers are allocated and that the command grants them";
    case 9: return "end the program with HALT";
    case 10: return "load weights with RW before each MMC that needs them";
    case 11: return "issue fewer weight tiles ahead of the MMCs that use them (see WgtFifoTiles in `tpu info`)";
    case kStatusBadCommand: return "the submission entry was malformed; this is a driver bug";
    case kStatusFetchFault:
      return "the device could not read the program from host memory; check the transport";
    default: return "see docs/host_interface.md";
  }
}

// "0x100000000..0x10000003f (64 bytes, read-only)"
std::string window_text(const Window& w) {
  static const char* const kAccess[] = {"no access", "read-only", "write-only", "read-write"};
  const std::string access = w.access <= 3 ? kAccess[w.access] : "access " + hex(w.access);
  if (w.len == 0) return "at " + hex(w.base) + ", 0 bytes, " + access;
  const uint64_t last = w.base + (w.len - 1);
  return hex(w.base) + ".." + (last < w.base ? std::string("past 2^64") : hex(last)) + " (" +
         std::to_string(w.len) + " bytes, " + access + ")";
}

// True when [base, base + len) and [w.base, w.base + w.len) share a byte.
bool overlaps(const Window& w, uint64_t base, uint64_t len) {
  return len && w.len && w.base <= base + (len - 1) && base <= w.base + (w.len - 1);
}

}  // namespace

std::string status_text(uint16_t status) {
  if (status == kStatusOk) return "OK";
  if (status == kStatusBadCommand) return "BAD_COMMAND (malformed submission entry)";
  if (status == kStatusFetchFault) return "FETCH_FAULT (the program could not be fetched)";
  for (const isa::ErrInfo& e : isa::kErrors)
    if (uint16_t(e.code) == status) return std::string(e.name) + " (" + std::string(e.description) + ")";
  return "status " + hex(status);
}

PerfCounters& PerfCounters::operator+=(const PerfCounters& o) {
  cycles += o.cycles;
  mxu_busy += o.mxu_busy;
  useful_macs += o.useful_macs;
  wgt_stall += o.wgt_stall;
  wgt_shift += o.wgt_shift;
  dep_stall += o.dep_stall;
  mem_stall += o.mem_stall;
  return *this;
}

// ---- host memory: first fit over [dma_base, dma_base + dma_size) --------------

namespace {
struct Allocator {
  std::map<uint64_t, uint64_t> free;  // addr -> size
  uint64_t used = 0;

  Allocator(uint64_t base, uint64_t size) { free[base] = size; }

  uint64_t take(uint64_t bytes) {
    bytes = std::max<uint64_t>(64, (bytes + 63) / 64 * 64);
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->second < bytes) continue;
      const uint64_t addr = it->first, left = it->second - bytes;
      free.erase(it);
      if (left) free[addr + bytes] = left;
      used += bytes;
      return addr;
    }
    throw Error("out of device-visible host memory: " + std::to_string(bytes) +
                " bytes requested, " + std::to_string(used) +
                " in use; free buffers you no longer need");
  }

  void give(uint64_t addr, uint64_t bytes) {
    bytes = std::max<uint64_t>(64, (bytes + 63) / 64 * 64);
    used -= bytes;
    auto it = free.emplace(addr, bytes).first;
    if (auto next = std::next(it); next != free.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free.erase(next);
    }
    if (it != free.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free.erase(it);
      }
    }
  }
};
}  // namespace

namespace detail {
struct DeviceState {
  std::unique_ptr<Transport> transport;
  Allocator alloc;
  explicit DeviceState(std::unique_ptr<Transport> t)
      : transport(std::move(t)), alloc(transport->dma_base(), transport->dma_size()) {}
};
}  // namespace detail

// ---- Buffer ------------------------------------------------------------------------

void Buffer::release() {
  if (state_) state_->alloc.give(addr_, size_);
  state_.reset();
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    state_ = std::move(o.state_);
    addr_ = std::exchange(o.addr_, 0);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

Buffer::~Buffer() { release(); }

void Buffer::write(std::span<const uint8_t> data, size_t offset) {
  if (!state_ || offset > size_ || data.size() > size_ - offset)
    throw Error("buffer write of " + std::to_string(data.size()) + " bytes at offset " +
                std::to_string(offset) + " does not fit the " + std::to_string(size_) +
                "-byte buffer");
  state_->transport->dma_write(addr_ + offset, data);
}

void Buffer::read(std::span<uint8_t> out, size_t offset) const {
  if (!state_ || offset > size_ || out.size() > size_ - offset)
    throw Error("buffer read of " + std::to_string(out.size()) + " bytes at offset " +
                std::to_string(offset) + " does not fit the " + std::to_string(size_) +
                "-byte buffer");
  state_->transport->dma_read(addr_ + offset, out);
}

std::vector<uint8_t> Buffer::read(size_t offset, size_t len) const {
  std::vector<uint8_t> out(len);
  read(out, offset);
  return out;
}

Window Buffer::window(size_t offset, size_t len, uint8_t access) const {
  if (!state_ || len == 0 || offset > size_ || len > size_ - offset)
    throw Error("buffer window of " + std::to_string(len) + " bytes at offset " + std::to_string(offset) +
                " does not fit the " + std::to_string(size_) + "-byte buffer" +
                (len == 0 ? "; a window covers at least one byte" : ""));
  return Window{addr_ + offset, len, access};
}

// ---- Device ------------------------------------------------------------------------

Device Device::open(const std::string& uri) { return Device(open_transport(uri)); }

Device::Device(std::unique_ptr<Transport> transport)
    : state_(std::make_shared<detail::DeviceState>(std::move(transport))) {
  Transport& t = *state_->transport;
  info_.name = t.name();
  info_.id = t.mmio_read(REG(ID));
  if (info_.id != kDeviceId)
    throw Error(t.name() + ": the ID register reads " + hex(info_.id) + ", not " + hex(kDeviceId) +
                " (TPU1); this is not a TPU or the transport is misconfigured");
  const uint32_t version = t.mmio_read(REG(VERSION));
  info_.version_major = int(FIELD(version, VERSION, MAJOR));
  info_.version_minor = int(FIELD(version, VERSION, MINOR));
  info_.version_patch = int(FIELD(version, VERSION, PATCH));
  const uint32_t caps0 = t.mmio_read(REG(CAPS0)), caps1 = t.mmio_read(REG(CAPS1)),
                 caps2 = t.mmio_read(REG(CAPS2));
  info_.n = int(FIELD(caps0, CAPS0, ARRAY_N));
  info_.int8 = FIELD(caps0, CAPS0, DTYPE_INT8);
  info_.bf16 = FIELD(caps0, CAPS0, DTYPE_BF16);
  info_.ub_rows = int(FIELD(caps1, CAPS1, UB_ROWS));
  info_.acc_rows = int(FIELD(caps1, CAPS1, ACC_ROWS));
  info_.imem_depth = int(FIELD(caps2, CAPS2, IMEM_DEPTH));
  info_.wgt_fifo_tiles = int(FIELD(caps2, CAPS2, WGT_FIFO_TILES));
  info_.dma_tags = int(FIELD(caps2, CAPS2, DMA_TAGS));
  for (const Config& c : kConfigs)
    if (c.array_n == info_.n && c.ub_rows == info_.ub_rows && c.acc_rows == info_.acc_rows &&
        c.imem_depth == info_.imem_depth && c.wgt_fifo_tiles == info_.wgt_fifo_tiles &&
        c.dma_tags == info_.dma_tags && has_int8(c.datapath) == info_.int8 &&
        has_bf16(c.datapath) == info_.bf16)
      info_.config = std::string(c.name);
  if (info_.version_major != 0)
    throw Error(t.name() + ": register map version " + std::to_string(info_.version_major) +
                ".x is newer than this driver (0.x); update the driver");

  sq_ = alloc(kSqEntryBytes << kSqLog2);
  cq_ = alloc(kCqEntryBytes << kCqLog2);
  sq_size_ = 1u << kSqLog2;
  cq_size_ = 1u << kCqLog2;
  // A slot per command the ring can hold: the longest program, then the
  // longest window list (16-byte aligned after whole instructions).
  slot_bytes_ = (size_t(info_.imem_depth) * 16 + kMaxWindows * kWindowBytes + 63) / 64 * 64;
  cmd_mem_ = alloc(slot_bytes_ * (sq_size_ - 1));
  reset();
}

Device::Device(Device&&) noexcept = default;
Device& Device::operator=(Device&&) noexcept = default;

Device::~Device() = default;

Transport& Device::transport() { return *state_->transport; }
uint64_t Device::cycles() const { return state_->transport->cycles(); }

Buffer Device::alloc(size_t bytes) {
  if (bytes == 0) throw Error("alloc: a buffer needs at least one byte");
  return Buffer(state_, state_->alloc.take(bytes), bytes);
}

void Device::reset() {
  Transport& t = *state_->transport;
  t.mmio_write(REG(CTRL), TPU_REGS__CTRL__SOFT_RESET_bm);
  uint64_t waited = 0;
  while (t.mmio_read(REG(STATUS)) & TPU_REGS__STATUS__RESET_BUSY_bm) {
    if (waited > kResetCycles)
      throw Error(t.name() + ": the device did not finish its soft reset; power-cycle it");
    waited += t.wait_interrupt(64);
  }
  in_flight_.clear();
  free_slots_.clear();
  for (uint32_t i = sq_size_ - 1; i > 0; --i) free_slots_.push_back(i - 1);  // slot 0 first
  order_.clear();
  recent_.clear();
  completed_.clear();
  setup_rings();
}

void Device::setup_rings() {
  Transport& t = *state_->transport;
  std::vector<uint8_t> zero(cq_.size(), 0);
  cq_.write(zero);
  sq_tail_ = cq_head_ = 0;
  phase_ = true;
  t.mmio_write(REG(SQ_BASE_LO), uint32_t(sq_.addr()));
  t.mmio_write(REG(SQ_BASE_HI), uint32_t(sq_.addr() >> 32));
  t.mmio_write(REG(SQ_LOG2SIZE), kSqLog2);
  t.mmio_write(REG(CQ_BASE_LO), uint32_t(cq_.addr()));
  t.mmio_write(REG(CQ_BASE_HI), uint32_t(cq_.addr() >> 32));
  t.mmio_write(REG(CQ_LOG2SIZE), kCqLog2);
  t.mmio_write(REG(ERR_CAUSE), ~0u);   // clear sticky errors (write 1 to clear)
  t.mmio_write(REG(INT_STATUS), ~0u);
  t.mmio_write(REG(INT_MASK), 0);
  t.mmio_write(REG(CTRL), TPU_REGS__CTRL__ENABLE_bm);
}

void Device::check_windows(std::span<const Window> windows) const {
  if (windows.size() > kMaxWindows)
    throw Error("submit: " + std::to_string(windows.size()) + " DMA windows; a command takes at most " +
                std::to_string(kMaxWindows) + ". Grant whole buffers, or split the work into "
                "several commands");
  const Transport& t = *state_->transport;
  const struct {
    const Buffer& buf;
    const char* what;
  } driver_memory[] = {{sq_, "the driver's submission ring"},
                       {cq_, "the driver's completion ring"},
                       {cmd_mem_, "the driver's command memory (the programs and window lists of "
                                  "queued commands)"}};
  for (size_t i = 0; i < windows.size(); ++i) {
    const Window& w = windows[i];
    const std::string which = "submit: DMA window " + std::to_string(i) + " " + window_text(w);
    if (w.len == 0) throw Error(which + " is empty; a window covers 1 .. 2^56 - 1 bytes");
    if (w.len > kMaxWindowLen) throw Error(which + " is longer than 2^56 - 1 bytes; split it");
    if (w.base + (w.len - 1) < w.base) throw Error(which + " runs past the end of the address space");
    if (w.access < 1 || w.access > 3)
      throw Error(which + " grants neither reading nor writing; use kWindowRead, kWindowWrite or "
                  "kWindowReadWrite (Buffer::read_only(), write_only(), read_write())");
    for (const auto& m : driver_memory) {
      if (overlaps(w, m.buf.addr(), m.buf.size()))
        throw Error(which + " overlaps " + m.what + " at " + hex(m.buf.addr()) + ".." +
                    hex(m.buf.addr() + m.buf.size() - 1) +
                    "; no program may reach the driver's memory. Grant only your own buffers "
                    "(Buffer::read_only(), write_only(), read_write())");
    }
    // Device-visible memory no buffer holds may become another command's
    // buffer while this one is queued.
    for (const auto& [addr, size] : state_->alloc.free) {
      if (overlaps(w, addr, size)) {
        const uint64_t at = std::max(addr, w.base);
        throw Error(which + " covers " + hex(at) + ", device-visible memory that no buffer holds "
                    "(freed or never allocated; the driver's memory starts at " + hex(t.dma_base()) +
                    "). Grant only live buffers");
      }
    }
  }
}

Command Device::submit(const std::vector<isa::Instr>& program, std::span<const Window> windows,
                       CounterMode counters) {
  if (program.empty()) throw Error("submit: the program is empty; end it with HALT at least");
  if (program.size() > size_t(info_.imem_depth))
    throw Error("submit: the program has " + std::to_string(program.size()) +
                " instructions; the instruction memory holds " + std::to_string(info_.imem_depth) +
                "; split it into several programs (UB, ACC and weights persist between them)");
  if (in_flight_.size() + 1 >= sq_size_)
    throw Error("submit: " + std::to_string(in_flight_.size()) +
                " commands are queued, the ring is full; wait() for some first");
  check_windows(windows);

  // The program, then its window list, in a slot of the command memory.
  const uint32_t slot = free_slots_.back();
  const size_t offset = size_t(slot) * slot_bytes_;
  const uint64_t prog_addr = cmd_mem_.addr() + offset;
  std::vector<uint8_t> bytes = encode_program(program);
  const uint64_t win_addr = windows.empty() ? 0 : prog_addr + bytes.size();
  const std::vector<uint8_t> list = encode_windows(windows);
  bytes.insert(bytes.end(), list.begin(), list.end());
  cmd_mem_.write(bytes, offset);
  free_slots_.pop_back();

  const uint16_t id = next_id_++;
  if (next_id_ == 0) next_id_ = 1;
  const uint8_t flags = counters == CounterMode::kKeep ? kRunKeepCounters : 0;
  sq_.write(encode_run(id, uint32_t(program.size()), prog_addr, win_addr, uint8_t(windows.size()), kOpRun, flags),
            size_t(sq_tail_) * kSqEntryBytes);
  in_flight_.emplace(id, slot);
  order_.push_back(id);
  sq_tail_ = (sq_tail_ + 1) % sq_size_;
  state_->transport->mmio_write(REG(SQ_TAIL), sq_tail_);
  return Command{id};
}

void Device::protocol_error(const std::string& message) {
  reset();
  throw ProtocolError(message + "; the device was reset and its queued commands dropped");
}

void Device::accept_completion(const CqEntry& e, uint32_t slot) {
  const std::string where = "completion entry " + std::to_string(slot) + " of the completion ring (host " +
                            hex(cq_.addr() + uint64_t(slot) * kCqEntryBytes) + ")";
  const std::string broken =
      ": the ring in host memory was overwritten or the device broke the queue protocol "
      "(docs/host_interface.md); check the transport and whatever else writes that memory";
  if (order_.empty()) {
    protocol_error(where + " has the current phase bit, but no command is left to complete (command " +
                   std::to_string(e.id) + " would be one more completion than commands submitted)" +
                   broken);
  }
  const uint16_t expected = order_.front();
  if (e.id != expected) {
    std::string what;
    if (in_flight_.count(e.id)) {
      what = "is for command " + std::to_string(e.id) + " while command " + std::to_string(expected) +
             " is older and not complete (completions come in submission order)";
    } else if (std::find(recent_.begin(), recent_.end(), e.id) != recent_.end()) {
      what = "repeats command " + std::to_string(e.id) + ", which already completed (the oldest queued is " +
             std::to_string(expected) + ")";
    } else {
      what = "names command " + std::to_string(e.id) + ", which this driver never submitted (the oldest "
             "queued is " + std::to_string(expected) + ")";
    }
    protocol_error(where + " " + what + broken);
  }
  order_.pop_front();
  free_slots_.push_back(in_flight_.at(e.id));
  in_flight_.erase(e.id);
  recent_.push_back(e.id);
  if (recent_.size() > 2 * size_t(sq_size_)) recent_.pop_front();
  completed_[e.id] = Completion{e.id, e.status, e.err_pc, e.cycles};
}

Completion Device::wait(Command cmd, uint64_t timeout_cycles) {
  if (timeout_cycles == 0) timeout_cycles = timeout_;
  const auto take = [&](Completion* c) {
    const auto it = completed_.find(cmd.id);
    if (it == completed_.end()) return false;
    *c = it->second;
    completed_.erase(it);
    return true;
  };
  Completion c;
  if (take(&c)) return c;
  if (!in_flight_.count(cmd.id))
    throw Error("wait: command " + std::to_string(cmd.id) + " was not submitted or was already waited for");
  Transport& t = *state_->transport;
  uint64_t waited = 0;
  bool interrupted = false;  // the last wait_interrupt() ended early: an MSI
  int spurious = 0;          // interrupts in a row that brought no completion entry
  for (;;) {
    // Acknowledge the interrupt first, so no completion after this goes unseen;
    // then consume every completion entry the device has written.
    t.mmio_write(REG(INT_STATUS), TPU_REGS__INT_STATUS__COMPLETION_bm);
    int found = 0;
    for (;;) {
      uint8_t raw[kCqEntryBytes];
      const uint32_t slot = cq_head_;
      cq_.read(raw, size_t(slot) * kCqEntryBytes);
      const CqEntry e = decode_cq(raw);
      if (e.phase != phase_) break;
      // More entries with the current phase than the ring has slots would
      // mean the phase flipped twice under the driver; the checks below stop
      // at the first entry no command accounts for.
      accept_completion(e, slot);
      ++found;
      cq_head_ = (cq_head_ + 1) % cq_size_;
      if (cq_head_ == 0) phase_ = !phase_;
      t.mmio_write(REG(CQ_HEAD), cq_head_);
    }
    if (take(&c)) return c;
    if (found) {
      spurious = 0;
    } else if (interrupted && ++spurious >= kMaxSpuriousInterrupts) {
      const uint32_t int_status = t.mmio_read(REG(INT_STATUS));
      const uint32_t status = t.mmio_read(REG(STATUS));
      protocol_error("waiting for command " + std::to_string(cmd.id) + ": " +
                     std::to_string(spurious) +
                     " interrupts in a row brought no new completion entry (INT_STATUS " +
                     hex(int_status) + ", STATUS " + hex(status) + ", next entry expected at host " +
                     hex(cq_.addr() + uint64_t(cq_head_) * kCqEntryBytes) +
                     "): the device's completions do not reach the completion ring, or the "
                     "interrupt line fires on its own; check the transport");
    }
    if (waited >= timeout_cycles) break;
    const uint64_t want = timeout_cycles - waited;
    const uint64_t passed = t.wait_interrupt(want);
    interrupted = passed < want;
    waited += passed;
  }
  reset();
  throw TimeoutError("command " + std::to_string(cmd.id) + " did not complete within " +
                     std::to_string(timeout_cycles) +
                     " device cycles; the device was reset and its queued commands dropped. "
                     "Raise the timeout (--timeout) if the work is that long");
}

Completion Device::run(const std::vector<isa::Instr>& program, std::span<const Window> windows,
                       uint64_t timeout_cycles) {
  const Completion c = wait(submit(program, windows), timeout_cycles);
  if (c.ok()) return c;
  throw failure(c);
}

void Device::check(const Completion& c) {
  if (!c.ok()) throw failure(c);
}

DeviceError Device::failure(const Completion& c) {
  std::string msg = "the program failed at instruction " + std::to_string(c.err_pc) + ": " +
                    status_text(c.status);
  std::string advice(hint(c.status));
  DeviceError::Fault fault;
  if (c.status == uint16_t(isa::ErrCode::kMemFault) || c.status == kStatusFetchFault) {
    Transport& t = *state_->transport;
    const uint32_t cause = t.mmio_read(REG(ERR_CAUSE));
    const uint64_t addr = t.mmio_read(REG(ERR_ADDR_LO)) | uint64_t(t.mmio_read(REG(ERR_ADDR_HI))) << 32;
    const bool window_read = cause & TPU_REGS__ERR_CAUSE__WINDOW_READ_bm,
               window_write = cause & TPU_REGS__ERR_CAUSE__WINDOW_WRITE_bm;
    const char* what = cause & TPU_REGS__ERR_CAUSE__DMA_UR_bm         ? "Unsupported Request"
                       : cause & TPU_REGS__ERR_CAUSE__DMA_CA_bm       ? "Completer Abort"
                       : cause & TPU_REGS__ERR_CAUSE__DMA_POISONED_bm ? "poisoned data"
                       : cause & TPU_REGS__ERR_CAUSE__DMA_TIMEOUT_bm  ? "a completion timeout"
                       : cause & TPU_REGS__ERR_CAUSE__BUS_MASTER_OFF_bm ? "bus mastering off"
                                                                        : nullptr;
    if (window_read || window_write) {
      fault = {true, window_write && !window_read, addr};
      const char* dir = window_read && window_write ? "access to" : window_write ? "write to" : "read from";
      msg += "; its " + std::string(dir) + " host memory at " + hex(addr) +
             " is outside the command's DMA windows (no window grants " +
             (window_read && window_write ? "that access" : window_write ? "writing" : "reading") +
             " all of the instruction's rows)";
      advice = "grant the buffers the program uses, inputs read-only and outputs write-only "
               "(dev.run(program, {in.read_only(), out.write_only()})), or fix its addresses; "
               "see docs/driver.md, \"DMA windows\"";
    } else if (what) {
      msg += "; host access at " + hex(addr) + " ended in " + std::string(what);
    }
    t.mmio_write(REG(ERR_CAUSE), cause);
  }
  return DeviceError(msg + "; " + advice, c.status, c.err_pc, fault);
}

PerfCounters Device::counters() {
  Transport& t = *state_->transport;
  const auto read64 = [&](uint32_t lo) {
    const uint32_t l = t.mmio_read(lo), h = t.mmio_read(lo + 4);
    return uint64_t(l) | uint64_t(h) << 32;
  };
  PerfCounters p;
  p.cycles = read64(REG(CYCLES_LO));
  p.mxu_busy = read64(REG(MXU_BUSY_LO));
  p.useful_macs = read64(REG(USEFUL_MACS_LO));
  p.wgt_stall = read64(REG(WGT_STALL_LO));
  p.wgt_shift = read64(REG(WGT_SHIFT_LO));
  p.dep_stall = read64(REG(DEP_STALL_LO));
  p.mem_stall = read64(REG(MEM_STALL_LO));
  return p;
}

}  // namespace tpu
