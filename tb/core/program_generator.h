// SPDX-License-Identifier: Apache-2.0
// Random program generator shared by the core and the device tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "tpu/isa.h"
#include "tpu_model.h"

namespace core_tb {

namespace isa = tpu::isa;

// Host regions the generated programs use: inputs are read, outputs written
// and read back (an RHM after a WHM of the same bytes must see its data; a
// WHM after an RHM must not change what the RHM reads).
constexpr uint64_t kGenInput = 0x10000, kGenOutput = 0x80000;

// Generates programs that are valid by construction for the common cases; a
// trial run on a copy of the model rejects the rare invalid one (a LOOP whose
// later iterations leave memory, say), so every program run is valid.
// In a bf16 or both core the programs also use the bf16 forms (wide
// RHM/WHM, RW/MMC BF16, ACT F32, VOP BF16, the fp32 CFG registers). All
// tiles in flight have one format: a program keeps the format of the tiles
// it finds (or picks one when there are none), so its MMCs always match.
template <class Fixture, int N, int UbRows, int AccRows>
class ProgramGenerator {
 public:
  static constexpr uint64_t kInSize = 0x4000, kOutSize = 0x4000;

  ProgramGenerator(Fixture& fx, int pending_tiles, bool bf16_core = false, bool tiles_bf16 = false)
      : fx_(fx), tiles_(pending_tiles), bf16_core_(bf16_core),
        fmt_bf16_(bf16_core && (pending_tiles > 0 ? tiles_bf16 : fx.chance(0.5))) {}

  std::vector<isa::Instr> make(int length) {
    std::vector<isa::Instr> prog;
    while (int(prog.size()) < length) {
      if (fx_.chance(0.08) && int(prog.size()) + 4 < length) {
        const int body = int(fx_.rand_int(1, 3));
        prog.push_back(isa::loop(uint32_t(fx_.rand_int(2, 3)), uint32_t(body),
                                 int32_t(fx_.rand_int(0, 8)), int32_t(fx_.rand_int(0, 8)),
                                 int64_t(N * fx_.rand_int(0, 4))));
        for (int i = 0; i < body; ++i) prog.push_back(one());
      } else {
        prog.push_back(one());
      }
    }
    prog.push_back(isa::halt());
    return prog;
  }

 private:
  int64_t r(int64_t lo, int64_t hi) { return fx_.rand_int(lo, hi); }
  uint32_t rows() { return uint32_t(r(1, 20)); }
  uint32_t ub(uint32_t len) { return uint32_t(r(0, UbRows - int64_t(len))); }
  uint32_t acc(uint32_t len) { return uint32_t(r(0, AccRows - int64_t(len))); }

  isa::Instr one() {
    for (;;) {
      if (bf16_core_ && fx_.chance(0.25)) return one_bf16();
      switch (r(0, 9)) {
        case 0: {  // RHM from the input region, or from the output region (what WHMs wrote)
          const uint32_t n = rows(), stride = uint32_t(N * r(1, 3));
          const uint64_t base = fx_.chance(0.3) ? kGenOutput : kGenInput;
          return isa::rhm(ub(n), n, base + uint64_t(r(0, kInSize - int64_t(n) * stride)), stride);
        }
        case 1: {  // WHM to the output region
          const uint32_t n = rows(), stride = uint32_t(N * r(1, 2));
          return isa::whm(ub(n), n, kGenOutput + uint64_t(r(0, kOutSize - int64_t(n) * stride)), stride);
        }
        case 2: {  // RW, within the tile capacity, in the program's format
          if (tiles_ >= 6) continue;
          const uint32_t t = uint32_t(r(1, std::min(2, 6 - tiles_)));
          tiles_ += int(t);
          const uint32_t row = fmt_bf16_ ? 2 * N : N;
          return isa::rw(kGenInput + uint64_t(r(0, kInSize - int64_t(t) * N * row)), t, row, fmt_bf16_);
        }
        case 3:
        case 4: {  // MMC, when a tile is there
          if (tiles_ == 0) continue;
          const uint32_t n = rows();
          const bool pop = fx_.chance(0.5);
          tiles_ -= pop;
          return isa::mmc(ub(fmt_bf16_ ? 2 * n : n), acc(n), n, fx_.chance(0.5), pop, fmt_bf16_);
        }
        case 5: {  // ACT, now and then of fewer lanes (RAW: fewer UB rows a row)
          const uint32_t n = rows(), lanes = some_lanes();
          if (fx_.chance(0.2)) return isa::act(acc(n), ub(4 * n), n, isa::Act::kNone, false, true, false, lanes);
          return isa::act(acc(n), ub(n), n, isa::Act(r(0, 3)), fx_.chance(0.5), false, false, lanes);
        }
        case 6: {  // VOP: any of the table's operations, with a SHIFT it takes
          const isa::VopInfo& v = isa::kVops[r(0, int64_t(std::size(isa::kVops)) - 1)];
          const uint32_t n = rows();
          if (!v.binary) {
            const int shift = int(r(0, std::min(3, int(v.max_shift))));
            return isa::vop(v.op, ub(n << shift), 0, ub(n), n, shift);
          }
          return isa::vop(v.op, ub(n), ub(n), ub(n), n, int(r(0, v.max_shift)));
        }
        case 7: {  // CFG
          switch (r(0, 8)) {
            // Per-lane scales (CH_MULT+j, CH_SHIFT+j, left shifts included).
            case 7: return isa::cfg(uint32_t(0x300 + r(0, N - 1)), uint32_t(r(1 << 29, 0x7fffffff)));
            case 8: return isa::cfg(uint32_t(0x400 + r(0, N - 1)), uint32_t(int32_t(r(-24, 6))));
            case 0: return isa::cfg(0x000, uint32_t(r(1 << 29, 0x7fffffff)));
            case 1: return isa::cfg(0x001, uint32_t(r(0, 24)));
            case 2: return isa::cfg(0x002, uint32_t(int32_t(r(-30, 30))));
            case 3: return isa::cfg(0x003, uint32_t(int32_t(r(-128, -20))));
            case 4: return isa::cfg(0x004, uint32_t(int32_t(r(20, 127))));
            case 5: return isa::cfg(uint32_t(0x100 + r(0, N - 1)), uint32_t(int32_t(r(-100000, 100000))));
            default: return isa::cfg(uint32_t(0x200 + r(0, 255)), uint32_t(r(0, 255)));
          }
        }
        case 8:
          return fx_.chance(0.5) ? isa::sync(uint8_t(r(0, 15))) : isa::irq();
        default: {  // RELU6 bound or the other clamp settings
          return isa::cfg(0x005, uint32_t(int32_t(r(0, 127))));
        }
      }
    }
  }

