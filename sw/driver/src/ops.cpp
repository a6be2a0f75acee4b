// SPDX-License-Identifier: Apache-2.0
#include "tpu/ops.h"

#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "tpu/host_size.h"
#include "tpu/plan/batch.h"
#include "tpu/plan/gemm.h"
#include "tpu/plan/mlp.h"
#include "tpu/plan/pack.h"
#include "tpu/ref_matmul.h"

namespace tpu {
namespace {

std::string shape(int rows, int cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

CoreConfig core_config(const DeviceInfo& info) {
  CoreConfig c;
  c.n = info.n;
  c.ub_rows = info.ub_rows;
  c.acc_rows = info.acc_rows;
  c.imem_depth = info.imem_depth;
  c.wgt_fifo_tiles = info.wgt_fifo_tiles;
  c.datapath = info.bf16 ? (info.int8 ? Datapath::kBoth : Datapath::kBf16) : Datapath::kInt8;
  return c;
}

void check_quant(const char* op, const QuantParams& q) {
  const auto bad = [&](const std::string& what) {
    throw Error(std::string(op) + ": " + what);
  };
  if (q.shift < 0 || q.shift > 31) bad("the requantization shift must be 0..31, not " + std::to_string(q.shift));
  if (q.qmin < -128 || q.qmax > 127 || q.qmin > q.qmax)
    bad("the output clamp must satisfy -128 <= qmin <= qmax <= 127 (got " + std::to_string(q.qmin) +
        ".." + std::to_string(q.qmax) + ")");
  if (q.relu6_max < -128 || q.relu6_max > 127) bad("relu6_max must be -128..127");
}

// One GEMM made ready to run: its plan, its buffers (A and B packed and
// written, C allocated) and its programs, each granted exactly the three
// buffers.
struct PreparedGemm {
  plan::GemmPlan plan;
  std::vector<std::vector<isa::Instr>> programs;
  Buffer abuf, bbuf, cbuf;
  std::array<Window, 3> windows;
  OpStats stats;  // everything but cycles and counters
};

// The packed images of A and B into their buffers.
void write_images(PreparedGemm& g, const MatrixI8& a, const MatrixI8& b) {
  const auto as_bytes = [](const std::vector<int8_t>& v) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size());
  };
  g.abuf.write(as_bytes(plan::pack_a(g.plan, a)));
  g.bbuf.write(as_bytes(plan::pack_w(g.plan, b)));
}
void write_images(PreparedGemm& g, const MatrixBf16& a, const MatrixBf16& b) {
  g.abuf.write(plan::pack_a_bf16(g.plan, a));
  g.bbuf.write(plan::pack_w_bf16(g.plan, b));
}

// Throws tpu::Error when A and B cannot be multiplied on the device.
// M: MatrixI8 (int8 outputs) or MatrixBf16 (bf16 outputs, epi.output kF32 or kBf16).
template <class M>
void check_operands(const CoreConfig& core, const char* op, const M& a, const M& b, const plan::GemmEpilogue& epi) {
  if (a.rows < 1 || a.cols < 1 || b.rows < 1 || b.cols < 1)
    throw Error(std::string(op) + ": empty matrix (A is " + shape(a.rows, a.cols) + ", B is " +
                shape(b.rows, b.cols) + ")");
  if (a.cols != b.rows)
    throw Error(std::string(op) + ": inner dimensions differ: A is " + shape(a.rows, a.cols) +
                " but B is " + shape(b.rows, b.cols) + " (A's columns must equal B's rows)");
  if (plan::gemm_bf16(epi.output) && !has_bf16(core.datapath))
    throw Error(std::string(op) + ": the device has no bf16 datapath (its MXU is int8 only); bf16 GEMMs need a "
                "configuration with one, such as tiny_bf16 or default_bf16");
  if (!plan::gemm_bf16(epi.output) && !has_int8(core.datapath))
    throw Error(std::string(op) + ": the device has no int8 datapath (its MXU is bf16 only)");
  // The result is allocated on the host; its size is A's rows times B's
  // columns, which two small files can make larger than any memory.
  static constexpr struct {
    uint64_t bytes;
    const char* type;
  } kOut[] = {{4, "int32"}, {1, "int8"}, {4, "float32"}, {2, "bf16"}};
  const auto& out = kOut[int(epi.output)];
  checked_bytes(std::string(op) + ": the result", {a.rows, b.cols}, out.bytes, out.type);
}

// The GEMM's stats but cycles and counters.
OpStats gemm_stats(const DeviceInfo& info, const plan::GemmPlan& plan) {
  OpStats s;
  s.n = info.n;
  s.macs = uint64_t(plan.shape.m) * uint64_t(plan.shape.k) * uint64_t(plan.shape.n_out);
  s.read_bytes = plan.a_bytes() + plan.w_bytes();
  s.write_bytes = plan.c_bytes();
  s.array_cycles = uint64_t(plan.dm) * uint64_t(plan.k_blocks) * uint64_t(plan.col_tiles);
  return s;
}

// The GEMM with a plan made ready to run.
template <class M>
PreparedGemm prepare_planned(Device& dev, const char* op, const M& a, const M& b, const plan::GemmEpilogue& epi,
                             const plan::GemmPlan& plan) {
  const CoreConfig core = core_config(dev.info());
  PreparedGemm g;
  g.plan = plan;
  try {
    g.abuf = dev.alloc(g.plan.a_bytes());
    g.bbuf = dev.alloc(g.plan.w_bytes());
    g.cbuf = dev.alloc(g.plan.c_bytes());
    g.programs = plan::gemm_programs(g.plan, epi, g.abuf.addr(), g.bbuf.addr(), g.cbuf.addr(), core);
  } catch (const std::invalid_argument& e) {
    throw Error(std::string(op) + ": " + e.what());
  }
  write_images(g, a, b);
  // The programs read A and B and only write C (tpu/plan/gemm.h): each may
  // touch these three buffers and nothing else.
  g.windows = {g.abuf.read_only(), g.bbuf.read_only(), g.cbuf.write_only()};

  g.stats = gemm_stats(dev.info(), g.plan);
  g.stats.commands = g.programs.size();
  for (const auto& program : g.programs) g.stats.instructions += program.size();
  return g;
}

template <class M>
PreparedGemm prepare_gemm(Device& dev, const char* op, const M& a, const M& b, const plan::GemmEpilogue& epi) {
  const CoreConfig core = core_config(dev.info());
  check_operands(core, op, a, b, epi);
  plan::GemmPlan plan;
  try {
    // A bias or a scale per output column rules out the transposed form
    // (C^T = W^T x A^T).
    const plan::GemmOptions opt{.bias = !epi.bias.empty() || !epi.scales.empty() || !epi.bias_f32.empty()};
    plan = plan::plan_gemm({a.rows, a.cols, b.cols}, epi.output, core, opt);
  } catch (const std::invalid_argument& e) {
    throw Error(std::string(op) + ": " + e.what());
  }
  return prepare_planned(dev, op, a, b, epi, plan);
}

// Commands queued on the device, at most `limit` at once, completed in the
// order they were submitted; each completion goes to on_complete with the tag
// it was submitted with. The first completion that is not OK is kept
// (failed()), and nothing is submitted after it.
class CommandQueue {
 public:
  using OnComplete = std::function<void(const Completion&, size_t tag)>;
  CommandQueue(Device& dev, size_t limit, OnComplete on_complete = {})
      : dev_(dev), limit_(limit), on_complete_(std::move(on_complete)) {}

