// SPDX-License-Identifier: Apache-2.0
// Cycle-level models of the two ends of an 8N1 line (least significant bit
// first, idle high), for tests that drive a UART from C++: LineTx produces
// the level of each clock cycle from queued bytes, LineRx recovers bytes from
// the level of each cycle. A bit lasts `div` cycles.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

namespace tb {

class LineTx {
 public:
  explicit LineTx(unsigned div) : div_(div) {}

  // A byte; bad_stop sends its stop bit low (a framing error).
  void push(uint8_t b, bool bad_stop = false) { push_wave(uint16_t(b) << 1 | (bad_stop ? 0u : 1u << 9)); }
  // Ten bit times of the given levels, bit 0 first (0x3FF: idle for a byte time).
  void push_wave(uint16_t wave) { queue_.push_back(wave & 0x3FF); }

  bool level() const { return active_ ? ((wave_ >> bit_) & 1) != 0 : true; }
  // Advances one clock cycle; a queued byte starts as soon as the last ends.
  void step() {
    if (active_ && ++cnt_ == div_) {
      cnt_ = 0;
      if (++bit_ == 10) active_ = false;
    }
    if (!active_ && !queue_.empty()) {
      wave_ = queue_.front();
      queue_.pop_front();
      active_ = true;
      bit_ = 0;
      cnt_ = 0;
    }
  }
  bool idle() const { return !active_ && queue_.empty(); }
  size_t queued() const { return queue_.size(); }  // bytes not started yet

 private:
  unsigned div_;
  std::deque<uint16_t> queue_;
  uint16_t wave_ = 0x3FF;
  unsigned bit_ = 0, cnt_ = 0;
  bool active_ = false;
};

class LineRx {
 public:
  static constexpr int kFramingError = -1;

  explicit LineRx(unsigned div) : div_(div) {}

  // The level of one cycle; returns a byte when its stop bit is sampled
  // (kFramingError when the stop bit is low). Samples mid-bit.
  std::optional<int> step(bool level) {
    if (!busy_) {
      if (level) return std::nullopt;
      busy_ = true;
      t_ = 0;
      byte_ = 0;
    } else {
      ++t_;
    }
    const unsigned half = div_ / 2;
    if (t_ < half || (t_ - half) % div_ != 0) return std::nullopt;
    const unsigned k = (t_ - half) / div_;
    if (k == 0) {
      if (level) busy_ = false;  // a glitch, not a start bit
    } else if (k <= 8) {
      if (level) byte_ |= uint8_t(1u << (k - 1));
    } else {
      busy_ = false;
      return level ? int(byte_) : kFramingError;
    }
    return std::nullopt;
  }

 private:
  unsigned div_;
  bool busy_ = false;
  unsigned t_ = 0;
  uint8_t byte_ = 0;
};

}  // namespace tb
