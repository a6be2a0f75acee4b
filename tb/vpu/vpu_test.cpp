// SPDX-License-Identifier: Apache-2.0
// VPU datapath tests at N = 4: vpu_act_row (requantization, activation, LUT)
// and vpu_vop_row (element-wise ops, pooling). Every output lane is compared
// exactly with sw/common/include/tpu/quant.h. Streams run with random input gaps and
// random output backpressure; the runner also checks the handshake rules
// (no combinational path from out_ready_i to out_valid_o or in_ready_o, a
// stalled output row is held) and that no row appears that was not sent.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "Vvpu_act_row.h"
#include "Vvpu_vop_row.h"
#include "bits.h"
#include "tpu/isa.h"
#include "tpu/quant.h"
#include "verilated_fixture.h"

namespace {

namespace isa = tpu::isa;
namespace q = tpu::quant;

constexpr int N = 4;                 // lanes, as verilated (-GN=4)
constexpr uint64_t kActLatency = 9;  // input handshake -> out_valid_o, vpu_act_row
constexpr uint64_t kVopLatency = 3;  // the same for vpu_vop_row
constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();

using Row = std::array<int8_t, N>;

struct OutBeat {
  Row row{};
  uint32_t user = 0;
  bool operator==(const OutBeat&) const = default;
};

std::string to_string(const OutBeat& b) {
  std::ostringstream s;
  s << "[";
  for (int j = 0; j < N; ++j) s << (j ? " " : "") << int(b.row[j]);
  s << "] user " << b.user;
  return s.str();
}

// ---------------------------------------------------------------------------
// Stream runner shared by both blocks.
// ---------------------------------------------------------------------------
struct Pacing {
  double in_gap = 0.0;              // per cycle: input valid withheld
  double out_stall = 0.0;           // per cycle: out_ready_i low
  std::vector<bool> out_ready = {};  // if set: out_ready_i per cycle, repeated (out_stall unused)
};

struct StreamRecord {
  std::vector<OutBeat> out;
  std::vector<uint64_t> in_fire, out_fire;  // cycles relative to the start
  uint64_t comb_violations = 0;             // valid/ready followed out_ready_i
  uint64_t hold_violations = 0;             // a stalled output row changed
  bool timed_out = false;
};

template <class Model>
OutBeat read_out(Model& d) {
  OutBeat b;
  for (int j = 0; j < N; ++j) b.row[j] = int8_t(tb::get_field(d.out_row_o, 8 * unsigned(j), 8));
  b.user = uint32_t(d.out_user_o);
  return b;
}

// Offers beats in order (each held until accepted; between beats the data
// inputs carry another beat's values as junk) and collects `outputs` rows.
template <class Fixture, class Beat, class Apply>
StreamRecord run_stream(Fixture& f, const std::vector<Beat>& beats, size_t outputs,
                        const Pacing& pace, Apply apply) {
  auto& dut = f.dut();
  StreamRecord rec;
  size_t next = 0;
  bool offer = false, held = false;
  OutBeat held_beat;
  const uint64_t start = f.cycle();
  const uint64_t timeout = 200 + 60 * (beats.size() + outputs);
  while (rec.out.size() < outputs) {
    const uint64_t now = f.cycle() - start;
    if (now >= timeout) {
      rec.timed_out = true;
      break;
    }
    if (!offer && next < beats.size()) offer = !f.chance(pace.in_gap);
    dut.clear_i = 0;
    dut.in_valid_i = offer;
    if (offer) apply(dut, beats[next]);
    else if (!beats.empty()) apply(dut, beats[size_t(f.rand_int(0, int64_t(beats.size()) - 1))]);
    // Neither out_valid_o nor in_ready_o may follow out_ready_i within a cycle.
    dut.out_ready_i = 0;
    f.settle();
    const bool valid0 = dut.out_valid_o, ready0 = dut.in_ready_o;
    dut.out_ready_i = 1;
    f.settle();
    if (valid0 != bool(dut.out_valid_o) || ready0 != bool(dut.in_ready_o)) ++rec.comb_violations;
    dut.out_ready_i = pace.out_ready.empty() ? !f.chance(pace.out_stall)
                                             : bool(pace.out_ready[now % pace.out_ready.size()]);
    f.settle();
    const OutBeat ob = read_out(dut);
    if (held && (!dut.out_valid_o || !(ob == held_beat))) ++rec.hold_violations;
    if (dut.out_valid_o && dut.out_ready_i) {
      rec.out.push_back(ob);
      rec.out_fire.push_back(now);
    }
    held = dut.out_valid_o && !dut.out_ready_i;
    held_beat = ob;
    if (offer && dut.in_ready_o) {
      rec.in_fire.push_back(now);
      ++next;
      offer = false;
    }
    f.tick();
  }
  dut.in_valid_i = 0;
  return rec;
}

// Rows that come out with nothing sent.
template <class Fixture>
int drain_extra(Fixture& f, int cycles) {
  auto& dut = f.dut();
  int extra = 0;
  dut.in_valid_i = 0;
  dut.out_ready_i = 1;
  for (int c = 0; c < cycles; ++c) {
    f.settle();
    if (dut.out_valid_o) ++extra;
    f.tick();
  }
  return extra;
}

// Checks a run against the expected rows; details the first few mismatches.
template <class Fixture, class Describe>
void check_run(Fixture& f, const StreamRecord& rec, const std::vector<OutBeat>& expected,
               Describe describe) {
  EXPECT_FALSE(rec.timed_out) << "stopped producing rows after " << rec.out.size() << " of "
                              << expected.size();
  EXPECT_EQ(rec.comb_violations, 0u)
      << "out_valid_o or in_ready_o changed with out_ready_i in the same cycle";
  EXPECT_EQ(rec.hold_violations, 0u) << "a stalled output row changed or was withdrawn";
  size_t bad = 0;
  for (size_t i = 0; i < std::min(rec.out.size(), expected.size()); ++i) {
    if (rec.out[i] == expected[i]) continue;
    if (++bad <= 5)
      ADD_FAILURE() << "output row " << i << ": got " << to_string(rec.out[i]) << ", expected "
                    << to_string(expected[i]) << "\n" << describe(i);
  }
  EXPECT_EQ(bad, 0u) << "output rows differ from quant.h";
  EXPECT_EQ(drain_extra(f, 8), 0) << "rows came out that nobody sent";
}

// ---------------------------------------------------------------------------
// vpu_act_row
// ---------------------------------------------------------------------------
struct ActBeat {
  std::array<int32_t, N> acc{}, bias{};
  bool bias_en = false;
  q::QuantParams p;
  q::Act func = q::Act::kNone;
  uint32_t user = 0;
  // Per-lane scales (per-channel requantization); without them every lane
  // has p's per-tensor scale (M0 = p.multiplier, e = -p.shift).
  bool per_lane = false;
  std::array<q::LaneScale, N> scale{};
};

q::LaneScale lane_scale(const ActBeat& b, int j) {
  return b.per_lane ? b.scale[size_t(j)] : q::tensor_scale(b.p);
}

void apply_act(Vvpu_act_row& d, const ActBeat& b) {
  for (int j = 0; j < N; ++j) {
    tb::set_field(d.in_acc_i, 32 * unsigned(j), 32, uint32_t(b.acc[j]));
    tb::set_field(d.in_bias_i, 32 * unsigned(j), 32, uint32_t(b.bias[j]));
  }
  d.in_bias_en_i = b.bias_en;
  for (int j = 0; j < N; ++j) {
    const q::LaneScale s = lane_scale(b, j);
    tb::set_field(d.in_multiplier_i, 32 * unsigned(j), 32, uint32_t(s.multiplier));
    tb::set_field(d.in_exponent_i, 6 * unsigned(j), 6, uint32_t(s.exponent) & 0x3f);
  }
  d.in_zero_point_i = uint32_t(b.p.zero_point);
  d.in_qmin_i = uint8_t(b.p.qmin);
  d.in_qmax_i = uint8_t(b.p.qmax);
  d.in_relu6_max_i = uint8_t(b.p.relu6_max);
  d.in_func_i = uint8_t(b.func);
  d.in_user_i = b.user;
}

std::string describe_act(const ActBeat& b) {
  std::ostringstream s;
  s << "  M0 " << b.p.multiplier << " shift " << b.p.shift << " zp " << b.p.zero_point << " qmin "
    << b.p.qmin << " qmax " << b.p.qmax << " relu6_max " << b.p.relu6_max << " func "
    << int(b.func) << " bias_en " << b.bias_en << "\n";
  for (int j = 0; j < N; ++j)
    s << "  lane " << j << ": acc " << b.acc[j] << " bias " << b.bias[j] << " M0 "
      << lane_scale(b, j).multiplier << " e " << lane_scale(b, j).exponent << "\n";
  return s.str();
}

// MBQM(sat32(acc + bias)): the requantized value before zp and clamp.
int32_t requant_core(int32_t acc, int32_t bias, const q::LaneScale& s) {
  return q::multiply_by_quantized_multiplier(q::sat32(int64_t{acc} + bias), s.multiplier, s.exponent);
}
int32_t requant_core(int32_t acc, int32_t bias, const q::QuantParams& p) {
  return requant_core(acc, bias, q::tensor_scale(p));
}

class ActRowTest : public tb::VerilatedFixture<Vvpu_act_row> {
 protected:
  std::array<int8_t, 256> lut_{};     // the table the next rows use
  std::array<int8_t, 256> dut_lut_{};  // the block's table: all 0 after reset

