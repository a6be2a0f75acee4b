// SPDX-License-Identifier: Apache-2.0
#include "tpu/link.h"

namespace tpu::link {
namespace {

void put_le(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

uint64_t get_le(std::span<const uint8_t> p, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(p[at + size_t(i)]) << (8 * i);
  return v;
}

}  // namespace

uint16_t crc16(std::span<const uint8_t> bytes, uint16_t crc) {
  for (uint8_t b : bytes) {
    crc ^= uint16_t(b) << 8;
    for (int i = 0; i < 8; ++i) crc = (crc & 0x8000) ? uint16_t((crc << 1) ^ 0x1021) : uint16_t(crc << 1);
  }
  return crc;
}

std::vector<uint8_t> encode_frame(const Frame& f) {
  std::vector<uint8_t> body;
  body.push_back(uint8_t(uint8_t(f.kind) | (f.ping ? kPingBit : 0)));
  body.push_back(f.seq);
  body.push_back(f.ack);
  put_le(body, f.time, 4);
  put_le(body, f.payload.size(), 2);
  body.insert(body.end(), f.payload.begin(), f.payload.end());
  const uint16_t crc = crc16(body);
  body.push_back(uint8_t(crc >> 8));
  body.push_back(uint8_t(crc));
  std::vector<uint8_t> wire{kFlag};
  for (uint8_t b : body) {
    if (b == kFlag || b == kEscape) {
      wire.push_back(kEscape);
      wire.push_back(b ^ kEscapeXor);
    } else {
      wire.push_back(b);
    }
  }
  wire.push_back(kFlag);
  return wire;
}

std::optional<Frame> FrameDecoder::push(uint8_t byte) {
  constexpr size_t kMaxBody = kHeaderBytes + kMaxPayload + kCrcBytes;
  if (byte == kFlag) {
    std::optional<Frame> f;
    if (in_frame_ && escaped_) ++counters_.bad_frames;  // aborted
    else if (in_frame_ && (overflow_ || !body_.empty())) f = finish();
    body_.clear();
    in_frame_ = true;
    escaped_ = overflow_ = false;
    return f;
  }
  if (!in_frame_) return std::nullopt;  // noise before the first flag
  if (byte == kEscape && !escaped_) {
    escaped_ = true;
    return std::nullopt;
  }
  if (escaped_) byte ^= kEscapeXor;
  escaped_ = false;
  if (body_.size() >= kMaxBody) overflow_ = true;
  else body_.push_back(byte);
  return std::nullopt;
}

std::optional<Frame> FrameDecoder::finish() {
  const std::span<const uint8_t> b(body_);
  if (overflow_ || b.size() < kHeaderBytes + kCrcBytes) {
    ++counters_.bad_frames;
    return std::nullopt;
  }
  const size_t len = size_t(get_le(b, 7, 2));
  const uint8_t kind = b[0];
  if (len > kMaxPayload || b.size() != kHeaderBytes + len + kCrcBytes || (kind & 0xF8) != 0) {
    ++counters_.bad_frames;
    return std::nullopt;
  }
  const uint16_t crc = crc16(b.first(kHeaderBytes + len));
  if (uint16_t(b[kHeaderBytes + len] << 8 | b[kHeaderBytes + len + 1]) != crc) {
    ++counters_.crc_errors;
    return std::nullopt;
  }
  Frame f;
  f.kind = Kind(kind & 3);
  f.ping = kind & kPingBit;
  f.seq = b[1];
  f.ack = b[2];
  f.time = uint32_t(get_le(b, 3, 4));
  f.payload.assign(b.begin() + kHeaderBytes, b.begin() + long(kHeaderBytes + len));
  ++counters_.frames;
  return f;
}

std::vector<uint8_t> encode(const MmioWrite& m) {
  std::vector<uint8_t> p{uint8_t(MsgType::kMmioWrite), m.tag};
  put_le(p, m.offset, 4);
  p.push_back(m.be);
  put_le(p, m.data, 4);
  return p;
}

std::vector<uint8_t> encode(const MmioRead& m) {
  std::vector<uint8_t> p{uint8_t(MsgType::kMmioRead), m.tag};
  put_le(p, m.offset, 4);
  p.push_back(m.be);
  return p;
}

std::vector<uint8_t> encode(const ReadCompletion& m) {
  std::vector<uint8_t> p{uint8_t(MsgType::kReadCompletion), m.tag,
                         uint8_t((m.status & 3) | (m.poisoned ? 4 : 0))};
  put_le(p, m.byte_count, 2);
  put_le(p, m.data.size(), 2);
  p.insert(p.end(), m.data.begin(), m.data.end());
  return p;
}

std::vector<uint8_t> encode(const MmioCompletion& m) {
  std::vector<uint8_t> p{uint8_t(MsgType::kMmioCompletion), m.tag, m.status};
  put_le(p, m.data, 4);
  return p;
}

std::vector<uint8_t> encode(const DmaRead& m) {
  std::vector<uint8_t> p{uint8_t(MsgType::kDmaRead), m.tag};
  put_le(p, m.addr, 8);
  put_le(p, m.len, 2);
  return p;
}

std::vector<uint8_t> encode(const DmaWrite& m) {
  std::vector<uint8_t> p{uint8_t(MsgType::kDmaWrite)};
  put_le(p, m.addr, 8);
  put_le(p, m.data.size(), 2);
  p.insert(p.end(), m.data.begin(), m.data.end());
  return p;
}

std::vector<uint8_t> encode(const DeviceCounters& m) {
  std::vector<uint8_t> p{uint8_t(MsgType::kCounters)};
  for (uint16_t v : {m.crc_errors, m.bad_frames, m.duplicates, m.no_room, m.retransmits, m.bad_messages})
    put_le(p, v, 2);
  return p;
}

std::vector<uint8_t> counters_request() { return {uint8_t(MsgType::kCountersRequest)}; }

std::optional<DeviceCounters> decode_counters(std::span<const uint8_t> p) {
  if (p.size() != 13 || p[0] != uint8_t(MsgType::kCounters)) return std::nullopt;
  auto at = [&](int i) { return uint16_t(get_le(p, 1 + 2 * size_t(i), 2)); };
  return DeviceCounters{at(0), at(1), at(2), at(3), at(4), at(5)};
}

std::optional<MmioCompletion> decode_mmio_completion(std::span<const uint8_t> p) {
  if (p.size() != 7 || p[0] != uint8_t(MsgType::kMmioCompletion)) return std::nullopt;
  return MmioCompletion{p[1], p[2], uint32_t(get_le(p, 3, 4))};
}

std::optional<DmaRead> decode_dma_read(std::span<const uint8_t> p) {
  if (p.size() != 12 || p[0] != uint8_t(MsgType::kDmaRead)) return std::nullopt;
  return DmaRead{p[1], get_le(p, 2, 8), uint16_t(get_le(p, 10, 2))};
}

std::optional<DmaWrite> decode_dma_write(std::span<const uint8_t> p) {
  if (p.size() < 11 || p[0] != uint8_t(MsgType::kDmaWrite)) return std::nullopt;
  const size_t n = size_t(get_le(p, 9, 2));
  if (p.size() != 11 + n) return std::nullopt;
  return DmaWrite{get_le(p, 1, 8), std::vector<uint8_t>(p.begin() + 11, p.end())};
}

}  // namespace tpu::link
