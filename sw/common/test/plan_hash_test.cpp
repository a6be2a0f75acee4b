// SPDX-License-Identifier: Apache-2.0
// The planners' output pinned by hashes: every plan's fields and every
// program's encoded instructions, for thousands of cases (GEMM shapes x named
// configurations x outputs x options and epilogues, batches, chained MLPs),
// compared with the golden file test/data/plan_hashes.txt (one line per
// case: its name and a 64-bit FNV-1a hash). A refactoring of the planners
// must leave every line as it is; the failure names the first case that
// differs.
//
// Regenerate the golden file only when a plan change is intended, and say
// why in the commit:
//   TPU_PLAN_HASH_REGEN=1 build/sw/common/plan_hash_test
// writes the file in the source tree (the test then passes and says so).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tpu/config.h"
#include "tpu/isa.h"
#include "tpu/plan/batch.h"
#include "tpu/plan/gemm.h"
#include "tpu/plan/mlp.h"

namespace {

namespace plan = tpu::plan;
using tpu::CoreConfig;

// FNV-1a over 64-bit words, byte by byte (little-endian): independent of
// struct layout and padding.
class Hash {
 public:
  Hash& add(uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h_ ^= (v >> (8 * i)) & 0xFF;
      h_ *= 0x100000001B3ull;
    }
    return *this;
  }
  Hash& add(const std::string& s) {
    add(s.size());
    for (const char c : s) add(uint64_t(uint8_t(c)));
    return *this;
  }
  Hash& add(const std::vector<std::vector<tpu::isa::Instr>>& programs) {
    add(programs.size());
    for (const auto& prog : programs) {
      add(prog.size());
      for (const tpu::isa::Instr& in : prog) {
        const auto w = in.encode();
        add(w[0]).add(w[1]);
      }
    }
    return *this;
  }
  Hash& add(const plan::GemmPlan& p) {
    for (const int64_t v : {int64_t(p.shape.m),     int64_t(p.shape.k),     int64_t(p.shape.n_out),
                            int64_t(p.output),      int64_t(p.n),           int64_t(p.transposed),
                            int64_t(p.dm),          int64_t(p.dn),          int64_t(p.k_blocks),
                            int64_t(p.col_tiles),   int64_t(p.pass_rows),   int64_t(p.passes),
                            int64_t(p.group_tiles), int64_t(p.groups),      int64_t(p.chunk_blocks),
                            int64_t(p.chunks),      int64_t(p.a_regions),   int64_t(p.write_tiles),
                            int64_t(p.tile_major),  int64_t(p.head_blocks), int64_t(p.result_regions),
                            int64_t(p.result_base), int64_t(p.wgt_capacity)})
      add(uint64_t(v));
    return add(p.estimate).add(p.a_bytes()).add(p.w_bytes()).add(p.c_bytes());
  }
  Hash& add(const plan::ChainPlan& p) {
    add(uint64_t(p.n)).add(uint64_t(p.batch)).add(p.why_not);
    for (const auto* v : {&p.kb, &p.ct}) {
      add(v->size());
      for (const int x : *v) add(uint64_t(x));
    }
    for (const int64_t v :
         {int64_t(p.step_rows), int64_t(p.steps), int64_t(p.tiles_per_step), int64_t(p.first_tiles),
          int64_t(p.acc_regions), int64_t(p.ub_in[0]), int64_t(p.ub_in[1]), int64_t(p.ub_x), int64_t(p.ub_y),
          int64_t(p.ub_out[0]), int64_t(p.ub_out[1]), int64_t(p.ub_rows_used), int64_t(p.loop_iterations),
          int64_t(p.body_instructions), int64_t(p.instructions), int64_t(p.programs)})
      add(uint64_t(v));
    return add(p.step_in_bytes).add(p.step_out_bytes).add(p.w_bytes).add(p.slot_bytes).add(p.estimate);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xCBF29CE484222325ull;
};

// Host addresses of the images: fixed, and far apart so that no field is 0.
constexpr uint64_t kA = 0x10000000, kW = 0x24000000, kC = 0x38000000;

using Cases = std::vector<std::pair<std::string, uint64_t>>;

// Runs `body` into a hash; a thrown std::invalid_argument is part of the
// case (its message hashed), so a change in what the planners refuse shows.
void record(Cases& out, const std::string& name, const std::function<void(Hash&)>& body) {
  Hash h;
  try {
    body(h);
  } catch (const std::invalid_argument& e) {
    h.add(std::string("throws: ") + e.what());
  }
  out.push_back({name, h.value()});
}

std::string dims(const plan::GemmShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n_out);
}

