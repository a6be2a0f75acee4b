// SPDX-License-Identifier: Apache-2.0
// The sim: transport: the Verilated device (tpu_top) in this process, with
// the root-complex model serving its DMA from simulated host memory. One
// device model per configuration the build has (TPU_CONFIGS).
//
//   sim:?config=NAME&latency=CYCLES&seed=N&waves=FILE.fst
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "device_harness.h"
#include "tpu/config.h"
#include "tpu/error.h"
#include "tpu/transport.h"
#include "tpu_sim_models.h"  // generated: TPU_SIM_MODELS(X) and the model headers

namespace tpu {
namespace {

constexpr uint64_t kDmaBase = 0x1'0000'0000;  // buffers live above 4 GiB
constexpr uint64_t kDmaSize = 0x1'0000'0000;  // 4 GiB of sparse host memory
constexpr uint64_t kMsiAddr = 0xFEE0'0000;    // where the device writes its MSIs

// Once the waveform file is complete, says how to view it with the device's
// GTKWave layout (tb/host/device.gtkw, found from this file's place in the
// source tree; its filter files are named from the tree's root, hence the cd).
class WavesNote {
 public:
  WavesNote() = default;
  WavesNote(const WavesNote&) = delete;
  WavesNote& operator=(const WavesNote&) = delete;
  ~WavesNote() {
    if (path_.empty()) return;
    char* abs = ::realpath(path_.c_str(), nullptr);
    const std::string fst = abs ? abs : path_;
    std::free(abs);
    const std::string file = __FILE__;
    const size_t at = file.rfind("/sim/transport/sim_transport.cpp");
    const std::string root = at == std::string::npos ? "" : file.substr(0, at);
    struct stat st {};
    const bool tree = !root.empty() && ::stat((root + "/tb/host/device.gtkw").c_str(), &st) == 0;
    const std::string cd = tree ? "cd " + root + " && " : "";
    std::fprintf(stderr, "sim device: waves in %s; view with: %sgtkwave %s tb/host/device.gtkw%s\n",
                 path_.c_str(), cd.c_str(), fst.c_str(), tree ? "" : "  (from the TPU source tree)");
  }
  void set(const std::string& path) { path_ = path; }

 private:
  std::string path_;
};

template <class Model>
class SimTransport final : public Transport {
 public:
  SimTransport(std::string name, const host::RootComplexConfig& rc, const std::string& waves)
      : name_(std::move(name)), sim_(rc.seed, waves), dev_(sim_, rc, link()) {
    note_.set(waves);  // only once the file is open
  }

  std::string name() const override { return name_; }

  uint32_t mmio_read(uint32_t offset) override {
    check_assertions();
    int status = 0;
    const uint32_t v = dev_.mmio_read(offset, &status);
    check_assertions();
    if (status != 0)
      throw unmapped_register(name_, offset);
    return v;
  }
  void mmio_write(uint32_t offset, uint32_t value) override {
    check_assertions();
    dev_.mmio_write(offset, value);
    check_assertions();
  }

  uint64_t dma_base() const override { return kDmaBase; }
  uint64_t dma_size() const override { return kDmaSize; }
  void dma_write(uint64_t addr, std::span<const uint8_t> data) override {
    dev_.mem().write(addr, data);
  }
  void dma_read(uint64_t addr, std::span<uint8_t> out) override { dev_.mem().read(addr, out); }

