// SPDX-License-Identifier: Apache-2.0
// A small virtual platform around the device module (tpu_tlm.h):
//
//   HostCpu ----\                      /--> TpuTlm.bar0   [bar0_base, + 4 KiB)
//                >-- Router (decode) -<
//   TpuTlm.dma -/                      \--> Memory         everything else
//
//   ClockGen -> clk -> TpuTlm.clk_i;  rst_n -> TpuTlm.rst_ni;  TpuTlm.irq_o -> irq -> HostCpu.irq_i
//
// Memory is a TLM target over a sparse 64-bit host memory (tpu::HostMemory)
// that annotates a fixed read and write latency. Router is a simple
// interconnect: any number of initiators, address decoding between the
// device's BAR0 window and memory. HostCpu issues MMIO from its SC_THREAD:
// jobs posted from outside the kernel (the sc: transport) run there, then the
// kernel pauses. ClockGen is a clock that can be stopped, so that idle
// platforms cost nothing while another one runs.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "tpu/config.h"
#include "tpu/host_memory.h"
#include "tpu_tlm.h"

namespace tpu::systemc {

// A clock (rising edge at the start of each period) that runs only while enabled.
class ClockGen : public sc_core::sc_module {
 public:
  sc_core::sc_out<bool> clk_o;
  ClockGen(const sc_core::sc_module_name& name, sc_core::sc_time period);
  void enable(bool on);
  bool enabled() const { return on_; }

 private:
  void run();
  sc_core::sc_time period_;
  bool on_ = false;
  sc_core::sc_event on_ev_;
};

// Host memory as a TLM target. Any length, byte enables, debug transport.
// An access that touches a fault range of the memory (HostMemory::add_fault)
// is answered TLM_ADDRESS_ERROR_RESPONSE. No DMI.
class Memory : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<Memory> socket;
  Memory(const sc_core::sc_module_name& name, sc_core::sc_time read_latency = sc_core::SC_ZERO_TIME,
         sc_core::sc_time write_latency = sc_core::SC_ZERO_TIME);

  HostMemory& storage() { return mem_; }
  void set_read_latency(sc_core::sc_time t) { read_latency_ = t; }
  void set_write_latency(sc_core::sc_time t) { write_latency_ = t; }

 private:
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  unsigned transport_dbg(tlm::tlm_generic_payload& gp);
  bool access(tlm::tlm_generic_payload& gp);

  HostMemory mem_;
  sc_core::sc_time read_latency_, write_latency_;
};

// Address decoding: [bar0_base, bar0_base + bar0_size) goes to to_device with
// the offset as address, everything else to to_memory unchanged.
class Router : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<Router> in;
  tlm_utils::simple_initiator_socket<Router> to_device;
  tlm_utils::simple_initiator_socket<Router> to_memory;
  Router(const sc_core::sc_module_name& name, uint64_t bar0_base, uint64_t bar0_size = 4096);

 private:
  void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  unsigned transport_dbg(int id, tlm::tlm_generic_payload& gp);
  bool to_bar0(const tlm::tlm_generic_payload& gp) const;

  uint64_t bar0_base_, bar0_size_;
};

// The host processor: 32-bit MMIO through its socket, from its own thread.
class HostCpu : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<HostCpu> socket;
  sc_core::sc_in<bool> irq_i;
  explicit HostCpu(const sc_core::sc_module_name& name);

  // From inside an SC_THREAD (this one's jobs or any other): one access.
  tlm::tlm_response_status read32(uint64_t addr, uint32_t& value);
  tlm::tlm_response_status write32(uint64_t addr, uint32_t value);

  // From outside the kernel: queues a job for this module's thread. When it
  // has run, the thread calls sc_pause() (the caller's sc_start returns).
  void post(std::function<void()> job);
  bool idle() const { return jobs_.empty() && !running_; }

  // Rising edges of irq_i seen so far; with pause_on_irq, each one also
  // pauses the kernel.
  uint64_t interrupts() const { return interrupts_; }
  void pause_on_irq(bool on) { pause_on_irq_ = on; }

 private:
  void thread();
  void on_irq();
  std::deque<std::function<void()>> jobs_;
  bool running_ = false;
  sc_core::sc_event job_ev_;
  uint64_t interrupts_ = 0;
  bool pause_on_irq_ = false;
};

// Everything but the device model; Platform<Vtop> adds it.
class PlatformBase : public sc_core::sc_module {
 public:
  static constexpr uint64_t kBar0Base = 0xFD00'0000;  // below the MSI address, above 3.9 GiB

  sc_core::sc_signal<bool> clk{"clk", false}, rst_n{"rst_n", false}, irq{"irq", false};
  ClockGen clock;
  Memory memory;
  Router router;
  HostCpu cpu;

  virtual TpuTlmBase& device() = 0;

  // Runs the kernel until the cpu has run every posted job (throws
  // std::runtime_error after max_cycles).
  void run_jobs(uint64_t max_cycles = 100'000'000);
  // Runs the kernel for min(cycles, 2^30) clock cycles, fewer when paused (an
  // interrupt with cpu.pause_on_irq). The clock must be enabled.
  void run_cycles(uint64_t cycles);
  // Holds rst_n low for a few cycles with the clock running, then releases it.
  void reset(int cycles = 4);

 protected:
  PlatformBase(const sc_core::sc_module_name& name, sc_core::sc_time read_latency);
  void bind(TpuTlmBase& dev);
};

template <class Vtop>
class Platform final : public PlatformBase {
 public:
  TpuTlm<Vtop> dev;
  // read_latency: the memory's annotated read latency, the link's round trip
  // (by default the default configuration's link_latency).
  Platform(const sc_core::sc_module_name& name,
           sc_core::sc_time read_latency = double(tpu::default_config().link_latency) * clock_period(),
           const TpuTlmConfig& cfg = {})
      : PlatformBase(name, read_latency), dev("device", cfg) {
    bind(dev);
  }
  TpuTlmBase& device() override { return dev; }
};

}  // namespace tpu::systemc
