// SPDX-License-Identifier: Apache-2.0
// Drives the Verilated TPU core like a host would: loads a program into
// instruction memory, starts it, serves the memory port from a HostMemory
// (with latency, random stalls and injected faults) and collects the result,
// the counters and the final UB / ACC contents for comparison with the
// reference model.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "bits.h"
#include "memory_peek.h"
#include "tpu/isa.h"
#include "sim.h"
#include "tpu_model.h"

namespace tb {

namespace core_peek {
TB_DEFINE_MEMORY_PEEK(tpu_core__DOT__)
}  // namespace core_peek

struct CorePerf {
  uint64_t cycles = 0, mxu_busy = 0, useful_macs = 0, wgt_stall = 0, wgt_shift = 0,
           dep_stall = 0, mem_stall = 0;
};

struct CoreRun {
  tpu::isa::ErrCode err = tpu::isa::ErrCode::kOk;
  uint32_t err_pc = 0;
  uint64_t irqs = 0;
  uint64_t cycles = 0;  // start to done
  uint64_t first_mxu_cycle = 0;  // first cycle the MXU took a row (0: never)
  bool timed_out = false;
  CorePerf perf;
};

// How the memory port behaves.
struct MemoryTiming {
  int latency = 8;           // cycles from request to response
  double req_stall = 0.0;    // probability the port refuses a request
  double rsp_gap = 0.0;      // probability a due response is held back a cycle
  int ack_delay = 1;         // cycles from a write's last row to its acknowledge, at least
};

template <class Model, int N, int UbRows, int AccRows>
class CoreHarness {
 public:
  explicit CoreHarness(Sim<Model>& sim) : sim_(sim), dut_(sim.dut()) { idle_inputs(); }

  void load_program(uint32_t start, const std::vector<tpu::isa::Instr>& prog) {
    for (size_t i = 0; i < prog.size(); ++i) {
      write_imem(start + uint32_t(i), prog[i]);
      sim_.tick();
    }
    dut_.imem_wr_en_i = 0;
  }

  // each_cycle, when given, runs at every cycle of the program before the
  // inputs settle (e.g. to write the rest of an arriving program).
  CoreRun run(uint32_t start_pc, tpu::HostMemory& mem, const MemoryTiming& timing,
              uint64_t max_cycles = 2'000'000, const std::function<void()>& each_cycle = {}) {
    CoreRun res;
    dut_.start_i = 1;
    dut_.start_pc_i = start_pc;
    sim_.tick();
    dut_.start_i = 0;
    const uint64_t t0 = sim_.cycle();
    while (true) {
      if (sim_.cycle() - t0 > max_cycles) {
        res.timed_out = true;
        break;
      }
      serve_memory(mem, timing);
      if (each_cycle) each_cycle();
      sim_.settle();
      if (res.first_mxu_cycle == 0 && dut_.perf_mxu_busy_o != 0) res.first_mxu_cycle = sim_.cycle() - t0;
      if (dut_.irq_o) ++res.irqs;
      if (dut_.done_o) {
        res.err = tpu::isa::ErrCode(dut_.err_code_o);
        res.err_pc = dut_.err_pc_o;
        sim_.tick();
        break;
      }
      sim_.tick();
    }
    res.cycles = sim_.cycle() - t0;
    res.perf = {dut_.perf_cycles_o, dut_.perf_mxu_busy_o, dut_.perf_useful_macs_o,
                dut_.perf_wgt_stall_o, dut_.perf_wgt_shift_o, dut_.perf_dep_stall_o,
                dut_.perf_mem_stall_o};
    // Nothing is in flight after done (an abort waits for the port to go quiet).
    reads_.clear();
    writes_.clear();
    acks_.clear();
    return res;
  }

  // Runs prog from 0 with only its first `present` words in instruction
  // memory at the start (imem_filling_i); the next arrives every `gap`
  // cycles. With fault, none arrives after the first `present`, and the
  // core is told the rest never will (imem_fault_i).
  CoreRun run_arriving(const std::vector<tpu::isa::Instr>& prog, uint32_t present, uint64_t gap, bool fault,
                       tpu::HostMemory& mem, const MemoryTiming& timing) {
    load_program(0, std::vector<tpu::isa::Instr>(prog.begin(), prog.begin() + present));
    uint32_t words = present;
    uint64_t wait = gap;
    dut_.imem_filling_i = 1;
    dut_.imem_words_i = words;
    dut_.imem_fault_i = fault;
    const CoreRun r = run(0, mem, timing, 2'000'000, [&] {
      // The word written last cycle counts from now on (as cmd_proc's count).
      dut_.imem_wr_en_i = 0;
      dut_.imem_words_i = words;
      if (words == prog.size()) dut_.imem_filling_i = 0;
      if (fault || words == prog.size() || --wait > 0) return;
      wait = gap;
      write_imem(words, prog[words]);
      ++words;
    });
    idle_inputs();
    return r;
  }

