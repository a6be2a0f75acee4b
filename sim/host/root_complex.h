// SPDX-License-Identifier: Apache-2.0
// The host side of the TLP-lite link ("root complex") for simulations.
//
// Serves a Verilated device's rq/rc streams (rtl/host/tlp_pkg.sv) from a
// sparse 64-bit host memory (tpu::HostMemory):
//   rq  accepts read requests and posted writes, at most one beat a cycle,
//       with optional random backpressure and a bandwidth limit; posted
//       writes are applied to memory when their last beat arrives and logged
//   rc  answers each read after a latency with completions split at the read
//       completion boundary (or at random boundaries), in request order or
//       shuffled across requests, one beat a cycle at most, with optional
//       random gaps and a bandwidth limit
// Fault injection, by address range or by count: UR, CA, poisoned data, drop
// (never completed), extra delay, a completion with a tag not in flight, a
// duplicated completion, a completion with a bad byte count or length.
// Every rq packet is checked against the link rules (4 KiB, sizes, beat
// shape, tag reuse); violations are collected in protocol_errors().
//
// DUT-agnostic: the class sees the ports through TlpPorts (pointers to the
// Verilated port fields); bind_tlp_ports(dut) fills it for a top with the
// usual names (rq_valid_o, rq_ready_i, rq_o, rc_valid_i, rc_ready_o, rc_i).
//
// Per clock cycle:
//   rc.drive();         // before settle: sets rq_ready and the rc beat
//   ... set the other inputs; sim.settle();
//   rc.tick(now);       // after settle, before the edge: sees the handshakes
//   sim.tick();         // the edge
// drive() and tick() are split because the inputs of a cycle must stay as
// they were when the handshakes were evaluated until the clock edge. The
// MMIO side (cq/cc) is driven by tb::Device (device_harness.h), which leaves
// out the settle(): the outputs tick() reads are registered.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tlp_layout.h"
#include "tpu/config.h"
#include "tpu/host_memory.h"

namespace tpu::host {

using tpu::HostMemory;

constexpr unsigned kBeatBytes = 16;

// ---- TLP-lite beats (tlp_pkg::rq_t / rc_t / link_cfg_t) -------------------------------

enum class CplStatus : uint8_t { kSc = 0, kUr = 1, kCa = 2 };

struct RqBeat {
  bool write = false;
  uint8_t tag = 0;
  uint64_t addr = 0;
  uint16_t len = 0;  // bytes
  std::array<uint8_t, kBeatBytes> data{};
  uint16_t keep = 0;
  bool last = false;
};

struct RcBeat {
  uint8_t tag = 0;
  uint8_t status = 0;  // CplStatus; 3 is not a valid encoding (sent only as a fault)
  bool poisoned = false;
  uint16_t byte_count = 0;  // bytes of the request still to come, this completion included
  uint16_t len = 0;         // payload bytes of this completion
  std::array<uint8_t, kBeatBytes> data{};
  uint16_t keep = 0;
  bool last = false;
};

struct LinkCfg {
  bool bus_master_en = true;
  uint16_t max_payload = 256;
  uint16_t max_read_req = 512;
  bool msi_en = false;
  uint64_t msi_addr = 0;
  uint32_t msi_data = 0;
};

// Packed-struct codecs over Verilator's 32-bit words (first member = MSB).
// The field positions are tlp_layout.h's, generated from tlp_pkg.sv by
// scripts/gen_tlp_layout.py.
RqBeat unpack_rq(const uint32_t* words);
void pack_rq(const RqBeat& beat, uint32_t* words);
RcBeat unpack_rc(const uint32_t* words);
void pack_rc(const RcBeat& beat, uint32_t* words);
void pack_link_cfg(const LinkCfg& cfg, uint32_t* words);

// ---- ports ---------------------------------------------------------------------------

struct TlpPorts {
  const uint8_t* rq_valid = nullptr;  // device -> host
  uint8_t* rq_ready = nullptr;
  const uint32_t* rq = nullptr;
  uint8_t* rc_valid = nullptr;  // host -> device
  const uint8_t* rc_ready = nullptr;
  uint32_t* rc = nullptr;
};

// 32-bit words of a Verilated vector of `bits` bits.
constexpr size_t port_words(unsigned bits) { return (bits + 31) / 32; }

template <class Dut>
TlpPorts bind_tlp_ports(Dut& dut) {
  static_assert(sizeof(Dut::rq_o) == 4 * port_words(tlp_layout::rq_t::kBits), "rq_o is not an rq_t");
  static_assert(sizeof(Dut::rc_i) == 4 * port_words(tlp_layout::rc_t::kBits), "rc_i is not an rc_t");
  return TlpPorts{&dut.rq_valid_o, &dut.rq_ready_i, dut.rq_o.data(),
                  &dut.rc_valid_i, &dut.rc_ready_o, dut.rc_i.data()};
}

// ---- configuration -------------------------------------------------------------------

enum class SplitMode {
  kWhole,   // one completion per request (up to max_cpl_bytes, then split at RCB)
  kRcb,     // a completion per RCB-aligned block
  kRandom,  // completions end at random RCB boundaries, up to max_cpl_bytes each
};

struct RootComplexConfig {
  // Cycles from a read's acceptance to its first completion.
  uint32_t latency = uint32_t(tpu::default_config().link_latency);
  uint32_t jitter = 0;             // plus a uniform 0 .. jitter per request
  SplitMode split = SplitMode::kRcb;
  uint32_t rcb = 64;               // read completion boundary, bytes (power of two)
  uint32_t max_cpl_bytes = 256;    // largest completion payload
  bool reorder = false;            // shuffle completions across requests
  double rq_ready_prob = 1.0;      // rq_ready high in a cycle with this probability
  double rc_gap_prob = 0.0;        // an idle cycle before an rc beat with this probability
  double rq_beats_per_cycle = 1.0; // rq bandwidth (16 bytes a beat), at most 1
  double rc_beats_per_cycle = 1.0; // rc bandwidth, at most 1
  uint32_t mps = 256;              // the device's limits, checked on every request
  uint32_t mrrs = 512;
  uint64_t seed = 1;
};

enum class FaultKind {
  kUr,            // the request completes with one UR completion
  kCa,            // ... with one CA completion
  kPoison,        // completion cpl_index is poisoned (it still carries data)
  kDrop,          // no completion at all (the device must time out)
  kDelay,         // completions become eligible `delay` cycles later
  kBadTag,        // an extra completion with a tag not in flight, before the real ones
  kDuplicate,     // completion cpl_index is sent twice in a row
  kBadByteCount,  // a copy of completion cpl_index with byte_count + 1 goes just before it
  kBadLen,        // a copy of completion cpl_index with len + 1 goes just before it
};

// A rule hits read requests that overlap [addr, addr + len): it lets `skip`
// matching requests pass, then hits `count` of them (-1: all).
struct FaultRule {
  FaultKind kind = FaultKind::kUr;
  uint64_t addr = 0;
  uint64_t len = UINT64_MAX;
  uint32_t skip = 0;
  int32_t count = 1;
  uint32_t delay = 0;
  uint32_t cpl_index = 0;  // clamped to the request's last completion
};

// ---- logs ----------------------------------------------------------------------------

struct ReadRecord {
  uint64_t seq;    // rq packet number (reads and writes share the count)
  uint64_t cycle;  // acceptance of the request
  uint8_t tag;
  uint64_t addr;
  uint32_t len;
};

struct WriteRecord {
  uint64_t seq;
  uint64_t cycle;  // acceptance of the last beat
  uint64_t addr;
  std::vector<uint8_t> data;
};

struct FaultRecord {
  uint64_t seq;  // the read request it hit
  uint64_t addr;
  uint32_t len;
  FaultKind kind;
  // The bytes it hit: the request's, except for a fault on one completion
  // (kPoison, kDuplicate, kBadByteCount, kBadLen) of a request answered with
  // data, where they are that completion's.
  uint64_t hit_addr;
  uint32_t hit_len;
};

struct RootComplexStats {
  uint64_t rq_beats = 0, rc_beats = 0;
  uint64_t reads = 0, writes = 0, read_bytes = 0, write_bytes = 0;
  uint64_t faults_applied = 0;
  uint64_t max_outstanding = 0;  // read requests with completions still to send
};

// ---- the model -----------------------------------------------------------------------

class RootComplex {
 public:
  RootComplex(TlpPorts ports, RootComplexConfig cfg = {});