  // Runs body, which submits, then completes every queued command. If
  // anything but a timeout or a protocol error (after which the device was
  // reset) is thrown, the queued commands still use their buffers: they are
  // let finish before the exception goes on.
  template <class Body>
  void run(Body&& body) {
    try {
      body();
      while (!queued_.empty()) complete_oldest();
    } catch (const TimeoutError&) {
      throw;
    } catch (const ProtocolError&) {
      throw;
    } catch (...) {
      try {
        while (!queued_.empty()) complete_oldest();
      } catch (const Error&) {
      }
      throw;
    }
  }

  // Waits for room, then submits; false (and nothing submitted) once a
  // command has failed.
  bool submit(const std::vector<isa::Instr>& program, std::span<const Window> windows, CounterMode counters,
              size_t tag = 0) {
    while (queued_.size() >= limit_) complete_oldest();
    if (failed_) return false;
    queued_.emplace_back(dev_.submit(program, windows, counters), tag);
    return true;
  }

  const std::optional<Completion>& failed() const { return failed_; }

 private:
  void complete_oldest() {
    const auto [cmd, tag] = queued_.front();
    queued_.pop_front();
    const Completion c = dev_.wait(cmd);
    if (!c.ok() && !failed_) failed_ = c;
    if (on_complete_) on_complete_(c, tag);
  }

