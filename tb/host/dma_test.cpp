// SPDX-License-Identifier: Apache-2.0
// DMA engine against the root-complex model: every transfer's data is
// compared byte for byte with host memory; every rq packet is checked against
// the link rules (by the model, and here for splitting and ordering); every
// error class ends in its defined error with the next transfer still correct.
// The client channels' struct ports are packed with dma_layout.h (generated
// from dma_pkg.sv).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "Vdma_engine.h"
#include "bits.h"
#include "dma_layout.h"
#include "root_complex.h"
#include "verilated_fixture.h"

namespace {

namespace rd_req_t = tpu::dma_layout::rd_req_t;
namespace rd_data_t = tpu::dma_layout::rd_data_t;
namespace rd_done_t = tpu::dma_layout::rd_done_t;
namespace wr_req_t = tpu::dma_layout::wr_req_t;
namespace wr_data_t = tpu::dma_layout::wr_data_t;
namespace wr_done_t = tpu::dma_layout::wr_done_t;
using tb::get_field;
using tb::set_field;

using tpu::host::FaultKind;
using tpu::host::FaultRule;
using tpu::host::LinkCfg;
using tpu::host::RootComplex;
using tpu::host::RootComplexConfig;
using tpu::host::SplitMode;

// The model is built with the engine's defaults.
constexpr int kTags = 32;
constexpr uint32_t kRobBytes = 16384;
constexpr size_t kRdXfers = 32;  // read descriptors in flight
constexpr uint32_t kWrPayloadCap = 512;  // WrBufBeats * 8
constexpr size_t kWrXfers = 8;  // write descriptors in flight (dma_wr's Xfers)
constexpr uint32_t kTimeoutCycles = 4096;  // completion timeout when cpl_timeout_i is 0

enum Err { kOk = 0, kUr = 1, kCa = 2, kPoisoned = 3, kTimeout = 4, kBusMasterOff = 5 };

constexpr uint64_t kReadBase = 0x0000'1234'0000'0000ull;   // prefilled, never written
constexpr uint64_t kWriteBase = 0x0000'5678'0000'0000ull;  // written by the tests
constexpr uint64_t kReadSpan = 3u << 20;

uint16_t low_keep(unsigned n) { return n >= 16 ? 0xffff : uint16_t((1u << n) - 1); }

struct RdJob {
  uint64_t addr = 0;
  uint32_t len = 0;
  std::vector<uint8_t> data;  // delivered bytes
  int beats = 0;
  bool saw_last = false;
  bool beat_after_last = false;
  bool bad_keep = false;  // a non-final beat not full, or keep not packed
  int err = -1;
  uint64_t err_addr = 0;
  uint64_t accept_cycle = 0;
  uint64_t done_cycle = 0;
  std::optional<std::vector<uint8_t>> expect;  // set when issued (read-back of a write)
};

struct WrJob {
  uint64_t addr = 0;
  std::vector<uint8_t> data;
  size_t sent = 0;
  int err = -1;
  uint64_t accept_cycle = 0;
  uint64_t done_cycle = 0;
};

struct RqSeen {
  uint64_t cycle;
  tpu::host::RqBeat beat;
  // The earliest cycle the engine can have issued it into its rq register (a
  // spill register): the cycle before it was first offered, or, if the beat
  // before it was offered then, the cycle that beat was first offered.
  uint64_t issue_lo;
};

// A completion on rc that completes its request (status SC, not poisoned,
// len = byte_count): the cycle its last beat was taken.
struct RcFinal {
  uint64_t cycle;
  uint8_t tag;
};

class DmaTest : public tb::VerilatedFixture<Vdma_engine> {
 protected:
  void SetUp() override {
    tb::VerilatedFixture<Vdma_engine>::SetUp();
    RootComplexConfig cfg;
    cfg.seed = sim().seed();
    rc_ = std::make_unique<RootComplex>(tpu::host::bind_tlp_ports(dut()), cfg);
    auto& d = dut();
    d.soft_reset_i = 0;
    d.cpl_timeout_i = 0;
    d.rd_req_valid_i = 0;
    d.rd_data_ready_i = 0;
    d.rd_done_ready_i = 0;
    d.wr_req_valid_i = 0;
    d.wr_data_valid_i = 0;
    d.wr_done_ready_i = 0;
    set_link(link_);
    // Prefill the read region with a position-dependent pattern.
    std::vector<uint8_t> fill(kReadSpan);
    for (size_t i = 0; i < fill.size(); ++i) fill[i] = uint8_t((i * 131 + (i >> 8) * 7 + 1) & 0xff);
    rc_->memory().write(kReadBase, std::span<const uint8_t>(fill));
    tick();
    tick();
  }

  void TearDown() override {
    if (rc_) {
      for (const auto& e : rc_->protocol_errors()) ADD_FAILURE() << "link rule: " << e;
    }
    rc_.reset();
    tb::VerilatedFixture<Vdma_engine>::TearDown();
  }

  void set_link(const LinkCfg& l) {
    link_ = l;
    tpu::host::pack_link_cfg(l, dut().link_cfg_i.data());
    rc_->config().mps = std::min<uint32_t>(l.max_payload, 4096);
    rc_->config().mrrs = std::min<uint32_t>(l.max_read_req, 4096);
  }

  // ---- one clock cycle: clients, host model, monitors ----
  void cycle() {
    auto& d = dut();
    drive_clients();
    rc_->drive();
    settle();
    const uint64_t now = sim().cycle();
    if (d.rc_valid_i && d.rc_ready_o) {
      const auto b = tpu::host::unpack_rc(d.rc_i.data());
      if (b.status != 0 || b.poisoned) last_bad_rc_cycle_ = now;
      if (b.last && b.status == 0 && !b.poisoned && b.len == b.byte_count)
        rc_final_.push_back({now, b.tag});
    }
    if (d.rq_valid_o && !rq_offered_) {
      rq_offered_ = true;
      rq_issue_lo_ = rq_was_valid_ ? rq_prev_since_ : now - 1;
      rq_since_ = now;
    }
    if (d.rq_valid_o && d.rq_ready_i) {
      rq_seen_.push_back({now, tpu::host::unpack_rq(d.rq_o.data()), rq_issue_lo_});
      rq_offered_ = false;
      rq_prev_since_ = rq_since_;
    }
    rq_was_valid_ = d.rq_valid_o;
    observe_clients(now);
    rc_->tick(now);
    tick();
  }

  void drive_clients() {
    auto& d = dut();
    // read descriptors
    if (!rd_offer_ && !rd_todo_.empty() && chance(p_req_)) rd_offer_ = true;
    d.rd_req_valid_i = rd_offer_;
    if (rd_offer_) {
      set_field(d.rd_req_i, rd_req_t::addr, rd_todo_.front().addr);
      set_field(d.rd_req_i, rd_req_t::len, rd_todo_.front().len);
    }
    d.rd_data_ready_i = chance(p_rd_ready_);
    d.rd_done_ready_i = chance(p_done_ready_);
    // write descriptors
    if (!wr_offer_ && !wr_todo_.empty() && chance(p_req_)) wr_offer_ = true;
    d.wr_req_valid_i = wr_offer_;
    if (wr_offer_) {
      set_field(d.wr_req_i, wr_req_t::addr, wr_todo_.front().addr);
      set_field(d.wr_req_i, wr_req_t::len, uint32_t(wr_todo_.front().data.size()));
    }
    // write data, in descriptor order, held until taken
    if (!wr_data_offer_) {
      WrJob* j = data_job();
      if (j && chance(p_wr_valid_)) {
        wr_data_offer_ = true;
        const size_t n = std::min<size_t>(16, j->data.size() - j->sent);
        for (unsigned i = 0; i < 16; ++i)
          set_field(d.wr_data_i, wr_data_t::data.lsb + 8 * i, 8, i < n ? j->data[j->sent + i] : 0);
        set_field(d.wr_data_i, wr_data_t::keep, low_keep(unsigned(n)));
        set_field(d.wr_data_i, wr_data_t::last, j->sent + n == j->data.size());
      }
    }
    d.wr_data_valid_i = wr_data_offer_;
    d.wr_done_ready_i = chance(p_done_ready_);
  }

  WrJob* data_job() {
    for (auto& j : wr_active_)
      if (j.sent < j.data.size()) return &j;
    for (auto& j : wr_todo_)
      if (j.sent < j.data.size()) return &j;
    return nullptr;
  }

