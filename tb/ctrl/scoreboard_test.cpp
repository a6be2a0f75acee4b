// SPDX-License-Identifier: Apache-2.0
// The controller's scoreboard against the dependency rule of
// docs/controller.md, evaluated the direct way: every cycle, the head of each
// unit's queue waits while any older command of another unit in flight
// conflicts with it (all eight read/write pairs of UB and ACC ranges, in issue
// order). The RTL finds the dependencies once, in the cycle after the issue,
// and holds the new command in that cycle; hold_o, idle_o and full_o must
// equal the direct rule (plus that hold) every cycle, with random issue,
// start, completion and flush, and in the corners: an entry completing in the
// cycle a dependent command issues or the next, and a full ring.
#include <array>
#include <deque>
#include <string>
#include <vector>

#include "Vctrl_scoreboard.h"
#include "bits.h"
#include "verilated_fixture.h"

namespace {

constexpr int kUnits = 4, kDepth = 8, kUbRows = 64, kAccRows = 32;
constexpr int kMem = 0, kWgt = 1, kMmc = 2, kVpu = 3;

struct Range {
  bool v = false;
  int lo = 0, last = 0;  // inclusive
};

// Field order of ctrl_pkg::footprint_t, most significant first.
enum Field { kUbRd0, kUbRd1, kUbWr, kAccRd, kAccWr, kFields };

struct Footprint {
  std::array<Range, kFields> r;
};

bool overlap(const Range& x, const Range& y) {
  return x.v && y.v && x.lo <= y.last && y.lo <= x.last;
}

// The rule as docs/controller.md states it, on whole footprints.
bool conflicts(const Footprint& n, const Footprint& o) {
  const auto& a = n.r;
  const auto& b = o.r;
  return overlap(a[kUbRd0], b[kUbWr]) || overlap(a[kUbRd1], b[kUbWr]) ||
         overlap(a[kUbWr], b[kUbRd0]) || overlap(a[kUbWr], b[kUbRd1]) ||
         overlap(a[kUbWr], b[kUbWr]) || overlap(a[kAccRd], b[kAccWr]) ||
         overlap(a[kAccWr], b[kAccRd]) || overlap(a[kAccWr], b[kAccWr]);
}

struct Entry {
  uint64_t seq;
  Footprint fp;
  bool started = false;
  bool pending = true;  // issued last cycle: its dependencies are being found
};

class ScoreboardTest : public tb::VerilatedFixture<Vctrl_scoreboard> {
 protected:
  void SetUp() override {
    tb::VerilatedFixture<Vctrl_scoreboard>::SetUp();
    auto& d = dut();
    d.clear_i = 0;
    d.alloc_i = 0;
    d.alloc_unit_i = 0;
    d.start_i = 0;
    d.done_i = 0;
    set_fp({});
  }

  void set_fp(const Footprint& fp) {
    for (int f = 0; f < kFields; ++f) {
      const unsigned lsb = unsigned(kFields - 1 - f) * 33;
      const Range& r = fp.r[size_t(f)];
      tb::set_field(dut().alloc_fp_i, lsb, 16, r.v ? uint64_t(r.last) : 0);
      tb::set_field(dut().alloc_fp_i, lsb + 16, 16, r.v ? uint64_t(r.lo) : 0);
      tb::set_field(dut().alloc_fp_i, lsb + 32, 1, r.v);
    }
  }

  Range rand_range(int rows, int max_len) {
    Range r;
    r.v = true;
    r.lo = int(rand_int(0, rows - 1));
    r.last = r.lo + int(rand_int(0, std::min(max_len, rows - r.lo) - 1));
    return r;
  }

  // A footprint of an opcode the unit executes, with small ranges so that
  // commands conflict often.
  Footprint rand_fp(int unit) {
    Footprint fp;
    auto& r = fp.r;
    switch (unit) {
      case kMem:  // RHM or WHM
        r[chance(0.5) ? kUbWr : kUbRd0] = rand_range(kUbRows, 12);
        break;
      case kMmc:
        r[kUbRd0] = rand_range(kUbRows, 12);
        r[kAccWr] = rand_range(kAccRows, 8);
        if (chance(0.5)) r[kAccRd] = r[kAccWr];  // accumulate
        break;
      case kVpu: {
        const int kind = int(rand_int(0, 3));
        if (kind == 0) {  // ACT
          r[kAccRd] = rand_range(kAccRows, 8);
          r[kUbWr] = rand_range(kUbRows, 12);
        } else if (kind <= 2) {  // VOP (pooling has one source)
          r[kUbRd0] = rand_range(kUbRows, 12);
          if (kind == 1) r[kUbRd1] = rand_range(kUbRows, 12);
          r[kUbWr] = rand_range(kUbRows, 12);
        }  // else CFG: none
        break;
      }
      default:  // RW: none
        break;
    }
    return fp;
  }

