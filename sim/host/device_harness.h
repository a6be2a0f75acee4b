// SPDX-License-Identifier: Apache-2.0
// Drives the whole TPU device (tpu_top) as a host driver would: MMIO reads
// and writes on cq/cc, host memory and DMA service from the root-complex
// model on rq/rc, and the submission/completion rings in host memory. The cq
// and cc beats are packed with tlp_layout.h (generated from tlp_pkg.sv).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bits.h"
#include "tpu/isa.h"
#include "root_complex.h"
#include "sim.h"
#include "tlp_layout.h"
#include "tpu/queue.h"
#include "tpu_regs.h"

namespace tb {

#define TPU_REG(name) uint32_t(offsetof(tpu_regs_t, name))

// Ring entries and status codes, shared with the driver (sw/common/include/tpu/queue.h).
using tpu::CqEntry;
using tpu::kStatusBadCommand;
using tpu::kStatusFetchFault;

template <class Model>
class Device {
 public:
  Device(Sim<Model>& sim, const tpu::host::RootComplexConfig& rc_cfg,
         const tpu::host::LinkCfg& link = {})
      : sim_(sim), dut_(sim.dut()), rc_(tpu::host::bind_tlp_ports(sim.dut()), rc_cfg) {
    set_link(link);
    dut_.cq_valid_i = 0;
    dut_.cc_ready_i = 1;
    dut_.cpl_timeout_i = 0;
  }

  void set_link(const tpu::host::LinkCfg& link) {
    link_ = link;
    tpu::host::pack_link_cfg(link, dut_.link_cfg_i.data());
  }

  // Probability that the host holds cc_ready low in a cycle (MMIO read
  // completions then wait in the device, which stops taking reads).
  void set_cc_stall(double p) { cc_stall_ = p; }

  // One clock cycle with the root complex serving the DMA streams, in one
  // evaluation of the model (Sim::tick_unsettled): what the root complex and
  // the cc side read before the edge are registered outputs, which the
  // inputs just set cannot change.
  void step() {
    dut_.cc_ready_i = !sim_.chance(cc_stall_);
    rc_.drive();
    if (check_outputs_) check_outputs_registered();
    rc_.tick(sim_.cycle());
    if (dut_.cc_valid_o && dut_.cc_ready_i) cc_.push_back(dut_.cc_o);
    sim_.tick_unsettled();
  }

  // With the check on, every step() evaluates the new inputs before the
  // edge too and counts the cycles in which an output step() reads changed
  // by it: a path from an input to one of them without a register, which
  // step() would miss.
  void set_output_check(bool on) { check_outputs_ = on; }
  uint64_t output_checked_cycles() const { return output_checked_cycles_; }
  uint64_t unregistered_output_cycles() const { return unregistered_output_cycles_; }

  void run(uint64_t cycles) {
    for (uint64_t i = 0; i < cycles; ++i) step();
  }

  // ---- MMIO ----
  void mmio_write(uint64_t offset, uint32_t value, uint8_t be = 0xf) {
    send_cq(true, offset, value, be);
  }

  // Returns the data; status 0 = SC, 1 = UR.
  uint32_t mmio_read(uint64_t offset, int* status = nullptr) {
    const uint8_t tag = uint8_t(next_tag_++);
    send_cq(false, offset, 0, 0xf, tag);
    for (int i = 0; i < 100 && cc_.empty(); ++i) step();
    if (cc_.empty()) throw std::runtime_error("MMIO read of " + std::to_string(offset) + " got no completion");
    namespace cc_t = tpu::tlp_layout::cc_t;
    const uint64_t beat = cc_.front();
    cc_.erase(cc_.begin());
    if (get_field(beat, cc_t::tag) != tag) throw std::runtime_error("MMIO read completion with the wrong tag");
    if (status) *status = int(get_field(beat, cc_t::status));
    return uint32_t(get_field(beat, cc_t::data));
  }

  // ---- rings ----
  void setup_rings(uint64_t sq, int sq_log2, uint64_t cq, int cq_log2) {
    sq_base_ = sq;
    cq_base_ = cq;
    sq_size_ = 1u << sq_log2;
    cq_size_ = 1u << cq_log2;
    sq_tail_ = cq_head_ = 0;
    phase_ = true;
    std::vector<uint8_t> zero(size_t(cq_size_) * tpu::kCqEntryBytes, 0);
    mem().write(cq, zero);
    mmio_write(TPU_REG(SQ_BASE_LO), uint32_t(sq));
    mmio_write(TPU_REG(SQ_BASE_HI), uint32_t(sq >> 32));
    mmio_write(TPU_REG(SQ_LOG2SIZE), uint32_t(sq_log2));
    mmio_write(TPU_REG(CQ_BASE_LO), uint32_t(cq));
    mmio_write(TPU_REG(CQ_BASE_HI), uint32_t(cq >> 32));
    mmio_write(TPU_REG(CQ_LOG2SIZE), uint32_t(cq_log2));
    mmio_write(TPU_REG(CTRL), TPU_REGS__CTRL__ENABLE_bm);
  }

  // Writes a raw submission entry and rings the doorbell.
  void submit_raw(const std::vector<uint8_t>& entry, bool ring = true) {
    mem().write(sq_base_ + uint64_t(sq_tail_) * tpu::kSqEntryBytes, entry);
    sq_tail_ = (sq_tail_ + 1) % sq_size_;
    if (ring) mmio_write(TPU_REG(SQ_TAIL), sq_tail_);
  }