  void SetUp() override {
    tb::VerilatedFixture<Vvpu_act_row>::SetUp();
    wait_lut_ready();
    randomize_lut();
  }

  // After reset the block clears its table (256 cycles) and takes no rows.
  void wait_lut_ready() {
    auto& d = dut();
    d.in_valid_i = 0;
    d.lut_wr_en_i = 0;
    int cycles = 0;
    for (settle(); !d.lut_ready_o && cycles < 300; settle(), ++cycles) {
      EXPECT_FALSE(d.in_ready_o) << "a row is taken while the table is cleared";
      tick();
    }
    ASSERT_TRUE(d.lut_ready_o) << "the table's reset clear did not finish";
    EXPECT_GE(cycles, 255) << "the table's reset clear is too short for 256 entries";
  }

  void randomize_lut() {
    for (auto& v : lut_) v = int8_t(rand_int(-128, 127));
  }

  // Writes the entries where the block's table differs from lut_, one per
  // cycle through the write port, in random order and with random gaps (as
  // CFG commands would). Called between streams: no row is in flight.
  void write_lut() {
    auto& d = dut();
    std::vector<int> idx;
    for (int i = 0; i < 256; ++i)
      if (lut_[size_t(i)] != dut_lut_[size_t(i)]) idx.push_back(i);
    for (size_t k = idx.size(); k > 1; --k) std::swap(idx[k - 1], idx[size_t(rand_int(0, int64_t(k) - 1))]);
    d.in_valid_i = 0;
    for (int i : idx) {
      while (chance(0.2)) tick();
      d.lut_wr_en_i = 1;
      d.lut_wr_idx_i = uint8_t(i);
      d.lut_wr_data_i = uint8_t(lut_[size_t(i)]);
      tick();
      d.lut_wr_en_i = 0;
      d.lut_wr_idx_i = uint8_t(rand_int(0, 255));  // junk while not writing
      d.lut_wr_data_i = uint8_t(rand_int(0, 255));
      dut_lut_[size_t(i)] = lut_[size_t(i)];
    }
  }

  OutBeat expected(const ActBeat& b) const {
    OutBeat o;
    for (int j = 0; j < N; ++j)
      o.row[j] = q::act_lane(b.acc[j], b.bias_en ? b.bias[j] : 0, lane_scale(b, j), b.p, b.func,
                             lut_.data());
    o.user = b.user;
    return o;
  }

  // Streams the beats through the block and checks every row.
  void run(const std::vector<ActBeat>& beats, const Pacing& pace) {
    write_lut();
    std::vector<OutBeat> exp;
    for (const auto& b : beats) exp.push_back(expected(b));
    const StreamRecord rec = run_stream(*this, beats, exp.size(), pace, apply_act);
    check_run(*this, rec, exp, [&](size_t i) { return describe_act(beats[i]); });
  }

