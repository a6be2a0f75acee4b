// SPDX-License-Identifier: Apache-2.0
#include "root_complex.h"

#include <algorithm>
#include <bit>
#include <sstream>

namespace tpu::host {

// ---- bit access on Verilator words ---------------------------------------------------

namespace {

// A field of up to 64 bits spans at most three 32-bit words; the link model
// reads and writes several in every cycle, so each is a few word operations
// rather than a loop over bit chunks.
uint64_t get_bits(const uint32_t* w, unsigned lsb, unsigned width) {
  const unsigned word = lsb / 32, off = lsb % 32, last = (lsb + width - 1) / 32;
  uint64_t v = w[word];
  if (last > word) v |= uint64_t{w[word + 1]} << 32;
  v >>= off;
  if (last > word + 1) v |= uint64_t{w[word + 2]} << (64 - off);  // off > 0 here
  return width == 64 ? v : v & ((uint64_t{1} << width) - 1);
}

void set_bits(uint32_t* w, unsigned lsb, unsigned width, uint64_t value) {
  const unsigned word = lsb / 32, off = lsb % 32, last = (lsb + width - 1) / 32;
  const uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  value &= mask;
  // Word k + 1 holds the field's bits from 32 k + 32 - off on.
  w[word] = (w[word] & ~static_cast<uint32_t>(mask << off)) | static_cast<uint32_t>(value << off);
  if (last > word)
    w[word + 1] = (w[word + 1] & ~static_cast<uint32_t>(mask >> (32 - off))) |
                  static_cast<uint32_t>(value >> (32 - off));
  if (last > word + 1)  // off > 0 here
    w[word + 2] = (w[word + 2] & ~static_cast<uint32_t>(mask >> (64 - off))) |
                  static_cast<uint32_t>(value >> (64 - off));
}

// Field positions come from tlp_layout.h (generated from tlp_pkg.sv).
using tlp_layout::Field;

uint64_t get(const uint32_t* w, Field f) { return get_bits(w, f.lsb, f.width); }
void set(uint32_t* w, Field f, uint64_t value) { set_bits(w, f.lsb, f.width, value); }
// A beat's data field as bytes (byte 0 in its low bits), eight at a time:
// the link model moves one beat each way in most cycles.
void get_bytes(const uint32_t* w, Field data, uint8_t* out) {
  for (unsigned i = 0; i < data.width / 8; i += 8) {
    const uint64_t v = get_bits(w, data.lsb + 8 * i, 64);
    for (unsigned j = 0; j < 8; ++j) out[i + j] = uint8_t(v >> (8 * j));
  }
}
void set_bytes(uint32_t* w, Field data, const uint8_t* in) {
  for (unsigned i = 0; i < data.width / 8; i += 8) {
    uint64_t v = 0;
    for (unsigned j = 0; j < 8; ++j) v |= uint64_t{in[i + j]} << (8 * j);
    set_bits(w, data.lsb + 8 * i, 64, v);
  }
}

// The beat structs hold every field of the SV structs.
template <class T>
constexpr bool fits(Field f) {
  return f.width <= 8 * sizeof(T);
}
namespace rq = tlp_layout::rq_t;
namespace rc = tlp_layout::rc_t;
namespace cfg = tlp_layout::link_cfg_t;
static_assert(rq::write.width == 1 && fits<uint8_t>(rq::tag) && fits<uint64_t>(rq::addr) &&
              fits<uint16_t>(rq::len) && rq::data.width == 8 * kBeatBytes && kBeatBytes % 8 == 0 &&
              rq::keep.width == kBeatBytes && rq::last.width == 1);
static_assert(fits<uint8_t>(rc::tag) && fits<uint8_t>(rc::status) && rc::poisoned.width == 1 &&
              fits<uint16_t>(rc::byte_count) && fits<uint16_t>(rc::len) &&
              rc::data.width == 8 * kBeatBytes && rc::keep.width == kBeatBytes &&
              rc::last.width == 1);
static_assert(cfg::bus_master_en.width == 1 && fits<uint16_t>(cfg::max_payload) &&
              fits<uint16_t>(cfg::max_read_req) && cfg::msi_en.width == 1 &&
              fits<uint64_t>(cfg::msi_addr) && fits<uint32_t>(cfg::msi_data));

uint16_t low_keep(unsigned n) { return n >= 16 ? 0xffff : uint16_t((1u << n) - 1); }

// A request as the error messages name it. Formatted only for a message: a
// request arrives every few cycles.
std::string describe(const RqBeat& b) {
  std::ostringstream os;
  if (b.write)
    os << "write";
  else
    os << "read tag " << unsigned(b.tag);
  os << " addr 0x" << std::hex << b.addr << std::dec << " len " << b.len;
  return os.str();
}

}  // namespace

RqBeat unpack_rq(const uint32_t* w) {
  RqBeat b;
  b.write = get(w, rq::write);
  b.tag = uint8_t(get(w, rq::tag));
  b.addr = get(w, rq::addr);
  b.len = uint16_t(get(w, rq::len));
  get_bytes(w, rq::data, b.data.data());
  b.keep = uint16_t(get(w, rq::keep));
  b.last = get(w, rq::last);
  return b;
}

void pack_rq(const RqBeat& b, uint32_t* w) {
  set(w, rq::write, b.write);
  set(w, rq::tag, b.tag);
  set(w, rq::addr, b.addr);
  set(w, rq::len, b.len);
  set_bytes(w, rq::data, b.data.data());
  set(w, rq::keep, b.keep);
  set(w, rq::last, b.last);
}

RcBeat unpack_rc(const uint32_t* w) {
  RcBeat b;
  b.tag = uint8_t(get(w, rc::tag));
  b.status = uint8_t(get(w, rc::status));
  b.poisoned = get(w, rc::poisoned);
  b.byte_count = uint16_t(get(w, rc::byte_count));
  b.len = uint16_t(get(w, rc::len));
  get_bytes(w, rc::data, b.data.data());
  b.keep = uint16_t(get(w, rc::keep));
  b.last = get(w, rc::last);
  return b;
}

void pack_rc(const RcBeat& b, uint32_t* w) {
  set(w, rc::tag, b.tag);
  set(w, rc::status, b.status);
  set(w, rc::poisoned, b.poisoned);
  set(w, rc::byte_count, b.byte_count);
  set(w, rc::len, b.len);
  set_bytes(w, rc::data, b.data.data());
  set(w, rc::keep, b.keep);
  set(w, rc::last, b.last);
}

void pack_link_cfg(const LinkCfg& c, uint32_t* w) {
  set(w, cfg::bus_master_en, c.bus_master_en);
  set(w, cfg::max_payload, c.max_payload);
  set(w, cfg::max_read_req, c.max_read_req);
  set(w, cfg::msi_en, c.msi_en);
  set(w, cfg::msi_addr, c.msi_addr);
  set(w, cfg::msi_data, c.msi_data);
}

// ---- RootComplex ---------------------------------------------------------------------

RootComplex::RootComplex(TlpPorts ports, RootComplexConfig cfg)
    : ports_(ports), cfg_(cfg), rng_(cfg.seed) {
  *ports_.rq_ready = 0;
  *ports_.rc_valid = 0;
}

void RootComplex::clear_logs() {
  reads_.clear();
  writes_.clear();
  applied_.clear();
  errors_.clear();
}

size_t RootComplex::outstanding() const { return pending_.size(); }

bool RootComplex::idle() const { return pending_.empty() && beats_.empty() && wr_beats_.empty(); }

void RootComplex::error(const std::string& what) {
  std::ostringstream os;
  os << "cycle " << now_ << ": " << what;
  errors_.push_back(os.str());
}

bool RootComplex::tag_in_flight(uint8_t tag) const {
  return std::any_of(pending_.begin(), pending_.end(),
                     [tag](const Request& r) { return r.tag == tag; });
}

void RootComplex::drive() {
  auto chance = [this](double p) {
    return p >= 1.0 || (p > 0 && std::bernoulli_distribution(p)(rng_));
  };
  // rq: a token bucket for bandwidth, a coin for backpressure.
  rq_tokens_ = std::min(rq_tokens_ + cfg_.rq_beats_per_cycle, 1.0);
  rq_ready_ = rq_tokens_ >= 1.0 && chance(cfg_.rq_ready_prob);
  *ports_.rq_ready = rq_ready_;

  // rc: a beat once offered stays until taken.
  rc_tokens_ = std::min(rc_tokens_ + cfg_.rc_beats_per_cycle, 1.0);
  if (!rc_offer_) {
    if (beats_.empty()) start_completion();
    if (!beats_.empty() && rc_tokens_ >= 1.0 && !(cfg_.rc_gap_prob > 0 && chance(cfg_.rc_gap_prob))) {
      rc_offer_ = true;
      pack_rc(beats_.front(), ports_.rc);  // held in the ports until taken
    }
  }
  *ports_.rc_valid = rc_offer_;
}

void RootComplex::tick(uint64_t now) {
  now_ = now;
  if (*ports_.rq_valid && rq_ready_) {
    rq_tokens_ -= 1.0;
    ++stats_.rq_beats;
    accept_rq(unpack_rq(ports_.rq));
  }
  if (rc_offer_ && *ports_.rc_ready) {
    rc_tokens_ -= 1.0;
    ++stats_.rc_beats;
    rc_offer_ = false;
    beats_.pop_front();
    if (beats_.empty() && cur_ != SIZE_MAX) {
      if (pending_[cur_].cpls.empty()) pending_.erase(pending_.begin() + long(cur_));
      cur_ = SIZE_MAX;
    }
  }
  now_ = now + 1;  // the cycle the next drive() is for
}

// ---- rq ------------------------------------------------------------------------------

void RootComplex::accept_rq(const RqBeat& beat) {
  if (!wr_beats_.empty()) {
    const RqBeat& h = wr_beats_.front();
    if (!beat.write || beat.addr != h.addr || beat.len != h.len)
      error("rq: header changed inside a posted write");
    wr_beats_.push_back(beat);
    if (beat.last) finish_write();
    return;
  }
  if (beat.write) {
    wr_beats_.push_back(beat);
    if (beat.last) finish_write();
    return;
  }
  accept_read(beat);
}

void RootComplex::finish_write() {
  const RqBeat h = wr_beats_.front();
  if (h.len == 0 || h.len > 4096) error("rq: bad length, " + describe(h));
  if (h.len > cfg_.mps) error("rq: longer than MPS, " + describe(h));
  if ((h.addr & 0xfff) + h.len > 4096) error("rq: crosses 4 KiB, " + describe(h));
  const size_t want_beats = (h.len + kBeatBytes - 1) / kBeatBytes;
  if (wr_beats_.size() != want_beats) error("rq: wrong beat count, " + describe(h));
  std::vector<uint8_t> bytes;
  bytes.reserve(wr_beats_.size() * kBeatBytes);
  for (size_t i = 0; i < wr_beats_.size(); ++i) {
    const RqBeat& b = wr_beats_[i];
    const bool last = i + 1 == wr_beats_.size();
    const unsigned n = last ? unsigned(h.len - std::min<size_t>(h.len, i * kBeatBytes)) : kBeatBytes;
    if (b.keep != low_keep(n)) error("rq: keep not packed, " + describe(h));
    if (b.last != last) error("rq: last misplaced, " + describe(h));
    const unsigned take = unsigned(std::popcount(b.keep));
    bytes.insert(bytes.end(), b.data.begin(), b.data.begin() + std::min(take, kBeatBytes));
  }
  wr_beats_.clear();
  mem_.write(h.addr, std::span<const uint8_t>(bytes));
  ++stats_.writes;
  stats_.write_bytes += bytes.size();
  writes_.push_back(WriteRecord{seq_++, now_, h.addr, std::move(bytes)});
}

void RootComplex::accept_read(const RqBeat& beat) {
  if (beat.len == 0 || beat.len > 4096) error("rq: bad length, " + describe(beat));
  if (beat.len > cfg_.mrrs) error("rq: longer than MRRS, " + describe(beat));
  if ((beat.addr & 0xfff) + beat.len > 4096) error("rq: crosses 4 KiB, " + describe(beat));
  if (!beat.last) error("rq: read without last, " + describe(beat));
  if (tag_in_flight(beat.tag)) error("rq: tag reused while in flight, " + describe(beat));

  const uint64_t seq = seq_++;
  reads_.push_back(ReadRecord{seq, now_, beat.tag, beat.addr, beat.len});
  ++stats_.reads;
  stats_.read_bytes += beat.len;

  // Faults that hit this request.
  std::vector<const FaultRule*> hit;
  for (Fault& f : faults_) {
    const FaultRule& r = f.rule;
    const uint64_t r_end = r.len > UINT64_MAX - r.addr ? UINT64_MAX : r.addr + r.len;
    if (!(beat.addr < r_end && r.addr < beat.addr + beat.len)) continue;
    if (f.seen < r.skip) {
      ++f.seen;
      continue;
    }
    if (r.count >= 0 && f.hits >= uint32_t(r.count)) continue;
    ++f.hits;
    ++stats_.faults_applied;
    hit.push_back(&r);
    applied_.push_back(FaultRecord{seq, beat.addr, beat.len, r.kind, beat.addr, beat.len});
  }
  auto has = [&](FaultKind k) -> const FaultRule* {
    for (const FaultRule* r : hit)
      if (r->kind == k) return r;
    return nullptr;
  };

  if (has(FaultKind::kDrop)) return;

  std::vector<Completion> cpls;
  if (const FaultRule* r = has(FaultKind::kUr) ? has(FaultKind::kUr) : has(FaultKind::kCa)) {
    Completion c;
    c.hdr.tag = beat.tag;
    c.hdr.status = uint8_t(r->kind == FaultKind::kUr ? CplStatus::kUr : CplStatus::kCa);
    c.hdr.byte_count = beat.len;
    c.hdr.len = 0;
    cpls.push_back(c);
  } else {
    cpls = split(beat.tag, beat.addr, beat.len);
    if (const FaultRule* r = has(FaultKind::kPoison))
      cpls[std::min<size_t>(r->cpl_index, cpls.size() - 1)].hdr.poisoned = true;
    // A fault on one completion hit that completion's bytes. Of several rules
    // of one kind, the first acts (has()), so all of them record its bytes.
    for (size_t i = applied_.size() - hit.size(); i < applied_.size(); ++i) {
      FaultRecord& rec = applied_[i];
      if (rec.kind != FaultKind::kPoison && rec.kind != FaultKind::kDuplicate &&
          rec.kind != FaultKind::kBadByteCount && rec.kind != FaultKind::kBadLen)
        continue;
      const RcBeat& c = cpls[std::min<size_t>(has(rec.kind)->cpl_index, cpls.size() - 1)].hdr;
      rec.hit_addr = beat.addr + beat.len - c.byte_count;
      rec.hit_len = c.len;
    }
    // Extra completions around completion k. Without a fault there are none,
    // and the completions are not copied.
    if (!hit.empty()) {
      std::vector<Completion> out;
      for (size_t k = 0; k < cpls.size(); ++k) {
        auto at = [&](FaultKind kind) {
          const FaultRule* r = has(kind);
          return r && std::min<size_t>(r->cpl_index, cpls.size() - 1) == k;
        };
        if (at(FaultKind::kBadByteCount)) {
          Completion c = cpls[k];
          c.hdr.byte_count = uint16_t((c.hdr.byte_count + 1) & 0x1fff);
          out.push_back(c);
        }
        if (at(FaultKind::kBadLen)) {
          Completion c = cpls[k];
          c.hdr.len = uint16_t(c.hdr.len + 1);
          out.push_back(c);
        }
        out.push_back(cpls[k]);
        if (at(FaultKind::kDuplicate)) out.push_back(cpls[k]);
      }
      cpls = std::move(out);
    }
  }
  if (has(FaultKind::kBadTag)) {
    Completion c;
    c.bad_tag = true;
    c.hdr.byte_count = 16;
    c.hdr.len = 16;
    c.payload.resize(16);
    for (auto& b : c.payload) b = uint8_t(rng_());
    cpls.insert(cpls.begin(), c);
  }

  uint64_t ready = now_ + cfg_.latency;
  if (cfg_.jitter) ready += std::uniform_int_distribution<uint32_t>(0, cfg_.jitter)(rng_);
  if (const FaultRule* r = has(FaultKind::kDelay)) ready += r->delay;

  Request req{seq, beat.tag, ready, false, {}};
  req.cpls.assign(std::make_move_iterator(cpls.begin()), std::make_move_iterator(cpls.end()));
  quiet_until_ = std::min(quiet_until_, req.ready);
  pending_.push_back(std::move(req));
  stats_.max_outstanding = std::max<uint64_t>(stats_.max_outstanding, pending_.size());
}

std::vector<RootComplex::Completion> RootComplex::split(uint8_t tag, uint64_t addr,
                                                        uint32_t len) {
  const std::vector<uint8_t> data = mem_.read(addr, len);
  const uint64_t rcb = std::max<uint32_t>(cfg_.rcb, 1);
  const uint64_t limit = std::max<uint64_t>(cfg_.max_cpl_bytes, rcb);
  std::vector<Completion> out;
  uint32_t pos = 0;
  while (pos < len) {
    const uint64_t a = addr + pos;
    const uint32_t rem = len - pos;
    const uint64_t first = rcb - (a % rcb);  // bytes to the next RCB boundary
    uint64_t n = rem;
    switch (cfg_.split) {
      case SplitMode::kRcb:
        n = std::min<uint64_t>(rem, first);
        break;
      case SplitMode::kWhole:
        if (rem > limit) n = first + (limit - first) / rcb * rcb;
        break;
      case SplitMode::kRandom: {
        // Candidate ends: each RCB boundary within the limit, or the end of the request.
        std::vector<uint64_t> ends;
        for (uint64_t e = first; e < rem && e <= limit; e += rcb) ends.push_back(e);
        if (rem <= limit) ends.push_back(rem);
        if (ends.empty()) ends.push_back(std::min<uint64_t>(rem, first));
        n = ends[std::uniform_int_distribution<size_t>(0, ends.size() - 1)(rng_)];
        break;
      }
    }
    if (n == 0 || n > rem) n = rem;
    Completion c;
    c.hdr.tag = tag;
    c.hdr.status = uint8_t(CplStatus::kSc);
    c.hdr.byte_count = uint16_t(rem);
    c.hdr.len = uint16_t(n);
    c.payload.assign(data.begin() + pos, data.begin() + pos + n);
    out.push_back(std::move(c));
    pos += uint32_t(n);
  }
  return out;
}

// ---- rc ------------------------------------------------------------------------------

uint8_t RootComplex::pick_bad_tag() {
  // A tag whose slot is certainly busy with another use: an in-flight request
  // that has not seen a completion yet, with the tag's top bit flipped (the
  // device cannot reuse that request's tag before its completions arrive).
  for (const Request& r : pending_) {
    if (r.started) continue;
    const uint8_t t = r.tag ^ 0x80;
    if (!tag_in_flight(t)) return t;
  }
  for (int i = 0; i < 1024; ++i) {
    const uint8_t t = uint8_t(rng_());
    if (!tag_in_flight(t)) return t;
  }
  return 0xff;
}

void RootComplex::start_completion() {
  // Runs in every cycle the link has no completion to send: no allocation,
  // and no scan of the requests while none can be ready (quiet_until_).
  if (now_ < quiet_until_) return;
  auto eligible = [this](const Request& r) { return r.ready <= now_ && !r.cpls.empty(); };
  size_t count = 0;
  uint64_t next_ready = UINT64_MAX;
  for (const Request& r : pending_) {
    if (!r.cpls.empty()) next_ready = std::min(next_ready, r.ready);
    if (!eligible(r)) continue;
    ++count;
    if (!cfg_.reorder) break;
  }
  if (count == 0) {
    // A request's ready cycle never changes; a new request lowers the bound
    // (accept_read).
    quiet_until_ = next_ready;
    return;
  }
  // In order: the first eligible request; reordering: a random one of them.
  size_t skip = cfg_.reorder ? std::uniform_int_distribution<size_t>(0, count - 1)(rng_) : 0;
  for (cur_ = 0;; ++cur_)
    if (eligible(pending_[cur_]) && skip-- == 0) break;
  Request& req = pending_[cur_];
  Completion c = std::move(req.cpls.front());
  req.cpls.pop_front();
  if (c.bad_tag) c.hdr.tag = pick_bad_tag();
  req.started = req.started || !c.bad_tag;

  // Beats: payload packed from byte 0, a beat without payload for len 0.
  const size_t bytes = c.payload.size();
  const size_t n_beats = std::max<size_t>(1, (bytes + kBeatBytes - 1) / kBeatBytes);
  for (size_t i = 0; i < n_beats; ++i) {
    RcBeat b = c.hdr;
    const size_t off = i * kBeatBytes;
    const size_t n = bytes > off ? std::min<size_t>(kBeatBytes, bytes - off) : 0;
    for (size_t j = 0; j < n; ++j) b.data[j] = c.payload[off + j];
    b.keep = low_keep(unsigned(n));
    b.last = i + 1 == n_beats;
    beats_.push_back(b);
  }
}

}  // namespace tpu::host