  Device& dev_;
  size_t limit_;
  OnComplete on_complete_;
  std::deque<std::pair<Command, size_t>> queued_;  // a command and its tag
  std::optional<Completion> failed_;
};

// Runs a GEMM's programs in order: all queued at once (up to the ring's
// depth), so the device fetches each next one while the one before runs. The
// counters add up over them (CounterMode::kKeep after the first). A failed
// program is reported (DeviceError) once the ones queued behind it, which
// touch only the GEMM's buffers, have completed.
void run_programs(Device& dev, const PreparedGemm& g) {
  CommandQueue queue(dev, dev.max_in_flight());
  queue.run([&] {
    for (size_t i = 0; i < g.programs.size(); ++i)
      if (!queue.submit(g.programs[i], g.windows, i == 0 ? CounterMode::kRestart : CounterMode::kKeep)) break;
  });
  if (queue.failed()) dev.check(*queue.failed());
}

// Packs the operands into device buffers, runs the GEMM's programs and
// returns the packed result.
template <class M>
std::vector<uint8_t> run_gemm(Device& dev, const char* op, const M& a, const M& b, const plan::GemmEpilogue& epi,
                              plan::GemmPlan* plan_out, OpStats* stats) {
  PreparedGemm g = prepare_gemm(dev, op, a, b, epi);
  OpStats& s = g.stats;
  const uint64_t start = dev.cycles();
  run_programs(dev, g);
  // Up to the completion, as command_latency counts a command: the counters'
  // MMIO reads after it (14, about 42 cycles) are the host's, not the GEMM's.
  s.cycles = dev.cycles() - start;
  s.counters += dev.counters();
  if (stats) *stats += s;
  if (plan_out) *plan_out = g.plan;
  return g.cbuf.read(0, g.plan.c_bytes());
}

}  // namespace

double OpStats::utilization() const {
  if (cycles == 0 || n == 0) return 0.0;
  return double(macs) / (double(cycles) * n * n);
}

double OpStats::array_utilization() const {
  if (cycles == 0 || n == 0) return 0.0;
  return double(counters.useful_macs) / (double(cycles) * n * n);
}

OpStats& OpStats::operator+=(const OpStats& o) {
  cycles += o.cycles;
  commands += o.commands;
  instructions += o.instructions;
  macs += o.macs;
  read_bytes += o.read_bytes;
  write_bytes += o.write_bytes;
  array_cycles += o.array_cycles;
  if (n == 0) n = o.n;
  counters += o.counters;
  return *this;
}

MatrixI32 matmul(Device& dev, const MatrixI8& a, const MatrixI8& b, OpStats* stats) {
  plan::GemmPlan plan;
  const auto c = run_gemm(dev, "matmul", a, b, {}, &plan, stats);
  return plan::unpack_c_i32(plan, c);
}

MatrixF32 matmul_bf16(Device& dev, const MatrixBf16& a, const MatrixBf16& b, OpStats* stats) {
  plan::GemmPlan plan;
  plan::GemmEpilogue epi;
  epi.output = plan::GemmOutput::kF32;
  const auto c = run_gemm(dev, "matmul_bf16", a, b, epi, &plan, stats);
  const MatrixF32Bits bits = plan::unpack_c_f32(plan, c);
  MatrixF32 out(bits.rows, bits.cols);
  for (size_t i = 0; i < bits.data.size(); ++i) out.data[i] = bits_float(bits.data[i]);
  return out;
}

MatrixF32 dense_bf16(Device& dev, const MatrixBf16& x, const MatrixBf16& w, const std::vector<float>& bias,
                     Activation act, OpStats* stats) {
  if (act == Activation::kLut) throw Error("dense_bf16: the activation is none, relu or relu6, not the LUT");
  if (!bias.empty() && int(bias.size()) != w.cols)
    throw Error("dense_bf16: the bias has " + std::to_string(bias.size()) + " entries; W has " +
                std::to_string(w.cols) + " output columns");
  plan::GemmPlan plan;
  plan::GemmEpilogue epi;
  epi.output = plan::GemmOutput::kF32;
  epi.act = act;
  for (float b : bias) epi.bias_f32.push_back(float_bits(b));
  const auto c = run_gemm(dev, "dense_bf16", x, w, epi, &plan, stats);
  const MatrixF32Bits bits = plan::unpack_c_f32(plan, c);
  MatrixF32 out(bits.rows, bits.cols);
  for (size_t i = 0; i < bits.data.size(); ++i) out.data[i] = bits_float(bits.data[i]);
  return out;
}

