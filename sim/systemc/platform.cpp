// SPDX-License-Identifier: Apache-2.0
#include "platform.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace tpu::systemc {

using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;

// ---- ClockGen -----------------------------------------------------------------------------

ClockGen::ClockGen(const sc_core::sc_module_name& name, sc_time period)
    : sc_module(name), clk_o("clk_o"), period_(period) {
  SC_HAS_PROCESS(ClockGen);
  SC_THREAD(run);
}

void ClockGen::enable(bool on) {
  on_ = on;
  if (on) on_ev_.notify(SC_ZERO_TIME);
}

void ClockGen::run() {
  while (true) {
    while (!on_) wait(on_ev_);
    clk_o.write(true);
    wait(period_ / 2);
    clk_o.write(false);
    wait(period_ - period_ / 2);
  }
}

// ---- Memory -------------------------------------------------------------------------------

Memory::Memory(const sc_core::sc_module_name& name, sc_time read_latency, sc_time write_latency)
    : sc_module(name), socket("socket"), read_latency_(read_latency), write_latency_(write_latency) {
  socket.register_b_transport(this, &Memory::b_transport);
  socket.register_transport_dbg(this, &Memory::transport_dbg);
}

bool Memory::access(tlm::tlm_generic_payload& gp) {
  const uint64_t addr = gp.get_address();
  const unsigned len = gp.get_data_length();
  const unsigned width = gp.get_streaming_width();
  unsigned char* data = gp.get_data_ptr();
  if (width != 0 && width < len) {  // streaming: not a memory's business
    gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return false;
  }
  if (len == 0 || mem_.faults(addr, len)) {
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return false;
  }
  const unsigned char* be = gp.get_byte_enable_ptr();
  const unsigned be_len = gp.get_byte_enable_length();
  auto enabled = [&](unsigned i) { return !be || !be_len || be[i % be_len] == TLM_BYTE_ENABLED; };
  switch (gp.get_command()) {
    case tlm::TLM_READ_COMMAND:
      if (!be) {
        mem_.read(addr, std::span<uint8_t>(data, len));
      } else {
        for (unsigned i = 0; i < len; ++i)
          if (enabled(i)) data[i] = mem_.read8(addr + i);
      }
      break;
    case tlm::TLM_WRITE_COMMAND:
      if (!be) {
        mem_.write(addr, std::span<const uint8_t>(data, len));
      } else {
        for (unsigned i = 0; i < len; ++i)
          if (enabled(i)) mem_.write8(addr + i, data[i]);
      }
      break;
    case tlm::TLM_IGNORE_COMMAND:
      break;
  }
  gp.set_dmi_allowed(false);
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  return true;
}

void Memory::b_transport(tlm::tlm_generic_payload& gp, sc_time& delay) {
  if (access(gp)) delay += gp.is_read() ? read_latency_ : gp.is_write() ? write_latency_ : SC_ZERO_TIME;
}

unsigned Memory::transport_dbg(tlm::tlm_generic_payload& gp) {
  return access(gp) ? gp.get_data_length() : 0;
}

// ---- Router -------------------------------------------------------------------------------

Router::Router(const sc_core::sc_module_name& name, uint64_t bar0_base, uint64_t bar0_size)
    : sc_module(name),
      in("in"),
      to_device("to_device"),
      to_memory("to_memory"),
      bar0_base_(bar0_base),
      bar0_size_(bar0_size) {
  in.register_b_transport(this, &Router::b_transport);
  in.register_transport_dbg(this, &Router::transport_dbg);
}

bool Router::to_bar0(const tlm::tlm_generic_payload& gp) const {
  return gp.get_address() >= bar0_base_ && gp.get_address() - bar0_base_ < bar0_size_;
}

void Router::b_transport(int, tlm::tlm_generic_payload& gp, sc_time& delay) {
  if (!to_bar0(gp)) {
    to_memory->b_transport(gp, delay);
    return;
  }
  const uint64_t addr = gp.get_address();
  gp.set_address(addr - bar0_base_);
  to_device->b_transport(gp, delay);
  gp.set_address(addr);
}

unsigned Router::transport_dbg(int, tlm::tlm_generic_payload& gp) {
  if (!to_bar0(gp)) return to_memory->transport_dbg(gp);
  return 0;  // registers have side effects: no debug access
}