const char* output_name(plan::GemmOutput o) {
  switch (o) {
    case plan::GemmOutput::kInt32: return "i32";
    case plan::GemmOutput::kInt8: return "i8";
    case plan::GemmOutput::kF32: return "f32";
    case plan::GemmOutput::kBf16: return "bf16";
  }
  return "?";
}

std::vector<plan::GemmOutput> outputs_of(const CoreConfig& core) {
  std::vector<plan::GemmOutput> out;
  if (tpu::has_int8(core.datapath)) out.insert(out.end(), {plan::GemmOutput::kInt32, plan::GemmOutput::kInt8});
  if (tpu::has_bf16(core.datapath)) out.insert(out.end(), {plan::GemmOutput::kF32, plan::GemmOutput::kBf16});
  return out;
}

// Shapes for every configuration: small ones, primes, long and thin ones,
// shapes not a multiple of any array size.
const std::vector<plan::GemmShape> kShapes = {
    {1, 1, 1},     {2, 2, 2},       {3, 3, 3},       {4, 4, 4},       {5, 5, 5},       {7, 7, 7},
    {8, 8, 8},     {13, 13, 13},    {16, 16, 16},    {17, 17, 17},    {31, 31, 31},    {32, 32, 32},
    {33, 33, 33},  {64, 64, 64},    {100, 100, 100}, {127, 127, 127}, {128, 128, 128}, {1, 300, 1},
    {1, 64, 512},  {512, 64, 1},    {300, 1, 7},     {7, 1, 300},     {1000, 3, 5},    {5, 3, 1000},
    {2, 1000, 2},  {97, 61, 43},    {61, 97, 251},   {251, 43, 61},   {24, 40, 56},    {200, 16, 48},
    {48, 200, 16}, {256, 256, 256}, {255, 257, 129}, {129, 33, 513},  {4096, 64, 64},  {64, 64, 4096},
};
// Large shapes; like every shape, only where it has at most kMostTileMmcs
// products of n x n tiles (on a 4-wide array the largest streams are
// hundreds of thousands of instructions, and the test must take seconds).
const std::vector<plan::GemmShape> kLargeShapes = {
    {512, 512, 512}, {1024, 1024, 1024}, {1024, 64, 1024}, {333, 1024, 77}};
constexpr uint64_t kMostTileMmcs = 70000;

uint64_t tile_mmcs(const plan::GemmShape& s, int n) {
  const auto tiles = [n](int d) { return uint64_t((d + n - 1) / n); };
  return tiles(s.m) * tiles(s.k) * tiles(s.n_out);
}

plan::GemmEpilogue default_epilogue(plan::GemmOutput o) {
  plan::GemmEpilogue e;
  e.output = o;
  if (o == plan::GemmOutput::kInt8) e.q = {0x5A5A5A5A, 7, -3, -100, 120, 90};
  return e;
}

void gemm_case(Cases& out, const std::string& name, const plan::GemmShape& s, plan::GemmOutput o,
               const CoreConfig& core, const plan::GemmOptions& options, const plan::GemmEpilogue& epi) {
  record(out, name, [&](Hash& h) {
    const plan::GemmPlan p = plan::plan_gemm(s, o, core, options);
    h.add(p).add(plan::gemm_programs(p, epi, kA, kW, kC, core));
  });
}

