// SPDX-License-Identifier: Apache-2.0
#include "board_sim.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "Vuart_bridge.h"
#include "sim.h"
#include "tpu/error.h"
#include "tpu_sim_models.h"  // generated: TPU_SIM_MODELS(X) and the device model headers

namespace tpu::board {
namespace {

// Copies a port between the two models (a VlWide for wide packed structs).
template <class D, class S>
void wire(D& dst, const S& src) {
  if constexpr (std::is_arithmetic_v<D>) {
    dst = src;
  } else {
    static_assert(sizeof dst.m_storage == sizeof src.m_storage, "port widths differ");
    std::memcpy(dst.m_storage, src.m_storage, sizeof dst.m_storage);
  }
}

// Appends a port's value to v as 32-bit words (two for a scalar port).
template <class P>
void append_words(std::vector<uint32_t>& v, const P& port) {
  if constexpr (std::is_arithmetic_v<P>) {
    v.push_back(uint32_t(port));
    v.push_back(uint32_t(uint64_t(port) >> 32));
  } else {
    v.insert(v.end(), std::begin(port.m_storage), std::end(port.m_storage));
  }
}

// A pseudo-terminal whose slave end stays open here (so the master never
// reads EIO between clients) and starts raw (so nothing echoes).
class Pty {
 public:
  Pty() {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master_ < 0 || ::grantpt(master_) != 0 || ::unlockpt(master_) != 0)
      throw Error(std::string("board simulation: cannot create a pseudo-terminal: ") + std::strerror(errno));
    path_ = ::ptsname(master_);
    slave_ = ::open(path_.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
    termios tio{};
    ::tcgetattr(slave_, &tio);
    ::cfmakeraw(&tio);
    ::tcsetattr(slave_, TCSANOW, &tio);
    ::fcntl(master_, F_SETFL, ::fcntl(master_, F_GETFL) | O_NONBLOCK);
  }
  ~Pty() {
    ::close(slave_);
    ::close(master_);
  }
  const std::string& path() const { return path_; }
  // Bytes the host wrote, without waiting.
  size_t read(uint8_t* buf, size_t n) {
    const ssize_t r = ::read(master_, buf, n);
    return r > 0 ? size_t(r) : 0;
  }
  // Waits up to ms milliseconds for bytes from the host; true when there are.
  bool wait_readable(int ms) {
    pollfd p{master_, POLLIN, 0};
    return ::poll(&p, 1, ms) > 0 && (p.revents & POLLIN);
  }
  void write(uint8_t b) {
    // The host reads continuously; a full pty buffer means it went away, and
    // the byte is then lost like on a real line.
    (void)!::write(master_, &b, 1);
  }

 private:
  int master_ = -1, slave_ = -1;
  std::string path_;
};

// Bytes from the host onto the bridge's rx pin, 8N1 at div cycles per bit.
class LineTx {
 public:
  void push(uint8_t b) { queue_.push_back(b); }
  size_t queued() const { return queue_.size(); }
  // Nothing queued, being sent or held back by a stall.
  bool idle() const { return bit_ < 0 && idle_ == 0 && queue_.empty(); }
  void idle_for(uint64_t cycles) { idle_ += cycles; }
  // The pin level for this cycle.
  bool step(unsigned div) {
    if (bit_ < 0) {
      if (idle_ > 0) {
        --idle_;
        return true;
      }
      if (queue_.empty()) return true;
      byte_ = queue_.front();
      queue_.pop_front();
      bit_ = 0;
      count_ = 0;
    }
    const bool level = bit_ == 0 ? false : bit_ <= 8 ? bool((byte_ >> (bit_ - 1)) & 1) : true;
    if (++count_ == div) {
      count_ = 0;
      if (++bit_ == 10) bit_ = -1;
    }
    return level;
  }

 private:
  std::deque<uint8_t> queue_;
  uint64_t idle_ = 0;
  int bit_ = -1;
  unsigned count_ = 0;
  uint8_t byte_ = 0;
};

// Bytes from the bridge's tx pin, sampled in the middle of each bit.
class LineRx {
 public:
  // Returns true and the byte when a stop bit was sampled high.
  bool step(bool level, unsigned div, uint8_t* out) {
    if (bit_ < 0) {
      if (!level && last_) {  // falling edge: a start bit
        bit_ = 0;
        count_ = 0;
      }
      last_ = level;
      return false;
    }
    last_ = level;
    if (++count_ != (bit_ == 0 ? div / 2 : div)) return false;
    count_ = 0;
    if (bit_ == 0) {
      if (level) bit_ = -1;  // a glitch, not a start bit
      else bit_ = 1;
      return false;
    }
    if (bit_ <= 8) {
      byte_ = uint8_t(byte_ >> 1 | (level ? 0x80 : 0));
      ++bit_;
      return false;
    }
    bit_ = -1;
    *out = byte_;
    return level;
  }
  // No byte being received.
  bool idle() const { return bit_ < 0 && last_; }