// ---- HostCpu ------------------------------------------------------------------------------

HostCpu::HostCpu(const sc_core::sc_module_name& name) : sc_module(name), socket("socket"), irq_i("irq_i") {
  SC_HAS_PROCESS(HostCpu);
  SC_THREAD(thread);
  SC_METHOD(on_irq);
  sensitive << irq_i.pos();
  dont_initialize();
}

namespace {
tlm::tlm_response_status access32(tlm_utils::simple_initiator_socket<HostCpu>& socket, tlm::tlm_command cmd,
                                  uint64_t addr, uint32_t& value) {
  unsigned char bytes[4];
  for (int i = 0; i < 4; ++i) bytes[i] = uint8_t(value >> (8 * i));
  tlm::tlm_generic_payload gp;
  gp.set_command(cmd);
  gp.set_address(addr);
  gp.set_data_ptr(bytes);
  gp.set_data_length(4);
  gp.set_streaming_width(4);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_time delay = SC_ZERO_TIME;
  socket->b_transport(gp, delay);
  if (delay != SC_ZERO_TIME) sc_core::wait(delay);
  if (cmd == tlm::TLM_READ_COMMAND && gp.is_response_ok())
    value = uint32_t(bytes[0]) | uint32_t(bytes[1]) << 8 | uint32_t(bytes[2]) << 16 | uint32_t(bytes[3]) << 24;
  return gp.get_response_status();
}
}  // namespace

tlm::tlm_response_status HostCpu::read32(uint64_t addr, uint32_t& value) {
  value = 0;
  return access32(socket, tlm::TLM_READ_COMMAND, addr, value);
}

tlm::tlm_response_status HostCpu::write32(uint64_t addr, uint32_t value) {
  return access32(socket, tlm::TLM_WRITE_COMMAND, addr, value);
}

void HostCpu::post(std::function<void()> job) {
  jobs_.push_back(std::move(job));
  job_ev_.notify(SC_ZERO_TIME);
}

void HostCpu::thread() {
  while (true) {
    while (jobs_.empty()) wait(job_ev_);
    running_ = true;
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    job();
    running_ = false;
    if (jobs_.empty()) sc_core::sc_pause();
  }
}

void HostCpu::on_irq() {
  ++interrupts_;
  if (pause_on_irq_) sc_core::sc_pause();
}

// ---- PlatformBase -------------------------------------------------------------------------

PlatformBase::PlatformBase(const sc_core::sc_module_name& name, sc_time read_latency)
    : sc_module(name),
      clock("clock", clock_period()),
      memory("memory", read_latency),
      router("router", kBar0Base),
      cpu("cpu") {
  clock.clk_o(clk);
  cpu.socket.bind(router.in);
  router.to_memory.bind(memory.socket);
  cpu.irq_i(irq);
}

void PlatformBase::bind(TpuTlmBase& dev) {
  dev.clk_i(clk);
  dev.rst_ni(rst_n);
  dev.irq_o(irq);
  dev.dma.bind(router.in);
  router.to_device.bind(dev.bar0);
}

void PlatformBase::run_jobs(uint64_t max_cycles) {
  device().make_current();
  const sc_time start = sc_core::sc_time_stamp();
  const sc_time limit = double(max_cycles) * clock_period();
  while (!cpu.idle()) {
    if (sc_core::sc_time_stamp() - start >= limit)
      throw std::runtime_error("SystemC platform: the host CPU's job did not finish in " +
                               std::to_string(max_cycles) + " cycles");
    sc_core::sc_start(limit - (sc_core::sc_time_stamp() - start));
  }
}

void PlatformBase::run_cycles(uint64_t cycles) {
  device().make_current();
  // In chunks: sc_time holds 2^64 resolution units, and a pause ends the run.
  constexpr uint64_t kChunk = uint64_t{1} << 30;
  const uint64_t n = std::min(cycles, kChunk);
  if (n) sc_core::sc_start(double(n) * clock_period());
}

void PlatformBase::reset(int cycles) {
  const bool was = clock.enabled();
  clock.enable(true);
  rst_n.write(false);
  run_cycles(uint64_t(cycles));
  rst_n.write(true);
  run_cycles(1);
  clock.enable(was);
}

}  // namespace tpu::systemc
