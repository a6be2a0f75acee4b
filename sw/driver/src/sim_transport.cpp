#include "sim_transport.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "Vtpu_top_n16.h"
#include "Vtpu_top_n4.h"
#include "device_harness.h"
#include "tpu/error.h"

namespace tpu {
namespace {

constexpr uint64_t kDmaBase = 0x1'0000'0000;  // buffers live above 4 GiB
constexpr uint64_t kDmaSize = 0x1'0000'0000;  // 4 GiB of sparse host memory
constexpr uint64_t kMsiAddr = 0xFEE0'0000;    // where the device writes its MSIs

template <class Model>
class SimTransport final : public Transport {
 public:
  SimTransport(std::string name, const host::RootComplexConfig& rc, const std::string& waves)
      : name_(std::move(name)), sim_(rc.seed, waves), dev_(sim_, rc, link()) {}

  std::string name() const override { return name_; }

  uint32_t mmio_read(uint32_t offset) override {
    int status = 0;
    const uint32_t v = dev_.mmio_read(offset, &status);
    if (status != 0)
      throw Error("register read at BAR0 offset 0x" + hex(offset) +
                  " was answered Unsupported Request: the offset is not mapped on " + name_);
    return v;
  }
  void mmio_write(uint32_t offset, uint32_t value) override { dev_.mmio_write(offset, value); }

  uint64_t dma_base() const override { return kDmaBase; }
  uint64_t dma_size() const override { return kDmaSize; }
  void dma_write(uint64_t addr, std::span<const uint8_t> data) override {
    dev_.mem().write(addr, data);
  }
  void dma_read(uint64_t addr, std::span<uint8_t> out) override { dev_.mem().read(addr, out); }

  uint64_t wait_interrupt(uint64_t max_cycles) override {
    const uint64_t start = sim_.cycle();
    while (sim_.cycle() - start < max_cycles) {
      dev_.step();
      if (take_msi()) break;
    }
    return sim_.cycle() - start;
  }

  uint64_t cycles() const override { return sim_.cycle(); }

 private:
  static host::LinkCfg link() {
    host::LinkCfg l;
    l.msi_en = true;
    l.msi_addr = kMsiAddr;
    l.msi_data = 1;
    return l;
  }

  static std::string hex(uint64_t v) {
    char buf[20];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
  }

  // True when the device wrote an MSI since the last call. The root complex
  // logs every write; the log is trimmed so long runs do not grow it.
  bool take_msi() {
    const auto& writes = dev_.rc().writes();
    if (writes.size() == seen_) return false;
    bool msi = false;
    for (size_t i = seen_; i < writes.size(); ++i) msi |= writes[i].addr == kMsiAddr;
    seen_ = writes.size();
    if (seen_ > 64) {
      dev_.rc().clear_logs();
      seen_ = 0;
    }
    return msi;
  }

  std::string name_;
  tb::Sim<Model> sim_;
  tb::Device<Model> dev_;
  size_t seen_ = 0;
};

uint64_t parse_number(const std::string& key, const std::string& value) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(value.c_str(), &end, 0);
  if (value.empty() || *end != '\0' || value[0] == '-')
    throw Error("sim device: " + key + "=" + value + " is not a non-negative number");
  return v;
}

}  // namespace

std::unique_ptr<Transport> open_sim(const std::map<std::string, std::string>& query) {
  std::string config = "default", waves;
  host::RootComplexConfig rc;  // the default link: 500-cycle read latency, 16 B/cycle
  for (const auto& [key, value] : query) {
    if (key == "config") config = value;
    else if (key == "latency") rc.latency = uint32_t(std::min<uint64_t>(parse_number(key, value), 100000));
    else if (key == "seed") rc.seed = parse_number(key, value);
    else if (key == "waves") waves = value;
    else
      throw Error("sim device: unknown option '" + key +
                  "'; the options are config, latency, seed and waves");
  }
  const std::string name = "sim:config=" + config;
  if (config == "default") return std::make_unique<SimTransport<Vtpu_top_n16>>(name, rc, waves);
  if (config == "tiny") return std::make_unique<SimTransport<Vtpu_top_n4>>(name, rc, waves);
  throw Error("sim device: unknown configuration '" + config +
              "'; the simulator has 'default' (16x16) and 'tiny' (4x4)");
}

}  // namespace tpu