// Options forced one at a time (each a corner of the schedule).
std::vector<std::pair<std::string, plan::GemmOptions>> option_variants() {
  using T = plan::GemmOptions::Transpose;
  using O = plan::GemmOptions::Order;
  return {
      {"never", {.transpose = T::kNever}},
      {"always", {.transpose = T::kAlways}},
      {"rows7", {.max_pass_rows = 7}},
      {"g1", {.group_tiles = 1}},
      {"g2", {.group_tiles = 2}},
      {"g3c1", {.group_tiles = 3, .chunk_blocks = 1}},
      {"c2a1", {.chunk_blocks = 2, .a_regions = 1}},
      {"a2r3w2", {.a_regions = 2, .result_regions = 3, .write_tiles = 2}},
      {"r4w4", {.result_regions = 4, .write_tiles = 4}},
      {"kmajor", {.order = O::kKMajor}},
      {"tmajor", {.order = O::kTileMajor}},
      {"head0", {.head_blocks = 0}},
      {"head1", {.order = O::kTileMajor, .head_blocks = 1}},
      {"head2", {.head_blocks = 2}},
      {"rows5g2never", {.max_pass_rows = 5, .transpose = T::kNever, .group_tiles = 2}},
  };
}

// Epilogues with a bias or scales per column (planned with options.bias).
std::vector<std::pair<std::string, plan::GemmEpilogue>> epilogue_variants(plan::GemmOutput o, int n_out) {
  std::vector<std::pair<std::string, plan::GemmEpilogue>> out;
  const plan::GemmEpilogue base = default_epilogue(o);
  if (o == plan::GemmOutput::kInt8) {
    for (const auto act : {tpu::isa::Act::kRelu, tpu::isa::Act::kRelu6, tpu::isa::Act::kLut}) {
      plan::GemmEpilogue e = base;
      e.act = act;
      out.push_back({"act" + std::to_string(int(act)), e});
    }
    plan::GemmEpilogue bias = base;
    for (int j = 0; j < n_out; ++j) bias.bias.push_back(j * 37 - 500);
    out.push_back({"bias", bias});
    plan::GemmEpilogue scales = base;
    for (int j = 0; j < n_out; ++j) scales.scales.push_back({0x40000000 + (j % 5) * 0x1000000, -(j % 3)});
    out.push_back({"scales", scales});
    plan::GemmEpilogue both = bias;
    both.scales = scales.scales;
    both.act = tpu::isa::Act::kRelu6;
    out.push_back({"bias_scales_relu6", both});
  } else if (o == plan::GemmOutput::kF32 || o == plan::GemmOutput::kBf16) {
    for (const auto act : {tpu::isa::Act::kRelu, tpu::isa::Act::kRelu6}) {
      plan::GemmEpilogue e = base;
      e.act = act;
      out.push_back({"act" + std::to_string(int(act)), e});
    }
    plan::GemmEpilogue bias = base;
    for (int j = 0; j < n_out; ++j) bias.bias_f32.push_back(0x3F800000u + uint32_t(j) * 0x10000u);
    out.push_back({"bias", bias});
    bias.act = tpu::isa::Act::kRelu;
    out.push_back({"bias_relu", bias});
  }
  return out;
}

void gemm_cases(Cases& out) {
  const auto options = option_variants();
  for (const tpu::Config& cfg : tpu::kConfigs) {
    const CoreConfig core = tpu::core_config(cfg);
    std::vector<plan::GemmShape> shapes = kShapes;
    shapes.insert(shapes.end(), kLargeShapes.begin(), kLargeShapes.end());
    for (const plan::GemmShape& s : shapes) {
      if (tile_mmcs(s, core.n) > kMostTileMmcs) continue;
      for (const plan::GemmOutput o : outputs_of(core)) {
        const std::string base = "gemm/" + std::string(cfg.name) + "/" + dims(s) + "/" + output_name(o);
        gemm_case(out, base, s, o, core, {}, default_epilogue(o));
        // The variants on the shapes that take a few milliseconds.
        const bool small = tile_mmcs(s, core.n) <= 300;
        if (!small) continue;
        for (const auto& [vname, opt] : options)
          gemm_case(out, base + "/opt:" + vname, s, o, core, opt, default_epilogue(o));
        for (const auto& [ename, epi] : epilogue_variants(o, s.n_out))
          gemm_case(out, base + "/epi:" + ename, s, o, core, {.bias = true}, epi);
      }
    }
  }
}

