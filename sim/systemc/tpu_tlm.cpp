// SPDX-License-Identifier: Apache-2.0
#include "tpu_tlm.h"

#include <algorithm>
#include <stdexcept>
#include <string>

// libsystemc's main() calls sc_main; programs that use the module from their
// own main() (the tpu tool, GoogleTest binaries) have none. A weak one lets
// them link; a program's own sc_main takes its place.
int sc_main(int, char**) __attribute__((weak));
int sc_main(int, char**) { return 1; }

namespace tpu::systemc {

using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;

namespace {

using tlp_layout::Field;
namespace cq_t = tlp_layout::cq_t;
namespace cc_t = tlp_layout::cc_t;
namespace rq_t = tlp_layout::rq_t;
namespace rc_t = tlp_layout::rc_t;
namespace link_cfg_t = tlp_layout::link_cfg_t;

constexpr size_t words(unsigned bits) { return (bits + 31) / 32; }

void set_bits(uint32_t* w, Field f, uint64_t value) {
  for (unsigned done = 0; done < f.width;) {
    const unsigned bit = f.lsb + done, word = bit / 32, off = bit % 32;
    const unsigned take = std::min(32 - off, f.width - done);
    const uint32_t mask = uint32_t(((uint64_t{1} << take) - 1) << off);
    w[word] = (w[word] & ~mask) | (uint32_t((value >> done) << off) & mask);
    done += take;
  }
}

uint64_t get_bits(uint64_t v, Field f) {
  return (v >> f.lsb) & (f.width >= 64 ? ~uint64_t{0} : (uint64_t{1} << f.width) - 1);
}

// Verilator's 32-bit words of a packed vector <-> the sc_bv of a --sc port.
template <int N>
sc_dt::sc_bv<N> to_bv(const uint32_t* w) {
  sc_dt::sc_bv<N> bv;
  for (size_t i = 0; i < words(N); ++i) bv.set_word(int(i), w[i]);
  return bv;
}
template <int N>
void from_bv(const sc_dt::sc_bv<N>& bv, uint32_t* w) {
  for (size_t i = 0; i < words(N); ++i) w[i] = uint32_t(bv.get_word(int(i)));
}

uint16_t low_keep(size_t n) { return n >= 16 ? 0xffff : uint16_t((1u << n) - 1); }

}  // namespace

void init() {
  // Reading the resolution fixes it, so set it first and look only when
  // that fails (it was fixed already, maybe at 1 ns by an earlier call).
  static const bool done = [] {
    try {
      sc_core::sc_set_time_resolution(1, sc_core::SC_NS);
    } catch (const std::exception& e) {
      if (sc_core::sc_get_time_resolution() != sc_time(1, sc_core::SC_NS))
        throw std::runtime_error(std::string("SystemC's time resolution must be 1 ns for tpu_top (") +
                                 e.what() + ")");
    }
    return true;
  }();
  (void)done;
}

TpuTlmBase::TpuTlmBase(const sc_core::sc_module_name& name, const TpuTlmConfig& cfg)
    : sc_module(name),
      clk_i("clk_i"),
      rst_ni("rst_ni"),
      irq_o("irq_o"),
      bar0("bar0"),
      dma("dma"),
      cfg_(cfg) {
  if (cfg_.rcb == 0 || (cfg_.rcb & (cfg_.rcb - 1)) != 0)
    throw std::invalid_argument("TpuTlm: rcb must be a power of two");
  bar0.register_b_transport(this, &TpuTlmBase::b_transport);
  set_link(cfg_.link);

  SC_HAS_PROCESS(TpuTlmBase);
  SC_METHOD(on_clock);
  sensitive << clk_i.pos();
  dont_initialize();
  SC_THREAD(dma_thread);
}

void TpuTlmBase::set_link(const host::LinkCfg& link) {
  cfg_.link = link;
  uint32_t w[words(link_cfg_t::kBits)] = {};
  host::pack_link_cfg(link, w);
  link_cfg_.write(to_bv<link_cfg_t::kBits>(w));
}

// ---- bar0: MMIO ----------------------------------------------------------------------

void TpuTlmBase::b_transport(tlm::tlm_generic_payload& gp, sc_time& delay) {
  if (delay != SC_ZERO_TIME) wait(delay);  // catch up with a loosely-timed initiator
  delay = SC_ZERO_TIME;
  const tlm::tlm_command cmd = gp.get_command();
  if (cmd == tlm::TLM_IGNORE_COMMAND) {
    gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    return;
  }
  if (gp.get_data_length() != 4 || (gp.get_streaming_width() != 0 && gp.get_streaming_width() < 4)) {
    gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return;
  }
  Mmio m;
  m.write = cmd == tlm::TLM_WRITE_COMMAND;
  m.addr = gp.get_address();
  unsigned char* data = gp.get_data_ptr();
  if (m.write) {
    m.data = uint32_t(data[0]) | uint32_t(data[1]) << 8 | uint32_t(data[2]) << 16 | uint32_t(data[3]) << 24;
    if (const unsigned char* be = gp.get_byte_enable_ptr()) {
      const unsigned n = gp.get_byte_enable_length();
      m.be = 0;
      for (unsigned i = 0; i < 4; ++i)
        if (n && be[i % n] == TLM_BYTE_ENABLED) m.be |= uint8_t(1u << i);
    }
  }
  mmio_queue_.push_back(&m);
  while (!m.done) wait(m.done_ev);
  if (m.response == tlm::TLM_OK_RESPONSE && !m.write) {
    for (unsigned i = 0; i < 4; ++i) data[i] = uint8_t(m.data >> (8 * i));
  }
  // The device drops a write to an unmapped offset without answering; those
  // outside the BAR or unaligned are known here.
  if (m.write && m.response == tlm::TLM_OK_RESPONSE && (m.addr >= 4096 || (m.addr & 3) != 0))
    m.response = tlm::TLM_ADDRESS_ERROR_RESPONSE;
  if (m.response != tlm::TLM_OK_RESPONSE) ++stats_.mmio_errors;
  ++(m.write ? stats_.mmio_writes : stats_.mmio_reads);
  gp.set_dmi_allowed(false);
  gp.set_response_status(m.response);
}

void TpuTlmBase::finish(Mmio& m, tlm::tlm_response_status r) {
  m.response = r;
  m.done = true;
  m.done_ev.notify(SC_ZERO_TIME);
}

// ---- the ports, once a cycle ----------------------------------------------------------

// At the rising edge the signals still hold the values of the cycle that
// ends: a handshake happened when valid and ready were both high. What is
// written here takes effect after the edge, as a flop's output.
void TpuTlmBase::on_clock() {
  ++cycles_;
  if (!rst_ni.read()) {
    reset_link();
    return;
  }

  // irq_o: one cycle high per MSI, low in between.
  if (irq_high_) {
    irq_o.write(false);
    irq_high_ = false;
  } else if (irq_ > 0) {
    irq_o.write(true);
    irq_high_ = true;
    --irq_;
  }

  // cq: the front MMIO request until the device takes it.
  if (cq_offer_ && cq_ready_.read()) {
    Mmio* m = mmio_queue_.front();
    mmio_queue_.pop_front();
    cq_offer_ = false;
    if (m->write) {
      finish(*m, tlm::TLM_OK_RESPONSE);
    } else {
      m->sent = cycles_;
      mmio_reads_.push_back(m);
    }
  }
  if (!cq_offer_ && !mmio_queue_.empty()) {
    Mmio* m = mmio_queue_.front();
    if (!m->write) m->tag = uint8_t(next_tag_++);
    uint32_t w[words(cq_t::kBits)] = {};
    set_bits(w, cq_t::write, m->write);
    set_bits(w, cq_t::tag, m->tag);
    set_bits(w, cq_t::addr, m->addr);
    set_bits(w, cq_t::be, m->be);
    set_bits(w, cq_t::data, m->data);
    cq_.write(to_bv<cq_t::kBits>(w));
    cq_offer_ = true;
  }
  cq_valid_.write(cq_offer_);

  // cc: read completions, matched by tag (cc_ready is always high).
  if (cc_valid_.read()) {
    const uint64_t beat = cc_.read();
    const uint8_t tag = uint8_t(get_bits(beat, cc_t::tag));
    const auto it = std::find_if(mmio_reads_.begin(), mmio_reads_.end(),
                                 [tag](const Mmio* m) { return m->tag == tag; });
    if (it != mmio_reads_.end()) {
      Mmio* m = *it;
      mmio_reads_.erase(it);
      m->data = uint32_t(get_bits(beat, cc_t::data));
      finish(*m, get_bits(beat, cc_t::status) == 0 ? tlm::TLM_OK_RESPONSE : tlm::TLM_ADDRESS_ERROR_RESPONSE);
    }
  }
  while (!mmio_reads_.empty() && cycles_ - mmio_reads_.front()->sent > cfg_.mmio_timeout_cycles) {
    finish(*mmio_reads_.front(), tlm::TLM_GENERIC_ERROR_RESPONSE);
    mmio_reads_.pop_front();
  }

  // rq: every beat is taken (rq_ready is always high); whole packets go to
  // dma_thread.
  if (rq_valid_.read()) {
    uint32_t w[words(rq_t::kBits)];
    from_bv<rq_t::kBits>(rq_.read(), w);
    accept_rq(host::unpack_rq(w));
  }

  // rc: a beat once offered stays until taken; a read's completions go when
  // its time has come, in the order of the requests.
  if (rc_offer_ && rc_ready_.read()) {
    rc_beats_.pop_front();
    rc_offer_ = false;
  }
  if (!rc_offer_) {
    if (rc_beats_.empty() && !cpl_queue_.empty() && cpl_queue_.front().ready <= sc_core::sc_time_stamp()) {
      rc_beats_.assign(cpl_queue_.front().beats.begin(), cpl_queue_.front().beats.end());
      cpl_queue_.pop_front();
    }
    if (!rc_beats_.empty()) {
      uint32_t w[words(rc_t::kBits)] = {};
      host::pack_rc(rc_beats_.front(), w);
      rc_.write(to_bv<rc_t::kBits>(w));
      rc_offer_ = true;
    }
  }
  rc_valid_.write(rc_offer_);
}

void TpuTlmBase::reset_link() {
  cq_offer_ = false;
  cq_valid_.write(false);
  for (Mmio* m : mmio_reads_) finish(*m, tlm::TLM_GENERIC_ERROR_RESPONSE);
  mmio_reads_.clear();
  wr_beats_.clear();
  dma_queue_.clear();
  cpl_queue_.clear();
  rc_beats_.clear();
  rc_offer_ = false;
  rc_valid_.write(false);
  irq_ = 0;
  irq_high_ = false;
  irq_o.write(false);
  ++reset_gen_;
}

void TpuTlmBase::accept_rq(const host::RqBeat& beat) {
  if (!wr_beats_.empty() || beat.write) {
    wr_beats_.push_back(beat);
    if (!beat.last) return;
    const host::RqBeat& h = wr_beats_.front();
    Packet p{true, h.tag, h.addr, h.len, {}};
    for (const host::RqBeat& b : wr_beats_) {
      const size_t n = std::min<size_t>(host::kBeatBytes, size_t(__builtin_popcount(b.keep)));
      p.data.insert(p.data.end(), b.data.begin(), b.data.begin() + long(n));
    }
    p.data.resize(h.len);
    wr_beats_.clear();
    dma_queue_.push_back(std::move(p));
  } else {
    dma_queue_.push_back(Packet{false, beat.tag, beat.addr, beat.len, {}});
  }
  dma_ev_.notify(SC_ZERO_TIME);
}

// ---- dma: the device's requests as TLM transactions ------------------------------------

void TpuTlmBase::dma_thread() {
  tlm::tlm_generic_payload gp;
  while (true) {
    while (dma_queue_.empty()) wait(dma_ev_);
    Packet p = std::move(dma_queue_.front());
    dma_queue_.pop_front();
    const uint64_t gen = reset_gen_;
    std::vector<uint8_t> data = p.write ? p.data : std::vector<uint8_t>(p.len);
    gp.set_command(p.write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    gp.set_address(p.addr);
    gp.set_data_ptr(data.data());
    gp.set_data_length(unsigned(data.size()));
    gp.set_streaming_width(unsigned(data.size()));
    gp.set_byte_enable_ptr(nullptr);
    gp.set_byte_enable_length(0);
    gp.set_dmi_allowed(false);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_time delay = SC_ZERO_TIME;
    dma->b_transport(gp, delay);
    const bool ok = gp.is_response_ok();
    if (!ok) ++stats_.dma_errors;
    if (gen != reset_gen_) continue;  // the device was reset meanwhile
    if (p.write) {
      ++stats_.dma_writes;
      stats_.dma_write_bytes += data.size();
      if (cfg_.link.msi_en && p.addr == cfg_.link.msi_addr) {
        ++stats_.msis;
        ++irq_;
      }
    } else {
      ++stats_.dma_reads;
      stats_.dma_read_bytes += data.size();
      cpl_queue_.push_back(ReadCompletions{sc_core::sc_time_stamp() + delay, completions(p, ok, data)});
    }
  }
}

// A read's completions: one UR completion when it failed, else one per
// RCB-aligned block, data packed from byte 0 of the first beat.
std::vector<host::RcBeat> TpuTlmBase::completions(const Packet& p, bool ok,
                                                  const std::vector<uint8_t>& data) const {
  std::vector<host::RcBeat> beats;
  if (!ok) {
    host::RcBeat b;
    b.tag = p.tag;
    b.status = uint8_t(host::CplStatus::kUr);
    b.byte_count = uint16_t(p.len);
    b.len = 0;
    b.last = true;
    beats.push_back(b);
    return beats;
  }
  uint32_t pos = 0;
  while (pos < p.len) {
    const uint32_t rem = p.len - pos;
    const uint32_t n = std::min<uint32_t>(rem, cfg_.rcb - uint32_t((p.addr + pos) % cfg_.rcb));
    for (uint32_t off = 0; off < n; off += host::kBeatBytes) {
      host::RcBeat b;
      b.tag = p.tag;
      b.status = uint8_t(host::CplStatus::kSc);
      b.byte_count = uint16_t(rem);
      b.len = uint16_t(n);
      const uint32_t k = std::min<uint32_t>(host::kBeatBytes, n - off);
      std::copy_n(data.begin() + pos + off, k, b.data.begin());
      b.keep = low_keep(k);
      b.last = off + host::kBeatBytes >= n;
      beats.push_back(b);
    }
    pos += n;
  }
  return beats;
}

}  // namespace tpu::systemc