  void observe_clients(uint64_t now) {
    auto& d = dut();
    if (d.rd_req_valid_i && d.rd_req_ready_o) {
      rd_todo_.front().accept_cycle = now;
      rd_active_.push_back(std::move(rd_todo_.front()));
      rd_todo_.pop_front();
      rd_offer_ = false;
    }
    if (d.rd_data_valid_o && d.rd_data_ready_i) {
      if (rd_active_.empty()) {
        ADD_FAILURE() << "read data beat with no transfer at cycle " << now;
      } else {
        RdJob& j = rd_active_.front();
        const uint16_t keep = uint16_t(get_field(d.rd_data_o, rd_data_t::keep));
        const bool last = get_field(d.rd_data_o, rd_data_t::last);
        if (j.saw_last) j.beat_after_last = true;
        if ((keep & uint16_t(keep + 1)) != 0) j.bad_keep = true;
        if (!last && keep != 0xffff) j.bad_keep = true;
        for (unsigned i = 0; i < 16; ++i)
          if (keep & (1u << i))
            j.data.push_back(uint8_t(get_field(d.rd_data_o, rd_data_t::data.lsb + 8 * i, 8)));
        ++j.beats;
        if (last) j.saw_last = true;
      }
    }
    if (d.rd_done_valid_o && d.rd_done_ready_i) {
      if (rd_active_.empty()) {
        ADD_FAILURE() << "rd_done with no transfer at cycle " << now;
      } else {
        RdJob j = std::move(rd_active_.front());
        rd_active_.pop_front();
        if (j.len != 0 && !j.saw_last)
          ADD_FAILURE() << "rd_done before the beat with last was taken, cycle " << now;
        j.err = int(get_field(d.rd_done_o, rd_done_t::err));
        j.err_addr = get_field(d.rd_done_o, rd_done_t::err_addr);
        j.done_cycle = now;
        rd_done_.push_back(std::move(j));
      }
    }
    if (d.wr_req_valid_i && d.wr_req_ready_o) {
      wr_todo_.front().accept_cycle = now;
      wr_active_.push_back(std::move(wr_todo_.front()));
      wr_todo_.pop_front();
      wr_offer_ = false;
    }
    if (d.wr_data_valid_i && d.wr_data_ready_o) {
      // data_job() is the oldest transfer with data still to send; earlier
      // ones may still be waiting for wr_done.
      WrJob* j = data_job();
      const bool accepted = std::any_of(wr_active_.begin(), wr_active_.end(),
                                        [j](const WrJob& a) { return &a == j; });
      if (!j || !accepted) {
        ADD_FAILURE() << "write data taken for a transfer not yet accepted at cycle " << now;
      } else {
        j->sent += std::min<size_t>(16, j->data.size() - j->sent);
      }
      wr_data_offer_ = false;
    }
    if (d.wr_done_valid_o && d.wr_done_ready_i) {
      if (wr_active_.empty()) {
        ADD_FAILURE() << "wr_done with no transfer at cycle " << now;
      } else {
        WrJob j = std::move(wr_active_.front());
        wr_active_.pop_front();
        if (j.sent != j.data.size()) ADD_FAILURE() << "wr_done before all data was taken";
        j.err = int(get_field(d.wr_done_o, wr_done_t::err));
        // The host applies a write when its last beat arrives, so every byte
        // of a write without error is there by its wr_done (in order: an
        // earlier write's done cannot stand in for a later one's).
        if (j.err == 0 && rc_->memory().read(j.addr, j.data.size()) != j.data)
          ADD_FAILURE() << "wr_done before the write to 0x" << std::hex << j.addr
                        << " reached the host, cycle " << std::dec << now;
        j.done_cycle = now;
        wr_done_.push_back(std::move(j));
      }
    }
  }

  bool busy() const {
    return !rd_todo_.empty() || !rd_active_.empty() || !wr_todo_.empty() || !wr_active_.empty();
  }

  // Runs until every queued transfer is done.
  void run_all(uint64_t max_cycles) {
    uint64_t c = 0;
    while (busy() && c++ < max_cycles) cycle();
    ASSERT_FALSE(busy()) << "transfers stuck after " << max_cycles << " cycles";
  }

  void run(uint64_t cycles) {
    for (uint64_t i = 0; i < cycles; ++i) cycle();
  }

  // Cycles until pred() holds; false (and a failure) after max_cycles.
  template <class Pred>
  bool wait_for(Pred pred, uint64_t max_cycles, const char* what) {
    for (uint64_t i = 0; i < max_cycles; ++i) {
      if (pred()) return true;
      cycle();
    }
    if (pred()) return true;
    ADD_FAILURE() << "timed out waiting for " << what;
    return false;
  }

  RdJob read(uint64_t addr, uint32_t len, uint64_t max_cycles = 200000) {
    rd_todo_.push_back(RdJob{addr, len});
    const size_t n = rd_done_.size();
    uint64_t c = 0;
    while (rd_done_.size() == n && c++ < max_cycles) cycle();
    EXPECT_EQ(rd_done_.size(), n + 1) << "read stuck";
    if (rd_done_.size() == n) return RdJob{};
    return rd_done_.back();
  }

  WrJob write(uint64_t addr, std::vector<uint8_t> data, uint64_t max_cycles = 200000) {
    wr_todo_.push_back(WrJob{addr, std::move(data)});
    const size_t n = wr_done_.size();
    uint64_t c = 0;
    while (wr_done_.size() == n && c++ < max_cycles) cycle();
    EXPECT_EQ(wr_done_.size(), n + 1) << "write stuck";
    if (wr_done_.size() == n) return WrJob{};
    return wr_done_.back();
  }

  std::vector<uint8_t> random_bytes(size_t n) {
    std::vector<uint8_t> v(n);
    for (auto& b : v) b = uint8_t(rand_int(0, 255));
    return v;
  }

  // A successful read: data equals host memory, one last beat, packed beats.
  void expect_read_ok(const RdJob& j, const char* what = "") {
    EXPECT_EQ(j.err, kOk) << what << " addr 0x" << std::hex << j.addr << std::dec << " len " << j.len;
    const auto want = j.expect ? *j.expect : rc_->memory().read(j.addr, j.len);
    EXPECT_TRUE(j.data == want) << what << " data mismatch, addr 0x" << std::hex << j.addr
                                << std::dec << " len " << j.len << " got " << j.data.size();
    EXPECT_EQ(j.saw_last, j.len != 0) << what;
    EXPECT_FALSE(j.beat_after_last) << what;
    EXPECT_FALSE(j.bad_keep) << what;
    EXPECT_EQ(j.beats, int((j.len + 15) / 16)) << what;
  }

  // A failed read: the error, its address, and a correct prefix of the data
  // no longer than max_bytes, ending with a last beat.
  void expect_read_err(const RdJob& j, int err, std::optional<uint64_t> err_addr,
                       size_t max_bytes) {
    EXPECT_EQ(j.err, err);
    if (err_addr) {
      EXPECT_EQ(j.err_addr, *err_addr) << std::hex << "err_addr 0x" << j.err_addr;
    }
    EXPECT_LE(j.data.size(), max_bytes);
    const auto want = rc_->memory().read(j.addr, j.data.size());
    EXPECT_TRUE(j.data == want) << "delivered bytes are not a prefix of the data";
    EXPECT_TRUE(j.saw_last) << "errored transfer did not end with last";
    EXPECT_FALSE(j.beat_after_last);
    EXPECT_FALSE(j.bad_keep);
  }

  // After an error: a read and a write through the same engine are exact.
  void expect_next_transfers_ok() {
    const uint64_t ra = kReadBase + uint64_t(rand_int(0, 1 << 20));
    const uint32_t rl = uint32_t(rand_int(1, 3000));
    expect_read_ok(read(ra, rl), "next read");
    const uint64_t wa = next_write_addr(2000);
    auto data = random_bytes(size_t(rand_int(1, 2000)));
    const WrJob w = write(wa, data);
    EXPECT_EQ(w.err, 0);
    EXPECT_TRUE(rc_->memory().read(wa, data.size()) == data) << "next write";
  }

  uint64_t next_write_addr(size_t len) {
    const uint64_t a = write_cursor_ + uint64_t(rand_int(0, 4095));
    write_cursor_ = (a + len + 4095) & ~uint64_t(4095);
    return a;
  }

  // The read sub-requests the test saw on rq in [from, to) cover [addr, addr + len) in order,
  // each within the link's limits.
  void expect_read_split(uint64_t addr, uint32_t len, size_t from, uint32_t mrrs) {
    uint64_t pos = addr;
    for (size_t i = from; i < rq_seen_.size(); ++i) {
      const auto& b = rq_seen_[i].beat;
      if (b.write) continue;
      EXPECT_EQ(b.addr, pos) << "sub-request out of order";
      EXPECT_GE(b.len, 1);
      EXPECT_LE(b.len, mrrs);
      EXPECT_LE((b.addr & 0xfff) + b.len, 4096u) << "crosses 4 KiB";
      EXPECT_TRUE(b.last);
      pos = b.addr + b.len;
    }
    EXPECT_EQ(pos, addr + len) << "sub-requests do not cover the transfer";
  }

  void expect_write_split(uint64_t addr, size_t len, size_t from, uint32_t mps) {
    uint64_t pos = addr;
    uint32_t beat = 0;
    for (size_t i = from; i < rq_seen_.size(); ++i) {
      const auto& b = rq_seen_[i].beat;
      if (!b.write) continue;
      if (beat == 0) {
        EXPECT_EQ(b.addr, pos) << "packet out of order";
        EXPECT_LE(b.len, mps);
        EXPECT_LE((b.addr & 0xfff) + b.len, 4096u) << "crosses 4 KiB";
      }
      const uint32_t n = std::min<uint32_t>(16, b.len - 16 * beat);
      EXPECT_EQ(b.keep, low_keep(n)) << "keep";
      EXPECT_EQ(b.last, 16 * (beat + 1) >= b.len);
      ++beat;
      if (b.last) {
        pos = b.addr + b.len;
        beat = 0;
      }
    }
    EXPECT_EQ(pos, addr + len) << "packets do not cover the transfer";
  }

  uint64_t mrrs() const { return std::min<uint32_t>(link_.max_read_req, 4096); }
  // Start of the sub-request that holds byte `a` of a transfer starting at xfer.
  uint64_t sub_start(uint64_t xfer, uint64_t a) const {
    return std::max(xfer, a & ~(mrrs() - 1));
  }

  static int fatal_code(FaultKind k) {
    return k == FaultKind::kUr ? kUr : k == FaultKind::kCa ? kCa
         : k == FaultKind::kPoison ? kPoisoned : k == FaultKind::kDrop ? kTimeout : kOk;
  }

