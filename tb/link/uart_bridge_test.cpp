// SPDX-License-Identifier: Apache-2.0
// The UART bridge (rtl/link/uart_bridge.sv) against a host written here.
//
// The test is the host end of the line (docs/link.md): it drives rx_i bit by
// bit from frames built with tpu/link.h's encoder, decodes tx_o bit by bit
// into bytes for tpu/link.h's FrameDecoder, and runs a go-back-N sender and
// receiver of its own (window 4, retransmission timeout, acks). On the device
// side it checks every cq and rc beat the bridge produces and feeds it cc and
// rq beats, as tpu_top would. Every good frame from the device is checked
// for the window (never more than 4 DATA frames beyond the host's ack) and
// its time stamp (the cycle the frame started). Knobs corrupt bits and drop
// bytes on either line for the randomized test.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "Vuart_bridge.h"
#include "bits.h"
#include "tlp_layout.h"
#include "tpu/link.h"
#include "uart_line.h"
#include "verilated_fixture.h"

namespace {

namespace lk = tpu::link;
namespace cq_t = tpu::tlp_layout::cq_t;
namespace cc_t = tpu::tlp_layout::cc_t;
namespace rq_t = tpu::tlp_layout::rq_t;
namespace rc_t = tpu::tlp_layout::rc_t;
namespace cfg_t = tpu::tlp_layout::link_cfg_t;
using tb::get_field;
using tb::set_field;
using Bytes = std::vector<uint8_t>;

constexpr unsigned kDiv = 4;                        // clock cycles per bit
constexpr uint64_t kByteCycles = 10 * kDiv;
constexpr uint64_t kRetx = UART_BRIDGE_RETX;        // the model's RetxCycles
constexpr uint64_t kHostRto = 60000;                // the host's retransmission timeout
constexpr size_t kRxRoomMessages = 12;              // MMIO writes the test expects the rx buffer to hold at least

// A frame whose CRC does not match: the first time byte changed (header
// bytes before it are small, so it is at wire[4], unescaped).
Bytes crc_broken(Bytes wire) {
  wire[4] ^= 0x01;
  return wire;
}

uint16_t low_keep(unsigned n) { return n >= 16 ? 0xFFFF : uint16_t((1u << n) - 1); }

// ---- stream beats ----
struct CqBeat {
  bool write;
  uint8_t tag;
  uint64_t addr;
  uint8_t be;
  uint32_t data;
  bool operator==(const CqBeat&) const = default;
};

struct RcBeat {
  uint8_t tag, status;
  bool poisoned;
  uint16_t byte_count, len;
  std::array<uint8_t, 16> data;
  uint16_t keep;
  bool last;
  // Bytes outside keep are not part of the beat.
  bool operator==(const RcBeat& o) const {
    if (tag != o.tag || status != o.status || poisoned != o.poisoned || byte_count != o.byte_count ||
        len != o.len || keep != o.keep || last != o.last)
      return false;
    for (int i = 0; i < 16; ++i)
      if ((keep >> i & 1) && data[size_t(i)] != o.data[size_t(i)]) return false;
    return true;
  }
};

std::ostream& operator<<(std::ostream& os, const CqBeat& b) {
  return os << "cq{w=" << b.write << " tag=" << int(b.tag) << " addr=0x" << std::hex << b.addr << " be=0x" << int(b.be)
            << " data=0x" << b.data << std::dec << "}";
}
std::ostream& operator<<(std::ostream& os, const RcBeat& b) {
  return os << "rc{tag=" << int(b.tag) << " st=" << int(b.status) << " p=" << b.poisoned << " bc=" << b.byte_count
            << " len=" << b.len << " keep=0x" << std::hex << b.keep << std::dec << " last=" << b.last << "}";
}

struct CcBeat {
  uint8_t tag, status;
  uint32_t data;
};

struct RqBeat {
  bool write;
  uint8_t tag;
  uint64_t addr;
  uint16_t len;
  std::array<uint8_t, 16> data{};
  uint16_t keep;
  bool last;
};

// The rq beats of one posted write (header on every beat, data from byte 0).
std::vector<RqBeat> rq_write(uint64_t addr, const Bytes& data, uint8_t tag = 0) {
  std::vector<RqBeat> beats;
  for (size_t at = 0; at < data.size(); at += 16) {
    const size_t n = std::min<size_t>(16, data.size() - at);
    RqBeat b{true, tag, addr, uint16_t(data.size()), {}, low_keep(unsigned(n)), at + 16 >= data.size()};
    std::copy_n(data.begin() + long(at), n, b.data.begin());
    beats.push_back(b);
  }
  return beats;
}

RqBeat rq_read(uint8_t tag, uint64_t addr, uint16_t len) { return RqBeat{false, tag, addr, len, {}, 0, true}; }

// The rc beats a read completion message must become.
std::vector<RcBeat> rc_beats(const lk::ReadCompletion& c) {
  std::vector<RcBeat> beats;
  const size_t n = c.data.size();
  const size_t count = std::max<size_t>(1, (n + 15) / 16);
  for (size_t i = 0; i < count; ++i) {
    RcBeat b{c.tag, c.status, c.poisoned, c.byte_count, uint16_t(n), {}, 0, i + 1 == count};
    const size_t at = i * 16, k = n > at ? std::min<size_t>(16, n - at) : 0;
    std::copy_n(c.data.begin() + long(at), k, b.data.begin());
    b.keep = low_keep(unsigned(k));
    beats.push_back(b);
  }
  return beats;
}

CqBeat cq_of(const lk::MmioWrite& m) { return {true, m.tag, m.offset, uint8_t(m.be & 0xF), m.data}; }
CqBeat cq_of(const lk::MmioRead& m) { return {false, m.tag, m.offset, uint8_t(m.be & 0xF), 0}; }

Bytes random_bytes(tb::Sim<Vuart_bridge>& sim, size_t n) {
  Bytes b(n);
  for (auto& x : b) x = uint8_t(sim.rand_int(0, 255));
  return b;
}

class UartBridgeTest : public tb::VerilatedFixture<Vuart_bridge> {
 protected:
  void SetUp() override {
    tb::VerilatedFixture<Vuart_bridge>::SetUp();
    auto& d = dut();
    d.div_i = kDiv;
    d.rx_i = 1;
    d.cq_ready_i = 1;
    d.rc_ready_i = 1;
    d.cc_valid_i = 0;
    d.rq_valid_i = 0;
    sim().reset();  // again, now with the line idle and div set
  }

