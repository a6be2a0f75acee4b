// SPDX-License-Identifier: Apache-2.0
// Field access on Verilated port values of any width.
//
// Verilator maps a packed port to CData/SData/IData/QData up to 64 bits and to
// VlWide<W> (W 32-bit words) above. get_field/set_field read and write a
// field of up to 64 bits at any bit offset in either kind, given as (lsb,
// width) or as a layout field ({lsb, width}, see sim/host/*_layout.h).
#pragma once

#include <verilated.h>

#include <cstdint>
#include <type_traits>

namespace tb {

inline uint64_t low_mask(unsigned width) {
  return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
}

template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
uint64_t get_field(const T& sig, unsigned lsb, unsigned width) {
  return (static_cast<uint64_t>(sig) >> lsb) & low_mask(width);
}

template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
void set_field(T& sig, unsigned lsb, unsigned width, uint64_t value) {
  const uint64_t mask = low_mask(width) << lsb;
  uint64_t v = static_cast<uint64_t>(sig);
  v = (v & ~mask) | ((value << lsb) & mask);
  sig = static_cast<T>(v);
}

template <std::size_t W>
uint64_t get_field(const VlWide<W>& sig, unsigned lsb, unsigned width) {
  uint64_t out = 0;
  unsigned done = 0;
  while (done < width) {
    const unsigned bit = lsb + done;
    const unsigned word = bit / 32, off = bit % 32;
    const unsigned take = std::min(32 - off, width - done);
    const uint64_t chunk = (static_cast<uint64_t>(sig[word]) >> off) & low_mask(take);
    out |= chunk << done;
    done += take;
  }
  return out;
}

template <std::size_t W>
void set_field(VlWide<W>& sig, unsigned lsb, unsigned width, uint64_t value) {
  unsigned done = 0;
  while (done < width) {
    const unsigned bit = lsb + done;
    const unsigned word = bit / 32, off = bit % 32;
    const unsigned take = std::min(32 - off, width - done);
    const uint32_t mask = static_cast<uint32_t>(low_mask(take) << off);
    const uint32_t chunk = static_cast<uint32_t>(((value >> done) & low_mask(take)) << off);
    sig[word] = (sig[word] & ~mask) | chunk;
    done += take;
  }
}

// A field of a generated layout (anything with members lsb and width).
template <class Sig, class Field, class = decltype(Field::lsb + Field::width)>
uint64_t get_field(const Sig& sig, const Field& f) {
  return get_field(sig, f.lsb, f.width);
}

template <class Sig, class Field, class = decltype(Field::lsb + Field::width)>
void set_field(Sig& sig, const Field& f, uint64_t value) {
  set_field(sig, f.lsb, f.width, value);
}

// Sign-extends the low `width` bits of v.
inline int64_t sign_extend(uint64_t v, unsigned width) {
  const uint64_t m = uint64_t{1} << (width - 1);
  v &= low_mask(width);
  return static_cast<int64_t>((v ^ m) - m);
}

}  // namespace tb
