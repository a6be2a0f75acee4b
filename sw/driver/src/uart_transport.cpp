// SPDX-License-Identifier: Apache-2.0
// The uart: transport: a device behind the serial host link (docs/link.md),
// on a board's FTDI port or on the board simulation's pseudo-terminal.
//
//   uart:/dev/ttyUSB0?baud=3000000&timeout=MS
//
// The host end of the link: frames with go-back-N over the tty, the host
// memory the device reaches by DMA (its read requests are answered from it,
// its writes land in it, a write to the MSI address is the interrupt), and
// the device's clock, known from the time stamp of every frame it sends.
#include <fcntl.h>
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tpu/error.h"
#include "tpu/host_memory.h"
#include "tpu/link.h"
#include "tpu/transport.h"
#include "tpu/uart_transport.h"

namespace tpu {
namespace {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;
namespace lk = link;

constexpr uint64_t kDmaBase = 0x1'0000'0000;  // buffers live above 4 GiB, as on sim:
constexpr uint64_t kDmaSize = 0x1'0000'0000;
constexpr auto kPingAfter = Ms(20);           // silence while waiting before a ping
constexpr auto kMinRto = Ms(250), kMaxRto = Ms(2000);  // at least a window of full frames at the line rate

speed_t baud_constant(uint64_t baud) {
  switch (baud) {
    case 9600: return B9600;
    case 19200: return B19200;
    case 38400: return B38400;
    case 57600: return B57600;
    case 115200: return B115200;
    case 230400: return B230400;
    case 460800: return B460800;
    case 500000: return B500000;
    case 921600: return B921600;
    case 1000000: return B1000000;
    case 1500000: return B1500000;
    case 2000000: return B2000000;
    case 3000000: return B3000000;
    default: return B0;
  }
}

class UartTransport final : public Transport {
 public:
  UartTransport(const std::string& path, uint64_t baud, uint64_t timeout_ms)
      : path_(path), name_("uart:" + path), timeout_(Ms(timeout_ms)) {
    fd_ = ::open(path.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0)
      throw Error(name_ + ": cannot open " + path + ": " + std::strerror(errno) +
                  (errno == EACCES ? " (add yourself to the dialout group)" : ""));
    termios tio{};
    if (::tcgetattr(fd_, &tio) != 0) {
      const std::string why = std::strerror(errno);
      ::close(fd_);
      throw Error(name_ + ": " + path + " is not a serial port: " + why);
    }
    ::cfmakeraw(&tio);
    tio.c_cflag |= CLOCAL | CREAD;
    tio.c_cflag &= ~(CSTOPB | PARENB | CRTSCTS);
    ::cfsetispeed(&tio, baud_constant(baud));
    ::cfsetospeed(&tio, baud_constant(baud));
    if (::tcsetattr(fd_, TCSANOW, &tio) != 0) {
      const std::string why = std::strerror(errno);
      ::close(fd_);
      throw Error(name_ + ": cannot set " + std::to_string(baud) + " baud 8N1: " + why);
    }
    ::tcflush(fd_, TCIOFLUSH);
    try {
      sync();
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }

  ~UartTransport() override { ::close(fd_); }

  std::string name() const override { return name_; }

  uint32_t mmio_read(uint32_t offset) override {
    const uint8_t tag = next_tag_++;
    send(lk::encode(lk::MmioRead{tag, offset, 0xF}));
    const Clock::time_point start = Clock::now();
    while (!mmio_done_.count(tag)) pump(start, "a register read");
    const lk::MmioCompletion c = mmio_done_[tag];
    mmio_done_.erase(tag);
    if (c.status != 0) throw unmapped_register(name_, offset);
    return c.data;
  }

  void mmio_write(uint32_t offset, uint32_t value) override {
    send(lk::encode(lk::MmioWrite{0, offset, 0xF, value}));
  }

  uint64_t dma_base() const override { return kDmaBase; }
  uint64_t dma_size() const override { return kDmaSize; }
  void dma_write(uint64_t addr, std::span<const uint8_t> data) override { mem_.write(addr, data); }
  void dma_read(uint64_t addr, std::span<uint8_t> out) override { mem_.read(addr, out); }

  uint64_t wait_interrupt(uint64_t max_cycles) override {
    const uint64_t start = device_cycles_;
    const Clock::time_point t0 = Clock::now();
    while (!msi_ && device_cycles_ - start < max_cycles) pump(t0, "an interrupt");
    const uint64_t passed = std::min(device_cycles_ - start, max_cycles);
    if (msi_) {
      msi_ = false;
      return std::min(passed, max_cycles - 1);  // early: an interrupt came
    }
    return passed;
  }

  uint64_t cycles() const override { return device_cycles_ - cycles_at_open_; }

  UartCounters counters() const {
    UartCounters c = counters_;
    c.crc_errors = decoder_.counters().crc_errors;
    c.bad_frames = decoder_.counters().bad_frames;
    return c;
  }

  std::optional<lk::DeviceCounters> device_counters() {
    device_counters_.reset();
    send(lk::counters_request());
    const Clock::time_point start = Clock::now();
    while (!device_counters_) pump(start, "the link counters");
    return device_counters_;
  }

 private:
  struct Sent {
    uint8_t seq;
    std::vector<uint8_t> payload;
    Clock::time_point at;
    bool resent;
  };

  // ---- link reset ----
  void sync() {
    const Clock::time_point start = Clock::now();
    Clock::time_point last_sent{};
    for (;;) {
      if (Clock::now() - last_sent >= Ms(100)) {
        lk::Frame f;
        f.kind = lk::Kind::kSync;
        write_bytes(lk::encode_frame(f));
        last_sent = Clock::now();
      }
      if (auto f = read_frame(Ms(10)); f && f->kind == lk::Kind::kSyncAck) {
        note_time(f->time, /*first=*/true);
        cycles_at_open_ = device_cycles_;
        next_seq_ = 0;
        rx_expected_ = 0;
        heard_ = Clock::now();
        return;
      }
      if (Clock::now() - start > timeout_)
        throw Error(name_ + ": no answer from a TPU link on " + path_ + " within " +
                    std::to_string(timeout_.count()) +
                    " ms; check that the board runs the TPU bitstream, the cable, and the baud rate");
    }
  }

  // ---- sending ----
  void send(std::vector<uint8_t> payload) {
    queued_.push_back(std::move(payload));
    fill_window();
  }

  void fill_window() {
    while (!queued_.empty() && unacked_.size() < lk::kWindow) {
      Sent s{next_seq_++, std::move(queued_.front()), Clock::now(), false};
      queued_.pop_front();
      send_data(s);
      unacked_.push_back(std::move(s));
    }
  }

  void send_data(const Sent& s) {
    lk::Frame f;
    f.kind = lk::Kind::kData;
    f.seq = s.seq;
    f.ack = rx_expected_;
    f.payload = s.payload;
    write_bytes(lk::encode_frame(f));
    ack_pending_ = false;
    ++counters_.frames_sent;
  }

  void send_ack(bool ping) {
    lk::Frame f;
    f.kind = lk::Kind::kAck;
    f.ping = ping;
    f.ack = rx_expected_;
    write_bytes(lk::encode_frame(f));
    ack_pending_ = false;
  }

  void write_bytes(const std::vector<uint8_t>& bytes) {
    size_t done = 0;
    const Clock::time_point start = Clock::now();
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n > 0) {
        done += size_t(n);
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EINTR)
        throw Error(name_ + ": writing to " + path_ + " failed: " + std::strerror(errno) +
                    "; was the board unplugged?");
      if (Clock::now() - start > timeout_)
        throw Error(name_ + ": " + path_ + " takes no data for " + std::to_string(timeout_.count()) +
                    " ms; the serial port is stuck");
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, 10);
    }
    counters_.bytes_sent += bytes.size();
  }