  // An ACT's lanes: mostly 0 (all), else 1..N.
  uint32_t some_lanes() { return fx_.chance(0.6) ? 0 : uint32_t(r(1, N)); }

  // The bf16 forms but RW and MMC (case 2 to 4 above use the program's
  // format): wide transfers, ACT F32, VOP BF16, the fp32 registers.
  isa::Instr one_bf16() {
    const uint32_t n = uint32_t(r(1, 10));
    switch (r(0, 5)) {
      case 0: {
        const uint32_t stride = uint32_t(2 * N * r(1, 2) + r(0, 1) * 3);
        const uint64_t base = fx_.chance(0.3) ? kGenOutput : kGenInput;
        return isa::rhm(ub(2 * n), n, base + uint64_t(r(0, kInSize - int64_t(n) * stride)), stride, true);
      }
      case 1: {
        const uint32_t stride = uint32_t(2 * N * r(1, 2));
        return isa::whm(ub(2 * n), n, kGenOutput + uint64_t(r(0, kOutSize - int64_t(n) * stride)), stride, true);
      }
      case 2: {
        const bool raw = fx_.chance(0.3);
        return isa::act(acc(n), ub(raw ? 4 * n : 2 * n), n, isa::Act(r(0, 2)), fx_.chance(0.5), raw, true,
                        some_lanes());
      }
      case 3: {
        const isa::VopInfo& v = isa::kVops[r(0, int64_t(std::size(isa::kVops)) - 1)];
        if (!v.binary) {
          const int shift = int(r(0, std::min(3, int(v.bf16_max_shift))));
          return isa::vop(v.op, ub(2 * (n << shift)), 0, ub(2 * n), n, shift, true);
        }
        return isa::vop(v.op, ub(2 * n), ub(2 * n), ub(2 * n), n, int(r(0, v.bf16_max_shift)), true);
      }
      case 4: {  // SCALE: 2^-4 .. 2^4 with a random fraction, now and then NaN
        const uint32_t scale = fx_.chance(0.05) ? 0x7FC00000u : uint32_t(r(123, 131)) << 23 | uint32_t(r(0, 0x7FFFFF));
        return isa::cfg(isa::kCfgScale, scale);
      }
      default: {  // RELU6_F32, FMIN, FMAX: bf16-like values, signed
        const uint32_t v = uint32_t(r(0, 1)) << 31 | uint32_t(r(120, 135)) << 23 | uint32_t(r(0, 0x7FFFFF));
        return isa::cfg(uint32_t(isa::kCfgRelu6F32 + r(0, 2)), v);
      }
    }
  }

  Fixture& fx_;
  int tiles_;
  bool bf16_core_, fmt_bf16_;
};

// The reference model's configuration for a test configuration struct
// (N, UbRows, AccRows, Imem, WgtFifoTiles, Datapath), as the RTL was built with.
template <class Cfg>
tpu::CoreConfig model_config() {
  tpu::CoreConfig c;
  c.n = Cfg::N;
  c.ub_rows = Cfg::UbRows;
  c.acc_rows = Cfg::AccRows;
  c.imem_depth = Cfg::Imem;
  c.wgt_fifo_tiles = Cfg::WgtFifoTiles;
  c.datapath = Cfg::Datapath;
  return c;
}

// A random program of min_len..max_len instructions (plus HALT) that runs
// without error on a copy of the model from its present state (pending tiles,
// configuration) and memory image. Empty after 100 invalid tries. *rejected
// counts the tries that failed.
template <int N, int UbRows, int AccRows, class Fixture>
std::vector<isa::Instr> valid_program(Fixture& fx, const tpu::model::TpuModel& model,
                                      const tpu::HostMemory& mem, int min_len, int max_len,
                                      int* rejected = nullptr) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    ProgramGenerator<Fixture, N, UbRows, AccRows> gen(fx, int(model.pending_tiles()),
                                                      tpu::has_bf16(model.config().datapath),
                                                      model.current_tile_is_bf16());
    std::vector<isa::Instr> prog = gen.make(int(fx.rand_int(min_len, max_len)));
    tpu::model::TpuModel trial = model;
    tpu::HostMemory trial_mem = mem;
    trial.load_program(0, prog);
    if (trial.run(0, trial_mem).err == isa::ErrCode::kOk) return prog;
    if (rejected) ++*rejected;
  }
  return {};
}

}  // namespace core_tb