  // The direct rule for the head of unit u's queue.
  bool expect_hold(int u) const {
    const Entry* head = nullptr;
    for (const Entry& e : q_[size_t(u)])
      if (!e.started) {
        head = &e;
        break;
      }
    if (head == nullptr) return false;
    if (head->pending) return true;
    std::vector<const Entry*> deps[kUnits];
    for (int v = 0; v < kUnits; ++v) {
      if (v == u) continue;
      for (const Entry& o : q_[size_t(v)])
        if (o.seq < head->seq && conflicts(head->fp, o.fp)) deps[v].push_back(&o);
    }
    if (follows_vector(u, *head, deps)) {
      ++follows_;
      return false;
    }
    if (follows_matrix(u, *head, deps)) {
      ++act_follows_;
      return false;
    }
    for (const auto& d : deps)
      if (!d.empty()) return true;
    return false;
  }

  // The exception for a WHM: its only dependency is the vector unit's
  // oldest command, which has started. (The RTL sees "started" as the
  // ring's start pointer past its head, so not when all eight entries have
  // started; the vector unit runs one at a time, so that never happens.)
  bool follows_vector(int u, const Entry& head, const std::vector<const Entry*> (&deps)[kUnits]) const {
    const auto& vq = q_[size_t(kVpu)];
    if (u != kMem || head.fp.r[kUbWr].v || !deps[kMmc].empty() || deps[kVpu].size() != 1 ||
        deps[kVpu][0] != &vq.front() || !vq.front().started)
      return false;
    return !all_started(vq);
  }

  // The exception for an ACT: its only dependency is the matrix unit's
  // oldest command, which has started, and it writes no UB row that command
  // reads.
  bool follows_matrix(int u, const Entry& head, const std::vector<const Entry*> (&deps)[kUnits]) const {
    const auto& mq = q_[size_t(kMmc)];
    if (u != kVpu || !deps[kMem].empty() || deps[kMmc].size() != 1 || deps[kMmc][0] != &mq.front() ||
        !mq.front().started || overlap(head.fp.r[kUbWr], mq.front().fp.r[kUbRd0]))
      return false;
    return !all_started(mq);
  }

  static bool all_started(const std::deque<Entry>& q) {
    bool all = q.size() == size_t(kDepth);
    for (const Entry& e : q) all = all && e.started;
    return all;
  }

  bool has_waiting(int u) const {
    for (const Entry& e : q_[size_t(u)])
      if (!e.started) return true;
    return false;
  }

  // Compares every output with the model; call after settle().
  void check_outputs(const char* where) {
    for (int u = 0; u < kUnits; ++u) {
      const auto bit = [&](uint64_t v) { return bool((v >> u) & 1); };
      ASSERT_EQ(bit(dut().hold_o), expect_hold(u)) << where << ": hold of unit " << u
                                                   << " at cycle " << cycle();
      ASSERT_EQ(bit(dut().idle_o), q_[size_t(u)].empty()) << where << ": idle of unit " << u;
      ASSERT_EQ(bit(dut().full_o), q_[size_t(u)].size() == size_t(kDepth))
          << where << ": full of unit " << u;
    }
  }

  // One cycle with the given inputs: drives them, checks the outputs, clocks
  // and updates the model.
  void step(int alloc_unit, const Footprint& fp, uint8_t start, uint8_t done, bool clear = false) {
    auto& d = dut();
    d.alloc_i = alloc_unit >= 0;
    d.alloc_unit_i = uint8_t(alloc_unit >= 0 ? alloc_unit : 0);
    set_fp(alloc_unit >= 0 ? fp : Footprint{});
    d.start_i = start;
    d.done_i = done;
    d.clear_i = clear;
    settle();
    check_outputs("step");
    tick();
    d.alloc_i = 0;
    d.start_i = 0;
    d.done_i = 0;
    d.clear_i = 0;
    if (clear) {
      for (auto& q : q_) q.clear();
      return;
    }
    for (auto& q : q_)
      for (Entry& e : q) e.pending = false;
    for (int u = 0; u < kUnits; ++u) {
      auto& q = q_[size_t(u)];
      if ((start >> u) & 1)
        for (Entry& e : q)
          if (!e.started) {
            e.started = true;
            break;
          }
      if ((done >> u) & 1) q.pop_front();
    }
    if (alloc_unit >= 0) q_[size_t(alloc_unit)].push_back({seq_++, fp});
  }