  // ---- receiving ----
  std::optional<lk::Frame> read_frame(Ms wait) {
    for (;;) {
      while (rx_pos_ < rx_len_) {
        if (auto f = decoder_.push(rx_buf_[rx_pos_++])) return f;
      }
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, int(wait.count()));
      if (r <= 0) return std::nullopt;
      const ssize_t n = ::read(fd_, rx_buf_, sizeof rx_buf_);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0)
        throw Error(name_ + ": " + path_ + " was closed (" +
                    (n == 0 ? std::string("end of file") : std::strerror(errno)) +
                    "); was the board unplugged?");
      counters_.bytes_received += size_t(n);
      rx_pos_ = 0;
      rx_len_ = size_t(n);
      wait = Ms(0);
    }
  }

  // One step of the link while the host waits for something: receive, handle
  // frames, retransmit on timeout, ping a silent device, give up on a dead one.
  void pump(Clock::time_point waiting_since, const char* what) {
    const Clock::time_point now = Clock::now();
    if (!unacked_.empty() && now - unacked_.front().at > rto_) {
      for (Sent& s : unacked_) {
        s.at = now;
        s.resent = true;
        send_data(s);
        ++counters_.retransmits;
      }
      rto_ = std::min(rto_ * 2, kMaxRto);
    }
    // The device is silent only while the host waits for it: a link left
    // idle (the host busy elsewhere, e.g. with another device) is not dead.
    const Clock::time_point quiet_since = std::max(heard_, waiting_since);
    if (now - quiet_since > kPingAfter && now - last_ping_ > kPingAfter) {
      send_ack(/*ping=*/true);
      last_ping_ = now;
    }
    if (now - quiet_since > timeout_) {
      const auto waited = std::chrono::duration_cast<Ms>(now - waiting_since).count();
      throw Error(name_ + ": the device has not answered for " + std::to_string(timeout_.count()) +
                  " ms while waiting " + std::to_string(waited) + " ms for " + what + " (" + std::to_string(unacked_.size()) +
                  " frames unacknowledged); the link is down: check the cable and that the board "
                  "is powered and runs the TPU bitstream, then open the device again");
    }
    if (auto f = read_frame(Ms(5))) handle(*f);
    while (auto f = read_frame(Ms(0))) handle(*f);
    if (ack_pending_) send_ack(false);
  }

  void handle(const lk::Frame& f) {
    heard_ = Clock::now();
    note_time(f.time, false);
    if (f.kind == lk::Kind::kSyncAck || f.kind == lk::Kind::kSync) return;  // a stale answer
    take_ack(f.ack);
    if (f.kind != lk::Kind::kData) return;
    ack_pending_ = true;
    if (f.seq != rx_expected_) {
      ++counters_.duplicates;
      return;
    }
    ++rx_expected_;
    ++counters_.frames_received;
    deliver(f.payload);
  }

  void take_ack(uint8_t ack) {
    const uint8_t outstanding = uint8_t(unacked_.size());
    if (outstanding == 0) return;
    const uint8_t done = uint8_t(ack - unacked_.front().seq);
    if (done == 0 || done > outstanding) return;  // nothing new, or not an ack of ours
    const Clock::time_point now = Clock::now();
    for (uint8_t i = 0; i < done; ++i) {
      const Sent& s = unacked_.front();
      if (!s.resent) {  // Karn: only first transmissions time the round trip
        const auto rtt = std::chrono::duration_cast<Ms>(now - s.at);
        srtt_ = srtt_.count() == 0 ? rtt : (srtt_ * 7 + rtt) / 8;
        rto_ = std::clamp(srtt_ * 4, kMinRto, kMaxRto);
      }
      unacked_.pop_front();
    }
    if (!unacked_.empty()) unacked_.front().at = now;  // the timer restarts on progress
    fill_window();
  }

  void note_time(uint32_t t, bool first) {
    if (first) {
      device_cycles_ = t;
    } else {
      const uint32_t delta = t - uint32_t(device_cycles_);
      if (delta < 0x8000'0000u) device_cycles_ += delta;  // stamps may arrive out of date by a frame
    }
  }

  void deliver(const std::vector<uint8_t>& p) {
    if (auto c = lk::decode_mmio_completion(p)) {
      mmio_done_[c->tag] = *c;
    } else if (auto r = lk::decode_dma_read(p)) {
      serve_read(*r);
    } else if (auto w = lk::decode_dma_write(p)) {
      if (w->addr == lk::kMsiAddr && w->data.size() == 4) {
        msi_ = true;
        ++counters_.interrupts;
      } else if (w->addr >= kDmaBase && w->addr + w->data.size() <= kDmaBase + kDmaSize) {
        mem_.write(w->addr, w->data);
      } else {
        ++counters_.stray_writes;
      }
    } else if (auto k = lk::decode_counters(p)) {
      device_counters_ = *k;
    } else {
      ++counters_.bad_messages;
    }
  }

  // A DMA read: one completion with the data, or UR outside host memory.
  void serve_read(const lk::DmaRead& r) {
    lk::ReadCompletion c{r.tag, 0, false, r.len, {}};
    if (r.len == 0 || r.len > lk::kMaxDmaPayload || r.addr < kDmaBase ||
        r.addr + r.len > kDmaBase + kDmaSize) {
      c.status = 1;  // UR
    } else {
      c.data = mem_.read(r.addr, r.len);
    }
    send(lk::encode(c));
  }

  std::string path_, name_;
  Ms timeout_;
  int fd_ = -1;
  HostMemory mem_;
  lk::FrameDecoder decoder_;
  uint8_t rx_buf_[4096];
  size_t rx_pos_ = 0, rx_len_ = 0;

  uint8_t next_seq_ = 0, rx_expected_ = 0, next_tag_ = 0;
  std::deque<Sent> unacked_;
  std::deque<std::vector<uint8_t>> queued_;
  bool ack_pending_ = false, msi_ = false;
  Ms srtt_{0}, rto_{500};
  Clock::time_point heard_{}, last_ping_{};
  std::map<uint8_t, lk::MmioCompletion> mmio_done_;
  std::optional<lk::DeviceCounters> device_counters_;
  uint64_t device_cycles_ = 0, cycles_at_open_ = 0;
  UartCounters counters_;
};