 private:
  int bit_ = -1;
  unsigned count_ = 0;
  uint8_t byte_ = 0;
  bool last_ = true;
};

template <class Top>
class Board final : public BoardSim {
 public:
  // Idle cycles before the board starts to wait for the host, and cycles
  // simulated between two waits of up to 1 ms.
  static constexpr uint64_t kQuietCycles = 4096;
  static constexpr uint64_t kQuietBurst = 64;

  explicit Board(const BoardOptions& o)
      : opt_(o), bridge_(o.seed), top_(o.seed), rng_(o.seed), faults_(o.faults) {
    thread_ = std::thread([this] { run(); });
  }
  ~Board() override {
    stop_ = true;
    thread_.join();
  }

  const std::string& pty() const override { return pty_.path(); }
  void set_faults(const LineFaults& f) override {
    std::lock_guard<std::mutex> l(mu_);
    faults_ = f;
  }
  void set_cut(bool cut) override { cut_ = cut; }
  LineCounters counters() const override {
    std::lock_guard<std::mutex> l(mu_);
    return counters_;
  }
  uint64_t cycles() const override { return cycles_; }
  WiringCheck wiring_check() const override { return {checked_cycles_, miswired_cycles_}; }
  ParkingStats parking() const override {
    return {parked_cycles_, parked_checked_cycles_, parked_changed_cycles_};
  }
  std::optional<uint64_t> assertion_failure_cycle() const override {
    if (!assertions_failed_) return std::nullopt;
    return failure_cycle_.load();
  }

 private:
  void run() {
    auto& b = bridge_.dut();
    auto& t = top_.dut();
    b.div_i = opt_.div;
    b.rx_i = 1;
    t.cpl_timeout_i = 1u << 28;  // as tpu_uart_top
    const unsigned byte_cycles = 10 * opt_.div;
    uint8_t buf[256];
    uint64_t quiet = 0;  // cycles with an idle line and an idle device
    while (!stop_) {
      // Between bytes: take what the host wrote, through the faults.
      if (cycles_ % byte_cycles == 0 && to_device_.queued() < 2) {
        const size_t n = pty_.read(buf, sizeof buf);
        for (size_t i = 0; i < n; ++i) to_device(buf[i]);
      }
      cycle();
      if (assertions_failed()) break;
      // A board nobody talks to spins no core: once the line and the device
      // have been idle for a while, every kQuietBurst cycles wait up to 1 ms
      // for the host. Every cycle is still simulated (the bridge's
      // retransmission timer runs), only slower in wall time; a host byte
      // ends the wait at once.
      const bool active = t.busy_o || !b.tx_o || !to_device_.idle() || !from_device_.idle();
      quiet = active ? 0 : quiet + 1;
      if (quiet >= kQuietCycles && quiet % kQuietBurst == 0 && pty_.wait_readable(1)) quiet = 0;
    }
  }

  void to_device(uint8_t byte) {
    std::lock_guard<std::mutex> l(mu_);
    const LineFaults& f = faults_;
    if (cut_) {
      ++counters_.cut;
      return;
    }
    if (chance(f.drop)) {
      ++counters_.dropped;
      return;
    }
    if (chance(f.stall)) {
      ++counters_.stalls;
      to_device_.idle_for(uint64_t(rand(1, 64)) * 10 * opt_.div);
    }
    if (chance(f.bit_error)) {
      byte ^= uint8_t(1 << rand(0, 7));
      ++counters_.flipped;
    }
    to_device_.push(byte);
    ++counters_.to_device;
    if (chance(f.dup)) {
      to_device_.push(byte);
      ++counters_.duplicated;
    }
  }

  void to_host(uint8_t byte) {
    std::lock_guard<std::mutex> l(mu_);
    if (cut_) {
      ++counters_.cut;
      return;
    }
    if (chance(faults_.drop)) {
      ++counters_.dropped;
      return;
    }
    if (chance(faults_.bit_error)) {
      byte ^= uint8_t(1 << rand(0, 7));
      ++counters_.flipped;
    }
    pty_.write(byte);
    ++counters_.to_host;
    if (chance(faults_.dup)) {
      pty_.write(byte);
      ++counters_.duplicated;
    }
  }