  std::array<std::deque<Entry>, kUnits> q_;
  uint64_t seq_ = 0;
  mutable uint64_t follows_ = 0;      // checks of a WHM that follows a vector command
  mutable uint64_t act_follows_ = 0;  // checks of an ACT that follows a matrix command
};

TEST_F(ScoreboardTest, RandomTrafficMatchesDirectRule) {
  uint64_t holds = 0, fulls = 0, done_at_issue = 0, flushes = 0;
  for (int cycle = 0; cycle < 200000; ++cycle) {
    settle();
    check_outputs("random");
    if (HasFatalFailure()) return;
    // Units: start an unheld head, complete the oldest started command.
    uint8_t start = 0, done = 0;
    for (int u = 0; u < kUnits; ++u) {
      const auto& q = q_[size_t(u)];
      const bool held = (dut().hold_o >> u) & 1;
      holds += held;
      fulls += q.size() == size_t(kDepth);
      if (has_waiting(u) && !held && chance(0.35)) start |= uint8_t(1u << u);
      if (!q.empty() && q.front().started && chance(0.25)) done |= uint8_t(1u << u);
    }
    // Issue: mostly to a unit with room (a full ring is never allocated).
    int alloc = -1;
    Footprint fp;
    if (chance(0.6)) {
      const int u = int(rand_int(0, kUnits - 1));
      if (q_[size_t(u)].size() < size_t(kDepth)) {
        alloc = u;
        fp = rand_fp(u);
        for (int v = 0; v < kUnits; ++v)
          if (v != u && ((done >> v) & 1) && conflicts(fp, q_[size_t(v)].front().fp))
            ++done_at_issue;
      }
    }
    const bool clear = chance(0.0005);
    flushes += clear;
    step(alloc, fp, start, done, clear);
    if (HasFatalFailure()) return;
  }
  std::printf("held unit-cycles %llu, full unit-cycles %llu, conflicting completions at issue %llu, "
              "flushes %llu\n",
              (unsigned long long)holds, (unsigned long long)fulls,
              (unsigned long long)done_at_issue, (unsigned long long)flushes);
  // The traffic reached the corners this test is for.
  EXPECT_GT(holds, 1000u);
  EXPECT_GT(fulls, 1000u);
  EXPECT_GT(done_at_issue, 100u);
  EXPECT_GT(flushes, 10u);
  EXPECT_GT(follows_, 1000u);
  EXPECT_GT(act_follows_, 1000u);
}

// A command's dependencies are found in the cycle after its issue, while it
// is held: an older conflicting command that completes by then is none of
// them; one that completes later is waited for, exactly until it completes.
TEST_F(ScoreboardTest, DependencyCompletingAroundIssue) {
  Footprint act;  // ACT writes UB rows 4..7
  act.r[kUbWr] = {true, 4, 7};
  act.r[kAccRd] = {true, 0, 3};
  Footprint mmc;  // MMC reads UB rows 6..9
  mmc.r[kUbRd0] = {true, 6, 9};
  mmc.r[kAccWr] = {true, 8, 9};
  const uint8_t vpu = 1u << kVpu, mxu = 1u << kMmc;

  for (int delay = 0; delay < 3; ++delay) {  // cycles from the MMC's issue to the ACT's end
    SCOPED_TRACE("ACT completes " + std::to_string(delay) + " cycles after the MMC issues");
    step(kVpu, act, 0, 0);
    step(-1, {}, 0, 0);                            // (held while pending)
    step(-1, {}, vpu, 0);                          // the ACT starts
    step(kMmc, mmc, 0, delay == 0 ? vpu : 0);      // the MMC issues
    settle();
    EXPECT_TRUE(dut().hold_o & mxu) << "held while its dependencies are found";
    step(-1, {}, 0, delay == 1 ? vpu : 0);
    settle();
    EXPECT_EQ(bool(dut().hold_o & mxu), delay == 2);
    if (delay == 2) {
      step(-1, {}, 0, vpu);
      settle();
      EXPECT_FALSE(dut().hold_o & mxu);
    }
    EXPECT_EQ(dut().idle_o & vpu, vpu);
    step(-1, {}, mxu, 0);  // the MMC starts and completes
    step(-1, {}, 0, mxu);
  }
}

// A WHM whose only dependency left is the vector command in progress starts
// with it (the memory unit then reads each row once it is written); one that
// also waits for a vector command not yet started is held, and so is an RHM
// (it writes the rows). (No matrix command writes the UB, so none is ever a
// WHM's dependency.)
TEST_F(ScoreboardTest, WhmFollowsTheVectorCommandInProgress) {
  Footprint act;  // ACT writes UB rows 4..7
  act.r[kUbWr] = {true, 4, 7};
  act.r[kAccRd] = {true, 0, 3};
  Footprint act2 = act;  // another ACT of UB rows 8..11
  act2.r[kUbWr] = {true, 8, 11};
  Footprint whm;  // WHM reads UB rows 6..9
  whm.r[kUbRd0] = {true, 6, 9};
  Footprint rhm;  // RHM writes UB rows 6..9
  rhm.r[kUbWr] = {true, 6, 9};
  const uint8_t vpu = 1u << kVpu, mem = 1u << kMem;
  const auto held = [&] {
    settle();
    return bool(dut().hold_o & mem);
  };

  // Queued, then started: held, then released while the ACT runs.
  step(kVpu, act, 0, 0);
  step(kMem, whm, 0, 0);
  step(-1, {}, 0, 0);
  EXPECT_TRUE(held()) << "the ACT has not started";
  step(-1, {}, vpu, 0);
  EXPECT_FALSE(held()) << "the ACT is in progress";
  step(-1, {}, mem, 0);
  step(-1, {}, 0, vpu);
  step(-1, {}, 0, mem);

  // Two vector commands: released only once the second one runs.
  step(kVpu, act, 0, 0);
  step(kVpu, act2, 0, 0);
  step(kMem, whm, 0, 0);
  step(-1, {}, vpu, 0);
  EXPECT_TRUE(held()) << "the second ACT is queued";
  step(-1, {}, 0, vpu);
  EXPECT_TRUE(held()) << "the second ACT is queued";
  step(-1, {}, vpu, 0);
  EXPECT_FALSE(held()) << "the second ACT is in progress";
  step(-1, {}, mem, 0);
  step(-1, {}, 0, vpu | mem);

  // An RHM writes the rows: held until the ACT completes.
  step(kVpu, act, 0, 0);
  step(kMem, rhm, 0, 0);
  step(-1, {}, vpu, 0);
  EXPECT_TRUE(held());
  step(-1, {}, 0, vpu);
  EXPECT_FALSE(held());
}

// A full ring: full_o from the eighth command on, and an ACT that reads the
// ACC rows of all eight waits until only the last is in flight, then
// follows it; an ACT that also writes a UB row the last one reads waits for
// it to complete.
TEST_F(ScoreboardTest, FullRingAndWaitForAll) {
  for (const bool overwrites : {false, true}) {
    SCOPED_TRACE(overwrites ? "the ACT writes a UB row the last MMC reads" : "the ACT reads the ACC only");
    for (int i = 0; i < kDepth; ++i) {
      Footprint mmc;  // MMC i reads UB row i, writes ACC row i
      mmc.r[kUbRd0] = {true, i, i};
      mmc.r[kAccWr] = {true, i, i};
      step(kMmc, mmc, 0, 0);
    }
    settle();
    EXPECT_TRUE(dut().full_o & (1u << kMmc));
    Footprint act;  // ACT reads ACC rows 0..7
    act.r[kAccRd] = {true, 0, kDepth - 1};
    act.r[kUbWr] = overwrites ? Range{true, kDepth - 1, kDepth + 6} : Range{true, 32, 39};
    step(kVpu, act, 0, 0);
    for (int i = 0; i < kDepth; ++i) {
      step(-1, {}, 1u << kMmc, 0);
      settle();
      EXPECT_TRUE(dut().hold_o & (1u << kVpu)) << "after " << i << " starts";
    }
    for (int i = 0; i < kDepth; ++i) {
      settle();
      const bool last = i == kDepth - 1;
      EXPECT_EQ(bool(dut().hold_o & (1u << kVpu)), !last || overwrites)
          << "with " << kDepth - i << " MMCs in flight";
      step(-1, {}, 0, 1u << kMmc);  // step() checks full_o and hold_o against the model
    }
    settle();
    EXPECT_FALSE(dut().hold_o & (1u << kVpu));
    step(-1, {}, 1u << kVpu, 0);
    step(-1, {}, 0, 1u << kVpu);
  }
}

}  // namespace