  int32_t random_i32() {
    switch (rand_int(0, 9)) {
      case 0: case 1: case 2: return int32_t(rand_int(kI32Min, kI32Max));
      case 3: case 4: return int32_t(rand_int(-1000, 1000));
      case 5: {
        static constexpr int32_t kEdge[] = {kI32Min, kI32Min + 1, kI32Max, kI32Max - 1, 0, -1, 1};
        return kEdge[rand_int(0, 6)];
      }
      case 6: case 7: {
        const int64_t p = int64_t{1} << rand_int(0, 31);
        return q::sat32((chance(0.5) ? -p : p) + rand_int(-2, 2));
      }
      default: return int32_t(rand_int(-(1 << 24), 1 << 24));
    }
  }

  int32_t random_multiplier() {
    switch (rand_int(0, 9)) {
      case 0: case 1: case 2: case 3: case 4: return int32_t(rand_int(int64_t{1} << 30, kI32Max));
      case 5: {
        static constexpr int32_t kEdge[] = {kI32Min, kI32Min + 1, kI32Max, 0, 1, -1, 1 << 30, -(1 << 30)};
        return kEdge[rand_int(0, 7)];
      }
      default: return int32_t(rand_int(kI32Min, kI32Max));
    }
  }

  // A row with random parameters. Most rows are "visible": the lanes are
  // close to lane 0 (so their results differ by at most a few hundred after
  // M0 and the shift) and the zero point puts lane 0 near the middle of the
  // int8 range, so the rounding shows in the int8 output. The others have
  // independent lanes and any zero point, and mostly exercise the clamp.
  ActBeat random_beat(q::Act func) {
    ActBeat b;
    b.func = func;
    b.p.multiplier = random_multiplier();
    b.p.shift = int32_t(rand_int(0, 31));
    b.bias_en = chance(0.7);
    const bool visible = chance(0.7);
    const int64_t spread = int64_t{1} << rand_int(0, std::min(31, b.p.shift + 7));
    b.acc[0] = random_i32();
    b.bias[0] = chance(0.3) ? random_i32() : int32_t(rand_int(-5000, 5000));
    for (int j = 1; j < N; ++j) {
      if (visible) {
        b.acc[j] = q::sat32(int64_t{b.acc[0]} + rand_int(-spread, spread));
        b.bias[j] = q::sat32(int64_t{b.bias[0]} + rand_int(-spread, spread));
      } else {
        b.acc[j] = random_i32();
        b.bias[j] = chance(0.3) ? random_i32() : int32_t(rand_int(-5000, 5000));
      }
    }
    switch (rand_int(0, 4)) {
      case 0: case 1: break;  // full range
      case 2: {
        b.p.qmin = int32_t(rand_int(-128, 127));
        b.p.qmax = int32_t(rand_int(b.p.qmin, 127));
        break;
      }
      case 3:  // any order, including qmin > qmax
        b.p.qmin = int32_t(rand_int(-128, 127));
        b.p.qmax = int32_t(rand_int(-128, 127));
        break;
      default:
        b.p.qmin = int32_t(rand_int(-20, 0));
        b.p.qmax = int32_t(rand_int(0, 20));
        break;
    }
    b.p.relu6_max = chance(0.3) ? 127 : int32_t(rand_int(-128, 127));
    const int32_t r0 = requant_core(b.acc[0], b.bias_en ? b.bias[0] : 0, b.p);
    if (visible) {
      b.p.zero_point = q::sat32(-int64_t{r0} + rand_int(-60, 60));
    } else {
      switch (rand_int(0, 3)) {
        case 0: b.p.zero_point = int32_t(rand_int(-128, 127)); break;
        case 1: case 2: b.p.zero_point = random_i32(); break;
        default: {
          static constexpr int32_t kEdge[] = {kI32Min, kI32Min + 1, kI32Max, kI32Max - 1, 0};
          b.p.zero_point = kEdge[rand_int(0, 4)];
        }
      }
    }
    b.user = uint32_t(rand_int(0, 1));
    return b;
  }

  q::Act random_func() { return q::Act(rand_int(0, 3)); }

  // Rows around one lane case (acc, bias, M0, s): the neighbours acc - 1 and
  // acc + 1, the case without its bias, and zero points that make the result
  // visible (zp = -r + offset) or leave it to the clamp (zp = 0).
  void add_case_rows(std::vector<ActBeat>& beats, int32_t acc, int32_t bias, int32_t m0, int shift) {
    ActBeat b;
    b.p.multiplier = m0;
    b.p.shift = shift;
    b.bias_en = true;
    b.acc = {acc, q::sat32(int64_t{acc} - 1), q::sat32(int64_t{acc} + 1), acc};
    b.bias = {bias, bias, bias, 0};
    const int32_t r = requant_core(acc, bias, b.p);
    for (int64_t off : {int64_t{0}, rand_int(-100, 100)}) {
      b.p.zero_point = q::sat32(-int64_t{r} + off);
      b.user = uint32_t(rand_int(0, 1));
      beats.push_back(b);
    }
    b.p.zero_point = 0;
    beats.push_back(b);
  }

  // A lane's scale: TFLite-like (M0 in [2^30, 2^31), e in -16..4), any
  // exponent, or the edges.
  q::LaneScale random_lane_scale() {
    q::LaneScale s;
    s.multiplier = random_multiplier();
    switch (rand_int(0, 5)) {
      case 0: case 1: s.exponent = int32_t(rand_int(-16, 4)); break;
      case 2: case 3: s.exponent = int32_t(rand_int(q::kMinExponent, q::kMaxExponent)); break;
      case 4: s.exponent = int32_t(rand_int(1, q::kMaxExponent)); break;
      default: {
        static constexpr int32_t kEdge[] = {q::kMinExponent, q::kMaxExponent, 0, 1, -1, 30, -30};
        s.exponent = kEdge[rand_int(0, 6)];
      }
    }
    return s;
  }