MatrixBf16 matmul_bf16_to_bf16(Device& dev, const MatrixBf16& a, const MatrixBf16& b, OpStats* stats) {
  plan::GemmPlan plan;
  plan::GemmEpilogue epi;
  epi.output = plan::GemmOutput::kBf16;
  const auto c = run_gemm(dev, "matmul_bf16_to_bf16", a, b, epi, &plan, stats);
  return plan::unpack_c_bf16(plan, c);
}

namespace {

// Instructions a batch of matmul_batch may take, by gemm_batch_instructions:
// a few programs' worth, so that a batch's commands are mostly full
// programs while its buffers (freed once its results are read) stay small.
constexpr uint64_t kBatchPrograms = 4;

// Products of matmul_batch that run together: one product alone (its own
// plan's programs), or consecutive products fused into one instruction
// stream (tpu/plan/batch.h). The images of all products are in
// one buffer each for A, W and C, at 64-byte aligned offsets, so that every
// command grants the same three windows.
struct PreparedBatch {
  std::vector<plan::GemmPlan> plans;
  std::vector<uint64_t> c_offsets;  // each product's C image in cbuf
  std::vector<std::vector<isa::Instr>> programs;
  Buffer abuf, bbuf, cbuf;
  std::array<Window, 3> windows;
  OpStats stats;  // everything but cycles and counters
};

PreparedBatch alone(PreparedGemm g) {
  PreparedBatch b;
  b.plans = {g.plan};
  b.c_offsets = {0};
  b.programs = std::move(g.programs);
  b.abuf = std::move(g.abuf);
  b.bbuf = std::move(g.bbuf);
  b.cbuf = std::move(g.cbuf);
  b.windows = g.windows;
  b.stats = g.stats;
  return b;
}

// Products [first, first + plans.size()) fused.
PreparedBatch prepare_fused(Device& dev, std::span<const MatrixI8> a, std::span<const MatrixI8> b, size_t first,
                            std::vector<plan::GemmPlan> plans) {
  const auto aligned = [](uint64_t v) { return (v + 63) / 64 * 64; };
  PreparedBatch f;
  std::vector<plan::GemmBatchAddrs> addrs(plans.size());
  uint64_t a_bytes = 0, w_bytes = 0, c_bytes = 0;
  for (size_t i = 0; i < plans.size(); ++i) {
    addrs[i] = {a_bytes, w_bytes, c_bytes};
    f.c_offsets.push_back(c_bytes);
    a_bytes = aligned(a_bytes + plans[i].a_bytes());
    w_bytes = aligned(w_bytes + plans[i].w_bytes());
    c_bytes = aligned(c_bytes + plans[i].c_bytes());
  }
  // Each image into one host copy of its buffer: one write per buffer.
  std::vector<uint8_t> a_image(a_bytes), w_image(w_bytes);
  for (size_t i = 0; i < plans.size(); ++i) {
    const std::vector<int8_t> ai = plan::pack_a(plans[i], a[first + i]), wi = plan::pack_w(plans[i], b[first + i]);
    std::copy(ai.begin(), ai.end(), reinterpret_cast<int8_t*>(a_image.data()) + addrs[i].a);
    std::copy(wi.begin(), wi.end(), reinterpret_cast<int8_t*>(w_image.data()) + addrs[i].w);
  }
  f.abuf = dev.alloc(a_bytes);
  f.bbuf = dev.alloc(w_bytes);
  f.cbuf = dev.alloc(c_bytes);
  for (plan::GemmBatchAddrs& ad : addrs) ad.a += f.abuf.addr(), ad.w += f.bbuf.addr(), ad.c += f.cbuf.addr();
  try {
    f.programs = plan::gemm_batch_programs(plans, addrs, core_config(dev.info()));
  } catch (const std::invalid_argument& e) {
    throw Error(std::string("matmul_batch: ") + e.what());
  }
  f.abuf.write(a_image);
  f.bbuf.write(w_image);
  f.windows = {f.abuf.read_only(), f.bbuf.read_only(), f.cbuf.write_only()};
  f.stats.n = dev.info().n;
  for (const plan::GemmPlan& p : plans) f.stats += gemm_stats(dev.info(), p);
  f.stats.commands = f.programs.size();
  for (const auto& program : f.programs) f.stats.instructions += program.size();
  f.plans = std::move(plans);
  return f;
}

}  // namespace