  // Whether read request r timed out by the documented rule: it still
  // expected data cpl_timeout_i cycles after the engine issued it, because it
  // was dropped or because its completions came that late (a delay fault,
  // waiting behind other completions). The engine's timer starts when the
  // request enters its rq register, at issue_lo or later. A timeout is raised
  // at a cycle D >= issue + timeout while the slot still expects data; the
  // last beat of the final completion, taken on rc at cycle F, is committed at
  // F + 1, so D <= F + 1. The final completion is the first one with r's tag
  // after r (the tag is not reused while the host still owes completions;
  // the model checks that).
  bool timed_out(const tpu::host::ReadRecord& r) {
    const uint64_t timeout = dut().cpl_timeout_i ? dut().cpl_timeout_i : kTimeoutCycles;
    uint64_t issue_lo = r.cycle - 1;
    for (const RqSeen& q : rq_seen_)
      if (q.cycle == r.cycle && !q.beat.write) issue_lo = q.issue_lo;
    uint64_t until = UINT64_MAX;  // the next request with the same tag
    for (const auto& n : rc_->reads())
      if (n.seq > r.seq && n.tag == r.tag) {
        until = n.cycle;
        break;
      }
    for (const RcFinal& c : rc_final_)
      if (c.tag == r.tag && c.cycle > r.cycle && c.cycle < until)
        return c.cycle + 1 >= issue_lo + timeout;
    return true;  // never completed
  }

  // The reads of rd_done_ after random faults; returns how many failed. Reads
  // overlap in time, so a sub-request belongs to a read when it was issued
  // while the read was in flight and starts inside it. A sub-request can be
  // issued more than once: an error abandons every tag, and sub-requests of
  // the transfers it does not end are fetched again. So:
  //  - a read is either exact, or ends with an error at the address of one of
  //    its sub-requests, having delivered a correct prefix that ends no later
  //    than that sub-request: UR, CA or POISONED of a fault that hit the
  //    sub-request, or TIMEOUT when the sub-request still expected data
  //    cpl_timeout_i cycles after issue (timed_out: dropped, or delayed that
  //    long; a delay fault is not an error by itself);
  //  - no fatal fault is ignored: each one that hit a read's sub-request either
  //    ended that read with an error, or the bytes it hit were fetched again.
  //    An error of a later descriptor restarts the head at its first line not
  //    yet read out, so for a poisoned completion whose sub-request was
  //    abandoned before it arrived, that is the poisoned completion's first
  //    byte (the completions before it can have been delivered), not the
  //    sub-request's.
  int check_fault_outcomes() {
    int errors = 0;
    const auto& reads = rc_->reads();
    auto in_read = [](const RdJob& j, const tpu::host::ReadRecord& r) {
      return r.cycle >= j.accept_cycle && r.cycle <= j.done_cycle && r.addr >= j.addr &&
             r.addr < j.addr + j.len;
    };
    std::vector<const tpu::host::ReadRecord*> by_seq;
    for (const auto& r : reads) by_seq.push_back(&r);
    auto read_of = [&](uint64_t seq) -> const tpu::host::ReadRecord* {
      for (const auto* r : by_seq)
        if (r->seq == seq) return r;
      return nullptr;
    };
    for (const RdJob& j : rd_done_) {
      SCOPED_TRACE(testing::Message() << "read 0x" << std::hex << j.addr << std::dec << " len "
                                      << j.len << " accepted at " << j.accept_cycle);
      if (j.err == kOk) {
        expect_read_ok(j);
        if (HasFailure()) return errors;
        continue;
      }
      ++errors;
      bool known = false;
      if (j.err == kTimeout) {
        for (const auto& r : reads)
          known |= in_read(j, r) && r.addr == j.err_addr && timed_out(r);
      } else {
        for (const auto& f : rc_->faults_applied()) {
          const auto* r = read_of(f.seq);
          known |= r && in_read(j, *r) && fatal_code(f.kind) == j.err && f.addr == j.err_addr;
        }
      }
      EXPECT_TRUE(known) << "err " << j.err << " at 0x" << std::hex << j.err_addr
                         << (j.err == kTimeout
                                 ? " matches no sub-request of the transfer that timed out"
                                 : " matches no fault that hit the transfer");
      // At most up to the end of the failing sub-request (the completions of
      // a poisoned or timed-out one that came in before the error may have
      // been delivered).
      const uint64_t sub_end = std::min<uint64_t>(j.addr + j.len, (j.err_addr & ~(mrrs() - 1)) + mrrs());
      expect_read_err(j, j.err, std::nullopt, size_t(sub_end - j.addr));
      if (HasFailure()) return errors;
    }
    for (const auto& f : rc_->faults_applied()) {
      if (fatal_code(f.kind) == kOk) continue;
      const auto* hit = read_of(f.seq);
      if (!hit) continue;
      bool explained = false;
      for (const RdJob& j : rd_done_) explained |= in_read(j, *hit) && j.err != kOk;
      for (const auto& r : reads)
        explained |= r.seq > f.seq && r.addr <= f.hit_addr && f.hit_addr < r.addr + r.len;
      EXPECT_TRUE(explained) << "fault " << int(f.kind) << " on the sub-request at 0x" << std::hex
                             << hit->addr << " (bytes from 0x" << f.hit_addr << ") was ignored";
    }
    return errors;
  }

  void ur_ca_ends_transfer(FaultKind kind, int where);
  void later_read_fails(FaultKind kind);
  void head_fails_with_reads_queued(FaultKind kind);

  // Bytes of write j that reached the host. Its posted writes must be whole
  // packets that cover a prefix of it in order, with its data: once a packet
  // of a transfer is dropped, the rest of it is dropped too.
  size_t written_prefix(const WrJob& j) {
    uint64_t pos = j.addr;
    for (const auto& w : rc_->writes()) {
      if (w.addr < j.addr || w.addr >= j.addr + j.data.size()) continue;
      EXPECT_EQ(w.addr, pos) << "the packets of the write at 0x" << std::hex << j.addr
                             << " are not a prefix of it";
      EXPECT_TRUE(w.addr + w.data.size() <= j.addr + j.data.size() &&
                  std::equal(w.data.begin(), w.data.end(), j.data.begin() + (w.addr - j.addr)))
          << "packet data at 0x" << std::hex << w.addr;
      pos = w.addr + w.data.size();
    }
    return size_t(pos - j.addr);
  }

  void soft_reset(int level_cycles) {
    auto& d = dut();
    d.soft_reset_i = 1;
    for (int i = 0; i < level_cycles; ++i) cycle();
    d.soft_reset_i = 0;
    uint64_t c = 0;
    while (true) {
      settle();
      if (!d.reset_busy_o || c++ > 10000) break;
      cycle();
    }
    ASSERT_FALSE(d.reset_busy_o) << "reset_busy_o stuck";
    // Clients drop what they had going.
    rd_todo_.clear();
    rd_active_.clear();
    wr_todo_.clear();
    wr_active_.clear();
    rd_offer_ = wr_offer_ = wr_data_offer_ = false;
  }