  // ---------------------------------------------------------------------------------------
  // One clock cycle: drive the line and the streams, observe handshakes, run
  // the host link.
  void step() {
    auto& d = dut();
    d.rx_i = line_tx_.level();
    // Long stretches without ready (a busy TPU) fill the receive buffer.
    if (ready_hold_ > 0) --ready_hold_;
    else if (chance(ready_hold_p_)) ready_hold_ = uint64_t(rand_int(1000, 40000));
    d.cq_ready_i = ready_hold_ == 0 && chance(cq_ready_p_);
    d.rc_ready_i = ready_hold_ == 0 && chance(rc_ready_p_);
    d.cc_valid_i = !cc_src_.empty();
    if (!cc_src_.empty()) {
      const CcBeat& c = cc_src_.front();
      d.cc_i = 0;
      set_field(d.cc_i, cc_t::tag, c.tag);
      set_field(d.cc_i, cc_t::status, c.status);
      set_field(d.cc_i, cc_t::data, c.data);
    }
    d.rq_valid_i = !rq_src_.empty();
    if (!rq_src_.empty()) {
      const RqBeat& r = rq_src_.front();
      set_field(d.rq_i, rq_t::write, r.write);
      set_field(d.rq_i, rq_t::tag, r.tag);
      set_field(d.rq_i, rq_t::addr, r.addr);
      set_field(d.rq_i, rq_t::len, r.len);
      for (unsigned i = 0; i < 16; ++i) set_field(d.rq_i, rq_t::data.lsb + 8 * i, 8, r.data[i]);
      set_field(d.rq_i, rq_t::keep, r.keep);
      set_field(d.rq_i, rq_t::last, r.last);
    }
    settle();
    if (per_cycle_) per_cycle_();

    // Outputs held while not taken (valid/ready rule).
    if (cq_stalled_) {
      EXPECT_TRUE(d.cq_valid_o) << "cq valid dropped at cycle " << cycle();
      if (d.cq_valid_o) EXPECT_EQ(read_cq(), *cq_stalled_) << "cq beat changed while stalled";
    }
    if (rc_stalled_) {
      EXPECT_TRUE(d.rc_valid_o) << "rc valid dropped at cycle " << cycle();
      if (d.rc_valid_o) EXPECT_EQ(read_rc(), *rc_stalled_) << "rc beat changed while stalled";
    }
    cq_stalled_.reset();
    rc_stalled_.reset();
    if (d.cq_valid_o && d.cq_ready_i) cq_seen_.push_back(read_cq());
    else if (d.cq_valid_o) cq_stalled_ = read_cq();
    if (d.rc_valid_o && d.rc_ready_i) rc_seen_.push_back(read_rc());
    else if (d.rc_valid_o) rc_stalled_ = read_rc();
    if (d.cc_valid_i && d.cc_ready_o) cc_src_.pop_front();
    if (d.rq_valid_i && d.rq_ready_o) {
      rq_src_.pop_front();
      last_rq_take_ = cycle();
    }
    if (d.link_err_o) ++link_errs_;

    tick();
    line_tx_.step();
    if (auto b = line_rx_.step(dut().tx_o)) {
      if (*b == tb::LineRx::kFramingError) ADD_FAILURE() << "framing error on tx_o at cycle " << cycle();
      else on_byte(uint8_t(*b));
    }
    pump();
  }

  bool run_until(const std::function<bool()>& pred, uint64_t max_cycles) {
    for (uint64_t i = 0; i < max_cycles; ++i) {
      if (pred()) return true;
      step();
    }
    return pred();
  }
  void run(uint64_t cycles) {
    for (uint64_t i = 0; i < cycles; ++i) step();
  }

  CqBeat read_cq() {
    const auto& s = dut().cq_o;
    return {get_field(s, cq_t::write) != 0, uint8_t(get_field(s, cq_t::tag)), get_field(s, cq_t::addr),
            uint8_t(get_field(s, cq_t::be)), uint32_t(get_field(s, cq_t::data))};
  }
  RcBeat read_rc() {
    const auto& s = dut().rc_o;
    RcBeat b{uint8_t(get_field(s, rc_t::tag)), uint8_t(get_field(s, rc_t::status)), get_field(s, rc_t::poisoned) != 0,
             uint16_t(get_field(s, rc_t::byte_count)), uint16_t(get_field(s, rc_t::len)), {},
             uint16_t(get_field(s, rc_t::keep)), get_field(s, rc_t::last) != 0};
    for (unsigned i = 0; i < 16; ++i) b.data[i] = uint8_t(get_field(s, rc_t::data.lsb + 8 * i, 8));
    return b;
  }

  // ---------------------------------------------------------------------------------------
  // The host's end of the line.

  // Puts a frame's wire bytes on the line, corrupted as the knobs say.
  // With data_flips_, a flip hits one of the 8 data bits only (the board
  // simulation's line model: the byte arrives whole but wrong).
  void put_wire(const Bytes& wire) {
    for (uint8_t b : wire) {
      if (chance(host_drop_p_)) continue;
      if (chance(host_stall_p_))
        for (int64_t i = rand_int(1, 64); i > 0; --i) line_tx_.push_wave(0x3FF);
      uint16_t w = uint16_t(b) << 1 | 1u << 9;
      if (chance(host_flip_p_)) w ^= uint16_t(1u << (data_flips_ ? rand_int(1, 8) : rand_int(0, 9)));
      line_tx_.push_wave(w);
      if (chance(host_dup_p_)) line_tx_.push_wave(w);
    }
  }
  void put_frame(const lk::Frame& f) {
    if (f.kind == lk::Kind::kData || f.kind == lk::Kind::kAck) ack_sent_ = f.ack;
    put_wire(lk::encode_frame(f));
  }
  lk::Frame data_frame(uint8_t seq, const Bytes& payload) {
    lk::Frame f;
    f.kind = lk::Kind::kData;
    f.seq = seq;
    f.ack = rx_expected_;
    f.payload = payload;
    return f;
  }
  void send_ack(bool ping = false) {
    lk::Frame f;
    f.kind = lk::Kind::kAck;
    f.ping = ping;
    f.ack = rx_expected_;
    put_frame(f);
    ack_pending_ = false;
  }
  void send_ack_value(uint8_t ack) {
    lk::Frame f;
    f.kind = lk::Kind::kAck;
    f.ack = ack;
    put_frame(f);
  }

  // Queues a message for the host's go-back-N sender.
  void send(const Bytes& payload) { queued_.push_back(payload); }