// Batches: products planned for a batch, their images adjacent or not.
void batch_cases(Cases& out) {
  const std::vector<std::pair<std::string, std::vector<plan::GemmShape>>> lists = {
      {"one", {{16, 16, 16}}},
      {"cubes", {{8, 8, 8}, {16, 16, 16}, {32, 32, 32}, {4, 4, 4}}},
      {"primes", {{7, 13, 5}, {13, 7, 11}, {3, 17, 19}, {23, 5, 2}, {1, 1, 1}}},
      {"thin", {{1, 64, 64}, {64, 1, 64}, {64, 64, 1}, {2, 200, 3}}},
      {"same", std::vector<plan::GemmShape>(12, {24, 40, 56})},
      {"mixed", {{100, 100, 100}, {1, 1, 1}, {64, 128, 32}, {33, 33, 33}, {128, 16, 16}, {5, 300, 9}}},
      {"many", std::vector<plan::GemmShape>(40, {16, 32, 16})},
  };
  for (const tpu::Config& cfg : tpu::kConfigs) {
    const CoreConfig core = tpu::core_config(cfg);
    if (!tpu::has_int8(core.datapath)) continue;
    for (const auto& [lname, shapes] : lists)
      for (const bool adjacent : {true, false}) {
        const std::string name = "batch/" + std::string(cfg.name) + "/" + lname + (adjacent ? "/adjacent" : "/apart");
        record(out, name, [&](Hash& h) {
          std::vector<plan::GemmPlan> plans;
          std::vector<plan::GemmBatchAddrs> addrs;
          uint64_t a = kA, w = kW, c = kC;
          for (const plan::GemmShape& s : shapes) {
            plans.push_back(plan::plan_gemm_for_batch(s, core));
            const plan::GemmPlan& p = plans.back();
            h.add(p).add(uint64_t(plan::gemm_batchable(p, core))).add(plan::gemm_batch_instructions(p));
            addrs.push_back({a, w, c});
            const uint64_t gap = adjacent ? 0 : 4096;
            a += p.a_bytes() + gap;
            w += p.w_bytes() + gap;
            c += p.c_bytes() + gap;
          }
          const bool fits = plan::gemm_batch_fits(plans, core);
          h.add(uint64_t(fits));
          if (fits) h.add(plan::gemm_batch_programs(plans, addrs, core));
        });
      }
  }
}

std::vector<plan::ChainLayer> network(const std::vector<int>& widths, bool bias, tpu::isa::Act act) {
  std::vector<plan::ChainLayer> layers;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    plan::ChainLayer d;
    d.k = widths[l];
    d.n_out = widths[l + 1];
    d.q = {0x40000000 + int32_t(l) * 0x100000, int32_t(5 + l), int32_t(l) - 2, -128, 127, 100};
    d.act = l + 2 < widths.size() ? act : tpu::isa::Act::kNone;
    if (bias)
      for (int j = 0; j < d.n_out; ++j) d.bias.push_back(int32_t(j * 11) - int32_t(l * 300));
    layers.push_back(d);
  }
  return layers;
}