std::vector<MatrixI32> matmul_batch(Device& dev, std::span<const MatrixI8> a, std::span<const MatrixI8> b,
                                    OpStats* stats, size_t depth) {
  if (a.size() != b.size())
    throw Error("matmul_batch: " + std::to_string(a.size()) + " left operands but " +
                std::to_string(b.size()) + " right operands; give one B per A");
  const size_t limit = depth == 0 ? dev.max_in_flight() : std::min(depth, dev.max_in_flight());
  const CoreConfig core = core_config(dev.info());
  std::vector<MatrixI32> out(a.size());
  // The batches being worked on, oldest first, each until its results are read.
  struct Job {
    size_t first;  // its products are [first, first + batch.plans.size())
    PreparedBatch batch;
    size_t done = 0;  // its commands completed
  };
  std::deque<Job> jobs;
  OpStats total;
  total.n = dev.info().n;

  // Each completion (tagged with its batch's first product): reads the
  // results of every batch whose commands have all completed, and frees its
  // buffers.
  uint64_t completed_at = 0;  // the device's cycles at the latest completion, before any counter reads
  CommandQueue queue(dev, limit, [&](const Completion& c, size_t first) {
    completed_at = dev.cycles();
    // The device's counters restart with each command and another one may
    // be running already: read them only when one command at a time runs.
    if (limit == 1) total.counters += dev.counters();
    else total.counters.cycles += c.cycles;
    for (Job& j : jobs)
      if (j.first == first) ++j.done;
    while (!jobs.empty() && jobs.front().done == jobs.front().batch.programs.size()) {
      const Job& j = jobs.front();
      if (!queue.failed()) {
        const std::vector<uint8_t> c_image = j.batch.cbuf.read(0, j.batch.cbuf.size());
        for (size_t i = 0; i < j.batch.plans.size(); ++i)
          out[j.first + i] = plan::unpack_c_i32(
              j.batch.plans[i], std::span(c_image).subspan(j.batch.c_offsets[i], j.batch.plans[i].c_bytes()));
      }
      jobs.pop_front();
    }
  });

  // Products of one shape share a plan.
  std::map<std::array<int, 3>, plan::GemmPlan> plans;
  const auto plan_of = [&](size_t i) -> const plan::GemmPlan& {
    check_operands(core, "matmul_batch", a[i], b[i], {});
    const std::array<int, 3> key{a[i].rows, a[i].cols, b[i].cols};
    auto it = plans.find(key);
    if (it == plans.end()) {
      try {
        it = plans.emplace(key, plan::plan_gemm_for_batch({key[0], key[1], key[2]}, core)).first;
      } catch (const std::invalid_argument& e) {
        throw Error(std::string("matmul_batch: ") + e.what());
      }
    }
    return it->second;
  };

  const uint64_t start = dev.cycles();
  queue.run([&] {
    const uint64_t budget = kBatchPrograms * uint64_t(core.imem_depth - 1);
    for (size_t i = 0; i < a.size() && !queue.failed();) {
      // Consecutive batchable products while they fit together and the budget.
      std::vector<plan::GemmPlan> fused;
      uint64_t instructions = 0;
      for (; i < a.size(); ++i) {
        const plan::GemmPlan& p = plan_of(i);
        instructions += plan::gemm_batch_instructions(p);
        fused.push_back(p);
        if (!plan::gemm_batch_fits(fused, core) || (fused.size() > 1 && instructions > budget)) {
          fused.pop_back();
          break;
        }
      }
      // None: product i cannot be fused and runs alone.
      const size_t first = fused.empty() ? i++ : i - fused.size();
      PreparedBatch prepared = fused.empty()
                                   ? alone(prepare_planned(dev, "matmul_batch", a[first], b[first], {}, plan_of(first)))
                                   : prepare_fused(dev, a, b, first, std::move(fused));
      jobs.push_back(Job{first, std::move(prepared)});
      const PreparedBatch& batch = jobs.back().batch;
      total += batch.stats;
      for (const auto& program : batch.programs)
        if (!queue.submit(program, batch.windows, CounterMode::kRestart, first)) break;
    }
  });
  // Up to the last completion (the last counter reads are the host's).
  total.cycles = std::max(completed_at, start) - start;
  if (queue.failed()) dev.check(*queue.failed());
  if (stats) *stats += total;
  return out;
}

