// SPDX-License-Identifier: Apache-2.0
// The sc: transport: the device as a SystemC/TLM-2.0 module (tpu_tlm.h) in the
// virtual platform of platform.h, run by the SystemC kernel in this process.
// Each call of the driver runs the kernel (sc_start) until it is done: an
// MMIO access is a job of the platform's host CPU thread, which issues a TLM
// transaction through the router to the device's BAR0 socket; waiting for an
// interrupt runs the clock until the device's irq_o pulses. Host memory is
// the platform's memory target, reached directly (as a debugger would).
//
//   sc:?config=NAME&latency=CYCLES
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "sc_platforms.h"
#include "tpu/config.h"
#include "tpu/error.h"
#include "tpu/transport.h"
#include "tpu_sc_models.h"  // generated: TPU_SC_MODELS(X) and the model headers

namespace tpu::systemc {

namespace {

constexpr uint64_t kDmaBase = 0x1'0000'0000;  // buffers live above 4 GiB, as on sim:
constexpr uint64_t kDmaSize = 0x1'0000'0000;
constexpr uint64_t kMsiAddr = 0xFEE0'0000;

class Platforms {
 public:
  static Platforms& get() {
    static Platforms* p = new Platforms;  // never destroyed: SystemC outlives main
    return *p;
  }

  PlatformBase* acquire(const std::string& config) {
    if (platforms_.empty()) build();
    const auto it = platforms_.find(config);
    if (it == platforms_.end()) return nullptr;
    if (!in_use_.insert(it->second).second)
      throw Error("sc device: the platform of configuration '" + config +
                  "' is in use; SystemC builds one per configuration and process, close the other device first");
    return it->second;
  }
  void release(PlatformBase* p) { in_use_.erase(p); }
  PlatformBase* find(const std::string& config) {
    if (platforms_.empty()) build();
    const auto it = platforms_.find(config);
    return it == platforms_.end() ? nullptr : it->second;
  }

 private:
  void build() {
    init();
    if (sc_core::sc_get_status() != sc_core::SC_ELABORATION)
      throw Error("sc device: SystemC is already running in this process without the TPU platforms; "
                  "open the sc: device before the first sc_start");
#define TPU_BUILD(name) \
  platforms_[#name] =   \
      new Platform<Vtpu_top_sc_##name>("tpu_" #name, double(tpu::find_config(#name)->link_latency) * clock_period());
    TPU_SC_MODELS(TPU_BUILD)
#undef TPU_BUILD
  }

  std::map<std::string, PlatformBase*> platforms_;
  std::set<PlatformBase*> in_use_;
};

class ScTransport final : public Transport {
 public:
  ScTransport(std::string name, PlatformBase& p, uint64_t latency) : name_(std::move(name)), p_(p) {
    p_.memory.storage() = HostMemory{};
    p_.memory.set_read_latency(double(latency) * clock_period());
    host::LinkCfg link;
    link.msi_en = true;
    link.msi_addr = kMsiAddr;
    link.msi_data = 1;
    p_.device().set_link(link);
    p_.cpu.pause_on_irq(false);
    p_.clock.enable(true);
    p_.reset();
    irq_seen_ = p_.cpu.interrupts();
    base_ = p_.device().cycles();
    if (VerilatedContext* ctx = p_.device().context()) ctx->gotError(false);  // the platform's last user
  }
  ~ScTransport() override {
    p_.clock.enable(false);
    release_platform(&p_);
  }

  std::string name() const override { return name_; }

  uint32_t mmio_read(uint32_t offset) override {
    check_assertions();
    uint32_t v = 0;
    tlm::tlm_response_status st = tlm::TLM_INCOMPLETE_RESPONSE;
    p_.cpu.post([&] { st = p_.cpu.read32(PlatformBase::kBar0Base + offset, v); });
    p_.run_jobs();
    check_assertions();
    if (st == tlm::TLM_ADDRESS_ERROR_RESPONSE) throw unmapped_register(name_, offset);
    if (st != tlm::TLM_OK_RESPONSE) throw failed("read", offset, st);
    return v;
  }
  void mmio_write(uint32_t offset, uint32_t value) override {
    check_assertions();
    tlm::tlm_response_status st = tlm::TLM_INCOMPLETE_RESPONSE;
    p_.cpu.post([&] { st = p_.cpu.write32(PlatformBase::kBar0Base + offset, value); });
    p_.run_jobs();
    check_assertions();
    // A write to an unmapped offset is dropped by the device, silently (as on sim:).
    if (st != tlm::TLM_OK_RESPONSE && st != tlm::TLM_ADDRESS_ERROR_RESPONSE) throw failed("write", offset, st);
  }

