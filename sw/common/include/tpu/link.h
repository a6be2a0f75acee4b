// SPDX-License-Identifier: Apache-2.0
// The serial host link's frames and messages (docs/link.md): CRC, byte
// stuffing, a byte-at-a-time frame decoder, and the messages that carry the
// host-interface streams. Shared by the uart: transport and the board
// simulation's tests; the RTL side is rtl/link/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tpu::link {

constexpr uint8_t kFlag = 0x7E;
constexpr uint8_t kEscape = 0x7D;
constexpr uint8_t kEscapeXor = 0x20;
constexpr size_t kHeaderBytes = 9;    // kind, seq, ack, time (4), len (2)
constexpr size_t kCrcBytes = 2;
constexpr size_t kMaxPayload = 267;   // the largest message: a 256-byte DMA write
constexpr unsigned kWindow = 4;       // unacknowledged DATA frames per direction
constexpr uint16_t kMaxDmaPayload = 256;  // the bridge's max payload and max read request
constexpr uint64_t kMsiAddr = 0xFEE0'0000;
constexpr uint32_t kMsiData = 1;

enum class Kind : uint8_t { kData = 0, kAck = 1, kSync = 2, kSyncAck = 3 };
constexpr uint8_t kPingBit = 0x04;

// CRC-16/CCITT-FALSE: polynomial 0x1021, initial 0xFFFF, not reflected.
uint16_t crc16(std::span<const uint8_t> bytes, uint16_t crc = 0xFFFF);

struct Frame {
  Kind kind = Kind::kData;
  bool ping = false;
  uint8_t seq = 0;
  uint8_t ack = 0;
  uint32_t time = 0;
  std::vector<uint8_t> payload;
};

// The frame's bytes on the wire: flag, stuffed body with its CRC, flag.
std::vector<uint8_t> encode_frame(const Frame& f);

// Reassembles frames from received bytes. Counts what it drops.
class FrameDecoder {
 public:
  struct Counters {
    uint64_t frames = 0;      // good frames
    uint64_t crc_errors = 0;  // CRC mismatch
    uint64_t bad_frames = 0;  // wrong length, reserved bits, too long, aborted
  };

  // Feeds one byte; returns a frame when this byte completes a good one.
  std::optional<Frame> push(uint8_t byte);
  const Counters& counters() const { return counters_; }

 private:
  std::optional<Frame> finish();

  std::vector<uint8_t> body_;
  bool in_frame_ = false, escaped_ = false, overflow_ = false;
  Counters counters_;
};

// ---- messages ---------------------------------------------------------------------------

enum class MsgType : uint8_t {
  kMmioWrite = 0x01,
  kMmioRead = 0x02,
  kReadCompletion = 0x03,
  kCountersRequest = 0x04,
  kMmioCompletion = 0x81,
  kDmaRead = 0x82,
  kDmaWrite = 0x83,
  kCounters = 0x84,
};

struct MmioWrite { uint8_t tag; uint32_t offset; uint8_t be; uint32_t data; };
struct MmioRead { uint8_t tag; uint32_t offset; uint8_t be; };
struct ReadCompletion {
  uint8_t tag;
  uint8_t status;  // 0 SC, 1 UR, 2 CA
  bool poisoned;
  uint16_t byte_count;
  std::vector<uint8_t> data;
};
struct MmioCompletion { uint8_t tag; uint8_t status; uint32_t data; };
struct DmaRead { uint8_t tag; uint64_t addr; uint16_t len; };
struct DmaWrite { uint64_t addr; std::vector<uint8_t> data; };
// The bridge's counters (docs/link.md), in message order.
struct DeviceCounters {
  uint16_t crc_errors, bad_frames, duplicates, no_room, retransmits, bad_messages;
};

std::vector<uint8_t> encode(const MmioWrite& m);
std::vector<uint8_t> encode(const MmioRead& m);
std::vector<uint8_t> encode(const ReadCompletion& m);
std::vector<uint8_t> encode(const MmioCompletion& m);
std::vector<uint8_t> encode(const DmaRead& m);
std::vector<uint8_t> encode(const DmaWrite& m);
std::vector<uint8_t> encode(const DeviceCounters& m);
std::vector<uint8_t> counters_request();

// Decoders of the device's messages: nullopt when the payload is not that
// message (wrong type or length).
std::optional<MmioCompletion> decode_mmio_completion(std::span<const uint8_t> p);
std::optional<DmaRead> decode_dma_read(std::span<const uint8_t> p);
std::optional<DmaWrite> decode_dma_write(std::span<const uint8_t> p);
std::optional<DeviceCounters> decode_counters(std::span<const uint8_t> p);

}  // namespace tpu::link
