// SPDX-License-Identifier: Apache-2.0
#include "tpu/plan/mlp.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include "stream.h"
#include "tpu/plan/cost_model.h"
#include "tpu/plan/gemm.h"

namespace tpu::plan {

using isa::Instr;

namespace {

constexpr int kCandidates = 24;  // step sizes plan_chain compares

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// A command's fixed cost with DMA windows: the HALT-only command's and
// about one more host round trip for the window list (docs/performance.md,
// "What the numbers mean").
uint64_t command_cycles(const CoreConfig& core) { return GemmCostModel::kCommandCycles + uint64_t(core.link_latency); }

// The configuration registers the programs write, as far as they know them
// (nothing at first: a register is written the first time, then only when
// its value changes).
class CfgState {
 public:
  explicit CfgState(int n) : bias_(size_t(n)) {}

  void set(std::vector<Instr>& out, uint32_t index, int32_t value) {
    std::optional<int32_t>& r = reg(index);
    if (r && *r == value) return;
    out.push_back(isa::cfg(index, uint32_t(value)));
    r = value;
  }
  // QMULT and QSHIFT write every lane's CH_MULT / CH_SHIFT (docs/isa.md).
  void quant(std::vector<Instr>& out, const quant::QuantParams& q) {
    set(out, isa::kCfgQmult, q.multiplier);
    set(out, isa::kCfgQshift, q.shift);
    set(out, isa::kCfgQzp, q.zero_point);
    set(out, isa::kCfgQmin, q.qmin);
    set(out, isa::kCfgQmax, q.qmax);
    set(out, isa::kCfgRelu6Max, q.relu6_max);
  }
  // Every register it knows, written whatever the device holds.
  void write_all(std::vector<Instr>& out) const {
    for (uint32_t i = 0; i < quant_.size(); ++i)
      if (quant_[i]) out.push_back(isa::cfg(i, uint32_t(*quant_[i])));
    for (size_t l = 0; l < bias_.size(); ++l)
      if (bias_[l]) out.push_back(isa::cfg(isa::kCfgBiasBase + uint32_t(l), uint32_t(*bias_[l])));
  }

 private:
  std::optional<int32_t>& reg(uint32_t index) {
    return index >= isa::kCfgBiasBase ? bias_[index - isa::kCfgBiasBase] : quant_[index];
  }
  std::array<std::optional<int32_t>, 6> quant_;  // QMULT .. RELU6_MAX
  std::vector<std::optional<int32_t>> bias_;     // BIAS[lane]
};

using Groups = std::vector<std::vector<Instr>>;  // a LOOP and its MMC stay together

size_t count(const Groups& g) {
  size_t c = 0;
  for (const auto& x : g) c += x.size();
  return c;
}

// Cuts groups into programs of at most `depth` instructions, each with HALT.
std::vector<std::vector<Instr>> cut(const Groups& groups, int depth) {
  std::vector<std::vector<Instr>> out(1);
  for (const auto& g : groups) {
    if (out.back().size() + g.size() + 1 > size_t(depth)) {
      if (out.back().empty())
        throw std::invalid_argument("mlp: an instruction group of " + std::to_string(g.size()) +
                                    " does not fit an instruction memory of " + std::to_string(depth));
      out.back().push_back(isa::halt());
      out.emplace_back();
    }
    out.back().insert(out.back().end(), g.begin(), g.end());
  }
  out.back().push_back(isa::halt());
  return out;
}

// Builds steps. The configuration registers are tracked from the state a
// step leaves behind (the same for every step), so every step's code is the
// same but for its host addresses, and the prologue writes that state.
class Builder {
 public:
  Builder(const ChainPlan& p, const std::vector<ChainLayer>& layers, const CoreConfig& core, uint64_t records,
          uint64_t out)
      : p_(p), layers_(layers), records_(records), out_(out), cfg_(p.n), cap_(core.wgt_fifo_tiles + isa::kWgtBanks) {
    batch_ = rw_batch_tiles(cap_, p.step_rows, p.n, core);
    // A dry step from nothing known leaves the state every step starts from.
    Groups scratch;
    step(0, false, scratch);
  }

  // The RW of step 0's first tiles, its input's RHM, and every known register.
  Groups prologue() const {
    Groups g;
    g.push_back({isa::rw(records_ + p_.w_addr(0), uint32_t(p_.first_tiles), uint32_t(p_.n))});
    g.push_back(
        {isa::rhm(uint32_t(p_.ub_in[0]), uint32_t(p_.kb[0] * p_.step_rows), records_ + p_.in_addr(0), uint32_t(p_.n))});
    std::vector<Instr> cfgs;
    cfg_.write_all(cfgs);
    for (const Instr& in : cfgs) g.push_back({in});
    return g;
  }