  // A row whose lanes each have their own scale. Most rows are "visible":
  // each lane's x is chosen from its scale so that its result lands near a
  // common target, and the zero point puts the target near the middle of the
  // int8 range, so every lane's rounding (and a lane taking another lane's
  // scale) shows in the output. The others have random lanes.
  ActBeat random_per_lane_beat(q::Act func) {
    ActBeat b = random_beat(func);
    b.per_lane = true;
    for (auto& s : b.scale) s = random_lane_scale();
    if (chance(0.75)) {
      // Scales 2^-11 .. 2^6 (x = target / scale fits int32, and the output
      // steps are small enough to land inside the clamp range).
      const int64_t target = rand_int(-(1 << 20), 1 << 20);
      b.p.qmin = -128;
      b.p.qmax = 127;
      for (int j = 0; j < N; ++j) {
        q::LaneScale& s = b.scale[size_t(j)];
        s.exponent = int32_t(rand_int(-10, 6));
        const double scale = std::ldexp(double(s.multiplier), s.exponent - 31);
        const double x = scale != 0.0 ? double(target + rand_int(-40, 40)) / scale : 0.0;
        const int32_t bias = b.bias_en ? b.bias[size_t(j)] : 0;
        b.acc[size_t(j)] = q::sat32(int64_t(std::clamp(std::nearbyint(x), -4e9, 4e9)) - bias);
      }
      b.p.zero_point = q::sat32(-target + rand_int(-60, 60));
    }
    return b;
  }