  // A failed RTL assertion, the device's or the bridge's, is a bug in the
  // models: the board stops there, as a board whose logic went wrong falls
  // silent, and says so once (the simulator printed each failure).
  bool assertions_failed() {
    const uint64_t n = top_.take_assertion_failures() + bridge_.take_assertion_failures();
    if (n == 0) return false;
    failure_cycle_ = cycles_.load();
    assertions_failed_ = true;
    std::fprintf(stderr,
                 "board simulation: RTL assertions failed by cycle %llu; the board stopped. This is a "
                 "bug in the device model; please report it with the command that ran into it\n",
                 (unsigned long long)failure_cycle_.load());
    return true;
  }

  bool chance(double p) { return p > 0 && std::bernoulli_distribution(p)(rng_); }
  int rand(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  // One clock cycle of bridge and device, wired as tpu_uart_top wires them,
  // in one evaluation of the device. The device's outputs the bridge reads
  // are all registered (tb::Device's output check covers them; cq_ready_o
  // comes from the MMIO request slice), so the device needs no settling
  // before the edge. The bridge's readies follow the device's valids, so it
  // settles once.
  void cycle() {
    auto& b = bridge_.dut();
    b.rx_i = to_device_.step(opt_.div);
    device_to_bridge();
    bridge_.settle();
    bridge_to_device();
    const bool same_inputs = device_inputs_unchanged();
    parked_ = parked_ && same_inputs;  // a parked device's outputs stay as they are
    if (opt_.check_wiring) check_wiring();  // never parked (probe_rest is off)
    uint8_t byte;
    if (from_device_.step(b.tx_o, opt_.div, &byte)) to_host(byte);
    bridge_.tick_settled();
    if (parked_) {
      ++parked_cycles_;
      if (opt_.check_parking) check_parked();
    } else {
      if (opt_.check_wiring) top_.tick_settled();  // check_wiring settled it
      else top_.tick_unsettled();
      if (opt_.park_resting_device && !opt_.check_wiring) probe_rest(same_inputs);
    }
    ++cycles_;
  }

  // ---- Parking a resting device ----
  // The device's state is its Verilated model's Syms object: every register,
  // memory and sampled value of its assertions, in the root and the modules
  // Verilator did not inline; the rest of that object (names, scopes, the
  // context) does not change while it runs. If a cycle leaves that state as
  // the cycle before left it, with the same inputs, the next cycle with
  // those inputs leaves it so again: the device rests, and the board skips
  // its evaluation until an input changes. The device idles so while a
  // request crosses the line byte by byte. Tracing is never on here.
  using Syms = std::remove_pointer_t<decltype(std::declval<Top&>().rootp->vlSymsp)>;
  static constexpr uint64_t kRestProbe = 8;     // cycles of same inputs before the first look
  static constexpr uint64_t kRestRetry = 256;   // and between looks after that

  // Compares the device's inputs with those of the cycle before, and keeps them.
  bool device_inputs_unchanged() {
    auto& t = top_.dut();
    inputs_.clear();
    auto words = [this](const auto& port) { append_words(inputs_, port); };
    words(t.rst_ni);
    words(t.cpl_timeout_i);
    words(t.link_cfg_i);
    words(t.cq_valid_i);
    words(t.cq_i);
    words(t.cc_ready_i);
    words(t.rq_ready_i);
    words(t.rc_valid_i);
    words(t.rc_i);
    const bool same = inputs_ == last_inputs_;
    std::swap(inputs_, last_inputs_);
    return same;
  }

  const unsigned char* device_state() {
    return reinterpret_cast<const unsigned char*>(top_.dut().rootp->vlSymsp);
  }

  // After an evaluated cycle: look for rest after kRestProbe cycles of the
  // same inputs, then every kRestRetry; a look snapshots the state, and the
  // next cycle compares with it.
  void probe_rest(bool same_inputs) {
    rest_ = same_inputs ? rest_ + 1 : 0;
    if (rest_ < kRestProbe) return;
    const uint64_t phase = (rest_ - kRestProbe) % kRestRetry;
    if (phase == 0) {
      rest_snapshot_.assign(device_state(), device_state() + sizeof(Syms));
    } else if (phase == 1) {
      parked_ = std::memcmp(rest_snapshot_.data(), device_state(), sizeof(Syms)) == 0;
    }
  }

  // With BoardOptions::check_parking: evaluates the parked device anyway
  // and counts the cycles in which that changed its state.
  void check_parked() {
    rest_snapshot_.assign(device_state(), device_state() + sizeof(Syms));
    top_.tick_unsettled();
    ++parked_checked_cycles_;
    if (std::memcmp(rest_snapshot_.data(), device_state(), sizeof(Syms)) != 0) {
      ++parked_changed_cycles_;
      parked_ = false;  // go on from what the evaluation computed
    }
  }

  void device_to_bridge() {
    auto& b = bridge_.dut();
    auto& t = top_.dut();
    b.cq_ready_i = t.cq_ready_o;
    b.cc_valid_i = t.cc_valid_o;
    wire(b.cc_i, t.cc_o);
    b.rq_valid_i = t.rq_valid_o;
    wire(b.rq_i, t.rq_o);
    b.rc_ready_i = t.rc_ready_o;
  }

  void bridge_to_device() {
    auto& b = bridge_.dut();
    auto& t = top_.dut();
    wire(t.link_cfg_i, b.link_cfg_o);
    t.cq_valid_i = b.cq_valid_o;
    wire(t.cq_i, b.cq_o);
    t.cc_ready_i = b.cc_ready_o;
    t.rq_ready_i = b.rq_ready_o;
    t.rc_valid_i = b.rc_valid_o;
    wire(t.rc_i, b.rc_o);
  }

  // What crosses between the two models before the edge, as raw words.
  std::vector<uint32_t> crossing() {
    auto& b = bridge_.dut();
    auto& t = top_.dut();
    std::vector<uint32_t> v{b.cq_valid_o, b.cq_ready_i,  b.cc_ready_o, b.rq_ready_o, b.rc_valid_o,
                            b.tx_o,       t.cc_valid_o, t.rq_valid_o, t.rc_ready_o};
    auto words = [&v](const auto& port) { append_words(v, port); };
    words(b.cq_o);
    words(b.rc_o);
    words(b.link_cfg_o);
    words(t.cc_o);
    words(t.rq_o);
    return v;
  }

  // With BoardOptions::check_wiring: settles both models to their fixed
  // point (two rounds, as their valids come from flops) after cycle() has
  // wired them its way, and counts the cycles in which anything that crosses
  // differs. The simulation goes on from the fixed point either way.
  void check_wiring() {
    const std::vector<uint32_t> fast = crossing();
    for (int round = 0; round < 2; ++round) {
      device_to_bridge();
      bridge_.settle();
      bridge_to_device();
      top_.settle();
    }
    device_to_bridge();
    bridge_.settle();
    ++checked_cycles_;
    if (crossing() != fast) ++miswired_cycles_;
  }

  BoardOptions opt_;
  Pty pty_;
  tb::Sim<Vuart_bridge> bridge_;
  tb::Sim<Top> top_;
  std::mt19937_64 rng_;
  mutable std::mutex mu_;
  LineFaults faults_;
  LineCounters counters_;
  LineTx to_device_;
  LineRx from_device_;
  std::atomic<bool> stop_{false}, cut_{false};
  std::atomic<uint64_t> cycles_{0};
  std::atomic<uint64_t> checked_cycles_{0}, miswired_cycles_{0};
  std::vector<uint32_t> inputs_, last_inputs_;
  std::vector<unsigned char> rest_snapshot_;
  uint64_t rest_ = 0;  // evaluated cycles in a row whose inputs were those of the cycle before
  bool parked_ = false;
  std::atomic<uint64_t> parked_cycles_{0}, parked_checked_cycles_{0}, parked_changed_cycles_{0};
  std::atomic<uint64_t> failure_cycle_{0};
  std::atomic<bool> assertions_failed_{false};  // set after failure_cycle_
  std::thread thread_;
};

}  // namespace

std::string board_configs() {
  std::string s;
#define TPU_NAME(name) s += std::string(s.empty() ? "" : ", ") + #name;
  TPU_SIM_MODELS(TPU_NAME)
#undef TPU_NAME
  return s;
}

std::unique_ptr<BoardSim> BoardSim::start(const BoardOptions& o) {
  if (o.div < 4) throw Error("board simulation: div=" + std::to_string(o.div) + " is below 4 clock cycles per bit");
#define TPU_START(name) \
  if (o.config == #name) return std::make_unique<Board<Vtpu_top_##name>>(o);
  TPU_SIM_MODELS(TPU_START)
#undef TPU_START
  throw Error("board simulation: configuration '" + o.config + "' is not built into this simulator (it has " +
              board_configs() + ")");
}

}  // namespace tpu::board
