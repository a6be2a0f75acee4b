// SPDX-License-Identifier: Apache-2.0
// The device as a SystemC/TLM-2.0 module: the Verilated tpu_top (verilator
// --sc, one class per configuration: Vtpu_top_sc_<config>) behind
//
//   bar0   tlm_utils::simple_target_socket: 32-bit register reads and writes
//          at BAR0 offsets (the TLM address is the offset). Each becomes a cq
//          beat; a read waits for its cc completion. Responses:
//            OK                     read answered SC; write taken by the device
//            ADDRESS_ERROR_RESPONSE read answered UR (unmapped or unaligned
//                                   offset); write to an offset outside the
//                                   4 KiB BAR or unaligned (the device drops it)
//            BURST_ERROR_RESPONSE   length or streaming width not 4 (not sent)
//            COMMAND_ERROR_RESPONSE TLM_IGNORE_COMMAND (not sent)
//            GENERIC_ERROR_RESPONSE no completion within mmio_timeout_cycles,
//                                   or the device was reset meanwhile
//   dma    tlm_utils::simple_initiator_socket: the device's DMA into host
//          memory. An rq read becomes one b_transport read of the request's
//          bytes; its data go back to the device as rc completions split at
//          the read completion boundary (as the root-complex model of
//          sim/host does by default), or as one UR completion when the read
//          fails. An rq posted write becomes one b_transport write. MSI writes
//          (the address of link.msi_addr) go the same way.
//   irq_o  sc_out<bool>: high for one clock cycle after each MSI write.
//   clk_i, rst_ni  the device clock (rising edge) and its active-low reset.
//
// Timing (docs/systemc.md, "Timing"): the device is cycle-accurate on clk_i,
// not temporally decoupled. bar0's b_transport first waits the annotated
// delay (it synchronizes a loosely-timed initiator), then takes the real
// cycles of the access, and returns with the delay zero. On dma, a read's
// completions go to the device no earlier than the time of the request plus
// the delay the target annotated; posted writes do not wait for theirs.
//
// The beats are packed with sim/host's codecs (pack_rq/unpack_rq/pack_rc/
// pack_link_cfg of root_complex.h) and tlp_layout.h (generated from
// rtl/host/tlp_pkg.sv). Every model in one process shares SystemC's time
// resolution, which must be 1 ns (tpu_top is Verilated with 1 ns precision):
// call tpu::systemc::init() (or sc_set_time_resolution(1, SC_NS)) before
// building a module.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <vector>

// As Verilator's SystemC models do (systemc.h, with its using-declarations).
#include <verilated_sc.h>
#include <verilated.h>

#include "coverage.h"
#include "root_complex.h"
#include "tlp_layout.h"

namespace tpu::systemc {

// Sets SystemC's time resolution to 1 ns unless it is already so (once per
// process, before any sc_time other than zero is made). Throws
// std::runtime_error when another resolution was already fixed.
void init();

// The device clock of the platform and the transport: 100 MHz, as the
// Verilated simulations (sim/verilator/sim.h) count it.
inline sc_core::sc_time clock_period() { return sc_core::sc_time(10, sc_core::SC_NS); }

struct TpuTlmConfig {
  host::LinkCfg link;               // bus mastering, MPS, MRRS, MSI address and data
  uint32_t rcb = 64;                // read completion boundary (bytes, a power of two)
  uint32_t mmio_timeout_cycles = 10000;  // a read with no completion by then fails
};

struct TpuTlmStats {
  uint64_t mmio_reads = 0, mmio_writes = 0, mmio_errors = 0;
  uint64_t dma_reads = 0, dma_writes = 0, dma_read_bytes = 0, dma_write_bytes = 0;
  uint64_t dma_errors = 0;  // b_transport answered with an error
  uint64_t msis = 0;
};

// What every configuration's module shares; TpuTlm<Vtop> adds the model.
class TpuTlmBase : public sc_core::sc_module {
 public:
  sc_core::sc_in<bool> clk_i;
  sc_core::sc_in<bool> rst_ni;
  sc_core::sc_out<bool> irq_o;
  tlm_utils::simple_target_socket<TpuTlmBase> bar0;
  tlm_utils::simple_initiator_socket<TpuTlmBase> dma;

  // The link configuration the device sees (link_cfg_i); may change between
  // runs of the kernel (MSI address, MPS, ...).
  void set_link(const host::LinkCfg& link);
  const host::LinkCfg& link() const { return cfg_.link; }

  // Rising clock edges seen since construction.
  uint64_t cycles() const { return cycles_; }
  // The device's busy and error outputs.
  bool busy() const { return busy_.read(); }
  bool error() const { return error_.read(); }
  const TpuTlmStats& stats() const { return stats_; }

  // Points Verilator's thread-local current context at this model's (its
  // runtime reaches the context through it on assertion errors and at
  // teardown). Call it before sc_start when several models share a thread.
  virtual void make_current() {}
  virtual VerilatedContext* context() { return nullptr; }

 protected:
  TpuTlmBase(const sc_core::sc_module_name& name, const TpuTlmConfig& cfg);