  // Lanes of a per-lane row strictly inside the clamp range.
  static int lanes_inside(const ActBeat& b) {
    int inside = 0;
    for (int j = 0; j < N; ++j) {
      const int64_t v = int64_t{b.p.zero_point} +
                        requant_core(b.acc[size_t(j)], b.bias_en ? b.bias[size_t(j)] : 0, lane_scale(b, j));
      if (v > b.p.qmin && v < b.p.qmax) ++inside;
    }
    return inside;
  }
};

// SRDHM's one overflow: INT32_MIN x INT32_MIN saturates to INT32_MAX; the
// neighbours do not saturate; x itself may come from a saturated acc + bias.
TEST_F(ActRowTest, SrdhmSaturation) {
  std::vector<ActBeat> beats;
  for (int s = 0; s < 32; ++s) {
    add_case_rows(beats, kI32Min, 0, kI32Min, s);
    add_case_rows(beats, kI32Min, -7, kI32Min, s);  // sat32(acc + bias) = INT32_MIN
    add_case_rows(beats, kI32Min + 1, 0, kI32Min, s);
    add_case_rows(beats, kI32Min, 0, kI32Min + 1, s);
    add_case_rows(beats, kI32Max, 0, kI32Min, s);
    add_case_rows(beats, kI32Min, 0, kI32Max, s);
    add_case_rows(beats, kI32Max, 0, kI32Max, s);
  }
  run(beats, {.in_gap = 0.2, .out_stall = 0.2});
}

// Every shift 0..31 with values on, just below and just above the rounding
// threshold of RDBP, positive and negative. With M0 = 2^30, SRDHM(2y) = y
// exactly, and SRDHM(2y +- 1) hits SRDHM's own ties (ab = +-(2k+1) * 2^30).
TEST_F(ActRowTest, EveryShiftRoundingTies) {
  std::vector<ActBeat> beats;
  for (int s = 0; s < 32; ++s) {
    const int64_t half = s ? int64_t{1} << (s - 1) : 0;
    for (int64_t k : {-3, -2, -1, 0, 1, 2}) {
      for (int64_t d : {-1, 0, 1}) {
        const int64_t y = (k << s) + half + d;
        if (y < -(int64_t{1} << 30) || y >= (int64_t{1} << 30)) continue;
        ActBeat b;
        b.p.multiplier = 1 << 30;
        b.p.shift = s;
        b.acc = {int32_t(2 * y), q::sat32(2 * y + 1), q::sat32(2 * y - 1), q::sat32(2 * y + 2)};
        b.p.zero_point = q::sat32(-(y >> s));
        b.user = uint32_t(rand_int(0, 1));
        beats.push_back(b);
      }
    }
    // The largest reachable magnitudes (|SRDHM| = 2^31 - 1) at this shift.
    add_case_rows(beats, kI32Min, 0, kI32Min, s);
    add_case_rows(beats, kI32Min, 0, kI32Max, s);
  }
  run(beats, {.in_gap = 0.3, .out_stall = 0.3});
}

// acc + bias overflowing in both directions (and exactly not overflowing),
// the final clamp at both ends, and zero points whose sum with the
// requantized value leaves the int32 range.
TEST_F(ActRowTest, Saturation) {
  std::vector<ActBeat> beats;
  const std::pair<int32_t, int32_t> sums[] = {
      {kI32Max, kI32Max}, {kI32Min, kI32Min}, {kI32Max, 1}, {kI32Min, -1}, {kI32Max - 1, 1},
      {kI32Min + 1, -1}, {kI32Max, kI32Min}, {kI32Max, 0}, {kI32Min, 0}, {1 << 30, 1 << 30}};
  for (const auto& [acc, bias] : sums)
    for (int32_t m0 : {1 << 30, kI32Max, kI32Min, 0x7fff0000, random_multiplier()})
      for (int s : {0, 1, 15, 30, 31}) add_case_rows(beats, acc, bias, m0, s);
  // zp + r beyond int32: r = INT32_MAX (MIN x MIN) or INT32_MIN + 1 (MIN x MAX).
  for (int32_t m0 : {kI32Min, kI32Max})
    for (int32_t zp : {kI32Max, kI32Min, kI32Max - 5, kI32Min + 5, 0, 127, -128}) {
      ActBeat b;
      b.p.multiplier = m0;
      b.p.shift = 0;
      b.p.zero_point = zp;
      b.acc = {kI32Min, kI32Min, kI32Min + 1, kI32Max};
      b.bias = {0, -1, 0, 0};
      b.bias_en = true;
      for (auto func : {q::Act::kNone, q::Act::kRelu, q::Act::kRelu6, q::Act::kLut}) {
        b.func = func;
        b.p.relu6_max = int32_t(rand_int(-128, 127));
        beats.push_back(b);
      }
    }
  run(beats, {.in_gap = 0.2, .out_stall = 0.4});
}

// Inconsistent clamp configurations: qmin > qmax, ReLU with zp above qmax or
// beyond int8, ReLU6 with relu6_max below qmin. The result is hi, as in quant.h.
TEST_F(ActRowTest, InconsistentClampBounds) {
  std::vector<ActBeat> beats;
  for (int i = 0; i < 400; ++i) {
    ActBeat b = random_beat(random_func());
    switch (i % 4) {
      case 0:
        b.p.qmin = int32_t(rand_int(-127, 127));
        b.p.qmax = int32_t(rand_int(-128, b.p.qmin - 1));
        break;
      case 1: {
        static constexpr int32_t kZp[] = {128, 1000, kI32Max, -129, -1000, kI32Min, 127, -128};
        b.p.zero_point = kZp[rand_int(0, 7)];
        break;
      }
      case 2:
        b.p.qmin = int32_t(rand_int(-100, 127));
        b.p.relu6_max = int32_t(rand_int(-128, b.p.qmin));
        break;
      default: b.p.zero_point = int32_t(rand_int(b.p.qmax, 127)); break;
    }
    beats.push_back(b);
  }
  run(beats, {.in_gap = 0.2, .out_stall = 0.2});
}

// Each activation function on its own, with its own random table.
TEST_F(ActRowTest, EachActivationFunction) {
  for (auto func : {q::Act::kNone, q::Act::kRelu, q::Act::kRelu6, q::Act::kLut}) {
    SCOPED_TRACE("func " + std::to_string(int(func)));
    randomize_lut();
    std::vector<ActBeat> beats;
    for (int i = 0; i < 400; ++i) beats.push_back(random_beat(func));
    run(beats, {.in_gap = 0.3, .out_stall = 0.3});
  }
}

// LUT rows see the whole table: an identity-like table (entry i = i - 128 + 1)
// driven by outputs that sweep every q in -128..127.
TEST_F(ActRowTest, LutSweepsEveryEntry) {
  for (int i = 0; i < 256; ++i) lut_[size_t(i)] = int8_t(i - 127);
  std::vector<ActBeat> beats;
  for (int v = -128; v < 128; v += N) {
    ActBeat b;
    b.func = q::Act::kLut;
    b.p.multiplier = 1 << 30;  // SRDHM(2y) = y
    for (int j = 0; j < N; ++j) b.acc[j] = 2 * (v + j);
    beats.push_back(b);
  }
  run(beats, {.in_gap = 0.1, .out_stall = 0.1});
}

// Thousands of random lanes with random parameters per row, random functions,
// gaps and backpressure. Enough of them must land strictly inside the clamp
// range for the comparison to mean something.
TEST_F(ActRowTest, RandomLanes) {
  std::vector<ActBeat> beats;
  int inside = 0;
  for (int i = 0; i < 4000; ++i) {
    beats.push_back(random_beat(random_func()));
    const ActBeat& b = beats.back();
    for (int j = 0; j < N; ++j) {
      const int64_t v = int64_t{b.p.zero_point} + requant_core(b.acc[j], b.bias_en ? b.bias[j] : 0, b.p);
      if (v > b.p.qmin && v < b.p.qmax) ++inside;
    }
  }
  EXPECT_GT(inside, 4000 * N * 3 / 10) << "too few lanes exercise the rounding";
  run(beats, {.in_gap = 0.3, .out_stall = 0.3});
  std::vector<ActBeat> more;
  for (int i = 0; i < 1000; ++i) more.push_back(random_beat(random_func()));
  run(more, {.in_gap = 0.05, .out_stall = 0.7});
}

// No gaps, output always ready: R rows in at most R + latency + 2 cycles,
// one row per cycle on both sides, the first after exactly the latency.
TEST_F(ActRowTest, Throughput) {
  constexpr int kRows = 256;
  std::vector<ActBeat> beats;
  for (int i = 0; i < kRows; ++i) beats.push_back(random_beat(random_func()));
  write_lut();
  const StreamRecord rec = run_stream(*this, beats, kRows, {}, apply_act);
  ASSERT_EQ(rec.out.size(), size_t(kRows));
  ASSERT_EQ(rec.in_fire.size(), size_t(kRows));
  for (int i = 0; i < kRows; ++i) EXPECT_EQ(rec.out[size_t(i)], expected(beats[size_t(i)])) << "row " << i;
  EXPECT_LE(rec.out_fire.back() + 1, uint64_t(kRows) + kActLatency + 2);
  EXPECT_EQ(rec.out_fire.front() - rec.in_fire.front(), kActLatency);
  EXPECT_EQ(rec.in_fire.back() - rec.in_fire.front(), uint64_t(kRows - 1)) << "input stalls";
  EXPECT_EQ(rec.out_fire.back() - rec.out_fire.front(), uint64_t(kRows - 1)) << "output bubbles";
}

// clear_i drops the rows held in the pipeline; the next rows are unaffected.
TEST_F(ActRowTest, ClearDropsRowsInFlight) {
  auto& d = dut();
  std::vector<ActBeat> stale;
  for (int i = 0; i < 12; ++i) stale.push_back(random_beat(random_func()));
  d.out_ready_i = 0;
  size_t accepted = 0;
  for (int c = 0; c < 20 && accepted < stale.size(); ++c) {
    d.in_valid_i = 1;
    apply_act(d, stale[accepted]);
    settle();
    if (d.in_ready_o) ++accepted;
    tick();
  }
  EXPECT_EQ(accepted, kActLatency + 1) << "the 8 stages and the two output slots hold 10 rows";
  d.clear_i = 1;
  settle();
  EXPECT_FALSE(d.in_ready_o) << "no row is accepted while clearing";
  tick();
  d.clear_i = 0;
  d.in_valid_i = 0;
  EXPECT_EQ(drain_extra(*this, 8), 0) << "cleared rows came out";
  std::vector<ActBeat> beats;
  for (int i = 0; i < 50; ++i) beats.push_back(random_beat(random_func()));
  run(beats, {.in_gap = 0.2, .out_stall = 0.2});
}

// After reset the table is all zeros (the ISA's reset value of every entry):
// LUT rows before any write give 0 in every lane.
TEST_F(ActRowTest, LutIsZeroAfterReset) {
  lut_.fill(0);
  std::vector<ActBeat> beats;
  for (int i = 0; i < 100; ++i) beats.push_back(random_beat(q::Act::kLut));
  run(beats, {.in_gap = 0.2, .out_stall = 0.2});
}

// The table rewritten between streams, in part or in whole, with LUT and
// other rows mixed in each stream: every row sees the table written before
// it was sent, never an older one.
TEST_F(ActRowTest, LutRewriteBetweenStreams) {
  for (int round = 0; round < 12; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    switch (round % 3) {
      case 0: randomize_lut(); break;
      case 1:  // a few entries
        for (int k = 0; k < 8; ++k) lut_[size_t(rand_int(0, 255))] = int8_t(rand_int(-128, 127));
        break;
      default:  // one entry, the one lane 0 of every row looks up
        lut_[128] = int8_t(lut_[128] ^ 0x5a);
        break;
    }
    std::vector<ActBeat> beats;
    for (int i = 0; i < 60; ++i) {
      ActBeat b = random_beat(chance(0.7) ? q::Act::kLut : random_func());
      if (round % 3 == 2) {  // q = 0 in lane 0: entry 128
        b.acc[0] = 0;
        b.bias[0] = 0;
        b.p.zero_point = 0;
        b.p.qmin = -128;
        b.p.qmax = 127;
      }
      beats.push_back(b);
    }
    run(beats, {.in_gap = 0.3, .out_stall = 0.4});
  }
}

// Per-channel requantization: every lane has its own multiplier and exponent
// (left shifts included), random per row; most rows are built so that every
// lane's result is inside the clamp range.
TEST_F(ActRowTest, PerLaneScales) {
  std::vector<ActBeat> beats;
  int inside = 0;
  for (int i = 0; i < 3000; ++i) {
    beats.push_back(random_per_lane_beat(i % 5 ? q::Act::kNone : random_func()));
    inside += lanes_inside(beats.back());
  }
  EXPECT_GT(inside, 3000 * N * 4 / 10) << "too few lanes exercise the rounding";
  run(beats, {.in_gap = 0.3, .out_stall = 0.3});
  // Per-lane and per-tensor rows interleaved, back to back.
  std::vector<ActBeat> mixed;
  for (int i = 0; i < 1000; ++i)
    mixed.push_back(chance(0.5) ? random_per_lane_beat(random_func()) : random_beat(random_func()));
  run(mixed, {.in_gap = 0.05, .out_stall = 0.5});
}

// Each lane a different exponent, so a lane that used another lane's scale
// (or lane 0's for all) gives a different int8: x = 200 in every lane and
// M0 = 0.5, exponents e0..e3 a random permutation of four distinct values.
TEST_F(ActRowTest, EachLaneItsOwnScale) {
  std::vector<ActBeat> beats;
  for (int i = 0; i < 200; ++i) {
    ActBeat b;
    b.per_lane = true;
    std::array<int32_t, N> e = {-3, -1, 0, 1};
    for (size_t k = N; k > 1; --k) std::swap(e[k - 1], e[size_t(rand_int(0, int64_t(k) - 1))]);
    for (int j = 0; j < N; ++j) {
      b.scale[size_t(j)] = {0x40000000, e[size_t(j)]};
      b.acc[size_t(j)] = 200 + int32_t(rand_int(-3, 3));  // 200 * 0.5 * 2^e: 12.5 .. 200
    }
    b.p.zero_point = int32_t(rand_int(-105, -95));  // results -92 .. 105
    beats.push_back(b);
  }
  run(beats, {.in_gap = 0.2, .out_stall = 0.2});
}

// Left shifts at every exponent 1..31 on values whose shift just fits, just
// overflows (wraps), lands on INT32_MIN (with M0 = INT32_MIN: SRDHM's
// saturation), and the int32 extremes; every right shift -31..0 on the
// extremes too.
TEST_F(ActRowTest, LeftShiftWrapAndExtremes) {
  std::vector<ActBeat> beats;
  for (int e = q::kMinExponent; e <= q::kMaxExponent; ++e) {
    const int64_t edge = e > 0 ? int64_t{1} << (31 - e) : int64_t{1} << 30;  // x << e = 2^31
    const int64_t xs[] = {edge - 1, edge, edge + 1, -edge, -edge - 1, -edge + 1, kI32Min, kI32Max};
    for (int32_t m0 : {kI32Min, kI32Max, 1 << 30, 0x5a5a5a5a, -(1 << 30)}) {
      for (size_t k = 0; k < std::size(xs); k += N) {
        ActBeat b;
        b.per_lane = true;
        for (int j = 0; j < N; ++j) {
          b.acc[size_t(j)] = q::sat32(xs[k + size_t(j)]);
          b.scale[size_t(j)] = {m0, e};
        }
        // Lane 0's result visible, the others mostly at the clamp.
        b.p.zero_point = q::sat32(-int64_t{requant_core(b.acc[0], 0, b.scale[0])} + rand_int(-50, 50));
        beats.push_back(b);
        b.p.zero_point = 0;
        beats.push_back(b);
      }
    }
  }
  run(beats, {.in_gap = 0.2, .out_stall = 0.3});
}

// Back-pressure against every stage: out_ready_i low for k cycles, then high
// for m, for every k and m up to beyond the pipeline depth, so stalls start
// and end with rows (LUT rows among them) in every stage, the table's read
// register included.
TEST_F(ActRowTest, StallPatternsAcrossStages) {
  for (int k = 1; k <= int(kActLatency) + 3; ++k) {
    for (int m = 1; m <= 3; ++m) {
      SCOPED_TRACE("stall " + std::to_string(k) + " ready " + std::to_string(m));
      std::vector<bool> pattern(size_t(k), false);
      pattern.insert(pattern.end(), size_t(m), true);
      std::vector<ActBeat> beats;
      for (int i = 0; i < 40; ++i) beats.push_back(random_beat(chance(0.6) ? q::Act::kLut : random_func()));
      run(beats, {.in_gap = m == 3 ? 0.3 : 0.0, .out_ready = pattern});
    }
  }
}

// ---------------------------------------------------------------------------
// vpu_vop_row
// ---------------------------------------------------------------------------
// The operations and their SHIFT ranges come from the ISA table (isa::kVops).
constexpr uint8_t kAdd = uint8_t(isa::VopOp::kAdd), kMul = uint8_t(isa::VopOp::kMul), kMax = uint8_t(isa::VopOp::kMax),
                  kMin = uint8_t(isa::VopOp::kMin), kPoolMax = uint8_t(isa::VopOp::kPoolMax),
                  kPoolAvg = uint8_t(isa::VopOp::kPoolAvg);

struct VopBeat {
  Row a{}, b{};
  uint8_t op = kAdd;
  uint8_t shift = 0;
  bool first = true, last = true;
  uint32_t user = 0;
};

void apply_vop(Vvpu_vop_row& d, const VopBeat& b) {
  for (int j = 0; j < N; ++j) {
    tb::set_field(d.in_a_i, 8 * unsigned(j), 8, uint8_t(b.a[j]));
    tb::set_field(d.in_b_i, 8 * unsigned(j), 8, uint8_t(b.b[j]));
  }
  d.in_op_i = b.op;
  d.in_shift_i = b.shift;
  d.in_first_i = b.first;
  d.in_last_i = b.last;
  d.in_user_i = b.user;
}

bool is_pool(uint8_t op) { return !isa::find_vop(op)->binary; }
uint8_t max_shift(uint8_t op) { return isa::find_vop(op)->max_shift; }

// Expected rows (quant.h) and, for each, a description of the input rows.
struct VopExpectation {
  std::vector<OutBeat> rows;
  std::vector<std::string> inputs;
};

VopExpectation vop_expected(const std::vector<VopBeat>& beats) {
  VopExpectation e;
  std::array<int32_t, N> acc{};
  std::ostringstream in;
  for (size_t i = 0; i < beats.size(); ++i) {
    const VopBeat& b = beats[i];
    in << "  beat " << i << " op " << int(b.op) << " shift " << int(b.shift) << " first " << b.first
       << " last " << b.last << " a [";
    for (int j = 0; j < N; ++j) in << (j ? " " : "") << int(b.a[j]);
    in << "] b [";
    for (int j = 0; j < N; ++j) in << (j ? " " : "") << int(b.b[j]);
    in << "]\n";
    OutBeat o;
    o.user = b.user;
    if (!is_pool(b.op)) {
      for (int j = 0; j < N; ++j) {
        switch (b.op) {
          case kAdd: o.row[j] = q::vop_add(b.a[j], b.b[j]); break;
          case kMul: o.row[j] = q::vop_mul(b.a[j], b.b[j], b.shift); break;
          case kMax: o.row[j] = q::vop_max(b.a[j], b.b[j]); break;
          case kMin: o.row[j] = q::vop_min(b.a[j], b.b[j]); break;
          default: ADD_FAILURE() << "no expectation for VOP " << int(b.op); break;
        }
      }
    } else {
      for (int j = 0; j < N; ++j) {
        if (b.first) acc[j] = b.a[j];
        else if (b.op == kPoolMax) acc[j] = std::max<int32_t>(acc[j], b.a[j]);
        else acc[j] += b.a[j];
      }
      if (!b.last) continue;
      for (int j = 0; j < N; ++j)
        o.row[j] = b.op == kPoolMax ? int8_t(acc[j]) : q::pool_avg(acc[j], b.shift);
    }
    e.rows.push_back(o);
    e.inputs.push_back(in.str());
    in.str("");
  }
  return e;
}

class VopRowTest : public tb::VerilatedFixture<Vvpu_vop_row> {
 protected:
  int8_t random_i8() {
    static constexpr int8_t kEdge[] = {-128, -127, -1, 0, 1, 126, 127};
    return chance(0.25) ? kEdge[rand_int(0, 6)] : int8_t(rand_int(-128, 127));
  }
  Row random_row() {
    Row r;
    for (auto& v : r) v = random_i8();
    return r;
  }