void mlp_cases(Cases& out) {
  const std::vector<std::pair<std::string, std::vector<int>>> nets = {
      {"1", {1, 1}},
      {"784-128-10", {784, 128, 10}},
      {"64-64-64-64", {64, 64, 64, 64}},
      {"3-5-7", {3, 5, 7}},
      {"300-17-300-2", {300, 17, 300, 2}},
      {"16-1024-16", {16, 1024, 16}},
      {"33-65-129", {33, 65, 129}},
  };
  const std::vector<std::pair<std::string, plan::ChainOptions>> options = {{"auto", {}},
                                                                           {"noloop", {.loop = false}},
                                                                           {"p1", {.step_rows = 1}},
                                                                           {"p7", {.step_rows = 7}},
                                                                           {"p64", {.step_rows = 64}}};
  for (const tpu::Config& cfg : tpu::kConfigs) {
    const CoreConfig core = tpu::core_config(cfg);
    if (!tpu::has_int8(core.datapath)) continue;
    for (const auto& [nname, widths] : nets)
      for (const bool bias : {false, true})
        for (const auto act : {tpu::isa::Act::kRelu, tpu::isa::Act::kRelu6})
          for (const int batch : {1, 7, 70}) {
            if (bias == (act == tpu::isa::Act::kRelu) && batch != 7) continue;  // the other pairs at one batch
            for (const auto& [oname, opt] : options) {
              const std::string name = "mlp/" + std::string(cfg.name) + "/" + nname + (bias ? "/bias" : "/nobias") +
                                       "/act" + std::to_string(int(act)) + "/b" + std::to_string(batch) + "/" + oname;
              const auto layers = network(widths, bias, act);
              record(out, name, [&](Hash& h) {
                const plan::ChainPlan p = plan::plan_chain(layers, batch, core, opt);
                h.add(p);
                if (p.fits()) h.add(plan::chain_programs(p, layers, kA, kC, core));
              });
              if (oname == "auto" && batch > 1)
                record(out, name + "/per_layer",
                       [&](Hash& h) { h.add(plan::estimate_per_layer(layers, batch, core)); });
            }
          }
    // A launch of many steps, where the arrays are wide enough to plan it fast.
    if (core.n >= 16)
      for (const auto& [nname, widths] : nets) {
        const auto layers = network(widths, true, tpu::isa::Act::kRelu);
        record(out, "mlp/" + std::string(cfg.name) + "/" + nname + "/b1000", [&](Hash& h) {
          const plan::ChainPlan p = plan::plan_chain(layers, 1000, core);
          h.add(p);
          if (p.fits()) h.add(plan::chain_programs(p, layers, kA, kC, core));
        });
      }
    record(out, "mlp/" + std::string(cfg.name) + "/lut", [&](Hash& h) {
      h.add(plan::plan_chain(network({8, 8, 8}, false, tpu::isa::Act::kLut), 4, core));
    });
  }
}

Cases all_cases() {
  Cases out;
  gemm_cases(out);
  batch_cases(out);
  mlp_cases(out);
  return out;
}

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << std::hex;
  s.width(16);
  s.fill('0');
  s << v;
  return s.str();
}

TEST(PlanHash, MatchesGolden) {
  const Cases cases = all_cases();
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < cases.size(); ++i)
    ASSERT_TRUE(seen.emplace(cases[i].first, i).second) << "two cases named " << cases[i].first;

  if (const char* regen = std::getenv("TPU_PLAN_HASH_REGEN"); regen && *regen && std::string(regen) != "0") {
    std::ofstream f(PLAN_HASH_GOLDEN);
    ASSERT_TRUE(f) << "cannot write " << PLAN_HASH_GOLDEN;
    for (const auto& [name, h] : cases) f << name << ' ' << hex(h) << '\n';
    std::cout << "wrote " << cases.size() << " cases to " << PLAN_HASH_GOLDEN << '\n';
    return;
  }

  std::ifstream f(PLAN_HASH_GOLDEN);
  ASSERT_TRUE(f) << "cannot read " << PLAN_HASH_GOLDEN;
  std::vector<std::pair<std::string, std::string>> golden;
  for (std::string name, h; f >> name >> h;) golden.push_back({name, h});
  std::cout << cases.size() << " cases\n";
  size_t differ = 0;
  std::string first;
  for (size_t i = 0; i < std::max(cases.size(), golden.size()); ++i) {
    const std::string got = i < cases.size() ? cases[i].first + " " + hex(cases[i].second) : "(no case)";
    const std::string want = i < golden.size() ? golden[i].first + " " + golden[i].second : "(no golden line)";
    if (got != want) {
      if (differ++ == 0) first = "line " + std::to_string(i + 1) + ": got " + got + ", golden " + want;
    }
  }
  EXPECT_EQ(differ, 0u) << differ << " of " << cases.size() << " cases differ from " << PLAN_HASH_GOLDEN
                        << "; the first, " << first
                        << " (regenerate with TPU_PLAN_HASH_REGEN=1 only for an intended plan change)";
}

}  // namespace