  // The host's sender: one frame at a time when the line is free, so each
  // carries the current ack; retransmits the window on timeout.
  void pump() {
    if (!host_auto_) return;
    if (!unacked_.empty() && cycle() - timer_ > host_rto_) {
      cursor_ = 0;
      timer_ = cycle();
    }
    if (line_tx_.queued() != 0) return;
    if (cursor_ < unacked_.size()) {
      put_frame(data_frame(unacked_[cursor_].first, unacked_[cursor_].second));
      ++cursor_;
      ack_pending_ = false;
    } else if (!queued_.empty() && unacked_.size() < lk::kWindow) {
      if (unacked_.empty()) timer_ = cycle();
      unacked_.emplace_back(next_seq_++, queued_.front());
      queued_.pop_front();
      put_frame(data_frame(unacked_.back().first, unacked_.back().second));
      ++cursor_;
      ack_pending_ = false;
    } else if (ack_pending_) {
      send_ack();
    }
  }

  void take_ack(uint8_t ack) {
    if (unacked_.empty()) return;
    const uint8_t done = uint8_t(ack - unacked_.front().first);
    if (done == 0 || done > unacked_.size()) return;
    for (uint8_t i = 0; i < done; ++i) unacked_.pop_front();
    cursor_ = cursor_ > done ? cursor_ - done : 0;
    timer_ = cycle();
  }

  void on_byte(uint8_t b) {
    if (chance(dev_drop_p_)) return;
    if (chance(dev_flip_p_)) b ^= uint8_t(1u << rand_int(0, 7));
    const int n = chance(dev_dup_p_) ? 2 : 1;
    for (int i = 0; i < n; ++i) {
      if (auto f = decoder_.push(b)) on_frame(*f);
    }
    if (b != lk::kFlag) last_body_byte_ = cycle();
  }

  void on_frame(const lk::Frame& f) {
    // The time stamp is the cycle the frame started: the frame's wire time
    // before its last body byte (its closing flag may have been lost, and
    // the frame ended by the next frame's flag).
    const uint64_t wire = lk::encode_frame(f).size() * kByteCycles;
    EXPECT_LE(uint64_t(f.time), last_body_byte_);
    EXPECT_LE(last_body_byte_ - f.time, wire + 100) << "time stamp " << f.time << " at cycle " << cycle() << ", kind "
                                            << int(f.kind) << " seq " << int(f.seq) << " ack " << int(f.ack)
                                            << " len " << f.payload.size();
    if (!frames_.empty()) EXPECT_GT(f.time, frames_.back().f.time);
    frames_.push_back({cycle(), f});
    if (f.kind == lk::Kind::kSyncAck || f.kind == lk::Kind::kSync) {
      EXPECT_EQ(f.kind, lk::Kind::kSyncAck);
      EXPECT_EQ(f.seq, 0);
      EXPECT_EQ(f.ack, 0);
      EXPECT_TRUE(f.payload.empty());
      // A new session: both directions restart at seq 0.
      unacked_.clear();
      cursor_ = 0;
      next_seq_ = 0;
      rx_expected_ = 0;
      ack_sent_ = 0;
      ack_pending_ = false;
      return;
    }
    if (f.kind == lk::Kind::kAck) {
      EXPECT_EQ(f.seq, 0);
      EXPECT_TRUE(f.payload.empty());
    }
    EXPECT_FALSE(f.ping) << "the device never pings";
    take_ack(f.ack);
    if (f.kind != lk::Kind::kData) return;
    // Window: at most 4 DATA frames beyond what the host has acknowledged.
    const uint8_t ahead = uint8_t(f.seq - ack_sent_);
    if (ahead < 128) EXPECT_LT(ahead, lk::kWindow) << "DATA seq " << int(f.seq) << " with host ack " << int(ack_sent_);
    ack_pending_ = true;
    if (f.seq == rx_expected_) {
      ++rx_expected_;
      delivered_.push_back(f.payload);
    }
  }

  // Link reset: SYNC until SYNC_ACK; both sides restart at seq 0.
  void sync() {
    const size_t before = frames_.size();
    auto answered = [&] {
      for (size_t i = before; i < frames_.size(); ++i)
        if (frames_[i].f.kind == lk::Kind::kSyncAck) return true;
      return false;
    };
    lk::Frame s;
    s.kind = lk::Kind::kSync;
    for (int tries = 0; tries < 20 && !answered(); ++tries) {
      put_frame(s);
      run_until(answered, 3000);
    }
    ASSERT_TRUE(answered()) << "no SYNC_ACK";
  }

  // Waits until the host has sent everything and the device acknowledged it.
  bool host_drained(uint64_t max_cycles) {
    return run_until([&] { return queued_.empty() && unacked_.empty() && line_tx_.idle(); }, max_cycles);
  }

  size_t data_frames() const {
    return size_t(std::count_if(frames_.begin(), frames_.end(),
                                [](const auto& r) { return r.f.kind == lk::Kind::kData; }));
  }

  // The device's counters, asked for with a 0x04 message.
  lk::DeviceCounters counters() {
    const size_t before = delivered_.size();
    send(lk::counters_request());
    std::optional<lk::DeviceCounters> c;
    run_until([&] {
      for (size_t i = before; i < delivered_.size() && !c; ++i) c = lk::decode_counters(delivered_[i]);
      return c.has_value();
    }, 200000);
    EXPECT_TRUE(c.has_value()) << "no counters message";
    return c.value_or(lk::DeviceCounters{});
  }

  // Device messages split by stream: MMIO completions, DMA requests.
  std::vector<Bytes> delivered_of(std::initializer_list<uint8_t> types) const {
    std::vector<Bytes> out;
    for (const auto& m : delivered_)
      if (!m.empty() && std::find(types.begin(), types.end(), m[0]) != types.end()) out.push_back(m);
    return out;
  }

