// SPDX-License-Identifier: Apache-2.0
// The operator subcommands: info, matmul, bench, perf and mlp (docs/cli.md).
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <optional>
#include <random>
#include <utility>

#include "cli_common.h"
#include "model_file.h"
#include "outputs.h"
#include "tpu/host_size.h"
#include "tpu/ref_matmul.h"
#include "tpu/roofline.h"
#include "tpu/uart_transport.h"

namespace tpu::cli {
namespace {

using nlohmann::json;

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

// "1 command", "3 commands".
std::string count(uint64_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// "TPU1" from 0x54505531, most significant byte first; "" if not printable.
std::string id_text(uint32_t id) {
  std::string s;
  for (int shift = 24; shift >= 0; shift -= 8) {
    const char c = char((id >> shift) & 0xff);
    if (c < 0x20 || c > 0x7e) return "";
    s += c;
  }
  return s;
}

// A x B with the dimensions checked; on the host when one of them is 0 (the
// result is empty or all zeros, and there is nothing for the device to do).
void check_inner(const MatrixI8& a, const MatrixI8& b) {
  if (a.cols != b.rows) {
    throw Error("inner dimensions differ: A is " + dims(a.rows, a.cols) + " but B is " +
                dims(b.rows, b.cols) + " (A's columns must equal B's rows)");
  }
}

MatrixI32 checked_matmul(Device& dev, const MatrixI8& a, const MatrixI8& b, OpStats* stats) {
  check_inner(a, b);
  if (a.rows == 0 || a.cols == 0 || b.cols == 0) {
    *stats = OpStats{};
    stats->n = dev.info().n;
    return MatrixI32(a.rows, b.cols);
  }
  return matmul(dev, a, b, stats);
}

MatrixI8 random_matrix(std::mt19937_64& rng, int rows, int cols) {
  std::uniform_int_distribution<int> dist(-128, 127);
  MatrixI8 m(rows, cols);
  for (int8_t& v : m.data) v = int8_t(dist(rng));
  return m;
}

// What bench and perf measure.
struct GemmRun {
  OpStats stats;
  uint64_t command_cycles = 0;     // command_latency(), measured before the GEMM
  uint64_t queued_cycles = 0;      // queued_command_latency(), likewise
  std::optional<Roofline> roof;    // none when the device matches no named configuration
  double wall_seconds = 0;
  bool exact = false;
  std::string mismatch;  // the first differing element, when not exact
};

// "" when c equals ref element for element (and in shape), else the first
// differing element and how many differ; show(x) prints an element.
template <class T, class Show>
std::string first_difference(const Matrix<T>& c, const Matrix<T>& ref, Show show) {
  if (c.rows != ref.rows || c.cols != ref.cols)
    return "the device returned a " + dims(c.rows, c.cols) + " result for a " + dims(ref.rows, ref.cols) +
           " product";
  size_t wrong = 0, first = SIZE_MAX;
  for (size_t i = 0; i < ref.data.size(); ++i)
    if (c.data[i] != ref.data[i]) {
      ++wrong;
      if (first == SIZE_MAX) first = i;
    }
  if (wrong == 0) return "";
  const int i = int(first / size_t(ref.cols)), j = int(first % size_t(ref.cols));
  return "C[" + std::to_string(i) + "][" + std::to_string(j) + "] is " + show(c.at(i, j)) +
         " but the CPU reference gives " + show(ref.at(i, j)) + " (" + std::to_string(wrong) + " of " +
         std::to_string(ref.data.size()) + " elements differ)";
}

// A bf16 matrix of values from a normal distribution, rounded to bf16.
MatrixBf16 random_bf16_matrix(std::mt19937_64& rng, int rows, int cols) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  MatrixBf16 m(rows, cols);
  for (bf16& v : m.data) v = float_to_bf16(dist(rng));
  return m;
}

GemmRun run_random_gemm(const Global& g, Device& dev, const GemmArgs& args) {
  std::mt19937_64 rng(g.seed);
  const bool bf16 = args.dtype == "bf16";
  if (bf16 && !dev.info().bf16)
    throw Error("bench --dtype bf16: the device has no bf16 datapath (its MXU is int8 only); use a "
                "configuration with one, such as tiny_bf16 or default_bf16");
  GemmRun r;
  // The fixed cost of a command alone and of one queued behind another,
  // once, outside the GEMM's statistics.
  r.command_cycles = command_latency(dev);
  r.queued_cycles = queued_command_latency(dev);
  const auto t0 = std::chrono::steady_clock::now();
  if (bf16) {
    const MatrixBf16 a = random_bf16_matrix(rng, args.m, args.k), b = random_bf16_matrix(rng, args.k, args.n);
    const MatrixF32 c = matmul_bf16(dev, a, b, &r.stats);
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // Bits, so that NaNs compare and -0 differs from +0.
    Matrix<uint32_t> got(c.rows, c.cols);
    for (size_t i = 0; i < c.data.size(); ++i) got.data[i] = float_bits(c.data[i]);
    r.mismatch = first_difference(got, tpu::ref::matmul_bf16(a, b, dev.info().n), [](uint32_t x) {
      char text[48];
      std::snprintf(text, sizeof text, "%g (0x%08x)", double(bits_float(x)), x);
      return std::string(text);
    });
  } else {
    const MatrixI8 a = random_matrix(rng, args.m, args.k), b = random_matrix(rng, args.k, args.n);
    const MatrixI32 c = checked_matmul(dev, a, b, &r.stats);
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.mismatch = first_difference(c, tpu::ref::matmul_i8(a, b), [](int32_t x) { return std::to_string(x); });
  }
  r.roof = roofline(r.stats, dev.info().config, r.command_cycles, r.queued_cycles);
  r.exact = r.mismatch.empty();
  return r;
}

std::string gemm_shape(const GemmArgs& a) {
  return std::to_string(a.m) + "x" + std::to_string(a.k) + "x" + std::to_string(a.n);
}

json shape_json(int m, int k, int n) { return {{"m", m}, {"k", k}, {"n", n}}; }

json roofline_json(const GemmRun& r) {
  if (!r.roof) return nullptr;
  const Roofline& rf = *r.roof;
  return {{"mxu_cycles", rf.mxu_cycles},
          {"read_cycles", rf.read_cycles},
          {"write_cycles", rf.write_cycles},
          {"fixed_cycles", rf.fixed_cycles},
          {"command_cycles", r.command_cycles},
          {"queued_command_cycles", r.queued_cycles},
          {"bound_cycles", rf.bound()},
          {"limit", rf.limit()},
          {"fraction", rf.fraction(r.stats.cycles)}};
}

// The lines bench and perf share: each is "  LABEL VALUE  note", the value
// right-aligned in `width` characters (left-aligned in -width when negative).
void line(int width, const char* label, const std::string& value, const std::string& note) {
  if (note.empty() && width < 0) width = 0;  // no trailing blanks
  std::printf("  %-18s %*s%s%s\n", label, width, value.c_str(), note.empty() ? "" : "  ", note.c_str());
}

// The two utilizations.
void print_utilizations(const OpStats& s, int width) {
  line(width, "utilization", percent(s.utilization()),
       "M*K*N MACs over cycles x " + std::to_string(s.n) + " x " + std::to_string(s.n));
  line(width, "array utilization", percent(s.array_utilization()),
       "padding of partial tiles counted (useful_macs)");
}

// The roofline: the bound, its terms, the fraction achieved.
void print_roofline(const Device& dev, const GemmRun& r, int width) {
  if (!r.roof) {
    line(width, "roofline bound", "-", "the device matches no named configuration: its link is unknown");
    return;
  }
  const Roofline& rf = *r.roof;
  const std::string bw = std::to_string(find_config(dev.info().config)->link_bytes_per_cycle);
  const auto cycles = [](uint64_t v) { return std::to_string(v); };
  line(width, "roofline bound", cycles(rf.bound()),
       std::string("cycles, limit: ") + rf.limit() + " (the largest of the three terms below, plus fixed)");
  line(width, "  MXU", cycles(rf.mxu_cycles),
       std::to_string(r.stats.array_cycles) + " array rows at one a cycle");
  line(width, "  link read", cycles(rf.read_cycles),
       std::to_string(r.stats.read_bytes) + " bytes of packed A and B at " + bw + " bytes/cycle");
  line(width, "  link write", cycles(rf.write_cycles),
       std::to_string(r.stats.write_bytes) + " bytes of packed C at " + bw + " bytes/cycle");
  std::string fixed = "1 command x " + count(r.command_cycles, "cycle");
  if (r.stats.commands > 1)
    fixed += " + " + std::to_string(r.stats.commands - 1) + " queued x " + count(r.queued_cycles, "cycle");
  line(width, "  fixed", cycles(rf.fixed_cycles), fixed + " (measured)");
  line(width, "achieved", percent(rf.fraction(r.stats.cycles)), "of the roofline bound (bound / cycles)");
}

json gemm_json(const Global& g, const Device& dev, const GemmArgs& args, const GemmRun& r) {
  json j = stats_json(g, dev, r.stats);
  j["roofline"] = roofline_json(r);
  j["shape"] = shape_json(args.m, args.k, args.n);
  j["dtype"] = args.dtype;
  j["seed"] = g.seed;
  j["wall_seconds"] = r.wall_seconds;
  j["sim_cycles_per_second"] = r.wall_seconds > 0 ? double(r.stats.cycles) / r.wall_seconds : 0.0;
  j["exact"] = r.exact;
  return j;
}

}  // namespace

// ---- info ----------------------------------------------------------------------------

int cmd_info(const Global& g) {
  Device dev = g.open();
  const DeviceInfo& i = dev.info();
  const std::string tag = id_text(i.id);
  std::string types;
  if (i.int8) types += "int8";
  if (i.bf16) types += std::string(types.empty() ? "" : ", ") + "bf16";
  if (types.empty()) types = "none";
  Transport& t = dev.transport();
  std::printf("device              %s\n", i.name.c_str());
  std::printf("configuration       %s\n", i.config.empty() ? "custom (matches no named configuration)"
                                                          : i.config.c_str());
  std::printf("id                  %s%s\n", hex(i.id).c_str(),
              tag.empty() ? "" : (" (" + tag + ")").c_str());
  std::printf("version             %d.%d.%d\n", i.version_major, i.version_minor, i.version_patch);
  std::printf("array               %dx%d\n", i.n, i.n);
  std::printf("datatypes           %s\n", types.c_str());
  std::printf("unified buffer      %d rows\n", i.ub_rows);
  std::printf("accumulators        %d rows\n", i.acc_rows);
  std::printf("instruction memory  %d instructions\n", i.imem_depth);
  std::printf("weight FIFO         %d tiles\n", i.wgt_fifo_tiles);
  std::printf("DMA tags            %d\n", i.dma_tags);
  std::printf("raw host memory     0x0 .. %s (tpu run --load/--dump)\n", hex(t.dma_base()).c_str());
  // Over the serial link: what each end of the line has seen (docs/link.md).
  if (const auto h = uart_counters(t)) {
    std::printf("link, host side     %llu bytes sent, %llu received; %llu frames sent, %llu retransmitted; "
                "%llu CRC errors, %llu bad frames, %llu duplicates\n",
                (unsigned long long)h->bytes_sent, (unsigned long long)h->bytes_received,
                (unsigned long long)h->frames_sent, (unsigned long long)h->retransmits,
                (unsigned long long)h->crc_errors, (unsigned long long)h->bad_frames,
                (unsigned long long)h->duplicates);
    if (const auto d = uart_device_counters(t))
      std::printf("link, device side   %u retransmitted; %u CRC errors, %u bad frames, %u duplicates, "
                  "%u dropped for room, %u bad messages\n",
                  d->retransmits, d->crc_errors, d->bad_frames, d->duplicates, d->no_room, d->bad_messages);
  }
  return 0;
}

// ---- matmul --------------------------------------------------------------------------

namespace {

// An operand of --dtype bf16: float32 values rounded to bf16 (nearest even;
// subnormals become zeros of their sign, as the MXU reads them; NaN stays
// NaN), or with raw uint16 bf16 bits as they are.
MatrixBf16 to_matrix_bf16(const npy::Array& a, const std::string& path) {
  if (a.shape.size() != 2) throw Error(path + ": expected a 2-d array, not " + std::to_string(a.shape.size()) + "-d");
  if (a.shape[0] > INT_MAX || a.shape[1] > INT_MAX)
    throw Error(path + ": " + std::to_string(a.shape[0]) + "x" + std::to_string(a.shape[1]) + " is too large");
  MatrixBf16 m(int(a.shape[0]), int(a.shape[1]));
  if (a.dtype == npy::Dtype::kUint16) {
    const std::vector<uint16_t> v = npy::values<uint16_t>(a);
    std::copy(v.begin(), v.end(), m.data.begin());
  } else {
    const std::vector<float> v = npy::values<float>(a);
    for (size_t i = 0; i < v.size(); ++i) m.data[i] = float_to_bf16(v[i]);
  }
  return m;
}

// Both operands of --dtype bf16, their dtypes checked together: float32 and
// float32, or with --raw-bf16 uint16 and uint16.
std::pair<MatrixBf16, MatrixBf16> load_bf16_operands(const MatmulArgs& args) {
  const npy::Array a = npy::load(args.a), b = npy::load(args.b);
  const std::string want = args.raw_bf16 ? "uint16 (bf16 bits, --raw-bf16)" : "float32 (rounded to bf16)";
  for (const auto& [arr, path] : {std::pair{&a, &args.a}, std::pair{&b, &args.b}}) {
    const bool f32 = arr->dtype == npy::Dtype::kFloat32, u16 = arr->dtype == npy::Dtype::kUint16;
    if (!f32 && !u16)
      throw Error(*path + ": dtype " + npy::dtype_name(arr->dtype) + " is not a bf16 operand; --dtype bf16 takes " +
                  want + (args.raw_bf16 ? "" : ", or uint16 bf16 bits with --raw-bf16"));
  }
  if (a.dtype != b.dtype)
    throw Error("A and B differ in dtype: " + args.a + " is " + npy::dtype_name(a.dtype) + " but " + args.b +
                " is " + npy::dtype_name(b.dtype) + "; give both as " + want);
  if (args.raw_bf16 && a.dtype != npy::Dtype::kUint16)
    throw Error(args.a + ": dtype float32 with --raw-bf16, which takes uint16 bf16 bits; drop --raw-bf16 to "
                "round float32 to bf16");
  if (!args.raw_bf16 && a.dtype != npy::Dtype::kFloat32)
    throw Error(args.a + ": dtype uint16 is taken only as bf16 bits, with --raw-bf16; or give float32");
  return {to_matrix_bf16(a, args.a), to_matrix_bf16(b, args.b)};
}

int cmd_matmul_bf16(const Global& g, const MatmulArgs& args) {
  Outputs out;
  out.add("--out", args.out);
  out.add("--stats-json", args.stats_json);
  const auto [a, b] = load_bf16_operands(args);
  if (a.cols != b.rows)
    throw Error("inner dimensions differ: A is " + dims(a.rows, a.cols) + " but B is " + dims(b.rows, b.cols) +
                " (A's columns must equal B's rows)");
  checked_bytes("the result C", {a.rows, b.cols}, 4, "float32");
  Device dev = g.open();
  OpStats stats;
  MatrixF32 c(a.rows, b.cols, 0.0f);  // K = 0: every sum is +0
  if (a.rows == 0 || a.cols == 0 || b.cols == 0) {
    if (!dev.info().bf16)  // the same answer as with work to do
      throw Error("matmul_bf16: the device has no bf16 datapath (its MXU is int8 only); bf16 GEMMs need a "
                  "configuration with one, such as tiny_bf16 or default_bf16");
    stats.n = dev.info().n;
  } else {
    c = matmul_bf16(dev, a, b, &stats);
  }

  out.stage(args.out, npy_bytes(npy::make(npy::Dtype::kFloat32, {c.rows, c.cols}, c.data.data())));
  if (!args.stats_json.empty()) {
    json j = stats_json(g, dev, stats);
    j["shape"] = shape_json(a.rows, a.cols, b.cols);
    j["dtype"] = "bf16";
    out.stage_json(args.stats_json, j);
  }
  out.commit();
  std::printf("matmul %s x %s -> %s float32 (bf16 operands, fp32 sums): %llu cycles, %s, utilization %s "
              "(array %s); wrote %s\n",
              dims(a.rows, a.cols).c_str(), dims(b.rows, b.cols).c_str(), dims(c.rows, c.cols).c_str(),
              static_cast<unsigned long long>(stats.cycles), count(stats.commands, "command").c_str(),
              percent(stats.utilization()).c_str(), percent(stats.array_utilization()).c_str(),
              printable(args.out).c_str());
  return 0;
}

}  // namespace

int cmd_matmul(const Global& g, const MatmulArgs& args) {
  if (args.dtype == "bf16") return cmd_matmul_bf16(g, args);
  if (args.raw_bf16) throw UsageError("--raw-bf16 needs --dtype bf16");
  Outputs out;
  out.add("--out", args.out);
  out.add("--stats-json", args.stats_json);
  const MatrixI8 a = to_matrix_i8(npy::load_matrix(args.a, npy::Dtype::kInt8), args.a);
  const MatrixI8 b = to_matrix_i8(npy::load_matrix(args.b, npy::Dtype::kInt8), args.b);
  check_inner(a, b);  // before the device is opened
  checked_bytes("the result C", {a.rows, b.cols}, 4, "int32");
  Device dev = g.open();
  OpStats stats;
  const MatrixI32 c = checked_matmul(dev, a, b, &stats);

  // Outputs only after the whole computation succeeded, all together.
  out.stage(args.out, npy_bytes(to_npy(c)));
  if (!args.stats_json.empty()) {
    json j = stats_json(g, dev, stats);
    j["shape"] = shape_json(a.rows, a.cols, b.cols);
    out.stage_json(args.stats_json, j);
  }
  out.commit();
  std::printf("matmul %s x %s -> %s int32: %llu cycles, %s, utilization %s (array %s); wrote %s\n",
              dims(a.rows, a.cols).c_str(), dims(b.rows, b.cols).c_str(),
              dims(c.rows, c.cols).c_str(), static_cast<unsigned long long>(stats.cycles),
              count(stats.commands, "command").c_str(), percent(stats.utilization()).c_str(),
              percent(stats.array_utilization()).c_str(), printable(args.out).c_str());
  return 0;
}

// ---- bench and perf ------------------------------------------------------------------

namespace {

// bench --stream: args.stream independent products of one shape, as one
// stream of commands with up to args.depth in flight (matmul_batch).
int bench_stream(const Global& g, const GemmArgs& args) {
  Outputs out;
  out.add("--json", args.json);
  Device dev = g.open();
  std::mt19937_64 rng(g.seed);
  std::vector<MatrixI8> a, b;
  for (int i = 0; i < args.stream; ++i) {
    a.push_back(random_matrix(rng, args.m, args.k));
    b.push_back(random_matrix(rng, args.k, args.n));
  }
  const size_t depth = args.depth ? std::min(size_t(args.depth), dev.max_in_flight()) : dev.max_in_flight();
  const uint64_t command_cycles = command_latency(dev);
  OpStats stats;
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<MatrixI32> c = matmul_batch(dev, a, b, &stats, depth);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string mismatch;
  for (int i = 0; i < args.stream && mismatch.empty(); ++i) {
    const std::string diff = first_difference(c[size_t(i)], tpu::ref::matmul_i8(a[size_t(i)], b[size_t(i)]),
                                              [](int32_t x) { return std::to_string(x); });
    if (!diff.empty()) mismatch = "product " + std::to_string(i) + ": " + diff;
  }
  const double per_product = double(stats.cycles) / args.stream;
  const double speed = wall > 0 ? double(stats.cycles) / wall : 0.0;
  std::printf("bench --stream %d x %s (MxKxN), %zu in flight, on %s, seed %llu\n", args.stream,
              gemm_shape(args).c_str(), depth, dev.info().name.c_str(),
              static_cast<unsigned long long>(g.seed));
  char buf[96];
  constexpr int kWidth = -9;
  line(kWidth, "cycles", std::to_string(stats.cycles), "first submission to last completion");
  std::snprintf(buf, sizeof buf, "%.1f", per_product);
  // matmul_batch fuses small products: several a command.
  char fused[64];
  std::snprintf(fused, sizeof fused, "%.1f products a command", double(args.stream) / double(stats.commands));
  line(kWidth, "per product", buf,
       stats.commands >= uint64_t(args.stream) ? count(stats.commands / uint64_t(args.stream), "command") + " each"
                                               : std::string(fused));
  line(kWidth, "utilization", percent(stats.utilization()),
       "M*K*N MACs of all products over cycles x " + std::to_string(stats.n) + " x " + std::to_string(stats.n));
  line(kWidth, "MXU bound", std::to_string(stats.array_cycles), "array rows at one a cycle");
  line(kWidth, "command", std::to_string(command_cycles), "cycles of one HALT-only command, alone");
  line(0, "commands", std::to_string(stats.commands) + " (" + count(stats.instructions, "instruction") + ")", "");
  line(0, "exact", mismatch.empty() ? "yes (every product matches the CPU reference)" : "NO", "");
  std::snprintf(buf, sizeof buf, "%.0f device cycles/s (%.3f s wall)", speed, wall);
  line(0, "simulator", buf, "");
  if (!args.json.empty()) {
    json j = stats_json(g, dev, stats);
    j["shape"] = shape_json(args.m, args.k, args.n);
    j["stream"] = {{"products", args.stream}, {"depth", depth}, {"cycles_per_product", per_product},
                   {"command_cycles", command_cycles}};
    j["seed"] = g.seed;
    j["wall_seconds"] = wall;
    j["sim_cycles_per_second"] = speed;
    j["exact"] = mismatch.empty();
    out.stage_json(args.json, j);
    out.commit();
  }
  if (!mismatch.empty()) throw Error("bench --stream " + gemm_shape(args) + ": wrong result: " + mismatch);
  return 0;
}

}  // namespace

int cmd_bench(const Global& g, const GemmArgs& args) {
  if (args.stream > 0) return bench_stream(g, args);
  Outputs out;
  out.add("--json", args.json);
  Device dev = g.open();
  const GemmRun r = run_random_gemm(g, dev, args);
  const double speed = r.wall_seconds > 0 ? double(r.stats.cycles) / r.wall_seconds : 0.0;
  std::printf("bench %s (MxKxN)%s on %s, seed %llu\n", gemm_shape(args).c_str(),
              args.dtype == "bf16" ? " bf16" : "", dev.info().name.c_str(), static_cast<unsigned long long>(g.seed));
  char sim[96];
  std::snprintf(sim, sizeof sim, "%.0f device cycles/s (%.3f s wall)", speed, r.wall_seconds);
  constexpr int kWidth = -9;  // left-aligned, the notes in one column
  line(kWidth, "cycles", std::to_string(r.stats.cycles), "");
  print_utilizations(r.stats, kWidth);
  print_roofline(dev, r, kWidth);
  line(0, "commands", std::to_string(r.stats.commands) + " (" + count(r.stats.instructions, "instruction") + ")",
       "");
  line(0, "exact", r.exact ? "yes (matches the CPU reference)" : "NO", "");
  line(0, "simulator", sim, "");
  // The JSON is written either way: "exact": false is part of its story.
  if (!args.json.empty()) {
    out.stage_json(args.json, gemm_json(g, dev, args, r));
    out.commit();
  }
  if (!r.exact) throw Error("bench " + gemm_shape(args) + ": wrong result: " + r.mismatch);
  return 0;
}

int cmd_perf(const Global& g, const GemmArgs& args) {
  Outputs out;
  out.add("--json", args.json);
  Device dev = g.open();
  const GemmRun r = run_random_gemm(g, dev, args);
  const PerfCounters& c = r.stats.counters;
  std::printf("perf %s (MxKxN) on %s: %llu device cycles, %s, %s\n", gemm_shape(args).c_str(),
              dev.info().name.c_str(), static_cast<unsigned long long>(r.stats.cycles),
              count(r.stats.commands, "command").c_str(),
              count(r.stats.instructions, "instruction").c_str());
  std::printf("  %-18s %14s  %s\n", "counter", "value", "share of core cycles");
  const std::pair<const char*, uint64_t> rows[] = {
      {"cycles", c.cycles},       {"mxu_busy", c.mxu_busy},   {"wgt_stall", c.wgt_stall},
      {"wgt_shift", c.wgt_shift}, {"dep_stall", c.dep_stall}, {"mem_stall", c.mem_stall}};
  for (const auto& [name, value] : rows) {
    std::printf("  %-18s %14llu  %s\n", name, static_cast<unsigned long long>(value),
                c.cycles ? percent(double(value) / double(c.cycles)).c_str() : "-");
  }
  std::printf("  %-18s %14llu  (%llu needed by the math)\n", "useful MACs",
              static_cast<unsigned long long>(c.useful_macs),
              static_cast<unsigned long long>(r.stats.macs));
  print_utilizations(r.stats, 14);
  print_roofline(dev, r, 14);
  if (!args.json.empty()) {
    out.stage_json(args.json, gemm_json(g, dev, args, r));
    out.commit();
  }
  if (!r.exact) throw Error("perf " + gemm_shape(args) + ": wrong result: " + r.mismatch);
  return 0;
}

// ---- mlp -----------------------------------------------------------------------------

int cmd_mlp(const Global& g, const MlpArgs& args) {
  Outputs out;
  out.add("--out", args.out);
  out.add("--stats-json", args.stats_json);
  std::vector<LayerSource> sources = load_model(args.model);
  const MatrixI8 x = to_matrix_i8(npy::load_matrix(args.x, npy::Dtype::kInt8), args.x);
  const LayerSource& first = sources.front();
  if (x.cols != first.layer.w.rows) {
    throw Error(args.x + " is " + dims(x.rows, x.cols) + " (samples x inputs) but the model takes " +
                std::to_string(first.layer.w.rows) + " inputs (layer 0's " + first.w_path + " is " +
                dims(first.layer.w.rows, first.layer.w.cols) + ")");
  }
  std::vector<DenseLayer> layers;
  for (LayerSource& s : sources) layers.push_back(std::move(s.layer));
  const Mlp mlp(std::move(layers));

  Device dev = g.open();
  MlpOptions options;
  options.chain = args.per_layer ? MlpOptions::Chain::kNever : MlpOptions::Chain::kAuto;
  options.step = args.step;
  // The plan of a full run: chained (how many steps, commands) or layer by
  // layer (why).
  const MlpPlan plan = x.rows > 0 ? mlp.plan(dev.info(), std::min(args.batch, x.rows), options) : MlpPlan{};
  if (x.rows == 0) {
    // nothing to run
  } else if (plan.chained) {
    std::string loop;
    if (plan.loop_iterations > 0) loop = " in a device loop of " + std::to_string(plan.loop_iterations) + " x 2";
    std::printf("mlp: layers chained on the device, %d command%s per run: %d step%s of %d samples%s\n",
                plan.commands, plan.commands == 1 ? "" : "s", plan.steps, plan.steps == 1 ? "" : "s", plan.step,
                loop.c_str());
  } else {
    std::printf("mlp: layer by layer: %s\n", plan.reason.c_str());
  }
  MatrixI8 logits(x.rows, mlp.outputs());
  OpStats total;
  total.n = dev.info().n;
  for (int row = 0; row < x.rows; row += args.batch) {
    const int rows = std::min(args.batch, x.rows - row);
    MatrixI8 chunk(rows, x.cols);
    std::copy_n(x.data.begin() + std::ptrdiff_t(size_t(row) * size_t(x.cols)), chunk.data.size(),
                chunk.data.begin());
    OpStats s;
    const MatrixI8 y = mlp.run(dev, chunk, &s, options);
    if (y.rows != rows || y.cols != logits.cols) {
      throw Error("mlp: the driver returned a " + dims(y.rows, y.cols) + " result for " +
                  std::to_string(rows) + " samples; expected " + dims(rows, logits.cols));
    }
    std::copy(y.data.begin(), y.data.end(),
              logits.data.begin() + std::ptrdiff_t(size_t(row) * size_t(logits.cols)));
    total += s;
    std::printf("mlp: %d/%d samples, %llu cycles\n", row + rows, x.rows,
                static_cast<unsigned long long>(total.cycles));
    std::fflush(stdout);
  }

  out.stage(args.out, npy_bytes(to_npy(logits)));
  if (!args.stats_json.empty()) {
    json j = stats_json(g, dev, total);
    j["samples"] = x.rows;
    j["batch"] = args.batch;
    j["plan"] = {{"chained", plan.chained},
                 {"reason", plan.reason},
                 {"step", plan.step},
                 {"steps", plan.steps},
                 {"loop_iterations", plan.loop_iterations},
                 {"commands_per_run", plan.commands},
                 {"ub_rows", plan.ub_rows},
                 {"chained_estimate", plan.chained_estimate},
                 {"per_layer_estimate", plan.per_layer_estimate}};
    json shapes = json::array();
    for (const DenseLayer& l : mlp.layers()) shapes.push_back({{"in", l.w.rows}, {"out", l.w.cols}});
    j["layers"] = shapes;
    out.stage_json(args.stats_json, j);
  }
  out.commit();
  std::printf("mlp: wrote %s (%s int8 logits)\n", printable(args.out).c_str(), dims(logits.rows, logits.cols).c_str());
  return 0;
}

}  // namespace tpu::cli