  // The signals between this module and the Verilated model.
  sc_core::sc_signal<bool> cq_valid_{"cq_valid", false}, cq_ready_{"cq_ready"};
  sc_core::sc_signal<bool> cc_valid_{"cc_valid"}, cc_ready_{"cc_ready", true};
  sc_core::sc_signal<bool> rq_valid_{"rq_valid"}, rq_ready_{"rq_ready", true};
  sc_core::sc_signal<bool> rc_valid_{"rc_valid", false}, rc_ready_{"rc_ready"};
  sc_core::sc_signal<bool> busy_{"busy"}, error_{"error"};
  sc_core::sc_signal<uint32_t> cpl_timeout_{"cpl_timeout", 0};
  sc_core::sc_signal<uint64_t> cc_{"cc"};
  sc_core::sc_signal<sc_dt::sc_bv<tlp_layout::link_cfg_t::kBits>> link_cfg_{"link_cfg"};
  sc_core::sc_signal<sc_dt::sc_bv<tlp_layout::cq_t::kBits>> cq_{"cq"};
  sc_core::sc_signal<sc_dt::sc_bv<tlp_layout::rq_t::kBits>> rq_{"rq"};
  sc_core::sc_signal<sc_dt::sc_bv<tlp_layout::rc_t::kBits>> rc_{"rc"};

 private:
  struct Mmio {
    bool write = false;
    uint64_t addr = 0;
    uint32_t data = 0;
    uint8_t be = 0xf;
    uint8_t tag = 0;
    uint64_t sent = 0;  // cycle the device took it
    bool done = false;
    tlm::tlm_response_status response = tlm::TLM_INCOMPLETE_RESPONSE;
    sc_core::sc_event done_ev;
  };
  struct Packet {  // an rq packet: a read request or a whole posted write
    bool write;
    uint8_t tag;
    uint64_t addr;
    uint32_t len;
    std::vector<uint8_t> data;
  };
  struct ReadCompletions {  // the rc beats of one read, in order
    sc_core::sc_time ready;
    std::vector<host::RcBeat> beats;
  };

  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  void on_clock();
  void dma_thread();
  void reset_link();
  void finish(Mmio& m, tlm::tlm_response_status r);
  void accept_rq(const host::RqBeat& beat);
  std::vector<host::RcBeat> completions(const Packet& p, bool ok, const std::vector<uint8_t>& data) const;

  TpuTlmConfig cfg_;
  uint64_t cycles_ = 0;
  uint64_t reset_gen_ = 0;  // DMA started before a reset is dropped
  unsigned next_tag_ = 0;
  TpuTlmStats stats_;

  std::deque<Mmio*> mmio_queue_;  // not yet taken by the device; front is on cq when cq_offer_
  std::deque<Mmio*> mmio_reads_;  // taken, waiting for their completion
  bool cq_offer_ = false;

  std::vector<host::RqBeat> wr_beats_;  // posted write being received
  std::deque<Packet> dma_queue_;
  sc_core::sc_event dma_ev_;

  std::deque<ReadCompletions> cpl_queue_;
  std::deque<host::RcBeat> rc_beats_;  // the read being sent
  bool rc_offer_ = false;
  int irq_ = 0;  // MSIs still to signal; 1 while irq_o is high: see on_clock
  bool irq_high_ = false;
};

// The module for one configuration's model, e.g. TpuTlm<Vtpu_top_sc_tiny>.
template <class Vtop>
class TpuTlm final : public TpuTlmBase {
 public:
  explicit TpuTlm(const sc_core::sc_module_name& name, const TpuTlmConfig& cfg = {})
      : TpuTlmBase(name, cfg), ctx_(new_context()), model_(new_model(ctx_.get())) {
    Vtop& m = *model_;
    m.clk_i(clk_i);
    m.rst_ni(rst_ni);
    m.cq_valid_i(cq_valid_);
    m.cq_ready_o(cq_ready_);
    m.cq_i(cq_);
    m.cc_valid_o(cc_valid_);
    m.cc_ready_i(cc_ready_);
    m.cc_o(cc_);
    m.rq_valid_o(rq_valid_);
    m.rq_ready_i(rq_ready_);
    m.rq_o(rq_);
    m.rc_valid_i(rc_valid_);
    m.rc_ready_o(rc_ready_);
    m.rc_i(rc_);
    m.busy_o(busy_);
    m.error_o(error_);
    m.cpl_timeout_i(cpl_timeout_);
    m.link_cfg_i(link_cfg_);
  }
  ~TpuTlm() override {
    make_current();
    model_->final();
    tb::write_coverage(*ctx_);  // a coverage build's data (sim/verilator/coverage.h)
    model_.reset();
  }

  void make_current() override { Verilated::threadContextp(ctx_.get()); }
  VerilatedContext* context() override { return ctx_.get(); }
  Vtop& model() { return *model_; }

 private:
  static std::unique_ptr<VerilatedContext> new_context() {
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->randReset(0);
    ctx->fatalOnError(false);  // a failed SV assertion is reported, not fatal (as sim/verilator/sim.h)
    return ctx;
  }
  // The Verilated SystemC model takes its context from the thread's current one.
  static std::unique_ptr<Vtop> new_model(VerilatedContext* ctx) {
    Verilated::threadContextp(ctx);
    return std::make_unique<Vtop>("tpu_top");
  }

  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vtop> model_;
};

}  // namespace tpu::systemc