std::unique_ptr<Transport> open_uart(const DeviceUri& uri) {
  const std::string what = "uart device";
  if (uri.path.empty())
    throw Error("uart device: no serial port in '" + uri.text + "'; write uart:/dev/ttyUSB0?baud=3000000");
  uint64_t baud = 3000000, timeout_ms = 5000;
  for (const auto& [key, value] : uri.query) {
    if (key == "baud") baud = query_number(what, key, value);
    else if (key == "timeout") timeout_ms = std::max<uint64_t>(query_number(what, key, value), 100);
    else throw Error("uart device: unknown option '" + key + "'; the options are baud and timeout");
  }
  if (baud_constant(baud) == B0)
    throw Error("uart device: baud=" + std::to_string(baud) +
                " is not a rate the serial port offers; use 115200, 921600, 1000000, 2000000 or 3000000");
  return std::make_unique<UartTransport>(uri.path, baud, timeout_ms);
}

[[maybe_unused]] const bool registered = register_transport(
    {"uart", "uart:/dev/ttyUSB0?baud=3000000&timeout=MS",
     "a board behind the serial host link (docs/link.md), or the board simulation's pty", open_uart});

}  // namespace

std::optional<UartCounters> uart_counters(Transport& t) {
  if (auto* u = dynamic_cast<UartTransport*>(&t)) return u->counters();
  return std::nullopt;
}

std::optional<link::DeviceCounters> uart_device_counters(Transport& t) {
  if (auto* u = dynamic_cast<UartTransport*>(&t)) return u->device_counters();
  return std::nullopt;
}

}  // namespace tpu