  void drive();            // before settle: this cycle's rq_ready and rc beat
  void tick(uint64_t now); // after settle, before the edge: handshakes of this cycle

  HostMemory& memory() { return mem_; }
  const HostMemory& memory() const { return mem_; }
  RootComplexConfig& config() { return cfg_; }

  void add_fault(const FaultRule& rule) { faults_.push_back(Fault{rule, 0, 0}); }
  void clear_faults() { faults_.clear(); }

  const std::vector<ReadRecord>& reads() const { return reads_; }
  const std::vector<WriteRecord>& writes() const { return writes_; }
  const std::vector<FaultRecord>& faults_applied() const { return applied_; }
  const std::vector<std::string>& protocol_errors() const { return errors_; }
  void clear_logs();

  const RootComplexStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }
  size_t outstanding() const;  // read requests with completions still to send
  bool write_in_progress() const { return !wr_beats_.empty(); }  // a posted write half received
  bool idle() const;           // nothing to send and no packet half received

 private:
  struct Completion {
    RcBeat hdr;                    // data/keep/last filled per beat
    std::vector<uint8_t> payload;  // len bytes (bad-length copies carry the true bytes)
    bool bad_tag = false;          // tag chosen when it is sent
  };
  struct Request {
    uint64_t seq;
    uint8_t tag;
    uint64_t ready;  // first cycle its completions may go
    bool started = false;
    std::deque<Completion> cpls;
  };
  struct Fault {
    FaultRule rule;
    uint32_t seen;
    uint32_t hits;
  };

  void accept_rq(const RqBeat& beat);
  void accept_read(const RqBeat& beat);
  void finish_write();
  std::vector<Completion> split(uint8_t tag, uint64_t addr, uint32_t len);
  void start_completion();
  uint8_t pick_bad_tag();
  bool tag_in_flight(uint8_t tag) const;
  void error(const std::string& what);

  TlpPorts ports_;
  RootComplexConfig cfg_;
  HostMemory mem_;
  std::mt19937_64 rng_;
  uint64_t now_ = 0;

  // rq
  bool rq_ready_ = false;
  double rq_tokens_ = 0;
  uint64_t seq_ = 0;
  std::vector<RqBeat> wr_beats_;  // posted write being received

  // rc
  std::deque<Request> pending_;  // reads with completions still to send
  std::deque<RcBeat> beats_;     // rest of the completion being sent
  size_t cur_ = SIZE_MAX;        // index in pending_ of the request being served
  uint64_t quiet_until_ = 0;     // no request in pending_ has a completion ready before this cycle
  bool rc_offer_ = false;        // a beat is on rc (held until taken)
  double rc_tokens_ = 0;

  std::vector<Fault> faults_;
  std::vector<ReadRecord> reads_;
  std::vector<WriteRecord> writes_;
  std::vector<FaultRecord> applied_;
  std::vector<std::string> errors_;
  RootComplexStats stats_;
};

}  // namespace tpu::host