  uint64_t wait_interrupt(uint64_t max_cycles) override {
    check_assertions();
    const uint64_t start = sim_.cycle();
    while (sim_.cycle() - start < max_cycles) {
      dev_.step();
      if (take_msi()) break;
    }
    check_assertions();
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

  // A failed RTL assertion is a bug in the device, whatever the host did:
  // the call that saw it and every later call that runs the device fail,
  // since the model's state can no longer be trusted (host memory stays
  // readable). The simulator printed each failure.
  void check_assertions() {
    if (sim_.take_assertion_failures() != 0 && !failure_cycle_) failure_cycle_ = sim_.cycle();
    if (failure_cycle_) throw rtl_assertions_failed(name_, *failure_cycle_);
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

  WavesNote note_;  // first, so that it speaks after sim_ closes the file
  std::string name_;
  tb::Sim<Model> sim_;
  tb::Device<Model> dev_;
  size_t seen_ = 0;
  std::optional<uint64_t> failure_cycle_;  // by which the first failed assertion was seen
};

std::string built_configs() {
  std::string s;
#define TPU_NAME(name) s += std::string(s.empty() ? "" : ", ") + #name;
  TPU_SIM_MODELS(TPU_NAME)
#undef TPU_NAME
  return s;
}

// The waveform file must be creatable before the simulation starts (the
// tracer itself would only print a warning and trace nothing): its directory
// exists and is writable, and the path is a regular file or nothing yet.
void check_waves(const std::string& waves) {
  const std::string what = "sim device: waves=" + waves;
  const size_t slash = waves.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : waves.substr(0, slash);
  struct stat st {};
  if (slash + 1 == waves.size()) throw Error(what + ": the path ends in '/'; name a file (out.fst)");
  if (::stat(dir.c_str(), &st) != 0) {
    throw Error(what + ": the directory " + dir +
                (errno == ENOENT ? " does not exist; create it first" : ": " + std::string(std::strerror(errno))));
  }
  if (!S_ISDIR(st.st_mode)) throw Error(what + ": " + dir + " is not a directory");
  const bool existed = ::lstat(waves.c_str(), &st) == 0;
  if (existed && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
    throw Error(what + ": it exists and is not a regular file; name a file");
  }
  const int fd = ::open(waves.c_str(), O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0666);
  if (fd < 0) throw Error(what + ": cannot create it: " + std::strerror(errno));
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  ::close(fd);
  if (!regular) throw Error(what + ": it is not a regular file; name a file");
}

std::unique_ptr<Transport> open_sim(const DeviceUri& uri) {
  if (!uri.path.empty())
    throw Error("sim device: unexpected '" + uri.path + "' in '" + uri.text +
                "'; write sim:?config=NAME");
  const UriQuery& query = uri.query;
  const std::string what = "sim device";
  std::string config(kDefaultConfig), waves;
  std::optional<uint64_t> latency;
  host::RootComplexConfig rc;
  for (const auto& [key, value] : query) {
    if (key == "config") config = value;
    else if (key == "latency") latency = std::min<uint64_t>(query_number(what, key, value), 100000);
    else if (key == "seed") rc.seed = query_number(what, key, value);
    else if (key == "waves") waves = value;
    else
      throw Error("sim device: unknown option '" + key +
                  "'; the options are config, latency, seed and waves");
  }
  const Config* cfg = find_config(config);
  if (!cfg)
    throw Error("sim device: unknown configuration '" + config + "'; the configurations are " +
                config_names());
  // The configuration's link: read latency and bandwidth (16-byte beats).
  rc.latency = uint32_t(latency.value_or(uint64_t(cfg->link_latency)));
  rc.rq_beats_per_cycle = rc.rc_beats_per_cycle = cfg->link_bytes_per_cycle / 16.0;
  const std::string name = "sim:config=" + config;
  bool built = false;
#define TPU_BUILT(model_name) built |= config == #model_name;
  TPU_SIM_MODELS(TPU_BUILT)
#undef TPU_BUILT
  if (built && !waves.empty()) check_waves(waves);
#define TPU_OPEN(model_name) \
  if (config == #model_name) return std::make_unique<SimTransport<Vtpu_top_##model_name>>(name, rc, waves);
  TPU_SIM_MODELS(TPU_OPEN)
#undef TPU_OPEN
  throw Error("sim device: configuration '" + config + "' is not built into this simulator (it has " +
              built_configs() + "); rebuild with make build CONFIGS=\"" + config +
              " ...\", or run it on the reference model with model:?config=" + config);
}

[[maybe_unused]] const bool registered = register_transport(
    {"sim", "sim:?config=NAME&latency=CYCLES&seed=N&waves=FILE.fst",
     "the Verilated RTL of the device, cycle-accurate, in this process", open_sim});

}  // namespace

}  // namespace tpu
