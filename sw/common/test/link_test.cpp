// SPDX-License-Identifier: Apache-2.0
// The serial link's frame codec (tpu/link.h): CRC, stuffing, decoding and
// what the decoder drops.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "tpu/link.h"

namespace tpu::link {
namespace {

std::vector<Frame> decode_all(FrameDecoder& d, const std::vector<uint8_t>& wire) {
  std::vector<Frame> out;
  for (uint8_t b : wire)
    if (auto f = d.push(b)) out.push_back(*f);
  return out;
}

TEST(LinkTest, CrcIsCcittFalse) {
  const std::string check = "123456789";
  EXPECT_EQ(crc16({reinterpret_cast<const uint8_t*>(check.data()), check.size()}), 0x29B1);
}

TEST(LinkTest, FlagAndEscapeBytesAreStuffed) {
  Frame f;
  f.seq = kFlag;
  f.ack = kEscape;
  f.payload = {kFlag, kEscape, 0x5E, 0x5D};
  const std::vector<uint8_t> wire = encode_frame(f);
  ASSERT_GE(wire.size(), 2u);
  EXPECT_EQ(wire.front(), kFlag);
  EXPECT_EQ(wire.back(), kFlag);
  for (size_t i = 1; i + 1 < wire.size(); ++i) EXPECT_NE(wire[i], kFlag) << "at " << i;
  EXPECT_EQ(wire[2], kEscape);
  EXPECT_EQ(wire[3], kFlag ^ kEscapeXor);
}

TEST(LinkTest, RandomFramesRoundTrip) {
  std::mt19937 rng(1);
  FrameDecoder d;
  for (int i = 0; i < 200; ++i) {
    Frame f;
    f.kind = Kind(rng() % 4);
    f.ping = rng() % 2;
    f.seq = uint8_t(rng());
    f.ack = uint8_t(rng());
    f.time = uint32_t(rng());
    f.payload.resize(rng() % (kMaxPayload + 1));
    for (auto& b : f.payload) b = uint8_t(rng() % 4 == 0 ? kFlag : rng());
    const auto got = decode_all(d, encode_frame(f));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].kind, f.kind);
    EXPECT_EQ(got[0].ping, f.ping);
    EXPECT_EQ(got[0].seq, f.seq);
    EXPECT_EQ(got[0].ack, f.ack);
    EXPECT_EQ(got[0].time, f.time);
    EXPECT_EQ(got[0].payload, f.payload);
  }
  EXPECT_EQ(d.counters().frames, 200u);
  EXPECT_EQ(d.counters().crc_errors + d.counters().bad_frames, 0u);
}

TEST(LinkTest, EveryFlippedBitIsDetected) {
  Frame f;
  f.seq = 3;
  f.payload = encode(DmaRead{7, 0x1'0000'1000, 256});
  const std::vector<uint8_t> wire = encode_frame(f);
  for (size_t i = 1; i + 1 < wire.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> bad = wire;
      bad[i] ^= uint8_t(1 << bit);
      FrameDecoder d;
      EXPECT_TRUE(decode_all(d, bad).empty()) << "byte " << i << " bit " << bit;
    }
  }
}

TEST(LinkTest, TruncatedAndAbortedFramesAreDroppedAndTheNextOneIsKept) {
  Frame f;
  f.payload = encode(MmioWrite{1, 0x40, 0xF, 0x12345678});
  const std::vector<uint8_t> wire = encode_frame(f);
  FrameDecoder d;
  // A frame missing a byte, then one cut off by an escape-flag abort, then a good one.
  std::vector<uint8_t> stream(wire.begin(), wire.end());
  stream.erase(stream.begin() + 5);
  stream.insert(stream.end(), wire.begin(), wire.begin() + 6);
  stream.push_back(kEscape);
  stream.insert(stream.end(), wire.begin(), wire.end());
  const auto got = decode_all(d, stream);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].payload, f.payload);
  EXPECT_EQ(d.counters().bad_frames + d.counters().crc_errors, 2u);
}

TEST(LinkTest, MessagesDecodeOnlyAtTheirLength) {
  const auto w = encode(DmaWrite{0xFEE0'0000, {1, 0, 0, 0}});
  ASSERT_TRUE(decode_dma_write(w));
  EXPECT_EQ(decode_dma_write(w)->addr, kMsiAddr);
  auto longer = w;
  longer.push_back(0);
  EXPECT_FALSE(decode_dma_write(longer));
  EXPECT_FALSE(decode_dma_read(w));
  const auto c = encode(MmioCompletion{9, 1, 0xdeadbeef});
  ASSERT_TRUE(decode_mmio_completion(c));
  EXPECT_EQ(decode_mmio_completion(c)->data, 0xdeadbeefu);
  const auto k = encode(DeviceCounters{1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(decode_counters(k));
  EXPECT_EQ(decode_counters(k)->retransmits, 5);
}

}  // namespace
}  // namespace tpu::link