  uint64_t dma_base() const override { return kDmaBase; }
  uint64_t dma_size() const override { return kDmaSize; }
  void dma_write(uint64_t addr, std::span<const uint8_t> data) override { p_.memory.storage().write(addr, data); }
  void dma_read(uint64_t addr, std::span<uint8_t> out) override { p_.memory.storage().read(addr, out); }

  // As sim:, at least one cycle passes, and an MSI that came during an
  // earlier call (an MMIO access) ends the wait at once.
  uint64_t wait_interrupt(uint64_t max_cycles) override {
    check_assertions();
    const uint64_t start = cycles();
    if (max_cycles == 0) return 0;
    if (p_.cpu.interrupts() != irq_seen_) {
      p_.run_cycles(1);
    } else {
      p_.cpu.pause_on_irq(true);
      while (cycles() - start < max_cycles && p_.cpu.interrupts() == irq_seen_)
        p_.run_cycles(max_cycles - (cycles() - start));
      p_.cpu.pause_on_irq(false);
    }
    irq_seen_ = p_.cpu.interrupts();
    check_assertions();
    return cycles() - start;
  }

  uint64_t cycles() const override { return p_.device().cycles() - base_; }

 private:
  Error failed(const char* what, uint32_t offset, tlm::tlm_response_status st) const {
    std::ostringstream os;
    tlm::tlm_generic_payload gp;
    gp.set_response_status(st);
    os << name_ << ": MMIO " << what << " at BAR0 offset 0x" << std::hex << offset << " failed ("
       << gp.get_response_string() << ")";
    return Error(os.str());
  }

  // As sim:, a failed RTL assertion fails the call that saw it and every
  // later call that runs the device. The model's context records that one
  // failed, not which.
  void check_assertions() {
    VerilatedContext* ctx = p_.device().context();
    if (ctx && ctx->gotError() && !failure_cycle_) failure_cycle_ = cycles();
    if (failure_cycle_) throw rtl_assertions_failed(name_, *failure_cycle_);
  }

  std::string name_;
  PlatformBase& p_;
  uint64_t irq_seen_ = 0;
  uint64_t base_ = 0;
  std::optional<uint64_t> failure_cycle_;  // by which the first failed assertion was seen
};

std::unique_ptr<Transport> open_sc(const DeviceUri& uri) {
  if (!uri.path.empty())
    throw Error("sc device: unexpected '" + uri.path + "' in '" + uri.text + "'; write sc:?config=NAME");
  const std::string what = "sc device";
  std::string config(kDefaultConfig);
  std::optional<uint64_t> latency;
  for (const auto& [key, value] : uri.query) {
    if (key == "config") config = value;
    else if (key == "latency") latency = std::min<uint64_t>(query_number(what, key, value), 100000);
    else throw Error("sc device: unknown option '" + key + "'; the options are config and latency");
  }
  const Config* cfg = find_config(config);
  if (!cfg)
    throw Error("sc device: unknown configuration '" + config + "'; the configurations are " + config_names());
  PlatformBase* p = acquire_platform(config);
  if (!p)
    throw Error("sc device: configuration '" + config + "' is not built into this simulator (it has " +
                built_configs() + "); rebuild with make build CONFIGS=\"" + config +
                " ...\", or run it on the reference model with model:?config=" + config);
  try {
    return std::make_unique<ScTransport>("sc:config=" + config, *p,
                                         latency.value_or(uint64_t(cfg->link_latency)));
  } catch (...) {
    release_platform(p);
    throw;
  }
}

[[maybe_unused]] const bool registered = [] {
  // Before any Verilated model of this process is built (docs/systemc.md, "Building").
  init();
  return register_transport({"sc", "sc:?config=NAME&latency=CYCLES",
                             "the Verilated RTL as a SystemC/TLM-2.0 module in a virtual platform, in this process",
                             open_sc});
}();

}  // namespace

std::string built_configs() {
  std::string s;
#define TPU_NAME(name) s += std::string(s.empty() ? "" : ", ") + #name;
  TPU_SC_MODELS(TPU_NAME)
#undef TPU_NAME
  return s;
}

PlatformBase* acquire_platform(const std::string& config) {
  try {
    return Platforms::get().acquire(config);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // sc_core::sc_report
    throw Error(std::string("sc device: SystemC: ") + e.what());
  }
}

void release_platform(PlatformBase* platform) { Platforms::get().release(platform); }

PlatformBase* find_platform(const std::string& config) { return Platforms::get().find(config); }

}  // namespace tpu::systemc