namespace {

MatrixI8 dense_epilogue(Device& dev, const MatrixI8& x, const MatrixI8& w, const std::vector<int32_t>& bias,
                        const std::vector<LaneScale>& scales, const QuantParams& q, Activation act,
                        OpStats* stats) {
  if (scales.empty()) check_quant("dense", q);
  else check_quant("dense", QuantParams{.zero_point = q.zero_point, .qmin = q.qmin, .qmax = q.qmax,
                                        .relu6_max = q.relu6_max});
  if (act == Activation::kLut) throw Error("dense: the LUT activation is not supported by dense; use none, relu or relu6");
  if (!bias.empty() && int(bias.size()) != w.cols)
    throw Error("dense: the bias has " + std::to_string(bias.size()) + " entries; W has " +
                std::to_string(w.cols) + " output columns");
  plan::GemmEpilogue epi;
  epi.output = plan::GemmOutput::kInt8;
  epi.q = q;
  epi.act = act;
  epi.bias = bias;
  epi.scales = scales;
  if (!scales.empty()) epi.q.multiplier = 0x40000000, epi.q.shift = 0;  // replaced per lane
  plan::GemmPlan plan;
  const auto c = run_gemm(dev, "dense", x, w, epi, &plan, stats);
  return plan::unpack_c_i8(plan, c);
}

}  // namespace

MatrixI8 dense(Device& dev, const MatrixI8& x, const MatrixI8& w, const std::vector<int32_t>& bias,
               const QuantParams& q, Activation act, OpStats* stats) {
  return dense_epilogue(dev, x, w, bias, {}, q, act, stats);
}

MatrixI8 dense(Device& dev, const MatrixI8& x, const MatrixI8& w, const std::vector<int32_t>& bias,
               const std::vector<LaneScale>& scales, const QuantParams& q, Activation act, OpStats* stats) {
  if (scales.empty() || int(scales.size()) != w.cols)
    throw Error("dense: per-channel requantization needs one scale per output column (" +
                std::to_string(w.cols) + "), got " + std::to_string(scales.size()));
  for (const LaneScale& s : scales)
    if (s.exponent < quant::kMinExponent || s.exponent > quant::kMaxExponent)
      throw Error("dense: a per-channel shift must be " + std::to_string(quant::kMinExponent) + ".." +
                  std::to_string(quant::kMaxExponent) + ", not " + std::to_string(s.exponent));
  return dense_epilogue(dev, x, w, bias, scales, q, act, stats);
}

MatrixI8 im2col(const TensorI8& in, const Conv2dParams& p) {
  if (p.kh < 1 || p.kw < 1 || p.stride < 1 || p.pad < 0)
    throw Error("conv2d: kernel size and stride must be >= 1 and padding >= 0");
  const int oh = (in.h + 2 * p.pad - p.kh) / p.stride + 1, ow = (in.w + 2 * p.pad - p.kw) / p.stride + 1;
  if (in.n < 1 || in.c < 1 || oh < 1 || ow < 1)
    throw Error("conv2d: a " + std::to_string(p.kh) + "x" + std::to_string(p.kw) +
                " kernel does not fit an input of " + std::to_string(in.h) + "x" + std::to_string(in.w) +
                " with padding " + std::to_string(p.pad));
  MatrixI8 m(in.n * oh * ow, p.kh * p.kw * in.c, p.pad_value);
  for (int b = 0; b < in.n; ++b)
    for (int y = 0; y < oh; ++y)
      for (int x = 0; x < ow; ++x) {
        const int row = (b * oh + y) * ow + x;
        for (int ky = 0; ky < p.kh; ++ky)
          for (int kx = 0; kx < p.kw; ++kx) {
            const int iy = y * p.stride + ky - p.pad, ix = x * p.stride + kx - p.pad;
            if (iy < 0 || iy >= in.h || ix < 0 || ix >= in.w) continue;
            for (int c = 0; c < in.c; ++c) m.at(row, (ky * p.kw + kx) * in.c + c) = in.at(b, iy, ix, c);
          }
      }
  return m;
}