  // One element-wise row; first/last are random (the block ignores them).
  void add_elementwise(std::vector<VopBeat>& beats, uint8_t op, uint8_t shift) {
    VopBeat b;
    b.a = random_row();
    b.b = random_row();
    b.op = op;
    b.shift = shift;
    b.first = chance(0.5);
    b.last = chance(0.5);
    b.user = uint32_t(rand_int(0, 1));
    beats.push_back(b);
  }

  // One pooling group of 2^shift rows; row b is junk (ignored by the pools).
  void add_group(std::vector<VopBeat>& beats, uint8_t op, uint8_t shift, int8_t fill = 0,
                 bool filled = false) {
    const int k = 1 << shift;
    for (int r = 0; r < k; ++r) {
      VopBeat b;
      b.a = random_row();
      if (filled) b.a.fill(fill);
      b.b = random_row();
      b.op = op;
      b.shift = shift;
      b.first = r == 0;
      b.last = r == k - 1;
      b.user = uint32_t(rand_int(0, 1));
      beats.push_back(b);
    }
  }

  void run(const std::vector<VopBeat>& beats, const Pacing& pace) {
    const VopExpectation e = vop_expected(beats);
    const StreamRecord rec = run_stream(*this, beats, e.rows.size(), pace, apply_vop);
    check_run(*this, rec, e.rows, [&](size_t i) { return e.inputs[i]; });
  }
};

TEST_F(VopRowTest, ElementwiseOps) {
  for (const isa::VopInfo& v : isa::kVops) {
    if (!v.binary) continue;
    const uint8_t op = uint8_t(v.op);
    SCOPED_TRACE("op " + std::string(v.mnemonic));
    std::vector<VopBeat> beats;
    for (int i = 0; i < 600; ++i) add_elementwise(beats, op, uint8_t(rand_int(0, max_shift(op))));
    run(beats, {.in_gap = 0.3, .out_stall = 0.3});
  }
}

// Every pair of boundary values, for every op and (MUL) every shift.
TEST_F(VopRowTest, ExtremeValues) {
  static constexpr int8_t kVals[] = {-128, -127, -64, -1, 0, 1, 63, 64, 126, 127};
  std::vector<std::pair<int8_t, int8_t>> pairs;
  for (int8_t a : kVals)
    for (int8_t b : kVals) pairs.push_back({a, b});
  std::vector<VopBeat> beats;
  auto add_pairs = [&](uint8_t op, uint8_t shift) {
    for (size_t i = 0; i < pairs.size(); i += N) {
      VopBeat b;
      b.op = op;
      b.shift = shift;
      for (int j = 0; j < N; ++j) {
        b.a[j] = pairs[(i + size_t(j)) % pairs.size()].first;
        b.b[j] = pairs[(i + size_t(j)) % pairs.size()].second;
      }
      b.user = uint32_t(rand_int(0, 1));
      beats.push_back(b);
    }
  };
  for (const isa::VopInfo& v : isa::kVops)
    if (v.binary)
      for (uint8_t s = 0; s <= v.max_shift; ++s) add_pairs(uint8_t(v.op), s);
  // Groups of all -128 and all 127 (largest sums) and alternating extremes.
  for (uint8_t s = 0; s <= 4; ++s)
    for (uint8_t op : {uint8_t(kPoolMax), uint8_t(kPoolAvg)}) {
      add_group(beats, op, s, -128, true);
      add_group(beats, op, s, 127, true);
      add_group(beats, op, s);
    }
  run(beats, {.in_gap = 0.2, .out_stall = 0.2});
}

// Both pools at every group size, with random gaps and backpressure.
TEST_F(VopRowTest, Pooling) {
  for (uint8_t s = 0; s <= 4; ++s) {
    SCOPED_TRACE("shift " + std::to_string(s));
    std::vector<VopBeat> beats;
    for (int g = 0; g < 40; ++g) add_group(beats, chance(0.5) ? kPoolMax : kPoolAvg, s);
    run(beats, {.in_gap = 0.3, .out_stall = 0.5});
  }
}

// POOLAVG rounding: group sums on and around the ties, both signs.
TEST_F(VopRowTest, PoolAverageRoundingTies) {
  std::vector<VopBeat> beats;
  for (uint8_t s = 1; s <= 4; ++s) {
    const int k = 1 << s;
    for (int target = -k * 128; target <= k * 127; target += std::max(1, k / 4)) {
      // Lane j's rows sum to target + j: floor(sum / k) in every row, plus
      // one in the first (sum mod k) rows.
      std::vector<Row> rows(static_cast<size_t>(k));
      for (int j = 0; j < N; ++j) {
        const int sum = std::min(target + j, k * 127);
        const int base = (sum >= 0 ? sum : sum - (k - 1)) / k;
        const int extra = sum - base * k;
        for (int r = 0; r < k; ++r) rows[size_t(r)][j] = int8_t(base + (r < extra ? 1 : 0));
      }
      for (int r = 0; r < k; ++r) {
        VopBeat b;
        b.a = rows[size_t(r)];
        b.op = kPoolAvg;
        b.shift = s;
        b.first = r == 0;
        b.last = r == k - 1;
        beats.push_back(b);
      }
    }
  }
  run(beats, {.in_gap = 0.1, .out_stall = 0.1});
}

// Element-wise rows and pooling groups of random ops and sizes, interleaved.
TEST_F(VopRowTest, MixedStream) {
  std::vector<VopBeat> beats;
  const auto random_op = [&] { return uint8_t(isa::kVops[rand_int(0, int(std::size(isa::kVops)) - 1)].op); };
  while (beats.size() < 3000) {
    const uint8_t op = random_op();
    if (is_pool(op))
      add_group(beats, op, uint8_t(rand_int(0, max_shift(op))));
    else
      add_elementwise(beats, op, uint8_t(rand_int(0, max_shift(op))));
  }
  run(beats, {.in_gap = 0.3, .out_stall = 0.3});
  std::vector<VopBeat> more;
  while (more.size() < 500) {
    const uint8_t op = random_op();
    if (is_pool(op))
      add_group(more, op, uint8_t(rand_int(0, max_shift(op))));
    else
      add_elementwise(more, op, uint8_t(rand_int(0, max_shift(op))));
  }
  run(more, {.in_gap = 0.0, .out_stall = 0.8});
}

// No gaps, output always ready: R element-wise rows in at most
// R + latency + 2 cycles; pooling groups take one input row per cycle.
TEST_F(VopRowTest, Throughput) {
  constexpr int kRows = 256;
  std::vector<VopBeat> beats;
  for (int i = 0; i < kRows; ++i) add_elementwise(beats, uint8_t(rand_int(0, 2)), uint8_t(rand_int(0, 15)));
  VopExpectation e = vop_expected(beats);
  StreamRecord rec = run_stream(*this, beats, e.rows.size(), {}, apply_vop);
  ASSERT_EQ(rec.out.size(), size_t(kRows));
  EXPECT_TRUE(rec.out == e.rows) << "element-wise rows differ from quant.h";
  EXPECT_LE(rec.out_fire.back() + 1, uint64_t(kRows) + kVopLatency + 2);
  EXPECT_EQ(rec.out_fire.front() - rec.in_fire.front(), kVopLatency);
  EXPECT_EQ(rec.out_fire.back() - rec.out_fire.front(), uint64_t(kRows - 1)) << "output bubbles";

  std::vector<VopBeat> pools;
  for (int g = 0; g < kRows / 4; ++g) add_group(pools, chance(0.5) ? kPoolMax : kPoolAvg, 2);
  e = vop_expected(pools);
  rec = run_stream(*this, pools, e.rows.size(), {}, apply_vop);
  ASSERT_EQ(rec.out.size(), size_t(kRows / 4));
  EXPECT_TRUE(rec.out == e.rows) << "pooled rows differ from quant.h";
  EXPECT_EQ(rec.in_fire.back() - rec.in_fire.front(), uint64_t(kRows - 1)) << "input stalls";
  EXPECT_EQ(rec.out_fire.front() - rec.in_fire[3], kVopLatency) << "latency from a group's last row";
  EXPECT_LE(rec.out_fire.back() + 1, uint64_t(kRows) + kVopLatency + 2);
}

// clear_i drops held rows and a half-finished pooling group.
TEST_F(VopRowTest, ClearDropsRowsInFlight) {
  auto& d = dut();
  std::vector<VopBeat> stale;
  add_elementwise(stale, kAdd, 0);
  add_elementwise(stale, kMax, 0);
  add_group(stale, kPoolAvg, 4);  // 16 rows, cleared after a few
  d.out_ready_i = 0;
  size_t accepted = 0;
  for (int c = 0; c < 8; ++c) {
    d.in_valid_i = 1;
    apply_vop(d, stale[accepted]);
    settle();
    if (d.in_ready_o) ++accepted;
    tick();
  }
  EXPECT_EQ(accepted, 8u) << "rows inside a pooling group flow past a full output slot";
  d.clear_i = 1;
  settle();
  EXPECT_FALSE(d.in_ready_o) << "no row is accepted while clearing";
  tick();
  d.clear_i = 0;
  d.in_valid_i = 0;
  EXPECT_EQ(drain_extra(*this, 8), 0) << "cleared rows came out";
  std::vector<VopBeat> beats;
  for (int g = 0; g < 20; ++g) add_group(beats, chance(0.5) ? kPoolMax : kPoolAvg, uint8_t(rand_int(0, 4)));
  add_elementwise(beats, kMul, 3);
  run(beats, {.in_gap = 0.2, .out_stall = 0.2});
}

}  // namespace