  // Random traffic both ways (MMIO, read completions, counters requests to the
  // device; MMIO completions, DMA reads and writes to the host) over the line
  // as the knobs corrupt it; then, on a clean line, checks that every message
  // arrived exactly once, in order and byte for byte.
  void random_traffic(int each_way, double long_rc_p = 0.2, double long_wr_p = 0.3) {
    std::vector<CqBeat> want_cq;
    std::vector<RcBeat> want_rc;
    std::vector<Bytes> want_cpl, want_dma;
    size_t counter_requests = 0;
    int to_device = 0, to_host = 0;
    while (to_device < each_way || to_host < each_way) {
      if (to_device < each_way && queued_.size() < 3 && chance(0.3)) {
        ++to_device;
        const int k = int(rand_int(0, 9));
        if (k < 3) {
          const lk::MmioWrite w{uint8_t(rand_int(0, 255)), uint32_t(rand_int(0, 0xFFFF'FFFF)),
                                uint8_t(rand_int(0, 15)), uint32_t(rand_int(0, 0xFFFF'FFFF))};
          send(lk::encode(w));
          want_cq.push_back(cq_of(w));
        } else if (k < 5) {
          const lk::MmioRead r{uint8_t(rand_int(0, 255)), uint32_t(rand_int(0, 0xFFFF'FFFF)), uint8_t(rand_int(0, 15))};
          send(lk::encode(r));
          want_cq.push_back(cq_of(r));
        } else if (k < 9) {
          const size_t n = chance(long_rc_p) ? 256 : size_t(rand_int(0, 256));
          const lk::ReadCompletion c{uint8_t(rand_int(0, 255)), 0, chance(0.1), uint16_t(rand_int(n, 4096)),
                                     random_bytes(sim(), n)};
          send(lk::encode(c));
          const auto b = rc_beats(c);
          want_rc.insert(want_rc.end(), b.begin(), b.end());
        } else {
          send(lk::counters_request());
          ++counter_requests;
        }
      }
      if (to_host < each_way && cc_src_.size() + rq_src_.size() < 4 && chance(0.3)) {
        ++to_host;
        const int k = int(rand_int(0, 9));
        if (k < 3) {
          const CcBeat c{uint8_t(rand_int(0, 255)), uint8_t(rand_int(0, 1)), uint32_t(rand_int(0, 0xFFFF'FFFF))};
          feed_cc(c);
          want_cpl.push_back(lk::encode(lk::MmioCompletion{c.tag, c.status, c.data}));
        } else if (k < 5) {
          const RqBeat r = rq_read(uint8_t(rand_int(0, 255)), uint64_t(rand_int(0, 1ll << 48)), uint16_t(rand_int(1, 256)));
          feed_rq({r});
          want_dma.push_back(lk::encode(lk::DmaRead{r.tag, r.addr, r.len}));
        } else {
          const size_t n = chance(long_wr_p) ? 256 : size_t(rand_int(1, 256));
          const uint64_t addr = uint64_t(rand_int(0, 1ll << 48));
          const Bytes data = random_bytes(sim(), n);
          feed_rq(rq_write(addr, data, uint8_t(rand_int(0, 255))));
          want_dma.push_back(lk::encode(lk::DmaWrite{addr, data}));
        }
      }
      run(uint64_t(rand_int(50, 800)));
    }
    const size_t want_msgs = want_cpl.size() + want_dma.size() + counter_requests;
    ASSERT_TRUE(run_until([&] {
      return delivered_.size() >= want_msgs && cq_seen_.size() >= want_cq.size() && rc_seen_.size() >= want_rc.size() &&
             queued_.empty() && unacked_.empty();
    }, 8000000)) << "delivered " << delivered_.size() << "/" << want_msgs << ", cq " << cq_seen_.size() << "/"
                 << want_cq.size() << ", rc " << rc_seen_.size() << "/" << want_rc.size();
    host_flip_p_ = host_drop_p_ = dev_flip_p_ = dev_drop_p_ = 0;
    host_stall_p_ = host_dup_p_ = dev_dup_p_ = 0;
    run(kRetx + 20000);

    ASSERT_EQ(cq_seen_.size(), want_cq.size());
    for (size_t i = 0; i < want_cq.size(); ++i) EXPECT_EQ(cq_seen_[i], want_cq[i]) << "cq beat " << i;
    ASSERT_EQ(rc_seen_.size(), want_rc.size());
    for (size_t i = 0; i < want_rc.size(); ++i) EXPECT_EQ(rc_seen_[i], want_rc[i]) << "rc beat " << i;
    ASSERT_EQ(delivered_.size(), want_msgs);
    EXPECT_EQ(delivered_of({0x81}), want_cpl);
    EXPECT_EQ(delivered_of({0x82, 0x83}), want_dma);
    EXPECT_EQ(delivered_of({0x84}).size(), counter_requests);
  }

  void feed_cc(const CcBeat& c) { cc_src_.push_back(c); }
  void feed_rq(const std::vector<RqBeat>& beats) { rq_src_.insert(rq_src_.end(), beats.begin(), beats.end()); }

  // ---- line and link state ----
  tb::LineTx line_tx_{kDiv};
  tb::LineRx line_rx_{kDiv};
  lk::FrameDecoder decoder_;
  struct RxFrame {
    uint64_t cycle;
    lk::Frame f;
  };
  std::vector<RxFrame> frames_;   // every good frame from the device
  std::vector<Bytes> delivered_;  // the device's messages, in order, once
  std::deque<std::pair<uint8_t, Bytes>> unacked_;
  std::deque<Bytes> queued_;
  size_t cursor_ = 0;  // unacked_[0, cursor_) sent in this round
  uint8_t next_seq_ = 0, rx_expected_ = 0, ack_sent_ = 0;
  bool ack_pending_ = false;
  bool host_auto_ = true;  // the host sends data, acks and retransmits by itself
  uint64_t timer_ = 0;
  uint64_t last_body_byte_ = 0;  // cycle of the last non-flag byte from the device
  double host_flip_p_ = 0, host_drop_p_ = 0, dev_flip_p_ = 0, dev_drop_p_ = 0;
  double host_stall_p_ = 0, host_dup_p_ = 0, dev_dup_p_ = 0;
  bool data_flips_ = false;  // flips hit data bits only, never start or stop
  uint64_t host_rto_ = kHostRto;
  double ready_hold_p_ = 0;
  uint64_t ready_hold_ = 0;

  // ---- device streams ----
  double cq_ready_p_ = 1.0, rc_ready_p_ = 1.0;
  std::vector<CqBeat> cq_seen_;
  std::vector<RcBeat> rc_seen_;
  std::optional<CqBeat> cq_stalled_;
  std::optional<RcBeat> rc_stalled_;
  std::deque<CcBeat> cc_src_;
  std::deque<RqBeat> rq_src_;
  uint64_t last_rq_take_ = 0;
  uint64_t link_errs_ = 0;
  std::function<void()> per_cycle_;
};

// ---------------------------------------------------------------------------------------------
// 1. SYNC is answered with SYNC_ACK (seq 0, ack 0, no payload); link_up_o rises.
TEST_F(UartBridgeTest, SyncAnswered) {
  run(500);
  EXPECT_FALSE(dut().link_up_o);
  EXPECT_TRUE(frames_.empty()) << "the device talks before it is asked";
  sync();
  ASSERT_EQ(frames_.size(), 1u);
  EXPECT_EQ(frames_[0].f.kind, lk::Kind::kSyncAck);
  run(50);
  EXPECT_TRUE(dut().link_up_o);
  // The link configuration is fixed.
  const auto& c = dut().link_cfg_o;
  EXPECT_EQ(get_field(c, cfg_t::bus_master_en), 1u);
  EXPECT_EQ(get_field(c, cfg_t::max_payload), 256u);
  EXPECT_EQ(get_field(c, cfg_t::max_read_req), 256u);
  EXPECT_EQ(get_field(c, cfg_t::msi_en), 1u);
  EXPECT_EQ(get_field(c, cfg_t::msi_addr), lk::kMsiAddr);
  EXPECT_EQ(get_field(c, cfg_t::msi_data), lk::kMsiData);
  EXPECT_EQ(link_errs_, 0u);
}

// 2. MMIO write and read messages become exact cq beats; a cc beat becomes a
// 0x81 message; the device's frames carry the ack of the host's frames.
TEST_F(UartBridgeTest, MmioAndCompletion) {
  sync();
  const lk::MmioWrite w{0x5A, 0x0000'0F7C, 0xF6, 0x7E7D'1234};  // data with bytes that need stuffing
  const lk::MmioRead r{0xA5, 0x0000'0040, 0x0F};
  const lk::MmioWrite w2{0x01, 0xFFFF'FFFC, 0x3, 0xDEAD'BEEF};
  send(lk::encode(w));
  send(lk::encode(r));
  send(lk::encode(w2));
  ASSERT_TRUE(run_until([&] { return cq_seen_.size() == 3; }, 20000));
  EXPECT_EQ(cq_seen_[0], cq_of(w));
  EXPECT_EQ(cq_seen_[1], cq_of(r));
  EXPECT_EQ(cq_seen_[2], cq_of(w2));
  ASSERT_TRUE(host_drained(20000)) << "the device did not acknowledge";

  feed_cc({0xA5, 0, 0x7D7E'0102});
  feed_cc({0x33, 1, 0});
  ASSERT_TRUE(run_until([&] { return delivered_.size() == 2; }, 20000));
  const auto c0 = lk::decode_mmio_completion(delivered_[0]);
  const auto c1 = lk::decode_mmio_completion(delivered_[1]);
  ASSERT_TRUE(c0 && c1);
  EXPECT_EQ(c0->tag, 0xA5);
  EXPECT_EQ(c0->status, 0);
  EXPECT_EQ(c0->data, 0x7D7E'0102u);
  EXPECT_EQ(c1->tag, 0x33);
  EXPECT_EQ(c1->status, 1);
  EXPECT_EQ(c1->data, 0u);
  // Both DATA frames acknowledge the host's three messages.
  for (const auto& fr : frames_)
    if (fr.f.kind == lk::Kind::kData) EXPECT_EQ(fr.f.ack, 3);
  EXPECT_EQ(cq_seen_.size(), 3u);
  EXPECT_EQ(link_errs_, 0u);
}

// 3. DMA requests and read completions, at the sizes that matter.
TEST_F(UartBridgeTest, DmaRequestsAndCompletions) {
  sync();
  std::vector<Bytes> expect;
  feed_rq({rq_read(0x1F, 0x0000'1234'5678'9ABCull, 256)});
  expect.push_back(lk::encode(lk::DmaRead{0x1F, 0x0000'1234'5678'9ABCull, 256}));
  for (size_t n : {1, 16, 17, 255, 256}) {
    const uint64_t addr = 0x0000'00AB'0000'0000ull + n * 0x1000 + 3;
    const Bytes data = random_bytes(sim(), n);
    feed_rq(rq_write(addr, data, uint8_t(n)));
    expect.push_back(lk::encode(lk::DmaWrite{addr, data}));
  }
  feed_rq(rq_write(lk::kMsiAddr, {1, 0, 0, 0}));  // an MSI
  expect.push_back(lk::encode(lk::DmaWrite{lk::kMsiAddr, {1, 0, 0, 0}}));
  ASSERT_TRUE(run_until([&] { return delivered_.size() == expect.size(); }, 200000));
  for (size_t i = 0; i < expect.size(); ++i) EXPECT_EQ(delivered_[i], expect[i]) << "message " << i;

  std::vector<RcBeat> want;
  uint8_t tag = 0;
  for (size_t n : {0, 1, 15, 16, 17, 256}) {
    const lk::ReadCompletion c{tag++, 0, n == 15, uint16_t(n + 100), random_bytes(sim(), n)};
    send(lk::encode(c));
    const auto b = rc_beats(c);
    want.insert(want.end(), b.begin(), b.end());
  }
  const lk::ReadCompletion ur{0x77, 1, false, 64, {}};
  const lk::ReadCompletion ca{0x78, 2, false, 4096, {}};
  for (const auto& c : {ur, ca}) {
    send(lk::encode(c));
    const auto b = rc_beats(c);
    want.insert(want.end(), b.begin(), b.end());
  }
  rc_ready_p_ = 0.5;
  ASSERT_TRUE(run_until([&] { return rc_seen_.size() >= want.size() && queued_.empty(); }, 200000));
  run(2000);
  ASSERT_EQ(rc_seen_.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(rc_seen_[i], want[i]) << "rc beat " << i;
  EXPECT_TRUE(cq_seen_.empty());
  EXPECT_EQ(link_errs_, 0u);
}

// 4. Window and go-back-N: never more than 4 unacknowledged DATA frames; the
// streams stall while the slots are full; with no ack the window goes again
// after RetxCycles, oldest first, same seq and bytes; an ack frees slots, an
// ack beyond the frames sent is ignored.
TEST_F(UartBridgeTest, WindowAndRetransmission) {
  sync();
  host_auto_ = false;  // the host stays silent unless told
  for (uint8_t i = 0; i < 8; ++i) feed_cc({i, 0, 0x1000u + i});
  ASSERT_TRUE(run_until([&] { return data_frames() == 4; }, 20000));
  feed_rq({rq_read(0x42, 0x8000, 64)});
  // The window is full: nothing more leaves and nothing is taken.
  per_cycle_ = [&] {
    EXPECT_FALSE(dut().cc_ready_o) << "cc taken with every slot full";
    EXPECT_FALSE(dut().rq_ready_o) << "rq taken with every slot full";
  };
  run(10000);
  per_cycle_ = nullptr;
  EXPECT_EQ(data_frames(), 4u);
  EXPECT_EQ(cc_src_.size(), 4u);
  EXPECT_EQ(rq_src_.size(), 1u);

  // Timeout: all four again, oldest first, identical.
  ASSERT_TRUE(run_until([&] { return data_frames() == 8; }, kRetx + 10000));
  std::vector<const lk::Frame*> d;
  for (const auto& fr : frames_)
    if (fr.f.kind == lk::Kind::kData) d.push_back(&fr.f);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(d[i]->seq, i);
    EXPECT_EQ(d[4 + i]->seq, i);
    EXPECT_EQ(d[4 + i]->payload, d[i]->payload);
  }
  const uint32_t waited = d[4]->time - d[0]->time;
  EXPECT_GE(waited, kRetx);
  EXPECT_LE(waited, kRetx + 50);

  // Ack 2: two slots free, two more messages go as seq 4 and 5.
  send_ack_value(2);
  ASSERT_TRUE(run_until([&] { return data_frames() == 10; }, 20000));
  run(3000);
  EXPECT_EQ(data_frames(), 10u);
  EXPECT_EQ(frames_.back().f.seq, 5);

  // An ack beyond what was sent (7 > 6) is ignored: seq 2 is still the oldest.
  send_ack_value(7);
  ASSERT_TRUE(run_until([&] { return data_frames() == 14; }, kRetx + 20000));
  d.clear();
  for (const auto& fr : frames_)
    if (fr.f.kind == lk::Kind::kData) d.push_back(&fr.f);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(d[10 + i]->seq, 2 + i);

  // The host acknowledges from now on: everything arrives, in order, once.
  host_auto_ = true;
  ASSERT_TRUE(run_until([&] { return cc_src_.empty() && rq_src_.empty() && delivered_.size() == 9; }, 100000));
  run(5000);
  const auto cpl = delivered_of({0x81});
  ASSERT_EQ(cpl.size(), 8u);
  for (uint8_t i = 0; i < 8; ++i) EXPECT_EQ(cpl[i], lk::encode(lk::MmioCompletion{i, 0, 0x1000u + i}));
  const auto dma = delivered_of({0x82});
  ASSERT_EQ(dma.size(), 1u);
  EXPECT_EQ(dma[0], lk::encode(lk::DmaRead{0x42, 0x8000, 64}));
  const auto c = counters();
  EXPECT_EQ(c.retransmits, 8);
  EXPECT_EQ(c.crc_errors + c.bad_frames + c.duplicates + c.no_room + c.bad_messages, 0);
}

// 4b. An ack covering messages that wait in their slots but were never sent
// is not an ack of ours: it is ignored, and they all go, in order.
TEST_F(UartBridgeTest, AckOfUnsentFramesIgnored) {
  sync();
  host_auto_ = false;
  std::vector<Bytes> want;
  for (int i = 0; i < 4; ++i) {
    const uint64_t addr = 0x10000ull * uint64_t(i + 1);
    const Bytes data = random_bytes(sim(), 256);
    feed_rq(rq_write(addr, data));
    want.push_back(lk::encode(lk::DmaWrite{addr, data}));
  }
  // All four are in their slots long before the first frame (11,000 cycles
  // on the line) is out; acknowledge three of them meanwhile.
  ASSERT_TRUE(run_until([&] { return rq_src_.empty(); }, 3000));
  send_ack_value(3);
  ASSERT_TRUE(run_until([&] { return data_frames() == 4; }, 4 * 12000));
  std::vector<uint8_t> seqs;
  for (const auto& fr : frames_)
    if (fr.f.kind == lk::Kind::kData) seqs.push_back(fr.f.seq);
  EXPECT_EQ(seqs, (std::vector<uint8_t>{0, 1, 2, 3}));
  host_auto_ = true;
  ASSERT_TRUE(run_until([&] { return delivered_.size() == 4; }, kRetx + 50000));
  EXPECT_EQ(delivered_, want);
}

// 5. Receive side: duplicates, out-of-order frames, CRC errors, truncated
// and aborted frames and framing errors are dropped; the next good frame is
// delivered; what was dropped is counted.
TEST_F(UartBridgeTest, ReceiveErrors) {
  sync();
  host_auto_ = false;
  const lk::MmioWrite w0{0, 0x100, 0xF, 0xA0A0A0A0}, w1{1, 0x104, 0xF, 0xA1A1A1A1}, w2{2, 0x108, 0xF, 0xA2A2A2A2};
  auto ack_after = [&](size_t from) -> std::optional<uint8_t> {
    for (size_t i = from; i < frames_.size(); ++i)
      if (frames_[i].f.kind == lk::Kind::kAck) return frames_[i].f.ack;
    return std::nullopt;
  };
  auto settle_line = [&] { run_until([&] { return line_tx_.idle(); }, 50000); run(1500); };

  size_t mark = frames_.size();
  put_frame(data_frame(0, lk::encode(w0)));
  settle_line();
  ASSERT_EQ(cq_seen_.size(), 1u);
  EXPECT_EQ(cq_seen_[0], cq_of(w0));
  EXPECT_EQ(ack_after(mark), std::optional<uint8_t>(1));

  mark = frames_.size();  // a duplicate: not delivered, acknowledged again
  put_frame(data_frame(0, lk::encode(w0)));
  settle_line();
  EXPECT_EQ(cq_seen_.size(), 1u);
  EXPECT_EQ(ack_after(mark), std::optional<uint8_t>(1));

  mark = frames_.size();  // out of order: dropped, acknowledged again
  put_frame(data_frame(2, lk::encode(w2)));
  settle_line();
  EXPECT_EQ(cq_seen_.size(), 1u);
  EXPECT_EQ(ack_after(mark), std::optional<uint8_t>(1));

  mark = frames_.size();
  Bytes wire = lk::encode_frame(data_frame(1, lk::encode(w1)));
  put_wire(crc_broken(wire));  // CRC error
  settle_line();
  {  // truncated: three body bytes missing
    Bytes bad(wire.begin(), wire.end() - 4);
    bad.push_back(lk::kFlag);
    put_wire(bad);
  }
  settle_line();
  {  // aborted: escape + flag in the middle
    Bytes bad(wire.begin(), wire.begin() + 8);
    bad.push_back(lk::kEscape);
    bad.push_back(lk::kFlag);
    put_wire(bad);
  }
  settle_line();
  // A byte with a framing error (low stop bit), then the line idles a byte
  // time so the receiver is in step again for the rest of the frame.
  for (size_t i = 0; i < wire.size(); ++i) {
    line_tx_.push(wire[i], i == 6);
    if (i == 6) line_tx_.push_wave(0x3FF);
  }
  settle_line();
  EXPECT_EQ(cq_seen_.size(), 1u);
  EXPECT_FALSE(ack_after(mark).has_value()) << "a bad frame was answered";
  EXPECT_EQ(link_errs_, 4u);

  put_frame(data_frame(1, lk::encode(w1)));
  settle_line();
  put_frame(data_frame(2, lk::encode(w2)));
  settle_line();
  ASSERT_EQ(cq_seen_.size(), 3u);
  EXPECT_EQ(cq_seen_[1], cq_of(w1));
  EXPECT_EQ(cq_seen_[2], cq_of(w2));

  host_auto_ = true;
  next_seq_ = 3;
  const auto c = counters();
  EXPECT_EQ(c.crc_errors, 1);
  EXPECT_EQ(c.bad_frames, 3);
  EXPECT_EQ(c.duplicates, 1);
  EXPECT_EQ(c.no_room, 0);
  EXPECT_EQ(c.retransmits, 0);
  EXPECT_EQ(c.bad_messages, 0);
}

// 6. Flow control: with cq stalled the receive buffer fills, further frames
// are dropped unacknowledged (no_room); once cq moves, the host's
// retransmissions bring everything, in order, once.
TEST_F(UartBridgeTest, FlowControl) {
  sync();
  cq_ready_p_ = 0;
  std::vector<CqBeat> want;
  for (int i = 0; i < 180; ++i) {
    const lk::MmioWrite w{uint8_t(i), uint32_t(4 * i), uint8_t(i & 0xF), uint32_t(i * 0x01010101u)};
    send(lk::encode(w));
    want.push_back(cq_of(w));
  }
  // Fill until the device stops acknowledging, then some host timeouts more.
  uint64_t last_progress = cycle();
  size_t last_queued = queued_.size();
  ASSERT_TRUE(run_until([&] {
    if (queued_.size() != last_queued) {
      last_queued = queued_.size();
      last_progress = cycle();
    }
    return cycle() - last_progress > 3 * kHostRto;
  }, 600000));
  EXPECT_TRUE(cq_seen_.empty());
  EXPECT_EQ(unacked_.size(), lk::kWindow);
  EXPECT_GT(queued_.size(), 0u) << "the receive buffer took everything";
  EXPECT_LT(queued_.size(), 180 - kRxRoomMessages) << "the receive buffer took too little";

  cq_ready_p_ = 1.0;
  ASSERT_TRUE(run_until([&] { return cq_seen_.size() >= want.size() && queued_.empty() && unacked_.empty(); },
                        2000000));
  run(3000);
  ASSERT_EQ(cq_seen_.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(cq_seen_[i], want[i]) << "cq beat " << i;
  auto c = counters();
  EXPECT_GT(c.no_room, 0);
  EXPECT_EQ(c.crc_errors + c.bad_frames + c.bad_messages, 0);

  // Again with the largest frames (256-byte completions, 263-byte messages),
  // rc stalled: seven fit (about 1,850 of 2,048 entries); a buffer that took
  // an eighth would overwrite the first.
  rc_ready_p_ = 0;
  std::vector<RcBeat> want_rc;
  for (int i = 0; i < 12; ++i) {
    const lk::ReadCompletion rc{uint8_t(i), 0, false, 256, random_bytes(sim(), 256)};
    send(lk::encode(rc));
    const auto b = rc_beats(rc);
    want_rc.insert(want_rc.end(), b.begin(), b.end());
  }
  last_progress = cycle();
  last_queued = queued_.size();
  ASSERT_TRUE(run_until([&] {
    if (queued_.size() != last_queued) {
      last_queued = queued_.size();
      last_progress = cycle();
    }
    return cycle() - last_progress > 2 * kHostRto;
  }, 600000));
  EXPECT_LE(rc_seen_.size(), 1u);
  EXPECT_GT(queued_.size() + unacked_.size(), 4u) << "the receive buffer took more than it has room for";
  rc_ready_p_ = 1.0;
  ASSERT_TRUE(run_until([&] { return rc_seen_.size() >= want_rc.size() && queued_.empty() && unacked_.empty(); },
                        2000000));
  run(3000);
  ASSERT_EQ(rc_seen_.size(), want_rc.size());
  for (size_t i = 0; i < want_rc.size(); ++i) EXPECT_EQ(rc_seen_[i], want_rc[i]) << "rc beat " << i;
  const uint16_t no_room_before = c.no_room;
  c = counters();
  EXPECT_GT(c.no_room, no_room_before);
}

// 7. A ping is answered with an ACK at once; the counters message reports
// exactly what was injected; bad messages are dropped whole.
TEST_F(UartBridgeTest, PingAndCounters) {
  sync();
  run(2000);
  size_t mark = frames_.size();
  send_ack(/*ping=*/true);
  ASSERT_TRUE(run_until([&] { return line_tx_.idle(); }, 10000));
  const uint64_t sent = cycle();
  ASSERT_TRUE(run_until([&] { return frames_.size() > mark; }, 2000));
  EXPECT_EQ(frames_[mark].f.kind, lk::Kind::kAck);
  EXPECT_LT(frames_[mark].cycle - sent, 20 * kByteCycles) << "the ping was not answered at once";

  // Two CRC errors and a reserved kind bit.
  lk::Frame a;
  a.kind = lk::Kind::kAck;
  for (int i = 0; i < 2; ++i) put_wire(crc_broken(lk::encode_frame(a)));
  {
    Bytes body{0x09, 0, 0, 0, 0, 0, 0, 0, 0};  // kind ACK with bit 3 set
    const uint16_t crc = lk::crc16(body);
    body.push_back(uint8_t(crc >> 8));
    body.push_back(uint8_t(crc));
    Bytes wire{lk::kFlag};
    for (uint8_t b : body) {
      if (b == lk::kFlag || b == lk::kEscape) {
        wire.push_back(lk::kEscape);
        wire.push_back(b ^ lk::kEscapeXor);
      } else {
        wire.push_back(b);
      }
    }
    wire.push_back(lk::kFlag);
    put_wire(wire);
  }
  // Bad messages: unknown type, wrong lengths, data in a UR completion, empty.
  const lk::MmioWrite good{9, 0x40, 0xF, 0x12345678};
  Bytes short_write = lk::encode(good);
  short_write.pop_back();
  Bytes long_read = lk::encode(lk::MmioRead{1, 0x40, 0xF});
  long_read.push_back(0);
  Bytes bad_n = lk::encode(lk::ReadCompletion{3, 0, false, 4, {1, 2, 3, 4}});
  bad_n[5] = 3;  // n says 3, 4 bytes follow
  Bytes ur_data = lk::encode(lk::ReadCompletion{4, 1, false, 4, {1, 2, 3, 4}});
  for (const Bytes& m : {Bytes{0x55}, short_write, long_read, bad_n, ur_data, Bytes{}}) send(m);
  send(lk::encode(good));
  ASSERT_TRUE(host_drained(100000));
  ASSERT_TRUE(run_until([&] { return cq_seen_.size() == 1; }, 5000));
  // A duplicate of the last frame.
  put_frame(data_frame(uint8_t(next_seq_ - 1), lk::encode(good)));
  run_until([&] { return line_tx_.idle(); }, 10000);
  run(1000);

  const auto c = counters();
  EXPECT_EQ(c.crc_errors, 2);
  EXPECT_EQ(c.bad_frames, 1);
  EXPECT_EQ(c.duplicates, 1);
  EXPECT_EQ(c.no_room, 0);
  EXPECT_EQ(c.retransmits, 0);
  EXPECT_EQ(c.bad_messages, 6);
  EXPECT_EQ(link_errs_, 9u);
  ASSERT_EQ(cq_seen_.size(), 1u);
  EXPECT_EQ(cq_seen_[0], cq_of(good));
  EXPECT_TRUE(rc_seen_.empty());
}

// 8. SYNC in the middle of traffic: unacknowledged frames are dropped, a
// message being written when the SYNC lands goes out whole as seq 0 of the
// new session, and the host's next DATA frame is taken at seq 0.
TEST_F(UartBridgeTest, SyncMidTraffic) {
  sync();
  for (uint8_t i = 0; i < 3; ++i) {
    feed_cc({i, 0, i});
    send(lk::encode(lk::MmioWrite{i, 0x200, 0xF, i}));
  }
  ASSERT_TRUE(run_until([&] { return delivered_.size() == 3 && cq_seen_.size() == 3; }, 50000));
  ASSERT_TRUE(host_drained(20000));
  run(1000);

  host_auto_ = false;  // the next two stay unacknowledged
  feed_cc({3, 0, 3});
  feed_cc({4, 0, 4});
  ASSERT_TRUE(run_until([&] { return data_frames() == 5; }, 20000));

  // SYNC, with a 256-byte DMA write fed slowly so that it is being written
  // into its slot when the SYNC's closing flag arrives.
  const size_t mark = frames_.size();
  lk::Frame s;
  s.kind = lk::Kind::kSync;
  put_frame(s);
  ASSERT_TRUE(run_until([&] { return line_tx_.queued() <= 3; }, 20000));
  uint64_t line_idle = 0;  // the SYNC's closing flag is taken about then
  per_cycle_ = [&] {
    if (line_idle == 0 && line_tx_.idle()) line_idle = cycle();
  };
  const Bytes data = random_bytes(sim(), 256);
  const auto beats = rq_write(0x9000, data);
  uint64_t first_take = 0;
  for (const auto& b : beats) {
    feed_rq({b});
    ASSERT_TRUE(run_until([&] { return rq_src_.empty(); }, 1000));
    if (first_take == 0) first_take = last_rq_take_;
    run(25);
  }
  const uint64_t last_take = last_rq_take_;
  per_cycle_ = nullptr;
  EXPECT_LT(first_take + 2 * kDiv, line_idle) << "the write started after the SYNC";
  EXPECT_GT(last_take, line_idle + 2 * kDiv) << "the write ended before the SYNC";
  ASSERT_TRUE(run_until([&] { return frames_.size() > mark && data_frames() >= 6; }, 50000));
  host_auto_ = true;

  // After SYNC_ACK only new-session frames: the write as seq 0.
  size_t sa = frames_.size();
  for (size_t i = mark; i < frames_.size(); ++i)
    if (frames_[i].f.kind == lk::Kind::kSyncAck) {
      sa = i;
      break;
    }
  ASSERT_LT(sa, frames_.size()) << "no SYNC_ACK";
  run(kRetx + 20000);  // the old frames would have been retransmitted by now
  std::vector<lk::Frame> after;
  for (size_t i = sa + 1; i < frames_.size(); ++i)
    if (frames_[i].f.kind == lk::Kind::kData) after.push_back(frames_[i].f);
  ASSERT_GE(after.size(), 1u);
  EXPECT_EQ(after[0].seq, 0);
  EXPECT_EQ(after[0].payload, lk::encode(lk::DmaWrite{0x9000, data}));
  for (const auto& f : after) EXPECT_EQ(f.seq, 0) << "an old frame went again after SYNC_ACK";

  // The host's session restarts at seq 0 too.
  const lk::MmioWrite w{7, 0x300, 0xF, 7};
  send(lk::encode(w));
  ASSERT_TRUE(run_until([&] { return cq_seen_.size() == 4; }, 20000));
  EXPECT_EQ(cq_seen_[3], cq_of(w));
  ASSERT_TRUE(host_drained(20000));
  EXPECT_TRUE(dut().link_up_o);
}

// 9. Random traffic both ways over lines that flip bits and drop bytes:
// every message arrives exactly once and in order, byte for byte.
TEST_F(UartBridgeTest, RandomTrafficLossyLines) {
  sync();
  host_flip_p_ = 0.002;
  host_drop_p_ = 0.001;
  dev_flip_p_ = 0.002;
  dev_drop_p_ = 0.001;
  cq_ready_p_ = 0.6;
  rc_ready_p_ = 0.6;

  random_traffic(150);
  if (HasFatalFailure()) return;
  const auto c = counters();
  EXPECT_EQ(c.bad_messages, 0);
  EXPECT_GT(c.crc_errors + c.bad_frames, 0) << "the line was never corrupted";
  RecordProperty("device_retransmits", c.retransmits);
  RecordProperty("device_crc_errors", c.crc_errors);
  RecordProperty("device_bad_frames", c.bad_frames);
  RecordProperty("device_duplicates", c.duplicates);
  RecordProperty("host_bad_frames", int(decoder_.counters().bad_frames + decoder_.counters().crc_errors));
  RecordProperty("cycles", int(cycle()));
}

// 10. The board simulation's line model (sim/board/board_sim.cpp): a flipped
// bit is always a data bit (the byte arrives with a good stop bit, so only the
// frame check can catch it), bytes come twice, the host's line stalls; long
// frames (256-byte read completions and DMA writes) carry most of the bytes.
// Nothing corrupted may get through: every message exactly once, byte for byte.
TEST_F(UartBridgeTest, RandomTrafficBoardFaults) {
  sync();
  data_flips_ = true;
  host_flip_p_ = 0.004;
  dev_flip_p_ = 0.004;
  host_stall_p_ = 0.002;
  host_dup_p_ = 0.001;
  dev_dup_p_ = 0.001;
  cq_ready_p_ = 0.6;
  rc_ready_p_ = 0.6;

  ready_hold_p_ = 2e-5;
  host_rto_ = 15000;  // about a window of long frames: retransmissions overlap the originals
  random_traffic(200, 0.6, 0.6);
  ready_hold_p_ = 0;
  if (HasFatalFailure()) return;
  const auto c = counters();
  EXPECT_EQ(c.bad_messages, 0);
  EXPECT_GT(c.crc_errors + c.bad_frames, 0) << "the line was never corrupted";
  RecordProperty("device_crc_errors", c.crc_errors);
  RecordProperty("device_bad_frames", c.bad_frames);
  RecordProperty("host_bad_frames", int(decoder_.counters().bad_frames + decoder_.counters().crc_errors));
}

}  // namespace