  // Appends step t. `compress`: runs of MMCs over K blocks become LOOPs (not
  // inside the device loop's body: LOOPs do not nest).
  void step(int t, bool compress, Groups& out) {
    const ChainPlan& p = p_;
    const int P = p.step_rows, n = p.n, L = int(layers_.size());
    const bool has_next = t + 1 < p.steps;
    std::vector<Mmc> mmcs;
    std::vector<std::vector<Instr>> epilogue;  // after each MMC: the tile's CFGs and ACT
    int out_tiles = 0;
    for (int l = 0; l < L; ++l) out_tiles += p.ct[size_t(l)];
    int q = (t % 2) * out_tiles;  // output tiles of a pair of steps take the ACC regions in turn
    for (int l = 0; l < L; ++l) {
      const ChainLayer& layer = layers_[size_t(l)];
      const int src = l == 0 ? p.ub_in[t % 2] : hidden(l - 1);
      const int dst = l == L - 1 ? p.ub_out[t % 2] : hidden(l);
      for (int j = 0; j < p.ct[size_t(l)]; ++j) {
        const uint32_t acc = uint32_t((q++ % p.acc_regions) * P);
        for (int k = 0; k < p.kb[size_t(l)]; ++k) mmcs.push_back({uint32_t(src + k * P), acc, k > 0});
        std::vector<Instr> e;
        if (j == 0) cfg_.quant(e, layer.q);
        if (!layer.bias.empty())
          for (int lane = 0; lane < n; ++lane) {
            const int col = j * n + lane;
            cfg_.set(e, isa::kCfgBiasBase + uint32_t(lane), col < layer.n_out ? layer.bias[size_t(col)] : 0);
          }
        e.push_back(isa::act(acc, uint32_t(dst + j * P), uint32_t(P), layer.act, !layer.bias.empty()));
        epilogue.resize(mmcs.size());
        epilogue.back() = std::move(e);
      }
    }
    const size_t m = mmcs.size();
    epilogue.resize(m);

    // Weight tiles: first_tiles of them were requested before the step; the
    // rest as MMCs retire tiles and a batch fits the capacity; then the next
    // step's first tiles (from its own slot's copy).
    std::vector<std::vector<Instr>> before(m), rws(m);
    const int64_t T = p.tiles_per_step, F = p.first_tiles, tile = int64_t(n) * n;
    int64_t issued = F, retired = 0, next = 0;
    const auto own = [&](std::vector<Instr>& v, int64_t c) {
      v.push_back(isa::rw(records_ + p.w_addr(t) + uint64_t(issued * tile), uint32_t(c), uint32_t(n)));
      issued += c;
    };
    for (size_t i = 0; i < m; ++i) {
      if (issued == retired) own(before[i], std::min<int64_t>(cap_ - next, T - issued));
      ++retired;
      int64_t room = cap_ - (issued - retired) - next;
      if (issued < T) {
        const int64_t rem = T - issued;
        if (room >= std::min<int64_t>(batch_, rem)) {
          const int64_t c = std::min(room, rem);
          own(rws[i], c);
          room -= c;
        }
      }
      if (issued == T && has_next && next == 0 && room >= F) {
        rws[i].push_back(isa::rw(records_ + p.w_addr(t + 1), uint32_t(F), uint32_t(n)));
        next = F;
      }
    }

    // Side work after each MMC: RWs first (the weight unit starts at once),
    // the next step's input after the first MMC, then the tile's epilogue,
    // and the step's logits after its last ACT.
    std::vector<std::vector<Instr>> after(m);
    for (size_t i = 0; i < m; ++i) {
      after[i] = std::move(rws[i]);
      if (i == 0 && has_next)
        after[i].push_back(
            isa::rhm(uint32_t(p.ub_in[(t + 1) % 2]), uint32_t(p.kb[0] * P), records_ + p.in_addr(t + 1), uint32_t(n)));
      after[i].insert(after[i].end(), epilogue[i].begin(), epilogue[i].end());
    }
    after[m - 1].push_back(
        isa::whm(uint32_t(p.ub_out[t % 2]), uint32_t(p.ct.back() * P), out_ + p.out_addr(t), uint32_t(n)));

    for (size_t i = 0; i < m;) {
      for (const Instr& in : before[i]) out.push_back({in});
      // A run of two stays two MMCs: a LOOP would save no instruction.
      size_t run = compress ? loop_run(
                                  mmcs, i, INT64_MAX, [&](size_t k) { return !before[k].empty(); },
                                  [&](size_t k) { return !after[k].empty(); })
                            : 1;
      if (run >= 3) {
        out.push_back(
            {isa::loop(uint32_t(run), 1, int32_t(mmcs[i + 1].ub - mmcs[i].ub), int32_t(mmcs[i + 1].acc - mmcs[i].acc)),
             isa::mmc(mmcs[i].ub, mmcs[i].acc, uint32_t(P), mmcs[i].accumulate, true)});
      } else {
        run = 1;
      }
      if (run == 1) out.push_back({isa::mmc(mmcs[i].ub, mmcs[i].acc, uint32_t(P), mmcs[i].accumulate, true)});
      i += run;
      for (const Instr& in : after[i - 1]) out.push_back({in});
    }
  }

