// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the `tpu` tool (docs/cli.md): the global options, the
// subcommands' entry points, and helpers for files, matrices and statistics.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tpu/config.h"
#include "tpu/device.h"
#include "tpu/npy.h"
#include "tpu/ops.h"

namespace tpu::cli {

// A mistake in how the tool was called that the parser could not see (a
// malformed --load); exits 2 like the parser's own errors.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Options before the subcommand.
struct Global {
  std::string transport = "sim";
  std::string config = "default";
  std::string device;  // URI; overrides transport and config when set
  uint64_t timeout = Device::kDefaultTimeoutCycles;
  uint64_t seed = 1;

  std::string uri() const;  // --device, or <transport>:?config=<config>
  Device open() const;
};

// ---- Subcommands; each returns the exit code ---------------------------------------

int cmd_info(const Global& g);

struct MatmulArgs {
  std::string a, b, out, stats_json;
};
int cmd_matmul(const Global& g, const MatmulArgs& args);

struct GemmArgs {  // bench and perf
  int m = 0, k = 0, n = 0;
  std::string json;
};
int cmd_bench(const Global& g, const GemmArgs& args);
int cmd_perf(const Global& g, const GemmArgs& args);

struct MlpArgs {
  std::string model, x, out, stats_json;
  int batch = 64;
};
int cmd_mlp(const Global& g, const MlpArgs& args);

struct RunArgs {
  std::string program;
  std::vector<std::string> loads;  // ADDR=FILE
  std::vector<std::string> dumps;  // ADDR:LEN=FILE
  std::string stats_json;
};
int cmd_run(const Global& g, const RunArgs& args);

struct AsmArgs {
  std::string in, out;
};
int cmd_asm(const AsmArgs& args);
int cmd_disasm(const AsmArgs& args);

// ---- Helpers ----------------------------------------------------------------------

// All of it or nothing at path (npy::write_atomic).
void write_file(const std::string& path, std::span<const uint8_t> bytes);
void write_json(const std::string& path, const nlohmann::json& j);

// An unsigned number, decimal or 0x hexadecimal; nullopt-like false on junk.
bool parse_u64(const std::string& text, uint64_t* out);
std::string hex(uint64_t v);

// .npy arrays and matrices. from_npy expects a 2-D array of the right dtype
// (npy::load_matrix) and checks the dimensions fit an int.
MatrixI8 to_matrix_i8(const npy::Array& a, const std::string& path);
npy::Array to_npy(const MatrixI8& m);
npy::Array to_npy(const MatrixI32& m);
std::string dims(int rows, int cols);  // "7x13"

// The statistics object of an operator run (docs/cli.md, "Statistics").
nlohmann::json stats_json(const Global& g, const Device& dev, const OpStats& s);
nlohmann::json counters_json(const PerfCounters& c);

}  // namespace tpu::cli
