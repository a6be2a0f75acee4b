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
#include "tpu/text.h"

namespace tpu::cli {

// A mistake in how the tool was called that the parser could not see (a
// malformed --load); exits 2 like the parser's own errors.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(printable(message)) {}
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
  std::string dtype = "int8";  // int8, or bf16 (docs/cli.md)
  bool raw_bf16 = false;       // --dtype bf16: A and B are uint16 bf16 bits, not float32
};
int cmd_matmul(const Global& g, const MatmulArgs& args);

struct GemmArgs {  // bench and perf
  int m = 0, k = 0, n = 0;
  std::string dtype = "int8";  // int8, or bf16 (bf16 operands, fp32 results)
  std::string json;
  int stream = 0;  // bench: independent products in one stream of commands (0: one GEMM)
  int depth = 0;   // bench --stream: commands in flight (0: as many as the device holds)
};
int cmd_bench(const Global& g, const GemmArgs& args);
int cmd_perf(const Global& g, const GemmArgs& args);

struct MlpArgs {
  std::string model, x, out, stats_json;
  int batch = 1024;        // samples per run (Mlp::run call)
  int step = 0;            // samples per device step when chained (0: the driver's choice)
  bool per_layer = false;  // one command per layer instead of the chained program
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

struct TfliteInfoArgs {
  std::string model, json;
};
int cmd_tflite_info(const TfliteInfoArgs& args);

struct InferArgs {
  std::string model, x, out, stats_json;
  int batch = 64;
};
int cmd_infer(const Global& g, const InferArgs& args);

// ---- Helpers ----------------------------------------------------------------------

// Limits of the files the tool reads (docs/cli.md, "Guarantees"); .npy
// files have npy::kMaxNpyBytes.
constexpr uint64_t kMaxModelBytes = uint64_t{16} << 20;    // MLP model JSON
constexpr uint64_t kMaxProgramBytes = uint64_t{16} << 20;  // assembly text or .bin
constexpr uint64_t kMaxLoadBytes = uint64_t{256} << 20;    // run --load, and one --dump
// Limits of numbers on the command line.
constexpr uint64_t kMaxTimeoutCycles = 1'000'000'000'000;  // --timeout
constexpr int kMaxDim = 1 << 20;                            // bench/perf --m --k --n, mlp --batch
constexpr int kMaxStream = 100000;                          // bench --stream

// The .npy bytes of an array, for Outputs::stage.
std::vector<uint8_t> npy_bytes(const npy::Array& a);

// Text safe to print (tpu/text.h): a file name cannot break a message's
// line or drive the terminal.
using tpu::printable;

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