namespace {

TensorI8 conv2d_scaled(Device& dev, const TensorI8& input, const MatrixI8& weights,
                       const std::vector<int32_t>& bias, const Conv2dParams& p,
                       const std::vector<LaneScale>* scales, const QuantParams& q, Activation act,
                       OpStats* stats) {
  if (weights.rows != p.kh * p.kw * input.c)
    throw Error("conv2d: the weights have " + std::to_string(weights.rows) + " rows; a " +
                std::to_string(p.kh) + "x" + std::to_string(p.kw) + " kernel over " + std::to_string(input.c) +
                " channels needs " + std::to_string(p.kh * p.kw * input.c));
  const MatrixI8 patches = im2col(input, p);
  const MatrixI8 out = scales ? dense(dev, patches, weights, bias, *scales, q, act, stats)
                              : dense(dev, patches, weights, bias, q, act, stats);
  const int oh = (input.h + 2 * p.pad - p.kh) / p.stride + 1, ow = (input.w + 2 * p.pad - p.kw) / p.stride + 1;
  TensorI8 t(input.n, oh, ow, weights.cols);
  t.data = out.data;  // rows are (b, y, x), columns the output channels: NHWC
  return t;
}

}  // namespace

TensorI8 conv2d(Device& dev, const TensorI8& input, const MatrixI8& weights, const std::vector<int32_t>& bias,
                const Conv2dParams& p, const QuantParams& q, Activation act, OpStats* stats) {
  return conv2d_scaled(dev, input, weights, bias, p, nullptr, q, act, stats);
}

TensorI8 conv2d(Device& dev, const TensorI8& input, const MatrixI8& weights, const std::vector<int32_t>& bias,
                const Conv2dParams& p, const std::vector<LaneScale>& scales, const QuantParams& q,
                Activation act, OpStats* stats) {
  return conv2d_scaled(dev, input, weights, bias, p, &scales, q, act, stats);
}

Mlp::Mlp(std::vector<DenseLayer> layers) : layers_(std::move(layers)) {
  if (layers_.empty()) throw Error("mlp: a model needs at least one layer");
  for (size_t l = 0; l < layers_.size(); ++l) {
    const DenseLayer& d = layers_[l];
    const std::string name = "mlp: layer " + std::to_string(l);
    if (d.w.rows < 1 || d.w.cols < 1) throw Error(name + " has an empty weight matrix");
    if (!d.bias.empty() && int(d.bias.size()) != d.w.cols)
      throw Error(name + ": the bias has " + std::to_string(d.bias.size()) + " entries for " +
                  std::to_string(d.w.cols) + " outputs");
    if (l > 0 && layers_[l - 1].w.cols != d.w.rows)
      throw Error(name + " takes " + std::to_string(d.w.rows) + " inputs but layer " +
                  std::to_string(l - 1) + " gives " + std::to_string(layers_[l - 1].w.cols));
    check_quant(name.c_str(), d.q);
  }
}

int Mlp::inputs() const { return layers_.front().w.rows; }
int Mlp::outputs() const { return layers_.back().w.cols; }

namespace {

std::vector<plan::ChainLayer> chain_layers(const std::vector<DenseLayer>& layers) {
  std::vector<plan::ChainLayer> out;
  for (const DenseLayer& d : layers) out.push_back({d.w.rows, d.w.cols, d.q, d.act, d.bias});
  return out;
}

// The chained plan for `batch` samples, or one that does not fit (why_not).
plan::ChainPlan chain_plan(const std::vector<DenseLayer>& layers, const DeviceInfo& info, int batch,
                           const MlpOptions& options) {
  try {
    return plan::plan_chain(chain_layers(layers), batch, core_config(info),
                            {.step_rows = options.step, .loop = options.loop});
  } catch (const std::invalid_argument& e) {
    throw Error(e.what());
  }
}

// The rule of docs/driver.md, "Chained MLP"; *chain gets the chained plan
// when there is one.
MlpPlan plan_mlp(const std::vector<DenseLayer>& layers, const DeviceInfo& info, int batch, const MlpOptions& options,
                 plan::ChainPlan* chain) {
  MlpPlan p;
  if (batch < 1) throw Error("mlp: the batch must have at least one sample");
  if (options.step < 0) throw Error("mlp: the step must be 0 (the planner's choice) or a number of samples");
  if (options.chain == MlpOptions::Chain::kNever) {
    p.reason = "layer by layer on request";
    return p;
  }
  // A step given is the caller's schedule: it is not weighed against the
  // per-layer path.
  const bool weigh = options.chain == MlpOptions::Chain::kAuto && options.step == 0;
  // One layer has nothing to chain: dense() and its GEMM planner.
  if (weigh && layers.size() == 1) {
    p.reason = "one layer: a single dense";
    return p;
  }
  plan::ChainPlan c = chain_plan(layers, info, batch, options);
  if (!c.fits()) {
    if (options.chain == MlpOptions::Chain::kAlways) throw Error("mlp: the layers cannot be chained: " + c.why_not);
    p.reason = c.why_not;
    return p;
  }
  p.step = c.step_rows;
  p.steps = c.steps;
  p.loop_iterations = c.loop_iterations;
  p.commands = c.programs;
  p.instructions = c.instructions;
  p.ub_rows = c.ub_rows_used;
  p.chained_estimate = c.estimate;
  if (weigh) {
    p.per_layer_estimate = plan::estimate_per_layer(chain_layers(layers), batch, core_config(info));
    if (p.per_layer_estimate < p.chained_estimate) {
      p.reason = "layer by layer is estimated faster (" + std::to_string(p.per_layer_estimate) + " cycles against " +
                 std::to_string(p.chained_estimate) + " chained)";
      return p;
    }
  }
  p.chained = true;
  if (chain) *chain = std::move(c);
  return p;
}

}  // namespace