  // Grants the low 2^56 - 1 bytes of host memory, read and write: where the
  // tests that are not about DMA windows keep their data.
  static std::vector<tpu::Window> all_windows() {
    return {tpu::Window{0, tpu::kMaxWindowLen, tpu::kWindowReadWrite}};
  }

  // Puts the program into host memory, its window list right after it, and
  // submits a RUN command for them.
  void submit(uint16_t id, const std::vector<tpu::isa::Instr>& prog, uint64_t prog_addr,
              bool ring = true, const std::vector<tpu::Window>& windows = all_windows(), uint8_t flags = 0) {
    const std::vector<uint8_t> code = tpu::encode_program(prog);
    const uint64_t win_addr = prog_addr + code.size();
    mem().write(prog_addr, code);
    mem().write(win_addr, tpu::encode_windows(windows));
    submit_raw(run_entry(id, uint32_t(prog.size()), prog_addr, win_addr, uint8_t(windows.size()), tpu::kOpRun, flags),
               ring);
  }

  static std::vector<uint8_t> run_entry(uint16_t id, uint32_t len, uint64_t addr, uint64_t win_addr = 0,
                                        uint8_t win_count = 0, uint8_t op = tpu::kOpRun, uint8_t flags = 0) {
    return tpu::encode_run(id, len, addr, win_addr, win_count, op, flags);
  }

  // Waits for the next completion entry (its phase bit flips to the expected
  // value), consumes it and rings the completion doorbell.
  std::optional<CqEntry> wait_completion(uint64_t max_cycles, bool consume = true) {
    const uint64_t addr = cq_base_ + uint64_t(cq_head_) * tpu::kCqEntryBytes;
    for (uint64_t i = 0; i < max_cycles; ++i) {
      if (bool(mem().read32(addr + 12) & 1) == phase_) {
        const std::vector<uint8_t> raw = mem().read(addr, tpu::kCqEntryBytes);
        const CqEntry e = tpu::decode_cq(raw.data());
        if (consume) consume_completion();
        return e;
      }
      step();
    }
    return std::nullopt;
  }

  void consume_completion() {
    cq_head_ = (cq_head_ + 1) % cq_size_;
    if (cq_head_ == 0) phase_ = !phase_;
    mmio_write(TPU_REG(CQ_HEAD), cq_head_);
  }

  tpu::HostMemory& mem() { return rc_.memory(); }
  tpu::host::RootComplex& rc() { return rc_; }
  Model& dut() { return dut_; }
  uint32_t sq_tail() const { return sq_tail_; }
  uint32_t cq_head() const { return cq_head_; }

 private:
  // Offers one cq beat and waits until the device takes it.
  void send_cq(bool write, uint64_t offset, uint32_t data, uint8_t be, uint8_t tag = 0) {
    namespace cq_t = tpu::tlp_layout::cq_t;
    static_assert(sizeof(Model::cq_i) == 4 * tpu::host::port_words(cq_t::kBits), "cq_i is not a cq_t");
    for (auto& w : dut_.cq_i.m_storage) w = 0;
    set_field(dut_.cq_i, cq_t::write, write);
    set_field(dut_.cq_i, cq_t::tag, tag);
    set_field(dut_.cq_i, cq_t::addr, offset);
    set_field(dut_.cq_i, cq_t::be, be);
    set_field(dut_.cq_i, cq_t::data, data);
    dut_.cq_valid_i = 1;
    for (int i = 0; i < 100; ++i) {
      const bool taken = dut_.cq_ready_o;  // registered, as step() reads its outputs
      step();
      if (taken) {
        dut_.cq_valid_i = 0;
        return;
      }
    }
    throw std::runtime_error("the device never took an MMIO request");
  }

  // The outputs read before the edge without settling the inputs just set
  // (step(), and cq_ready_o in send_cq()), as raw words.
  std::vector<uint32_t> outputs_read_by_step() const {
    std::vector<uint32_t> v{dut_.rq_valid_o, dut_.rc_ready_o, dut_.cc_valid_o, dut_.cq_ready_o};
    v.insert(v.end(), dut_.rq_o.m_storage, dut_.rq_o.m_storage + std::size(dut_.rq_o.m_storage));
    v.push_back(uint32_t(dut_.cc_o));
    v.push_back(uint32_t(dut_.cc_o >> 32));
    return v;
  }

  void check_outputs_registered() {
    const std::vector<uint32_t> before = outputs_read_by_step();
    sim_.settle();
    ++output_checked_cycles_;
    if (outputs_read_by_step() != before) ++unregistered_output_cycles_;
  }

  Sim<Model>& sim_;
  Model& dut_;
  tpu::host::RootComplex rc_;
  tpu::host::LinkCfg link_;
  std::vector<uint64_t> cc_;
  bool check_outputs_ = false;
  uint64_t output_checked_cycles_ = 0, unregistered_output_cycles_ = 0;
  double cc_stall_ = 0.0;
  unsigned next_tag_ = 0;
  uint64_t sq_base_ = 0, cq_base_ = 0;
  uint32_t sq_size_ = 1, cq_size_ = 1, sq_tail_ = 0, cq_head_ = 0;
  bool phase_ = true;
};

}  // namespace tb