  std::vector<int8_t> ub_row(int r) const { return core_peek::peek_ub_row(dut_.rootp, N, UbRows, r); }
  std::vector<int32_t> acc_row(int r) const { return core_peek::peek_acc_row(dut_.rootp, N, r); }

 private:
  // A burst in flight: rows go to / come from addr, addr + N, ...
  struct Burst {
    uint64_t due;   // first cycle its read data (or write acknowledge) may go out
    uint64_t addr;
    uint32_t rows;
    uint32_t done = 0;  // rows moved so far
    bool err = false;   // a write row hit a fault
  };

  // Drives an instruction memory write of `in` at addr for the next edge.
  void write_imem(uint32_t addr, const tpu::isa::Instr& in) {
    const auto w = in.encode();
    dut_.imem_wr_en_i = 1;
    dut_.imem_wr_addr_i = addr;
    set_field(dut_.imem_wr_data_i, 0, 64, w[0]);
    set_field(dut_.imem_wr_data_i, 64, 64, w[1]);
  }

  void idle_inputs() {
    dut_.imem_wr_en_i = 0;
    dut_.imem_filling_i = 0;  // programs are loaded whole before they start
    dut_.imem_words_i = 0;
    dut_.imem_fault_i = 0;
    dut_.start_i = 0;
    dut_.mem_req_ready_i = 0;
    dut_.mem_rd_valid_i = 0;
    dut_.mem_rd_err_i = 0;
    dut_.mem_wr_ready_i = 0;
    dut_.mem_wr_ack_valid_i = 0;
    dut_.mem_wr_ack_err_i = 0;
  }

  // One cycle of the memory port: offer the next read row, take a write row,
  // offer a write acknowledge, accept a request.
  void serve_memory(tpu::HostMemory& mem, const MemoryTiming& t) {
    const uint64_t now = sim_.cycle();
    const bool rd_offer = !reads_.empty() && reads_.front().due <= now && !sim_.chance(t.rsp_gap);
    dut_.mem_rd_valid_i = rd_offer;
    if (rd_offer) {
      const Burst& b = reads_.front();
      const uint64_t row_addr = b.addr + uint64_t(b.done) * N;
      dut_.mem_rd_err_i = mem.faults(row_addr, N);
      const auto bytes = mem.read(row_addr, N);
      for (int j = 0; j < N; ++j) set_field(dut_.mem_rd_data_i, unsigned(j) * 8, 8, bytes[j]);
    }
    const bool ack_offer = !acks_.empty() && acks_.front().due <= now;
    dut_.mem_wr_ack_valid_i = ack_offer;
    dut_.mem_wr_ack_err_i = ack_offer && acks_.front().err;
    dut_.mem_wr_ready_i = !writes_.empty() && !sim_.chance(t.req_stall);
    dut_.mem_req_ready_i = !sim_.chance(t.req_stall);
    sim_.settle();

    if (rd_offer && dut_.mem_rd_ready_o && ++reads_.front().done == reads_.front().rows)
      reads_.pop_front();
    if (ack_offer) acks_.pop_front();
    if (dut_.mem_wr_ready_i && dut_.mem_wr_valid_o) {
      Burst& b = writes_.front();
      const uint64_t row_addr = b.addr + uint64_t(b.done) * N;
      if (mem.faults(row_addr, N)) {
        b.err = true;
      } else {
        std::vector<uint8_t> row(N);
        for (int j = 0; j < N; ++j) row[j] = uint8_t(get_field(dut_.mem_wr_data_o, unsigned(j) * 8, 8));
        mem.write(row_addr, row);
      }
      if (++b.done == b.rows) {
        b.due = std::max(b.due, now + uint64_t(std::max(1, t.ack_delay)));
        acks_.push_back(b);
        writes_.pop_front();
      }
    }
    if (dut_.mem_req_valid_o && dut_.mem_req_ready_i) {
      Burst b{now + uint64_t(t.latency), dut_.mem_req_addr_o, uint32_t(dut_.mem_req_rows_o)};
      (dut_.mem_req_write_o ? writes_ : reads_).push_back(b);
    }
  }

  Sim<Model>& sim_;
  Model& dut_;
  std::deque<Burst> reads_, writes_, acks_;
};

}  // namespace tb