  std::unique_ptr<RootComplex> rc_;
  LinkCfg link_;
  double p_req_ = 1.0, p_rd_ready_ = 1.0, p_done_ready_ = 1.0, p_wr_valid_ = 1.0;
  bool rd_offer_ = false, wr_offer_ = false, wr_data_offer_ = false;
  std::deque<RdJob> rd_todo_, rd_active_;
  std::vector<RdJob> rd_done_;
  std::deque<WrJob> wr_todo_, wr_active_;
  std::vector<WrJob> wr_done_;
  std::vector<RqSeen> rq_seen_;
  bool rq_offered_ = false, rq_was_valid_ = false;  // for RqSeen::issue_lo
  uint64_t rq_since_ = 0, rq_prev_since_ = 0, rq_issue_lo_ = 0;
  std::vector<RcFinal> rc_final_;
  uint64_t last_bad_rc_cycle_ = 0;
  uint64_t write_cursor_ = kWriteBase;
};

// ---- data paths ------------------------------------------------------------------------

// Three rounds, each with a random link configuration and host behaviour.
TEST_F(DmaTest, RandomTrafficExact) {
  const uint16_t mps[] = {128, 256, 512, 1024};
  const uint16_t mrrs[] = {128, 256, 512, 1024, 4096};
  const SplitMode splits[] = {SplitMode::kWhole, SplitMode::kRcb, SplitMode::kRandom};
  auto rand_len = [&]() -> uint32_t {
    switch (rand_int(0, 5)) {
      case 0: return uint32_t(rand_int(0, 16));
      case 1: return uint32_t(rand_int(17, 200));
      case 2: return uint32_t(rand_int(4090, 4100));
      default: return uint32_t(rand_int(1, 9000));
    }
  };
  for (int round = 0; round < 3; ++round) {
    LinkCfg l;
    l.max_payload = mps[rand_int(0, 3)];
    l.max_read_req = mrrs[rand_int(0, 4)];
    set_link(l);
    auto& cfg = rc_->config();
    cfg.latency = uint32_t(rand_int(1, 300));
    cfg.jitter = uint32_t(rand_int(0, 200));
    cfg.reorder = chance(0.7);
    cfg.split = splits[rand_int(0, 2)];
    cfg.rcb = chance(0.5) ? 64 : 128;
    cfg.rq_ready_prob = 0.5 + 0.5 * double(rand_int(0, 10)) / 10;
    cfg.rc_gap_prob = 0.3 * double(rand_int(0, 10)) / 10;
    p_req_ = 0.5;
    p_rd_ready_ = 0.5 + 0.5 * double(rand_int(0, 10)) / 10;
    p_done_ready_ = 0.6;
    p_wr_valid_ = 0.5 + 0.5 * double(rand_int(0, 10)) / 10;
    rd_done_.clear();
    wr_done_.clear();
    constexpr int kJobs = 50;
    int rd_issued = 0, wr_issued = 0;
    size_t wr_seen = 0;
    uint64_t guard = 0;
    const uint64_t start = sim().cycle();
    while (rd_issued < kJobs || wr_issued < kJobs || busy()) {
      if (rd_todo_.size() < 2 && rd_issued < kJobs) {
        const uint32_t rl = rand_len();
        rd_todo_.push_back(RdJob{kReadBase + uint64_t(rand_int(0, kReadSpan - rl)), rl});
        ++rd_issued;
      }
      if (wr_todo_.size() < 2 && wr_issued < kJobs) {
        auto data = random_bytes(rand_len());
        wr_todo_.push_back(WrJob{next_write_addr(data.size()), std::move(data)});
        ++wr_issued;
      }
      cycle();
      // Read back half of the finished writes: after wr_done a read sees the write.
      for (; wr_seen < wr_done_.size(); ++wr_seen) {
        const WrJob& w = wr_done_[wr_seen];
        if (!chance(0.5)) continue;
        RdJob back{w.addr, uint32_t(w.data.size())};
        back.expect = w.data;
        rd_todo_.push_back(std::move(back));
      }
      ASSERT_LT(++guard, 2000000u) << "random traffic stuck";
      if (HasFailure()) return;
    }
    for (const RdJob& j : rd_done_) expect_read_ok(j, "random read");
    for (const WrJob& w : wr_done_) {
      EXPECT_EQ(w.err, 0);
      EXPECT_TRUE(rc_->memory().read(w.addr, w.data.size()) == w.data)
          << "write to 0x" << std::hex << w.addr << std::dec << " len " << w.data.size();
    }
    EXPECT_EQ(dut().cnt_unexpected_o, 0);
    EXPECT_EQ(dut().cnt_malformed_o, 0);
    std::printf("random traffic: mps %u mrrs %u latency %u+%u split %d reorder %d: %zu reads, "
                "%zu writes, %llu cycles\n",
                l.max_payload, l.max_read_req, cfg.latency, cfg.jitter, int(cfg.split),
                int(cfg.reorder), rd_done_.size(), wr_done_.size(),
                (unsigned long long)(sim().cycle() - start));
    if (HasFailure()) return;
  }
}

TEST_F(DmaTest, BoundaryLengthsAndOffsets) {
  rc_->config().latency = 40;
  rc_->config().split = SplitMode::kRandom;
  rc_->config().reorder = true;
  const uint32_t lens[] = {0, 1, 15, 16, 17, 4095, 4096, 4097};
  const uint64_t offs[] = {0xfff, 0x000, 0xff0, 0x001, 0x7f8};
  for (const uint16_t mrrs : {uint16_t(512), uint16_t(4096), uint16_t(128)}) {
    LinkCfg l;
    l.max_read_req = mrrs;
    l.max_payload = mrrs == 4096 ? 4096 : 128;  // 4096 is capped to 512 by the engine
    set_link(l);
    cycle();
    const uint32_t mps_eff = std::min<uint32_t>(l.max_payload, kWrPayloadCap);
    for (const uint32_t len : lens) {
      for (const uint64_t off : offs) {
        SCOPED_TRACE(testing::Message() << "mrrs " << mrrs << " len " << len << " off 0x"
                                        << std::hex << off);
        const uint64_t ra = kReadBase + 0x10000 + off;
        size_t from = rq_seen_.size();
        expect_read_ok(read(ra, len));
        expect_read_split(ra, len, from, mrrs);
        const uint64_t wa = ((next_write_addr(len + 8192) + 4096) & ~uint64_t(0xfff)) + off;
        auto data = random_bytes(len);
        from = rq_seen_.size();
        const WrJob w = write(wa, data);
        EXPECT_EQ(w.err, 0);
        EXPECT_TRUE(rc_->memory().read(wa, len) == data);
        expect_write_split(wa, len, from, mps_eff);
        if (HasFailure()) return;
      }
    }
  }
}

// Random traffic with random faults of every kind, many reads in flight: a
// read either is exact, or ends with the error of a fault that hit one of its
// sub-requests, at that sub-request's address, with a correct prefix
// delivered that stops before it; no fault is ignored (check_fault_outcomes).
TEST_F(DmaTest, RandomFaultsFuzz) {
  dut().cpl_timeout_i = 6000;
  auto& cfg = rc_->config();
  cfg.latency = 100;
  cfg.jitter = 100;
  cfg.reorder = true;
  cfg.split = SplitMode::kRandom;
  cfg.rq_ready_prob = 0.8;
  cfg.rc_gap_prob = 0.1;
  p_req_ = 0.5;
  p_rd_ready_ = 0.8;
  p_done_ready_ = 0.7;
  const FaultKind kinds[] = {FaultKind::kUr,     FaultKind::kCa,        FaultKind::kPoison,
                             FaultKind::kDrop,   FaultKind::kDelay,     FaultKind::kBadTag,
                             FaultKind::kDuplicate, FaultKind::kBadByteCount, FaultKind::kBadLen};
  constexpr uint64_t kSpan = 1 << 20;
  for (int i = 0; i < 80; ++i) {
    FaultRule r;
    r.kind = kinds[rand_int(0, 8)];
    if (r.kind == FaultKind::kDrop && chance(0.5)) r.kind = FaultKind::kDelay;  // drops are slow
    r.addr = kReadBase + uint64_t(rand_int(0, kSpan - 1));
    r.len = 1;
    r.delay = uint32_t(rand_int(50, 1000));
    r.cpl_index = uint32_t(rand_int(0, 3));
    rc_->add_fault(r);
  }
  for (int i = 0; i < 80; ++i) {
    const uint32_t len = uint32_t(rand_int(1, 12000));
    rd_todo_.push_back(RdJob{kReadBase + uint64_t(rand_int(0, kSpan - len)), len});
    if (chance(0.5)) {
      auto data = random_bytes(size_t(rand_int(1, 3000)));
      wr_todo_.push_back(WrJob{next_write_addr(data.size()), std::move(data)});
    }
  }
  run_all(3000000);
  const int errors = check_fault_outcomes();
  if (HasFailure()) return;
  for (const WrJob& w : wr_done_) {
    EXPECT_EQ(w.err, 0);
    EXPECT_TRUE(rc_->memory().read(w.addr, w.data.size()) == w.data);
  }
  std::printf("fault fuzz: %zu reads (%d ended in an error), %zu writes, %zu faults applied, "
              "%u unexpected, %u malformed, %llu cycles\n",
              rd_done_.size(), errors, wr_done_.size(), rc_->faults_applied().size(),
              unsigned(dut().cnt_unexpected_o), unsigned(dut().cnt_malformed_o),
              (unsigned long long)sim().cycle());
  rc_->clear_faults();
  expect_next_transfers_ok();
}

// ---- completion errors ---------------------------------------------------------------

TEST_F(DmaTest, TimeoutOnOneTag) {
  dut().cpl_timeout_i = 2000;
  const uint64_t addr = kReadBase + 0x4000;
  const uint32_t len = 8192;
  const uint64_t bad = addr + 3 * 512;  // the fourth sub-request is never completed
  rc_->add_fault(FaultRule{FaultKind::kDrop, bad, 1});
  const RdJob j = read(addr, len);
  expect_read_err(j, kTimeout, bad, bad - addr);
  EXPECT_EQ(j.data.size(), bad - addr) << "everything before the lost sub-request is delivered";
  rc_->clear_faults();
  expect_next_transfers_ok();
}

TEST_F(DmaTest, TimeoutOnAllTagsNeverMoreThanTags) {
  dut().cpl_timeout_i = 1500;
  rc_->add_fault(FaultRule{FaultKind::kDrop, 0, UINT64_MAX, 0, -1});
  LinkCfg l;
  l.max_read_req = 128;  // 256 sub-requests: far more than the tags
  set_link(l);
  cycle();
  const uint64_t addr = kReadBase + 0x20000;
  const RdJob j = read(addr, 32768);
  expect_read_err(j, kTimeout, std::nullopt, 0);
  EXPECT_EQ(rc_->reads().size(), size_t(kTags)) << "only as many requests as tags";
  bool known = false;
  for (const auto& r : rc_->reads()) known |= r.addr == j.err_addr;
  EXPECT_TRUE(known) << "err_addr is not a sub-request";
  rc_->clear_faults();
  // The abandoned tags come back after their zombie timeout; the next transfer is exact.
  expect_next_transfers_ok();
}

// UR or CA on the first, a middle or the last sub-request of a 64 KiB read:
// the transfer ends with that error, no sub-request leaves after the error
// arrived, the data delivered is a correct prefix, rd_done waits for the last beat.
void DmaTest::ur_ca_ends_transfer(FaultKind kind, int where) {
  p_rd_ready_ = 0.5;
  const uint64_t addr = kReadBase + 0x40000;
  const uint32_t len = 65536;
  const uint64_t sub = where == 0 ? addr : where == 1 ? addr + 20 * 512 : addr + len - 512;
  rc_->add_fault(FaultRule{kind, sub + 17, 1});
  const size_t from = rq_seen_.size();
  const RdJob j = read(addr, len);
  expect_read_err(j, kind == FaultKind::kUr ? kUr : kCa, sub, sub - addr);
  ASSERT_NE(last_bad_rc_cycle_, 0u);
  for (size_t i = from; i < rq_seen_.size(); ++i)
    EXPECT_LE(rq_seen_[i].cycle, last_bad_rc_cycle_ + 1) << "sub-request issued after the error";
  rc_->clear_faults();
  expect_next_transfers_ok();
}

TEST_F(DmaTest, UrOnFirstSubRequest) { ur_ca_ends_transfer(FaultKind::kUr, 0); }
TEST_F(DmaTest, UrOnMiddleSubRequest) { ur_ca_ends_transfer(FaultKind::kUr, 1); }
TEST_F(DmaTest, UrOnLastSubRequest) { ur_ca_ends_transfer(FaultKind::kUr, 2); }
TEST_F(DmaTest, CaOnFirstSubRequest) { ur_ca_ends_transfer(FaultKind::kCa, 0); }
TEST_F(DmaTest, CaOnMiddleSubRequest) { ur_ca_ends_transfer(FaultKind::kCa, 1); }
TEST_F(DmaTest, CaOnLastSubRequest) { ur_ca_ends_transfer(FaultKind::kCa, 2); }

// An error stops issuing in the cycle it is detected, even while the engine is
// issuing a sub-request every cycle (short latency: the error arrives mid-burst).
TEST_F(DmaTest, ErrorStopsIssueAtOnce) {
  rc_->config().latency = 4;
  LinkCfg l;
  l.max_read_req = 128;
  set_link(l);
  cycle();
  for (const FaultKind kind : {FaultKind::kUr, FaultKind::kCa, FaultKind::kPoison}) {
    const uint64_t addr = kReadBase + 0x30000;
    rc_->add_fault(FaultRule{kind, addr + 128, 1});  // the second sub-request
    last_bad_rc_cycle_ = 0;
    const size_t from = rq_seen_.size();
    const RdJob j = read(addr, 8192);
    expect_read_err(j, kind == FaultKind::kUr ? kUr : kind == FaultKind::kCa ? kCa : kPoisoned,
                    addr + 128, 128);
    ASSERT_NE(last_bad_rc_cycle_, 0u);
    size_t after = 0;
    for (size_t i = from; i < rq_seen_.size(); ++i) after += rq_seen_[i].cycle > last_bad_rc_cycle_ + 1;
    EXPECT_EQ(after, 0u) << "sub-requests issued after the error was detected";
    EXPECT_GT(rq_seen_.size() - from, 4u) << "the error did not arrive during the issue burst";
    rc_->clear_faults();
    run(200);
  }
  expect_next_transfers_ok();
}

// Tags of an abandoned transfer are not reused while their completions may
// still arrive; the late completions are dropped as unexpected. The slot whose
// final completion was the error is free at once, so with every other slot
// held the next transfers still run.
TEST_F(DmaTest, AbandonedTagsNotReusedUntilRetired) {
  dut().cpl_timeout_i = 30000;
  rc_->config().latency = 40;  // all 32 tags are out before the UR comes back
  const uint64_t addr = kReadBase + 0x50000;
  rc_->add_fault(FaultRule{FaultKind::kUr, addr, 1});                     // first sub-request
  rc_->add_fault(FaultRule{FaultKind::kDelay, addr + 512, 31 * 512, 0, -1, 3000});  // the rest
  const RdJob a = read(addr, 16384);
  expect_read_err(a, kUr, addr, 0);
  // The delayed sub-requests (those issued before the UR came back) hold their
  // slots; small reads meanwhile use the others.
  std::vector<bool> held(kTags, false);
  int delayed = 0;
  for (const auto& r : rc_->reads()) {
    if (r.addr == addr) continue;
    held[r.tag % kTags] = true;
    ++delayed;
  }
  EXPECT_EQ(delayed, kTags - 1);
  const size_t from = rq_seen_.size();
  const auto unexpected_before = dut().cnt_unexpected_o;
  for (int i = 0; i < 40; ++i) {
    expect_read_ok(read(kReadBase + 0x70000 + 64 * i, 64, 1000), "small read");
    if (HasFailure()) return;
  }
  for (size_t i = from; i < rq_seen_.size(); ++i)
    EXPECT_FALSE(held[rq_seen_[i].beat.tag % kTags])
        << "slot " << (rq_seen_[i].beat.tag % kTags) << " reused while abandoned";
  run(4000);  // the late completions arrive: 8 completions of 64 bytes each
  EXPECT_EQ(dut().cnt_unexpected_o - unexpected_before, delayed * 8);
  EXPECT_EQ(dut().cnt_malformed_o, 0);
  expect_next_transfers_ok();
}

TEST_F(DmaTest, PoisonedDataNeverDelivered) {
  // Completions of 64 bytes; the second completion of the sixth sub-request is poisoned.
  rc_->config().split = SplitMode::kRcb;
  p_rd_ready_ = 0.5;
  const uint64_t addr = kReadBase + 0x80000;
  const uint64_t sub = addr + 5 * 512;
  rc_->add_fault(FaultRule{FaultKind::kPoison, sub, 1, 0, 1, 0, 1});
  RdJob j = read(addr, 8192);
  expect_read_err(j, kPoisoned, sub, sub - addr + 64);
  // The poisoned bytes themselves are marked in memory: none of them arrived.
  EXPECT_LE(j.data.size(), sub + 64 - addr);
  // Poison on the very first completion: nothing is delivered.
  rc_->clear_faults();
  rc_->add_fault(FaultRule{FaultKind::kPoison, addr, 1});
  j = read(addr, 4096);
  expect_read_err(j, kPoisoned, addr, 0);
  EXPECT_EQ(j.beats, 1);
  rc_->clear_faults();
  expect_next_transfers_ok();
}

TEST_F(DmaTest, UnexpectedTagDroppedAndCounted) {
  rc_->config().reorder = true;
  const uint64_t addr = kReadBase + 0x100;
  rc_->add_fault(FaultRule{FaultKind::kBadTag, 0, UINT64_MAX, 1, 3});
  expect_read_ok(read(addr, 8000));
  EXPECT_EQ(dut().cnt_unexpected_o, 3);
  EXPECT_EQ(dut().cnt_malformed_o, 0);
  expect_next_transfers_ok();
}

TEST_F(DmaTest, MalformedCompletionsDroppedAndCounted) {
  const uint64_t addr = kReadBase + 0x2345;
  rc_->add_fault(FaultRule{FaultKind::kBadByteCount, 0, UINT64_MAX, 0, 2, 0, 1});
  rc_->add_fault(FaultRule{FaultKind::kBadLen, 0, UINT64_MAX, 4, 1});
  expect_read_ok(read(addr, 6000));
  EXPECT_EQ(dut().cnt_malformed_o, 3);
  EXPECT_EQ(dut().cnt_unexpected_o, 0);
  expect_next_transfers_ok();
}

TEST_F(DmaTest, DuplicateCompletionDroppedAndCounted) {
  const uint64_t addr = kReadBase + 0x3000;
  rc_->add_fault(FaultRule{FaultKind::kDuplicate, 0, UINT64_MAX, 0, 2, 0, 0});
  rc_->add_fault(FaultRule{FaultKind::kDuplicate, 0, UINT64_MAX, 3, 1, 0, 99});  // its last one
  expect_read_ok(read(addr, 5000));
  EXPECT_EQ(dut().cnt_malformed_o + dut().cnt_unexpected_o, 3);
  expect_next_transfers_ok();
}

TEST_F(DmaTest, DelayedCompletionsStillInOrder) {
  rc_->config().reorder = true;
  rc_->add_fault(FaultRule{FaultKind::kDelay, 0, UINT64_MAX, 1, 3, 700});
  expect_read_ok(read(kReadBase + 0x777, 12000));
  EXPECT_EQ(dut().cnt_unexpected_o + dut().cnt_malformed_o, 0);
}

TEST_F(DmaTest, TagAndBufferLimits) {
  // Tags limit: 128-byte requests, 500-cycle latency.
  LinkCfg l;
  l.max_read_req = 128;
  set_link(l);
  cycle();
  expect_read_ok(read(kReadBase + 0x10, 65536));
  EXPECT_LE(rc_->stats().max_outstanding, uint64_t(kTags));
  EXPECT_GE(rc_->stats().max_outstanding, uint64_t(kTags) - 1) << "tags not used";
  // Buffer limit: 4 KiB requests; the 16 KiB reorder buffer holds four.
  l.max_read_req = 4096;
  set_link(l);
  cycle();
  rc_->reset_stats();
  rc_->config().reorder = true;
  expect_read_ok(read(kReadBase + 0x20000, 65536));
  // Every request is 4 KiB: the buffer has room for kRobBytes / 4096 of them.
  EXPECT_LE(rc_->stats().max_outstanding, uint64_t(kRobBytes / 4096));
  EXPECT_GE(rc_->stats().max_outstanding, uint64_t(kRobBytes / 4096) - 1) << "buffer not used";
}

// ---- bus mastering, soft reset --------------------------------------------------------

TEST_F(DmaTest, BusMasterDisabled) {
  LinkCfg l;
  l.bus_master_en = false;
  set_link(l);
  cycle();
  const size_t rq_before = rq_seen_.size();
  RdJob r = read(kReadBase + 0x40, 3000);
  EXPECT_EQ(r.err, kBusMasterOff);
  EXPECT_EQ(r.err_addr, kReadBase + 0x40);
  EXPECT_EQ(r.data.size(), 0u);
  EXPECT_TRUE(r.saw_last);
  expect_read_ok(read(kReadBase + 0x40, 0), "len 0");
  const uint64_t wa = next_write_addr(3000);
  const WrJob w = write(wa, random_bytes(3000));
  EXPECT_EQ(w.err, 1);
  EXPECT_EQ(rq_seen_.size(), rq_before) << "a request left with bus mastering off";
  EXPECT_TRUE(rc_->memory().read(wa, 3000) == std::vector<uint8_t>(3000, 0));
  // Switched off in the middle of a large read: the first sub-request not issued is reported.
  l.bus_master_en = true;
  set_link(l);
  cycle();
  rd_todo_.push_back(RdJob{kReadBase + 0x100000, 65536});
  const size_t done_before = rd_done_.size();
  ASSERT_TRUE(wait_for([&] { return rc_->reads().size() >= 5; }, 5000, "reads"));
  l.bus_master_en = false;
  set_link(l);
  ASSERT_TRUE(wait_for([&] { return rd_done_.size() > done_before; }, 20000, "rd_done"));
  const RdJob& mid = rd_done_.back();
  EXPECT_EQ(mid.err, kBusMasterOff);
  const auto& last = rc_->reads().back();
  EXPECT_EQ(mid.err_addr, last.addr + last.len);
  // Switched off in the middle of a large write: the packet on rq finishes, no
  // packet starts later, the rest is dropped and wr_done reports it.
  l.bus_master_en = true;
  set_link(l);
  cycle();
  const uint64_t wa2 = next_write_addr(65536);
  wr_todo_.push_back(WrJob{wa2, random_bytes(65536)});
  const size_t wr_before = wr_done_.size();
  ASSERT_TRUE(wait_for([&] { return rc_->writes().size() >= 3; }, 5000, "writes"));
  l.bus_master_en = false;
  set_link(l);
  const uint64_t off_cycle = sim().cycle();
  ASSERT_TRUE(wait_for([&] { return wr_done_.size() > wr_before; }, 20000, "wr_done"));
  EXPECT_EQ(wr_done_.back().err, 1);
  uint64_t expect_addr = wa2;
  for (const auto& w : rc_->writes()) {
    if (w.addr < wa2 || w.addr >= wa2 + 65536) continue;
    EXPECT_EQ(w.addr, expect_addr) << "packets after the switch-off";
    expect_addr = w.addr + w.data.size();
    EXPECT_TRUE(std::equal(w.data.begin(), w.data.end(), wr_done_.back().data.begin() + (w.addr - wa2)));
  }
  EXPECT_LT(expect_addr, wa2 + 65536) << "nothing was dropped";
  size_t late_starts = 0;
  bool in_packet = false;
  for (const auto& s : rq_seen_) {
    if (!s.beat.write) continue;
    if (!in_packet && s.cycle > off_cycle + 2) ++late_starts;
    in_packet = !s.beat.last;
  }
  EXPECT_EQ(late_starts, 0u) << "a write packet started after bus mastering was switched off";
  l.bus_master_en = true;
  set_link(l);
  cycle();
  expect_next_transfers_ok();
}

TEST_F(DmaTest, SoftResetMidRead) {
  for (const int level : {1, 25}) {
    rd_todo_.push_back(RdJob{kReadBase + 0x9000, 65536});
    ASSERT_TRUE(wait_for([&] { return !rd_active_.empty() && rd_active_.front().data.size() >= 4096; },
                         20000, "read data"));
    const auto unexpected_before = dut().cnt_unexpected_o;
    soft_reset(level);
    const size_t rq_after = rq_seen_.size();
    run(1500);  // the abandoned reads' completions arrive
    EXPECT_EQ(rq_seen_.size(), rq_after) << "rq beat after reset_busy_o fell";
    EXPECT_GT(dut().cnt_unexpected_o, unexpected_before) << "late completions not counted";
    EXPECT_EQ(dut().rd_data_valid_o, 0);
    EXPECT_EQ(dut().rd_done_valid_o, 0);
    expect_next_transfers_ok();
  }
}

TEST_F(DmaTest, SoftResetMidWrite) {
  rc_->config().rq_ready_prob = 0.3;  // slow rq: a packet is half sent when the reset comes
  for (const int level : {1, 25}) {
    wr_todo_.push_back(WrJob{next_write_addr(65536), random_bytes(65536)});
    rd_todo_.push_back(RdJob{kReadBase + 0x9000, 65536});
    // Wait until a write packet is half sent.
    ASSERT_TRUE(wait_for([&] {
      const auto& s = rq_seen_;
      return s.size() > 40 && s.back().beat.write && !s.back().beat.last;
    }, 20000, "a half-sent write packet"));
    soft_reset(level);
    const size_t rq_after = rq_seen_.size();
    run(1500);
    EXPECT_EQ(rq_seen_.size(), rq_after) << "rq beat after reset_busy_o fell";
    // The packet that was on rq when the reset came was finished (the model checks beat counts).
    EXPECT_FALSE(rc_->write_in_progress()) << "a posted write was cut";
    expect_next_transfers_ok();
  }
}

// ---- many reads in flight ------------------------------------------------------------

// Reads are accepted while earlier ones are still in flight, so a run of small
// reads costs one round trip in all, not one each: 200 tiles of 256 bytes, and
// 200 reads of random length (0 .. 600) at random offsets, at 500 cycles of
// latency. Every read is exact, in order.
TEST_F(DmaTest, ManySmallReadsOverlap) {
  const uint32_t latency = rc_->config().latency;
  for (const bool tiles : {true, false}) {
    rd_done_.clear();
    rc_->reset_stats();
    uint64_t bytes = 0;
    std::vector<std::pair<uint64_t, uint32_t>> want;
    for (int i = 0; i < 200; ++i) {
      const uint32_t len = tiles ? 256 : uint32_t(rand_int(0, 600));
      const uint64_t addr = tiles ? kReadBase + 0x200000 + 256 * uint64_t(i)
                                  : kReadBase + uint64_t(rand_int(0, kReadSpan - 600));
      rd_todo_.push_back(RdJob{addr, len});
      want.push_back({addr, len});
      bytes += len;
    }
    const uint64_t t0 = sim().cycle();
    size_t max_in_flight = 0;
    uint64_t c = 0;
    while (busy() && c++ < 200000) {
      cycle();
      max_in_flight = std::max(max_in_flight, rd_active_.size());
    }
    ASSERT_FALSE(busy()) << "reads stuck";
    ASSERT_EQ(rd_done_.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(rd_done_[i].addr, want[i].first) << "out of order";
      expect_read_ok(rd_done_[i], tiles ? "tile" : "random read");
      if (HasFailure()) return;
    }
    const uint64_t cycles = rd_done_.back().done_cycle - t0;
    const double bound = latency + 1.3 * double(bytes) / 16 + 2000;
    std::printf("200 reads of %s at latency %u: %llu bytes in %llu cycles (%.2f B/cycle), "
                "at most %zu reads and %llu sub-requests in flight\n",
                tiles ? "256 B" : "0 .. 600 B", latency, (unsigned long long)bytes,
                (unsigned long long)cycles, double(bytes) / double(cycles), max_in_flight,
                (unsigned long long)rc_->stats().max_outstanding);
    EXPECT_LT(double(cycles), bound);
    EXPECT_LE(max_in_flight, kRdXfers);
  }
}

// Byte offsets inside the engine are global and wrap at 2 MiB: reads of the
// largest length (1 MiB) back to back with small ones, 5 MiB in all, with
// lengths that leave the running offset unaligned to any power of two above 16.
TEST_F(DmaTest, LongRunOffsetsWrap) {
  rc_->config().latency = 100;
  rc_->config().reorder = true;
  std::vector<std::pair<uint64_t, uint32_t>> want;
  uint64_t total = 0;
  for (int i = 0; total < (5u << 20); ++i) {
    const uint32_t len = i % 3 == 0 ? (1u << 20) : uint32_t(rand_int(1, 70000));
    const uint64_t addr = kReadBase + uint64_t(rand_int(0, kReadSpan - len));
    rd_todo_.push_back(RdJob{addr, len});
    want.push_back({addr, len});
    total += len;
  }
  run_all(2000000);
  ASSERT_EQ(rd_done_.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(rd_done_[i].addr, want[i].first);
    expect_read_ok(rd_done_[i], "long run");
    if (HasFailure()) return;
  }
}

// At most kRdXfers descriptors are accepted while none is done; the rest wait.
TEST_F(DmaTest, DescriptorLimit) {
  p_done_ready_ = 0.0;
  for (int i = 0; i < 100; ++i) rd_todo_.push_back(RdJob{kReadBase + 0x300000 + 64 * uint64_t(i), i % 5 == 0 ? 0u : 40u});
  run(3000);
  EXPECT_EQ(rd_active_.size(), kRdXfers);
  EXPECT_EQ(rd_done_.size(), 0u);
  p_done_ready_ = 1.0;
  run_all(20000);
  ASSERT_EQ(rd_done_.size(), 100u);
  for (const RdJob& j : rd_done_) expect_read_ok(j);
}

// A later read fails while an earlier one is still being delivered (slow
// client): the earlier one is exact, the failing one reports its fault at the
// sub-request's address, the ones after it are exact. Except for the timeout,
// the earlier read's last sub-request is delayed, so it is still outstanding
// when the error comes; it is abandoned with every other tag and requested again.
void DmaTest::later_read_fails(FaultKind kind) {
  const bool drop = kind == FaultKind::kDrop;
  const uint32_t timeout = drop ? 1500 : 4000;
  dut().cpl_timeout_i = timeout;
  p_rd_ready_ = 0.2;
  const uint64_t a = kReadBase + 0x60000;
  const uint64_t a_last = a + 65536 - 512;
  const uint64_t b = kReadBase + 0x70123;
  const uint64_t bad = (b & ~uint64_t(511)) + 512;  // the second sub-request of b
  rc_->add_fault(FaultRule{kind, bad + 5, 1});
  if (!drop) rc_->add_fault(FaultRule{FaultKind::kDelay, a_last, 1, 0, 1, 1000});
  const std::vector<std::pair<uint64_t, uint32_t>> jobs = {
      {a, 65536}, {b, 3000}, {kReadBase + 0x80007, 1000}, {kReadBase + 0x81000, 0},
      {kReadBase + 0x82000, 5000}, {kReadBase + 0x84010, 64}};
  for (const auto& [addr, len] : jobs) rd_todo_.push_back(RdJob{addr, len});
  run_all(100000);
  ASSERT_EQ(rd_done_.size(), jobs.size());
  expect_read_ok(rd_done_[0], "earlier read");
  expect_read_err(rd_done_[1], fatal_code(kind), bad, bad - b);
  for (size_t i = 2; i < jobs.size(); ++i) expect_read_ok(rd_done_[i], "read after the failing one");
  // The fault was detected while the earlier read was still being delivered.
  uint64_t fault_cycle = 0;
  for (const auto& f : rc_->faults_applied()) {
    if (f.kind != kind) continue;
    for (const auto& r : rc_->reads())
      if (r.seq == f.seq) fault_cycle = r.cycle;
  }
  ASSERT_NE(fault_cycle, 0u);
  const uint64_t detected = drop ? fault_cycle + timeout + kTags : last_bad_rc_cycle_;
  ASSERT_NE(detected, 0u);
  EXPECT_LT(detected, rd_done_[0].done_cycle) << "the earlier read was no longer in flight";
  if (!drop) {
    size_t n = 0;
    for (const auto& r : rc_->reads()) n += r.addr == a_last;
    EXPECT_EQ(n, 2u) << "the earlier read's outstanding sub-request was not requested again";
  }
  rc_->clear_faults();
  expect_next_transfers_ok();
}

TEST_F(DmaTest, UrOnLaterRead) { later_read_fails(FaultKind::kUr); }
TEST_F(DmaTest, CaOnLaterRead) { later_read_fails(FaultKind::kCa); }
TEST_F(DmaTest, PoisonOnLaterRead) { later_read_fails(FaultKind::kPoison); }
TEST_F(DmaTest, TimeoutOnLaterRead) { later_read_fails(FaultKind::kDrop); }

// The read being delivered fails with reads queued behind it, some of them
// already requested: it reports the error, the others are exact (their
// abandoned sub-requests are requested again).
void DmaTest::head_fails_with_reads_queued(FaultKind kind) {
  dut().cpl_timeout_i = 1500;
  const uint64_t a = kReadBase + 0x90000;
  const uint64_t bad = a + 10 * 512;
  rc_->add_fault(FaultRule{kind, bad, 1});
  const std::vector<std::pair<uint64_t, uint32_t>> jobs = {
      {a, 16384}, {kReadBase + 0xa0005, 100}, {kReadBase + 0xa1000, 4096},
      {kReadBase + 0xa3000, 0}, {kReadBase + 0xa4321, 7000}, {kReadBase + 0xa8000, 256}};
  for (const auto& [addr, len] : jobs) rd_todo_.push_back(RdJob{addr, len});
  run_all(100000);
  ASSERT_EQ(rd_done_.size(), jobs.size());
  const int code = fatal_code(kind);
  expect_read_err(rd_done_[0], code, bad, kind == FaultKind::kPoison ? bad - a + 64 : bad - a);
  for (size_t i = 1; i < jobs.size(); ++i) expect_read_ok(rd_done_[i], "queued read");
  // The second read was already requested when the error came, and again after it.
  size_t second = 0;
  for (const auto& r : rc_->reads()) second += r.addr == jobs[1].first;
  EXPECT_GE(second, 2u) << "the reads behind the failing one were not in flight";
  rc_->clear_faults();
  expect_next_transfers_ok();
}

TEST_F(DmaTest, UrOnHeadWithReadsQueued) { head_fails_with_reads_queued(FaultKind::kUr); }
TEST_F(DmaTest, PoisonOnHeadWithReadsQueued) { head_fails_with_reads_queued(FaultKind::kPoison); }
TEST_F(DmaTest, TimeoutOnHeadWithReadsQueued) { head_fails_with_reads_queued(FaultKind::kDrop); }

// Many small reads in flight over a small region with many random faults:
// errors hit the read being delivered and reads behind it, often several at
// once. Every read is exact or ends with its own fault (check_fault_outcomes).
// Latency, jitter and a delay fault add up to the timeout, so a delayed
// sub-request can time out too, often after part of its data came in.
TEST_F(DmaTest, ManyInFlightFaultsFuzz) {
  dut().cpl_timeout_i = 2000;
  auto& cfg = rc_->config();
  cfg.latency = 300;
  cfg.jitter = 200;
  cfg.reorder = true;
  cfg.split = SplitMode::kRandom;
  cfg.rq_ready_prob = 0.9;
  cfg.rc_gap_prob = 0.05;
  p_req_ = 0.8;
  p_rd_ready_ = 0.3 + 0.7 * double(rand_int(0, 10)) / 10;
  p_done_ready_ = 0.7;
  LinkCfg l;
  l.max_read_req = chance(0.5) ? 128 : 512;
  set_link(l);
  cycle();
  const FaultKind kinds[] = {FaultKind::kUr,    FaultKind::kCa,        FaultKind::kPoison,
                             FaultKind::kDrop,  FaultKind::kDelay,     FaultKind::kDuplicate,
                             FaultKind::kBadTag, FaultKind::kBadByteCount};
  constexpr uint64_t kSpan = 256 << 10;
  for (int i = 0; i < 60; ++i) {
    FaultRule r;
    r.kind = kinds[rand_int(0, 7)];
    r.addr = kReadBase + uint64_t(rand_int(0, kSpan - 1));
    r.len = 1;
    r.delay = uint32_t(rand_int(50, 1500));
    r.cpl_index = uint32_t(rand_int(0, 3));
    rc_->add_fault(r);
  }
  for (int i = 0; i < 300; ++i) {
    const uint32_t len = uint32_t(rand_int(0, 2500));
    rd_todo_.push_back(RdJob{kReadBase + uint64_t(rand_int(0, kSpan - len)), len});
  }
  run_all(3000000);
  const int errors = check_fault_outcomes();
  if (HasFailure()) return;
  EXPECT_GT(errors, 0) << "no fault ended a read";
  std::printf("in-flight fault fuzz: mrrs %u, %zu reads (%d ended in an error), %zu faults "
              "applied, %u unexpected, %u malformed, %llu cycles\n",
              l.max_read_req, rd_done_.size(), errors, rc_->faults_applied().size(),
              unsigned(dut().cnt_unexpected_o), unsigned(dut().cnt_malformed_o),
              (unsigned long long)sim().cycle());
  rc_->clear_faults();
  expect_next_transfers_ok();
}

// ---- write descriptors in flight ------------------------------------------------------

// A write descriptor is accepted as soon as the packer has taken the previous
// one's data, while that one's packets are still in the packet store or on
// rq. Each list of descriptors runs once one at a time and once back to back
// (fresh addresses): the data is exact, there is one wr_done per descriptor,
// in order, with err 0; every descriptor after a non-empty one is accepted
// before that one's wr_done; and back to back saves at least 10 cycles per
// descriptor after the first.
TEST_F(DmaTest, BackToBackWritesOverlap) {
  struct Case {
    const char* name;
    uint64_t off;  // start offset within a 4 KiB page
    std::vector<uint32_t> lens;
  };
  const Case cases[] = {
      {"4 x 4096", 0x000, {4096, 4096, 4096, 4096}},
      {"odd lengths", 0x7f3, {256, 1000, 4097, 17, 0, 8192, 513, 1, 300, 16}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto addr_for = [&](uint32_t len) {
      return ((next_write_addr(len + 8192) + 4096) & ~uint64_t(0xfff)) + c.off;
    };
    // One at a time: from the descriptor's acceptance to its wr_done.
    uint64_t single = 0;
    for (const uint32_t len : c.lens) {
      const uint64_t t0 = sim().cycle();
      const WrJob w = write(addr_for(len), random_bytes(len));
      EXPECT_EQ(w.err, 0);
      EXPECT_TRUE(rc_->memory().read(w.addr, len) == w.data);
      single += w.done_cycle - t0;
    }
    // Back to back.
    wr_done_.clear();
    std::vector<uint64_t> addrs;
    for (const uint32_t len : c.lens) {
      addrs.push_back(addr_for(len));
      wr_todo_.push_back(WrJob{addrs.back(), random_bytes(len)});
    }
    const uint64_t t0 = sim().cycle();
    const size_t from = rq_seen_.size();
    run_all(100000);
    ASSERT_EQ(wr_done_.size(), c.lens.size());
    const uint64_t b2b = wr_done_.back().done_cycle - t0;
    for (size_t i = 0; i < wr_done_.size(); ++i) {
      const WrJob& w = wr_done_[i];
      EXPECT_EQ(w.addr, addrs[i]) << "wr_done " << i << " out of order";
      EXPECT_EQ(w.err, 0) << "write " << i;
      EXPECT_TRUE(rc_->memory().read(w.addr, w.data.size()) == w.data) << "write " << i;
      if (i > 0 && !wr_done_[i - 1].data.empty()) {
        EXPECT_LT(w.accept_cycle, wr_done_[i - 1].done_cycle)
            << "write " << i << " was not accepted before the previous wr_done";
      }
    }
    uint64_t gap = 0, prev = 0;
    for (size_t i = from; i < rq_seen_.size(); ++i) {
      if (!rq_seen_[i].beat.write) continue;
      if (prev) gap = std::max(gap, rq_seen_[i].cycle - prev - 1);
      prev = rq_seen_[i].cycle;
    }
    std::printf("back-to-back writes, %s: %zu descriptors, %llu cycles one at a time, "
                "%llu back to back, longest rq gap %llu cycles\n",
                c.name, c.lens.size(), (unsigned long long)single, (unsigned long long)b2b,
                (unsigned long long)gap);
    EXPECT_LE(b2b + 10 * (c.lens.size() - 1), single) << "back-to-back writes do not overlap";
    if (HasFailure()) return;
  }
}

// Bus mastering is off only while the second of three writes is accepted,
// with all three in the packet store at once (rq held by the host, the first
// write's first packet half sent). Only the second one is dropped and reports
// err 1, although bus mastering is back on when its packets reach the
// emitter; the first and the third are exact with err 0; the dones come in
// order.
TEST_F(DmaTest, BusMasterOffAtOneOfThreeWritesInFlight) {
  auto& d = dut();
  LinkCfg l;
  set_link(l);
  cycle();
  rc_->config().rq_ready_prob = 0.0;
  const std::vector<uint32_t> lens = {512, 300, 100};
  // The first write's first packet is 240 bytes (15 beats): more than the rq
  // register holds, so it is still being sent while bus mastering changes.
  std::vector<uint64_t> addrs;
  for (const uint32_t len : lens) addrs.push_back(((next_write_addr(len + 4096) + 4095) & ~uint64_t(0xfff)) + 0x10);
  addrs[1] += 0x3;
  wr_todo_.push_back(WrJob{addrs[0], random_bytes(lens[0])});
  ASSERT_TRUE(wait_for([&] { return d.rq_valid_o && tpu::host::unpack_rq(d.rq_o.data()).write; },
                       2000, "the first packet on rq"));
  ASSERT_TRUE(wait_for([&] { return wr_active_.size() == 1 && wr_active_[0].sent == lens[0]; },
                       2000, "the first write's data"));
  l.bus_master_en = false;
  set_link(l);
  cycle();
  wr_todo_.push_back(WrJob{addrs[1], random_bytes(lens[1])});
  ASSERT_TRUE(wait_for([&] { return wr_active_.size() == 2; }, 2000,
                       "the second descriptor accepted while the first is in flight"));
  l.bus_master_en = true;
  set_link(l);
  ASSERT_TRUE(wait_for([&] { return wr_active_[1].sent == lens[1]; }, 2000, "the second write's data"));
  wr_todo_.push_back(WrJob{addrs[2], random_bytes(lens[2])});
  ASSERT_TRUE(wait_for([&] { return wr_active_.size() == 3 && wr_active_[2].sent == lens[2]; }, 2000,
                       "the third write accepted and its data taken"));
  EXPECT_TRUE(wr_done_.empty());
  EXPECT_TRUE(rc_->writes().empty());
  rc_->config().rq_ready_prob = 1.0;
  run_all(5000);
  ASSERT_EQ(wr_done_.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const WrJob& w = wr_done_[i];
    EXPECT_EQ(w.addr, addrs[i]) << "wr_done " << i << " out of order";
    EXPECT_EQ(w.err, i == 1 ? 1 : 0) << "write " << i;
    EXPECT_EQ(written_prefix(w), i == 1 ? 0u : w.data.size()) << "write " << i;
    EXPECT_TRUE(rc_->memory().read(w.addr, w.data.size()) ==
                (i == 1 ? std::vector<uint8_t>(w.data.size(), 0) : w.data)) << "write " << i;
  }
  expect_next_transfers_ok();
}

// Three writes in flight while bus mastering goes off for a random window
// (random lengths and start). For each: err is 1 exactly when some of its
// bytes did not reach the host, the bytes that did are whole packets of a
// prefix of it, and those with err 0 are exact; the dones come one per
// descriptor, in order. A fourth write, accepted after the window, is exact
// with err 0: no transfer inherits an earlier one's drop.
TEST_F(DmaTest, BusMasterOffWindowWritesInFlight) {
  int dropped = 0, kept = 0;
  for (int round = 0; round < 30; ++round) {
    SCOPED_TRACE(testing::Message() << "round " << round);
    LinkCfg l;
    set_link(l);
    cycle();
    wr_done_.clear();
    for (int i = 0; i < 3; ++i) {
      auto data = random_bytes(size_t(rand_int(1, 1500)));
      wr_todo_.push_back(WrJob{next_write_addr(data.size()), std::move(data)});
    }
    run(uint64_t(rand_int(0, 150)));
    l.bus_master_en = false;
    set_link(l);
    run(uint64_t(rand_int(1, 40)));
    l.bus_master_en = true;
    set_link(l);
    cycle();
    auto data = random_bytes(size_t(rand_int(1, 1500)));
    wr_todo_.push_back(WrJob{next_write_addr(data.size()), std::move(data)});
    run_all(20000);
    ASSERT_EQ(wr_done_.size(), 4u);
    for (size_t i = 0; i + 1 < wr_done_.size(); ++i) {
      EXPECT_LT(wr_done_[i].addr, wr_done_[i + 1].addr) << "wr_done out of order";
    }
    for (size_t i = 0; i < 4; ++i) {
      const WrJob& w = wr_done_[i];
      const size_t n = written_prefix(w);
      EXPECT_EQ(w.err, n < w.data.size() ? 1 : 0) << "write " << i << ": " << n << " of "
                                                 << w.data.size() << " bytes written";
      if (i == 3) EXPECT_EQ(w.err, 0) << "the write after the window";
      if (w.err == 0) EXPECT_TRUE(rc_->memory().read(w.addr, w.data.size()) == w.data);
      if (i < 3) (w.err ? dropped : kept)++;
    }
    if (HasFailure()) return;
  }
  std::printf("bus master off window: %d writes dropped, %d kept\n", dropped, kept);
  EXPECT_GT(dropped, 0);
  EXPECT_GT(kept, 0);
}

// With wr_done never taken, exactly kWrXfers write descriptors are accepted
// (their packets still go out); once wr_done is taken all complete in order.
// A soft reset then drops dones still pending.
TEST_F(DmaTest, WriteDescriptorLimit) {
  p_done_ready_ = 0.0;
  std::vector<uint64_t> addrs;
  for (int i = 0; i < 20; ++i) {
    auto data = random_bytes(i % 5 == 2 ? 0 : size_t(rand_int(1, 300)));
    addrs.push_back(next_write_addr(data.size()));
    wr_todo_.push_back(WrJob{addrs.back(), std::move(data)});
  }
  run(3000);
  EXPECT_EQ(wr_active_.size(), kWrXfers);
  EXPECT_EQ(wr_done_.size(), 0u);
  for (const WrJob& w : wr_active_) {
    EXPECT_TRUE(rc_->memory().read(w.addr, w.data.size()) == w.data) << "write not sent while its done waits";
  }
  p_done_ready_ = 1.0;
  run_all(20000);
  ASSERT_EQ(wr_done_.size(), addrs.size());
  for (size_t i = 0; i < addrs.size(); ++i) {
    EXPECT_EQ(wr_done_[i].addr, addrs[i]) << "wr_done " << i << " out of order";
    EXPECT_EQ(wr_done_[i].err, 0);
    EXPECT_TRUE(rc_->memory().read(wr_done_[i].addr, wr_done_[i].data.size()) == wr_done_[i].data);
  }
  // Soft reset with three dones pending: none survives it.
  p_done_ready_ = 0.0;
  for (int i = 0; i < 3; ++i) {
    auto data = random_bytes(size_t(rand_int(1, 300)));
    wr_todo_.push_back(WrJob{next_write_addr(data.size()), std::move(data)});
  }
  run(1000);
  ASSERT_EQ(wr_active_.size(), 3u);
  EXPECT_TRUE(dut().wr_done_valid_o);
  soft_reset(1);
  cycle();
  EXPECT_FALSE(dut().wr_done_valid_o) << "a wr_done survived the soft reset";
  p_done_ready_ = 1.0;
  expect_next_transfers_ok();
}

// ---- throughput ------------------------------------------------------------------------

TEST_F(DmaTest, Throughput) {
  const uint32_t len = 65536;
  // Read: from descriptor to done, and from the first to the last data beat.
  uint64_t start = sim().cycle();
  rd_todo_.push_back(RdJob{kReadBase, len});
  uint64_t first_beat = 0;
  ASSERT_TRUE(wait_for([&] {
    if (!first_beat && !rd_active_.empty() && !rd_active_.front().data.empty())
      first_beat = sim().cycle();
    return !rd_done_.empty();
  }, 20000, "rd_done"));
  const uint64_t rd_cycles = rd_done_.back().done_cycle - start;
  const uint64_t rd_stream = rd_done_.back().done_cycle - first_beat;
  expect_read_ok(rd_done_.back());
  // Write: from descriptor to done.
  start = sim().cycle();
  const WrJob w = write(kWriteBase, random_bytes(len));
  const uint64_t wr_cycles = w.done_cycle - start;
  EXPECT_TRUE(rc_->memory().read(kWriteBase, len) == w.data);
  const double rd_bpc = double(len) / double(rd_cycles);
  const double rd_stream_bpc = double(len) / double(rd_stream);
  const double wr_bpc = double(len) / double(wr_cycles);
  std::printf("throughput (latency %u cycles, offered 16 B/cycle each way, MRRS %u, MPS %u):\n"
              "  read  64 KiB: %llu cycles, %.2f B/cycle end to end, %.2f B/cycle streaming\n"
              "  write 64 KiB: %llu cycles, %.2f B/cycle\n",
              rc_->config().latency, link_.max_read_req, link_.max_payload,
              (unsigned long long)rd_cycles, rd_bpc, rd_stream_bpc, (unsigned long long)wr_cycles,
              wr_bpc);
  EXPECT_GE(rd_bpc, 12.0);
  EXPECT_GE(rd_stream_bpc, 15.5);
  EXPECT_GE(wr_bpc, 15.0);

  // Sweep of the request sizes (information only): 64 KiB each, B/cycle end to end.
  std::printf("  MRRS/MPS sweep, 64 KiB, B/cycle end to end:\n");
  for (const uint16_t size : {uint16_t(128), uint16_t(256), uint16_t(512), uint16_t(1024),
                              uint16_t(4096)}) {
    LinkCfg l;
    l.max_read_req = size;
    l.max_payload = size;
    set_link(l);
    cycle();
    uint64_t t0 = sim().cycle();
    const RdJob r = read(kReadBase + 0x100000, len);
    expect_read_ok(r);
    const double rd = double(len) / double(r.done_cycle - t0);
    t0 = sim().cycle();
    const WrJob wj = write(kWriteBase + 0x100000, random_bytes(len));
    const double wr = double(len) / double(wj.done_cycle - t0);
    std::printf("    size %4u: read %5.2f  write %5.2f (MPS used %u)\n", size, rd, wr,
                std::min<uint32_t>(size, kWrPayloadCap));
  }
}

}  // namespace