MlpPlan Mlp::plan(const DeviceInfo& info, int batch, const MlpOptions& options) const {
  return plan_mlp(layers_, info, batch, options, nullptr);
}

MatrixI8 Mlp::run(Device& dev, const MatrixI8& x, OpStats* stats, const MlpOptions& options) const {
  if (x.cols != inputs())
    throw Error("mlp: the input has " + std::to_string(x.cols) + " features; the model takes " +
                std::to_string(inputs()));
  plan::ChainPlan c;
  if (x.rows < 1 || !plan_mlp(layers_, dev.info(), x.rows, options, &c).chained) {
    MatrixI8 h = x;
    for (const DenseLayer& d : layers_) h = dense(dev, h, d.w, d.bias, d.q, d.act, stats);
    return h;
  }
  // Chained: the whole network in one command per program (docs/driver.md,
  // "Chained MLP"); the activations stay in the unified buffer.
  const std::vector<plan::ChainLayer> chain = chain_layers(layers_);
  const CoreConfig core = core_config(dev.info());
  std::vector<const MatrixI8*> weights;
  for (const DenseLayer& d : layers_) weights.push_back(&d.w);
  Buffer records = dev.alloc(c.records_bytes()), out = dev.alloc(c.out_bytes());
  const std::vector<int8_t> image = plan::pack_chain_records(c, x, weights);
  records.write(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(image.data()), image.size()));
  const auto programs = plan::chain_programs(c, chain, records.addr(), out.addr(), core);

  OpStats s;
  s.n = dev.info().n;
  for (size_t l = 0; l < layers_.size(); ++l) {
    s.macs += uint64_t(x.rows) * uint64_t(layers_[l].w.rows) * uint64_t(layers_[l].w.cols);
    s.array_cycles += uint64_t(x.rows) * uint64_t(c.kb[l]) * uint64_t(c.ct[l]);
  }
  // Every step's input rows and its weight tiles cross the link to the
  // device, its logits back.
  s.read_bytes = uint64_t(c.steps) * (c.step_in_bytes + c.w_bytes);
  s.write_bytes = uint64_t(c.steps) * c.step_out_bytes;
  // The programs read the records and only write the outputs.
  const Window windows[] = {records.read_only(), out.write_only()};
  // Up to the last program's completion (the counters' reads after it are
  // the host's; those between programs delay the next one and count).
  const uint64_t start = dev.cycles();
  uint64_t end = start;
  for (const auto& program : programs) {
    dev.run(program, windows);
    end = dev.cycles();
    s.counters += dev.counters();
    s.instructions += program.size();
    ++s.commands;
  }
  s.cycles = end - start;
  if (stats) *stats += s;
  return plan::unpack_chain_output(c, outputs(), out.read(0, c.out_bytes()));
}

MatrixI8 Mlp::run_reference(const MatrixI8& x) const {
  if (x.cols != inputs())
    throw Error("mlp: the input has " + std::to_string(x.cols) + " features; the model takes " +
                std::to_string(inputs()));
  static constexpr std::array<int8_t, 256> kNoLut{};
  MatrixI8 h = x;
  for (const DenseLayer& d : layers_) {
    const MatrixI32 acc = ref::matmul_i8(h, d.w);
    MatrixI8 next(acc.rows, acc.cols);
    for (int i = 0; i < acc.rows; ++i)
      for (int j = 0; j < acc.cols; ++j)
        next.at(i, j) = quant::act_lane(acc.at(i, j), d.bias.empty() ? 0 : d.bias[size_t(j)], d.q, d.act,
                                        kNoLut.data());
    h = std::move(next);
  }
  return h;
}

}  // namespace tpu