 private:
  int hidden(int l) const { return l % 2 == 0 ? p_.ub_x : p_.ub_y; }

  const ChainPlan& p_;
  const std::vector<ChainLayer>& layers_;
  uint64_t records_, out_;
  CfgState cfg_;
  int cap_, batch_ = 1;
};

// The whole launch as groups: prologue, the LOOP over pairs of steps (when
// the plan has one), the remaining steps, unrolled.
Groups build(const ChainPlan& p, const std::vector<ChainLayer>& layers, const CoreConfig& core, uint64_t records,
             uint64_t out) {
  Builder b(p, layers, core, records, out);
  Groups g = b.prologue();
  int t = 0;
  if (p.looped()) {
    Groups body;
    b.step(0, false, body);
    b.step(1, false, body);
    std::vector<Instr> loop{isa::loop(uint32_t(p.loop_iterations), uint32_t(count(body)), 0, 0, int64_t(p.slot_bytes))};
    for (const auto& x : body) loop.insert(loop.end(), x.begin(), x.end());
    g.push_back(std::move(loop));
    t = 2 * p.loop_iterations;
  }
  for (; t < p.steps; ++t) b.step(t, true, g);
  return g;
}

void check_layers(const std::vector<ChainLayer>& layers, int batch) {
  if (layers.empty()) throw std::invalid_argument("mlp: a network needs at least one layer");
  if (batch < 1) throw std::invalid_argument("mlp: the batch must have at least one sample");
  for (size_t l = 0; l < layers.size(); ++l) {
    const ChainLayer& d = layers[l];
    const std::string name = "mlp: layer " + std::to_string(l);
    if (d.k < 1 || d.n_out < 1) throw std::invalid_argument(name + " has an empty weight matrix");
    if (!d.bias.empty() && int(d.bias.size()) != d.n_out)
      throw std::invalid_argument(name + ": the bias has " + std::to_string(d.bias.size()) + " entries for " +
                                  std::to_string(d.n_out) + " outputs");
    if (l > 0 && layers[l - 1].n_out != d.k)
      throw std::invalid_argument(name + " takes " + std::to_string(d.k) + " inputs but layer " +
                                  std::to_string(l - 1) + " gives " + std::to_string(layers[l - 1].n_out));
  }
}

// Step size P's UB and ACC layout and image sizes (mlp.h, "UB layout"); x
// and y the most output tiles of the even and of the odd hidden layers.
void lay_out(ChainPlan& c, int P, int x, int y, const CoreConfig& core) {
  const int kb0 = c.kb.front(), ct_last = c.ct.back(), n = c.n, cap = core.wgt_fifo_tiles + isa::kWgtBanks;
  c.step_rows = P;
  c.steps = ceil_div(c.batch, P);
  c.acc_regions = core.acc_rows / P >= 4 ? 4 : 2;
  c.first_tiles = std::min(c.tiles_per_step, std::max(1, cap / 2));
  c.ub_in[0] = 0;
  c.ub_in[1] = kb0 * P;
  c.ub_x = 2 * kb0 * P;
  c.ub_y = c.ub_x + x * P;
  c.ub_out[0] = c.ub_y + y * P;
  c.ub_out[1] = c.ub_out[0] + ct_last * P;
  c.ub_rows_used = c.ub_out[1] + ct_last * P;
  c.step_in_bytes = uint64_t(kb0) * uint64_t(P) * uint64_t(n);
  c.step_out_bytes = uint64_t(ct_last) * uint64_t(P) * uint64_t(n);
  c.w_bytes = uint64_t(c.tiles_per_step) * uint64_t(n) * uint64_t(n);
  // One host increment moves every RHM, WHM and RW of the LOOP body: a
  // slot holds two steps' inputs and the weights, and in the outputs image
  // two steps' logits.
  c.slot_bytes = std::max(2 * c.step_in_bytes + c.w_bytes, 2 * c.step_out_bytes);
}

// The laid-out plan's instructions and programs: every step but the last
// alike, the last without the next step's load and tiles; a LOOP body is
// two steps without MMC LOOPs.
void count_instructions(ChainPlan& c, const std::vector<ChainLayer>& layers, const CoreConfig& core,
                        const ChainOptions& options) {
  c.loop_iterations = 0;
  Builder b(c, layers, core, 0, 0);
  const int pro = int(count(b.prologue()));
  const auto length = [&](int t, bool compress) {
    Groups g;
    b.step(t, compress, g);
    return int(count(g));
  };
  const int iterations = options.loop ? (c.steps - 1) / 2 : 0;
  const int body = iterations >= 2 ? length(0, false) + length(1, false) : 0;
  // The LOOP, its body and a HALT fit one program; the increment fits its
  // signed 32-bit field.
  const bool loop = iterations >= 2 && body <= isa::kLoopMaxBody && body + 2 <= core.imem_depth &&
                    c.slot_bytes <= uint64_t(INT32_MAX);
  const int step = length(0, true), last = c.steps > 1 ? length(c.steps - 1, true) : step;
  if (loop) {
    c.loop_iterations = iterations;
    c.body_instructions = body;
    const int rest = c.steps - 2 * iterations;  // 1 or 2 steps after the loop
    c.instructions = pro + 1 + body + (rest - 1) * step + last;
  } else {
    c.body_instructions = 0;
    c.instructions = pro + (c.steps - 1) * step + last;
  }
  // Programs: about one per imem_depth - 1 instructions (each ends in HALT).
  const int depth = std::max(2, core.imem_depth);
  c.programs = ceil_div(c.instructions, depth - 1);
  c.instructions += c.programs;
}

}  // namespace

// ---- plan --------------------------------------------------------------------------

uint64_t ChainPlan::in_addr(int t) const {
  return looped() ? uint64_t(t / 2) * slot_bytes + uint64_t(t % 2) * step_in_bytes : uint64_t(t) * step_in_bytes;
}
uint64_t ChainPlan::w_addr(int t) const {
  return looped() ? uint64_t(t / 2) * slot_bytes + 2 * step_in_bytes : uint64_t(steps) * step_in_bytes;
}
uint64_t ChainPlan::out_addr(int t) const {
  return looped() ? uint64_t(t / 2) * slot_bytes + uint64_t(t % 2) * step_out_bytes : uint64_t(t) * step_out_bytes;
}
uint64_t ChainPlan::records_bytes() const {
  return std::max(in_addr(steps - 1) + step_in_bytes, w_addr(steps - 1) + w_bytes);
}
uint64_t ChainPlan::out_bytes() const { return out_addr(steps - 1) + step_out_bytes; }

uint64_t estimate_chain(const ChainPlan& p, const CoreConfig& core) {
  const uint64_t P = uint64_t(p.step_rows), n = uint64_t(p.n), S = uint64_t(p.steps);
  const GemmCostModel cost(core);
  const uint64_t latency = cost.read_latency(), link_bytes = uint64_t(core.link_bytes_per_cycle);
  const uint64_t row_cycles = cost.row_link_cycles(p.n);  // a UB row on the link
  const uint64_t kb0 = uint64_t(p.kb.front()), ct_last = uint64_t(p.ct.back());
  // A weight tile takes at least the time the weight FIFO needs to cover the
  // read latency; an MXU result reaches the UB about 2n cycles after its row.
  const uint64_t tile_min = (latency + n) / uint64_t(std::max(1, core.wgt_fifo_tiles)) + 1;
  const uint64_t result_latency = 2 * n + 16;
  uint64_t mxu = 0, vpu = 0, boundary = 0;
  for (size_t l = 0; l < p.kb.size(); ++l) {
    const uint64_t kb = uint64_t(p.kb[l]), ct = uint64_t(p.ct[l]);
    mxu += kb * ct * std::max(P, tile_min);
    vpu += ct * (P + n);  // the ACT and the bias CFGs
    // Layer l's first output tile needs the last tile of layer l - 1 in its
    // last K block: the ACT of that tile (P rows) overlaps kb - 1 blocks.
    if (l > 0 && P + result_latency > (kb - 1) * P) boundary += P + result_latency - (kb - 1) * P;
  }
  // The DMA reads one transfer at a time: while the next step's input rows
  // cross the link the weight FIFO only drains (as the GEMM cost model
  // counts it): the MXU waits once the FIFO's tiles are used up.
  const uint64_t rhm_rows = kb0 * P * row_cycles;
  const uint64_t covered = uint64_t(std::max<int64_t>(0, cost.weight_fifo_slack(p.step_rows, p.n)));
  if (S > 1 && rhm_rows > covered) mxu += rhm_rows - covered;
  const uint64_t mem = latency + (kb0 + ct_last) * P * row_cycles + 15;
  const uint64_t link = (kb0 * P * n + uint64_t(p.tiles_per_step) * n * n) / link_bytes;
  const uint64_t step = std::max({mxu + boundary, mem, link, vpu});
  const uint64_t first = latency + kb0 * P * row_cycles;
  const uint64_t tail = P + ct_last * P * row_cycles + GemmCostModel::kWhmCycles;
  const uint64_t fetch = uint64_t(p.instructions) * (isa::kInstrBits / 8) / link_bytes;
  const uint64_t programs = uint64_t(std::max(1, p.programs));
  return programs * command_cycles(core) + (programs - 1) * latency + fetch + first + S * step + tail;
}

uint64_t estimate_per_layer(const std::vector<ChainLayer>& layers, int batch, const CoreConfig& core) {
  uint64_t total = 0;
  for (const ChainLayer& l : layers) {
    try {
      const GemmPlan g = plan_gemm({batch, l.k, l.n_out}, GemmOutput::kInt8, core, {.bias = !l.bias.empty()});
      total += g.estimate + command_cycles(core);
    } catch (const std::invalid_argument&) {
      return std::numeric_limits<uint64_t>::max();
    }
  }
  return total;
}

ChainPlan plan_chain(const std::vector<ChainLayer>& layers, int batch, const CoreConfig& core,
                     const ChainOptions& options) {
  check_layers(layers, batch);
  ChainPlan p;
  p.n = core.n;
  p.batch = batch;
  const int L = int(layers.size()), n = core.n;
  for (const ChainLayer& l : layers) {
    p.kb.push_back(ceil_div(l.k, n));
    p.ct.push_back(ceil_div(l.n_out, n));
    p.tiles_per_step += p.kb.back() * p.ct.back();
  }
  for (size_t l = 0; l < layers.size(); ++l)
    if (layers[l].act != isa::Act::kNone && layers[l].act != isa::Act::kRelu && layers[l].act != isa::Act::kRelu6) {
      p.why_not = "layer " + std::to_string(l) + "'s activation is not none, relu or relu6";
      return p;
    }
  int x = 0, y = 0;
  for (int l = 0; l + 1 < L; ++l) (l % 2 == 0 ? x : y) = std::max(l % 2 == 0 ? x : y, p.ct[size_t(l)]);
  const int kb0 = p.kb.front(), ct_last = p.ct.back();
  const int per_sample = 2 * kb0 + x + y + 2 * ct_last;  // UB rows per sample of a step
  const int p_max =
      std::min({core.ub_rows / per_sample, core.acc_rows / 2, int(isa::kMaxCount) / std::max(kb0, ct_last)});
  if (p_max < 1) {
    p.why_not = "a step of one sample needs " + std::to_string(per_sample) + " unified-buffer rows (inputs and " +
                "outputs twice, the hidden layers) and 2 accumulator rows; the device has " +
                std::to_string(core.ub_rows) + " and " + std::to_string(core.acc_rows);
    return p;
  }
  std::vector<int> sizes;
  if (options.step_rows > 0) {
    const int step = std::min(options.step_rows, batch);  // a step never holds more than the batch
    if (step > p_max) {
      p.why_not = "a step of " + std::to_string(step) + " samples does not fit (at most " + std::to_string(p_max) +
                  ": " + std::to_string(per_sample) + " unified-buffer rows a sample of " +
                  std::to_string(core.ub_rows) + ", two accumulator regions of " + std::to_string(core.acc_rows) +
                  " rows)";
      return p;
    }
    sizes.push_back(step);
  } else {
    // Balanced steps: for each count of steps from the fewest, its size.
    for (int s = ceil_div(batch, p_max); int(sizes.size()) < kCandidates; ++s) {
      const int size = ceil_div(batch, s);
      if (sizes.empty() || sizes.back() != size) sizes.push_back(size);
      if (size == 1) break;
    }
  }

  ChainPlan best;
  for (const int P : sizes) {
    ChainPlan c = p;
    lay_out(c, P, x, y, core);
    count_instructions(c, layers, core, options);
    c.estimate = estimate_chain(c, core);
    if (!best.fits() || c.estimate < best.estimate) best = std::move(c);
  }
  // The exact instruction and program count of the chosen plan.
  const auto programs = chain_programs(best, layers, 0, 0, core);
  best.programs = int(programs.size());
  best.instructions = 0;
  for (const auto& prog : programs) best.instructions += int(prog.size());
  best.estimate = estimate_chain(best, core);
  return best;
}

// ---- host images ----------------------------------------------------------------------

std::vector<int8_t> pack_chain_records(const ChainPlan& p, const MatrixI8& x, std::span<const MatrixI8* const> w) {
  if (!p.fits()) throw std::invalid_argument("pack_chain_records: no plan");
  if (x.rows != p.batch || w.size() != p.kb.size())
    throw std::invalid_argument("pack_chain_records: the input or the layers differ from the plan");
  const int n = p.n, P = p.step_rows;
  std::vector<int8_t> out(p.records_bytes(), 0);
  for (int t = 0; t < p.steps; ++t) {
    int8_t* in = out.data() + p.in_addr(t);
    for (int r = 0; r < P && t * P + r < x.rows; ++r)
      for (int c = 0; c < x.cols; ++c) in[(size_t(c / n) * P + size_t(r)) * n + size_t(c % n)] = x.at(t * P + r, c);
  }
  // The tiles of one step, in MMC order: layer, output tile, K block.
  std::vector<int8_t> tiles(p.w_bytes, 0);
  size_t g = 0;
  for (size_t l = 0; l < w.size(); ++l) {
    const MatrixI8& m = *w[l];
    if (m.cols > p.ct[l] * n || m.rows > p.kb[l] * n)
      throw std::invalid_argument("pack_chain_records: layer " + std::to_string(l) + "'s weights differ from the plan");
    for (int j = 0; j < p.ct[l]; ++j)
      for (int k = 0; k < p.kb[l]; ++k, ++g)
        for (int r = 0; r < n && k * n + r < m.rows; ++r)
          for (int c = 0; c < n && j * n + c < m.cols; ++c)
            tiles[(g * size_t(n) + size_t(r)) * size_t(n) + size_t(c)] = m.at(k * n + r, j * n + c);
  }
  // One copy, or one per slot of the LOOP (its host increment moves RWs too).
  const int copies = p.looped() ? ceil_div(p.steps, 2) : 1;
  for (int s = 0; s < copies; ++s) std::copy(tiles.begin(), tiles.end(), out.begin() + std::ptrdiff_t(p.w_addr(2 * s)));
  return out;
}

MatrixI8 unpack_chain_output(const ChainPlan& p, int n_out, std::span<const uint8_t> bytes) {
  if (!p.fits() || bytes.size() < p.out_bytes() || n_out > p.ct.back() * p.n)
    throw std::invalid_argument("unpack_chain_output: not the outputs of this plan");
  const int n = p.n, P = p.step_rows;
  MatrixI8 y(p.batch, n_out);
  for (int s = 0; s < p.batch; ++s) {
    const int t = s / P, r = s % P;
    for (int c = 0; c < n_out; ++c)
      y.at(s, c) = int8_t(bytes[p.out_addr(t) + (size_t(c / n) * P + size_t(r)) * n + size_t(c % n)]);
  }
  return y;
}

// ---- programs ---------------------------------------------------------------------------

std::vector<std::vector<Instr>> chain_programs(const ChainPlan& p, const std::vector<ChainLayer>& layers,
                                               uint64_t records, uint64_t out, const CoreConfig& core) {
  if (!p.fits()) throw std::invalid_argument("mlp: no chained plan (" + p.why_not + ")");
  if (layers.size() != p.kb.size()) throw std::invalid_argument("mlp: the layers differ from the plan");
  return cut(build(p, layers, core, records, out), core.imem_depth);
}

}  // namespace tpu::plan
