// SPDX-License-Identifier: Apache-2.0
// ISA encoding, builders, assembler and disassembler, plus hand-computed
// values of the requantization primitives in quant.h.
#include "tpu/isa.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <random>
#include <string>

#include "tpu/quant.h"
#include "seeded_test.h"

namespace {

using namespace tpu::isa;

// TPU_SEED fixes the seed; otherwise it is drawn and recorded with the test.
class IsaRandomTest : public tpu::test::SeededTest {
 protected:
  uint64_t bits64() { return rng_(); }
};

// A random instruction the assembler can write by name: legal opcode, no
// reserved bit, named VOP operation; every other field random.
Instr random_canonical(std::mt19937_64& rng) {
  const OpInfo& info = kOps[rng() % std::size(kOps)];
  Instr in;
  in.op = uint8_t(info.op);
  in.flags = uint8_t(rng() & info.flags_mask);
  if (info.op == Op::kVop)
    in.flags = uint8_t((in.flags & ~kFlagVopOpMask) | rng() % std::size(kVops));
  in.count = info.count == CountRule::kZero ? 0 : uint16_t(rng());
  in.a = uint16_t(rng() & info.a_mask);
  in.b = uint16_t(rng() & info.b_mask);
  in.c = rng() & info.c_mask;
  // Small values too, so that optional fields are sometimes 0 and omitted.
  if (rng() % 2) in.b = uint16_t(in.b & 1);
  if (rng() % 2) in.c &= 0xFF0000FFull;
  return in;
}

// ---- Encoding ---------------------------------------------------------------------

TEST(Encoding, FieldsSitWhereTheDocSays) {
  // w0 = b[63:48] a[47:32] count[31:16] flags[15:8] op[7:0]; w1 = c.
  EXPECT_EQ(rhm(3, 8, 0x1122334455667788ull, 16).encode(),
            (std::array<uint64_t, 2>{0x0010'0003'0008'00'01ull, 0x1122334455667788ull}));
  EXPECT_EQ(mmc(1, 2, 3, true, true).encode(),
            (std::array<uint64_t, 2>{0x0002'0001'0003'03'04ull, 0}));
  // LOOP: ub_inc in b, acc_inc in c[15:0], host_inc in c[63:32].
  EXPECT_EQ(loop(4, 2, -16, 3, -256).encode(),
            (std::array<uint64_t, 2>{0xFFF0'0002'0004'00'09ull, 0xFFFFFF00'0000'0003ull}));
  // VOP: op in flags[2:0], shift in flags[7:4], dst in c.
  EXPECT_EQ(vop(VopOp::kPoolMax, 0, 0, 16, 4, 2).encode(),
            (std::array<uint64_t, 2>{0x0000'0000'0004'23'06ull, 16}));
  // ACT: RAW bit 0, BIAS bit 1, FUNC bits 3:2.
  EXPECT_EQ(act(5, 6, 7, Act::kRelu6, true).flags, 0x0A);
  EXPECT_EQ(act(5, 6, 7, Act::kNone, false, true).flags, 0x01);
  EXPECT_EQ(cfg(0x203, 0xFFFFFFFB).encode(),
            (std::array<uint64_t, 2>{0x0000'0203'0000'00'07ull, 0xFFFFFFFBull}));
  EXPECT_EQ(sync(unit_bit(Unit::kMem) | unit_bit(Unit::kMmc)).flags, 0x05);
  EXPECT_EQ(rw(0x40, 2, 16).encode()[0], 0x0010'0000'0002'00'03ull);
  EXPECT_EQ(halt().encode(), (std::array<uint64_t, 2>{0x0B, 0}));
  EXPECT_EQ(irq().encode(), (std::array<uint64_t, 2>{0x0A, 0}));
}

TEST(Encoding, Bf16FlagsSitWhereTheDocSays) {
  // RHM/WHM WIDE, RW BF16: bit 0. MMC BF16: bit 2. ACT F32: bit 4. VOP BF16: bit 3.
  EXPECT_EQ(rhm(3, 8, 0x1000, 32, true).encode()[0], 0x0020'0003'0008'01'01ull);
  EXPECT_EQ(whm(3, 8, 0x1000, 32, true).flags, 0x01);
  EXPECT_EQ(rw(0x40, 2, 32, true).encode()[0], 0x0020'0000'0002'01'03ull);
  EXPECT_EQ(mmc(1, 2, 3, true, true, true).flags, 0x07);
  EXPECT_EQ(act(5, 6, 7, Act::kRelu6, true, true, true).flags, 0x1B);
  EXPECT_EQ(vop(VopOp::kPoolAvg, 0, 0, 16, 4, 2, true).flags, 0x2C);
  // The table's bf16 forms and the forms a bf16-only core requires.
  EXPECT_EQ(find_op(uint8_t(Op::kRhm))->bf16_flags_mask, 0x01);
  EXPECT_EQ(find_op(uint8_t(Op::kRw))->bf16_only_required_mask, 0x01);
  EXPECT_EQ(find_op(uint8_t(Op::kMmc))->bf16_flags_mask, 0x04);
  EXPECT_EQ(find_op(uint8_t(Op::kMmc))->bf16_only_required_mask, 0x04);
  EXPECT_EQ(find_op(uint8_t(Op::kAct))->bf16_flags_mask, 0x10);
  EXPECT_EQ(find_op(uint8_t(Op::kAct))->bf16_only_required_mask, 0x00) << "the VPU keeps its int8 path";
  EXPECT_EQ(find_op(uint8_t(Op::kVop))->bf16_flags_mask, 0x08);
  EXPECT_EQ(find_op(uint8_t(Op::kCfg))->bf16_flags_mask, 0x00);
  EXPECT_EQ(kActF32Funcs, 0x07) << "none, relu, relu6; no fp32 LUT";
}

TEST_F(IsaRandomTest, EncodeDecodeRoundTripsEveryOpcode) {
  for (const OpInfo& info : kOps)
    for (int i = 0; i < 1000; ++i) {
      Instr in = decode(bits64(), bits64());
      in.op = uint8_t(info.op);
      ASSERT_EQ(decode(in.encode()), in) << info.name << ": " << disassemble(in);
      const std::array<uint64_t, 2> w = in.encode();
      ASSERT_EQ(decode(w).encode(), w);
    }
}

TEST(Builders, RejectValuesThatDoNotFitTheirField) {
  EXPECT_THROW(rhm(70000, 1, 0, 16), std::invalid_argument);
  EXPECT_THROW(mmc(0, 0, 65536, false, false), std::invalid_argument);
  EXPECT_THROW(loop(2, 1, 40000), std::invalid_argument);
  EXPECT_THROW(loop(2, 1, 0, -40000), std::invalid_argument);
  EXPECT_THROW(loop(2, 1, 0, 0, int64_t{1} << 31), std::invalid_argument);
  EXPECT_THROW(vop(VopOp::kMul, 0, 0, 0, 1, 16), std::invalid_argument);
  EXPECT_THROW(vop(VopOp::kAdd, 0, 0, 70000, 1), std::invalid_argument);
  EXPECT_THROW(sync(0x10), std::invalid_argument);
  EXPECT_NO_THROW(loop(2, 1, -32768, 32767, INT32_MIN));
}

TEST(Table, OpcodesErrorsAndNamesAgree) {
  for (size_t i = 0; i < std::size(kOps); ++i) {
    EXPECT_EQ(uint8_t(kOps[i].op), i + 1) << "opcodes are 0x01.. in table order";
    EXPECT_EQ(find_op(uint8_t(kOps[i].op)), &kOps[i]);
  }
  EXPECT_EQ(find_op(0x00), nullptr);
  EXPECT_EQ(find_op(0x0C), nullptr);
  for (size_t i = 0; i < std::size(kErrors); ++i) EXPECT_EQ(uint8_t(kErrors[i].code), i);
  EXPECT_EQ(err_name(ErrCode::kNoWeights), "NO_WEIGHTS");
  EXPECT_EQ(err_name(ErrCode::kWgtOverflow), "WGT_OVERFLOW");
  EXPECT_EQ(err_name(ErrCode::kWgtFormat), "WGT_FORMAT");
  EXPECT_EQ(uint8_t(ErrCode::kWgtFormat), 12);
  EXPECT_EQ(op_name(0x04), "MMC");
  EXPECT_EQ(kCfgRegs[0].reset, 0x40000000);
}

// The UB rows an ACT writes per ACC row: those of its lanes among the
// result's parts (RAW 4, F32 2, else 1), 0 for more lanes than N.
TEST(Isa, ActUbRowsPerRowCountTheLanesParts) {
  const auto rows = [](bool raw, bool f32, uint32_t lanes, int n) {
    return act_ub_rows_per_row(act(0, 0, 1, Act::kNone, false, raw, f32, lanes), n);
  };
  for (const int n : {4, 16, 256}) {
    EXPECT_EQ(rows(true, false, 0, n), 4) << n;
    EXPECT_EQ(rows(true, false, uint32_t(n), n), 4) << n;
    EXPECT_EQ(rows(true, false, 1, n), 1) << n;
    EXPECT_EQ(rows(true, false, uint32_t(n / 4), n), 1) << n;
    EXPECT_EQ(rows(true, false, uint32_t(n / 4 + 1), n), 2) << n;
    EXPECT_EQ(rows(true, false, uint32_t(3 * n / 4), n), 3) << n;
    EXPECT_EQ(rows(true, false, uint32_t(3 * n / 4 + 1), n), 4) << n;
    EXPECT_EQ(rows(true, true, uint32_t(n / 2), n), 2) << n;
    EXPECT_EQ(rows(false, true, 0, n), 2) << n;
    EXPECT_EQ(rows(false, true, uint32_t(n / 2), n), 1) << n;
    EXPECT_EQ(rows(false, true, uint32_t(n / 2 + 1), n), 2) << n;
    EXPECT_EQ(rows(false, false, 1, n), 1) << n;
    EXPECT_EQ(rows(false, false, uint32_t(n), n), 1) << n;
    EXPECT_EQ(rows(true, false, uint32_t(n + 1), n), 0) << n;
    EXPECT_EQ(rows(false, false, uint32_t(n + 1), n), 0) << n;
  }
  // An array whose rows do not split into whole lanes (the model takes any
  // N): the rows that hold the lanes' bytes, a lane across two of them.
  EXPECT_EQ(rows(true, false, 1, 6), 1);  // bytes 0..3 of 6-byte rows
  EXPECT_EQ(rows(true, false, 2, 6), 2);  // bytes 0..7
  EXPECT_EQ(rows(true, false, 5, 6), 4);  // bytes 0..19
  EXPECT_EQ(rows(false, true, 3, 6), 1);
  EXPECT_EQ(rows(false, true, 4, 6), 2);
}

// ---- Assembler ----------------------------------------------------------------------

TEST(Assembler, AcceptsTheDocumentedSyntax) {
  const std::string source = R"(
    # GEMM fragment
    rhm ub=0 rows=8 host=0x1000 stride=16   ; trailing comment
    mmc ub=0 acc=16 rows=32 acc pop
    act acc=0 ub=64 rows=8 func=relu bias
    act acc=0 ub=64 rows=8 raw
    act acc=0 ub=64 rows=8 raw lanes=4
    vop add a=0 b=8 dst=16 rows=8
    vop poolmax a=0 dst=16 rows=4 shift=2
    cfg QMULT 0x40000000
    cfg BIAS+3 -5
    cfg 0x203 7
    sync mem|mmc
    loop n=4 body=2 ub_inc=16 acc_inc=0 host_inc=256
    rw host=0x2000 tiles=2 stride=16
    WHM UB=1 ROWS=2 HOST=0x10 STRIDE=32
    sync
    irq
    halt
  )";
  const std::vector<Instr> expected = {
      rhm(0, 8, 0x1000, 16),
      mmc(0, 16, 32, true, true),
      act(0, 64, 8, Act::kRelu, true),
      act(0, 64, 8, Act::kNone, false, true),
      act(0, 64, 8, Act::kNone, false, true, false, 4),
      vop(VopOp::kAdd, 0, 8, 16, 8),
      vop(VopOp::kPoolMax, 0, 0, 16, 4, 2),
      cfg(kCfgQmult, 0x40000000),
      cfg(kCfgBiasBase + 3, uint32_t(-5)),
      cfg(0x203, 7),
      sync(unit_bit(Unit::kMem) | unit_bit(Unit::kMmc)),
      loop(4, 2, 16, 0, 256),
      rw(0x2000, 2, 16),
      whm(1, 2, 0x10, 32),
      sync(0),
      irq(),
      halt(),
  };
  EXPECT_EQ(assemble(source), expected);
}

TEST(Assembler, DisassemblesToReadableText) {
  EXPECT_EQ(disassemble(mmc(0, 16, 32, true, true)), "mmc ub=0 acc=16 rows=32 acc pop");
  EXPECT_EQ(disassemble(rhm(0, 8, 0x1000, 16)), "rhm ub=0 rows=8 host=0x1000 stride=16");
  EXPECT_EQ(disassemble(vop(VopOp::kPoolAvg, 4, 0, 16, 4, 2)),
            "vop poolavg a=4 dst=16 rows=4 shift=2");
  EXPECT_EQ(disassemble(act(0, 64, 8, Act::kLut, true)), "act acc=0 ub=64 rows=8 bias func=lut");
  EXPECT_EQ(disassemble(act(0, 64, 8, Act::kNone, false, true, false, 5)), "act acc=0 ub=64 rows=8 lanes=5 raw");
  EXPECT_EQ(disassemble(cfg(kCfgBiasBase + 3, uint32_t(-5))), "cfg BIAS+3 -5");
  EXPECT_EQ(disassemble(cfg(kCfgQmult, 0x40000000)), "cfg QMULT 0x40000000");
  EXPECT_EQ(disassemble(cfg(0x7, 1)), "cfg 0x7 0x1");
  EXPECT_EQ(disassemble(loop(4, 2, -16, 0, 256)), "loop n=4 body=2 ub_inc=-16 host_inc=256");
  EXPECT_EQ(disassemble(sync(0xF)), "sync mem|wgt|mmc|vpu");
  EXPECT_EQ(disassemble(halt()), "halt");
  // Reserved bits (MMC c) and unnamed values (VOP op 7) only have the raw form.
  Instr odd = mmc(0, 0, 1, false, false);
  odd.c = 1;
  EXPECT_EQ(disassemble(odd), ".word 0x0000000000010004 0x0000000000000001");
  EXPECT_EQ(disassemble(Instr{}), ".word 0x0000000000000000 0x0000000000000000");
}

// The bf16 forms are bare words; the fp32 registers print in hex.
TEST(Assembler, Bf16FormsAndFp32Registers) {
  const std::string source = R"(
    rhm ub=0 rows=8 host=0x1000 stride=32 wide
    rw host=0x2000 tiles=1 stride=32 bf16
    mmc ub=0 acc=16 rows=8 acc pop bf16
    act acc=16 ub=64 rows=8 bias func=relu f32
    act acc=16 ub=64 rows=8 raw f32
    vop poolavg a=0 dst=16 rows=4 shift=2 bf16
    whm ub=64 rows=8 host=0x3000 stride=32 WIDE
    cfg SCALE 0x3e800000
    cfg RELU6_F32 0x40c00000
    cfg FMIN 0xff800000
    cfg FMAX -8388608
  )";
  const std::vector<Instr> expected = {
      rhm(0, 8, 0x1000, 32, true),
      rw(0x2000, 1, 32, true),
      mmc(0, 16, 8, true, true, true),
      act(16, 64, 8, Act::kRelu, true, false, true),
      act(16, 64, 8, Act::kNone, false, true, true),
      vop(VopOp::kPoolAvg, 0, 0, 16, 4, 2, true),
      whm(64, 8, 0x3000, 32, true),
      cfg(kCfgScale, 0x3e800000),
      cfg(kCfgRelu6F32, 0x40c00000),
      cfg(kCfgFmin, 0xff800000),
      cfg(kCfgFmax, 0xff800000),
  };
  EXPECT_EQ(assemble(source), expected);
  EXPECT_EQ(disassemble(rhm(0, 8, 0x1000, 32, true)), "rhm ub=0 rows=8 host=0x1000 stride=32 wide");
  EXPECT_EQ(disassemble(rw(0x2000, 1, 32, true)), "rw host=0x2000 tiles=1 stride=32 bf16");
  EXPECT_EQ(disassemble(mmc(0, 16, 8, false, true, true)), "mmc ub=0 acc=16 rows=8 pop bf16");
  EXPECT_EQ(disassemble(act(16, 64, 8, Act::kRelu6, true, true, true)),
            "act acc=16 ub=64 rows=8 raw bias func=relu6 f32");
  EXPECT_EQ(disassemble(vop(VopOp::kMax, 0, 2, 4, 1, 0, true)), "vop max a=0 b=2 dst=4 rows=1 bf16");
  EXPECT_EQ(disassemble(vop(VopOp::kMin, 3, 5, 7, 2)), "vop min a=3 b=5 dst=7 rows=2");
  EXPECT_EQ(assemble("vop min a=3 b=5 dst=7 rows=2"), std::vector<Instr>{vop(VopOp::kMin, 3, 5, 7, 2)});
  EXPECT_EQ(disassemble(cfg(kCfgScale, 0x3f800000)), "cfg SCALE 0x3f800000");
  EXPECT_EQ(disassemble(cfg(kCfgFmin, 0xff800000)), "cfg FMIN 0xff800000");
  EXPECT_EQ(disassemble(cfg(kCfgBiasBase, 0x3f800000)), "cfg BIAS+0 1065353216")
      << "BIAS is int32 or fp32 bits, by the ACT that reads it; printed signed";
  for (const std::string& line : {"mmc ub=0 acc=0 rows=1 bf16 bf16", "act acc=0 ub=0 rows=1 f32=1"})
    EXPECT_THROW(assemble(line), AsmError) << line;
}

// The per-lane scale registers: named, printed (CH_MULT in hex, CH_SHIFT
// signed) and read back, at every lane index and value edge.
TEST(Assembler, PerLaneScaleRegistersRoundTrip) {
  EXPECT_EQ(assemble("cfg CH_MULT+3 0x5a000000")[0], cfg(kCfgChMultBase + 3, 0x5a000000));
  EXPECT_EQ(assemble("cfg ch_shift+0 -31")[0], cfg(kCfgChShiftBase, uint32_t(-31)));
  EXPECT_EQ(disassemble(cfg(kCfgChMultBase + 7, 0x40000000)), "cfg CH_MULT+7 0x40000000");
  EXPECT_EQ(disassemble(cfg(kCfgChShiftBase + 2, uint32_t(-5))), "cfg CH_SHIFT+2 -5");
  EXPECT_EQ(disassemble(cfg(kCfgChShiftBase + 255, 31)), "cfg CH_SHIFT+255 31");
  for (uint32_t lane : {0u, 1u, 15u, 31u, 255u})
    for (uint32_t v : {0u, 1u, 31u, uint32_t(-31), 0x7fffffffu, 0x80000000u})
      for (uint16_t base : {kCfgChMultBase, kCfgChShiftBase}) {
        const Instr in = cfg(base + lane, v);
        ASSERT_EQ(assemble(disassemble(in)), std::vector<Instr>{in}) << disassemble(in);
      }
  EXPECT_THROW(assemble("cfg CH_MULT+256 3"), AsmError);
}

TEST_F(IsaRandomTest, CanonicalInstructionsRoundTripByName) {
  for (int i = 0; i < 5000; ++i) {
    const Instr in = random_canonical(rng_);
    const std::string text = disassemble(in);
    ASSERT_TRUE(is_canonical(in));
    ASSERT_FALSE(text.starts_with(".word")) << text;
    std::vector<Instr> back;
    ASSERT_NO_THROW(back = assemble(text)) << text;
    ASSERT_EQ(back, std::vector<Instr>{in}) << text << " -> " << disassemble(back.at(0));
  }
}

TEST_F(IsaRandomTest, AnyBitPatternRoundTrips) {
  int raw = 0;
  for (int i = 0; i < 5000; ++i) {
    Instr in = random_canonical(rng_);
    // Flip one or two random bits: reserved ones give the raw form.
    for (int flips = 1 + int(rng_() % 2); flips > 0; --flips) {
      const int bit = int(rng_() % 128);
      auto w = in.encode();
      w[bit / 64] ^= uint64_t{1} << (bit % 64);
      in = decode(w);
    }
    const std::string text = disassemble(in);
    ASSERT_EQ(text.starts_with(".word"), !is_canonical(in)) << text;
    raw += !is_canonical(in);
    ASSERT_EQ(assemble(text), std::vector<Instr>{in}) << text;
  }
  EXPECT_GT(raw, 1000) << "the test should reach many non-canonical encodings";
  EXPECT_LT(raw, 4900) << "and many canonical ones";
}

TEST_F(IsaRandomTest, ProgramListingRoundTrips) {
  std::vector<Instr> program;
  for (int i = 0; i < 200; ++i) program.push_back(decode(bits64(), bits64()));
  for (int i = 0; i < 200; ++i) program.push_back(random_canonical(rng_));
  EXPECT_EQ(assemble(disassemble(program)), program);
}

struct BadSource {
  std::string source;
  int line;
  std::string message;
};

TEST(Assembler, ReportsTheLineAndTheProblem) {
  const BadSource cases[] = {
      {"foo ub=1", 1, "unknown mnemonic 'foo'"},
      {"halt\n\nrhm ub=0 rows=x8 host=0 stride=16", 3, "bad number 'x8' for rows"},
      {"rhm ub=0 rows=8 stride=16", 1, "rhm: missing field 'host'"},
      {"rhm ub=0 rows=8 host=0 stride=", 1, "bad number '' for stride"},
      {"rhm ub=0 rows=70000 host=0 stride=16", 1, "rows = 70000 is out of range 0..65535"},
      {"rhm ub=-1 rows=1 host=0 stride=16", 1, "ub = -1 is out of range 0..65535"},
      {"rhm ub=0 rows=1 host=0 stride=16 colour=3", 1, "unknown field 'colour' for rhm"},
      {"mmc ub=0 acc=0 rows=1 ub=2", 1, "duplicate field 'ub'"},
      {"mmc ub=0 acc=0 rows=1 pop pop", 1, "duplicate flag 'pop'"},
      {"mmc ub=0 acc=0 rows=1 push", 1, "unexpected 'push' for mmc"},
      {"act acc=0 ub=0 rows=1 func=tanh", 1, "unknown func 'tanh'"},
      {"vop sub a=0 b=0 dst=0 rows=1", 1, "unknown vop operation 'sub'"},
      {"vop", 1, "vop: missing operation"},
      {"vop mul a=0 b=0 dst=0 rows=1 shift=16", 1, "shift = 16 is out of range 0..15"},
      {"cfg FOO 1", 1, "unknown cfg register 'FOO'"},
      {"cfg QMULT", 1, "expected cfg <register> <value>"},
      {"cfg QMULT 0x100000000", 1, "cfg value = 0x100000000 is out of range"},
      {"cfg QSHIFT+1 3", 1, "cfg register QSHIFT is not an array"},
      {"cfg LUT+256 3", 1, "LUT element = 256 is out of range 0..255"},
      {"sync mem|dma", 1, "unknown unit 'dma'"},
      {"loop n=2 body=1 ub_inc=40000", 1, "ub_inc = 40000 is out of range -32768..32767"},
      {"loop n=2 body=1 host_inc=-2147483649", 1, "host_inc = -2147483649 is out of range"},
      {".word 0x1", 1, "expected .word <w0> <w1>"},
      {".word 0x1 0x10000000000000000", 1, "bad number '0x10000000000000000' for w1"},
  };
  for (const BadSource& c : cases) {
    try {
      assemble(c.source);
      ADD_FAILURE() << "accepted: " << c.source;
    } catch (const AsmError& e) {
      EXPECT_EQ(e.line(), c.line) << c.source;
      const std::string what = e.what();
      EXPECT_TRUE(what.starts_with("line " + std::to_string(c.line) + ": ")) << what;
      EXPECT_NE(what.find(c.message), std::string::npos) << "message: " << what;
    }
  }
}

TEST(Assembler, AcceptsNumbersInRangeAtTheLimits) {
  EXPECT_EQ(assemble("cfg QMULT -2147483648")[0].c, 0x80000000u);
  EXPECT_EQ(assemble("cfg QMULT 0xFFFFFFFF")[0].c, 0xFFFFFFFFu);
  EXPECT_EQ(assemble("rhm ub=65535 rows=0 host=0xffffffffffffffff stride=0")[0],
            rhm(65535, 0, ~uint64_t{0}, 0));
  EXPECT_EQ(assemble("loop n=1 body=1 host_inc=-2147483648")[0], loop(1, 1, 0, 0, INT32_MIN));
  EXPECT_EQ(assemble("sync all")[0], sync(0));
  EXPECT_THROW(assemble("sync 0x3"), AsmError) << "units are named";
}

// ---- quant.h primitives against values worked out by hand ---------------------------------

TEST(Quant, SrdhmMatchesHandComputedValues) {
  using tpu::quant::srdhm;
  // The one overflow: (-2^31)(-2^31)/2^31 = 2^31 does not fit; saturates.
  EXPECT_EQ(srdhm(INT32_MIN, INT32_MIN), INT32_MAX);
  // 2^30 * 2^30 / 2^31 = 2^29 exactly.
  EXPECT_EQ(srdhm(0x40000000, 0x40000000), 0x20000000);
  // gemmlowp: (ab + nudge) / 2^31 truncated, nudge = 2^30 for ab >= 0, else
  // 1 - 2^30. So a positive tie rounds up, a negative tie toward zero:
  //   1 * 2^30 / 2^31 = 0.5:   (2^30 + 2^30) / 2^31 = 1
  //   3 * 2^30 / 2^31 = 1.5:   (3*2^30 + 2^30) / 2^31 = 2
  //  -1 * 2^30 / 2^31 = -0.5:  (-2^30 + 1 - 2^30) / 2^31 = -0.99.. -> 0
  //  -3 * 2^30 / 2^31 = -1.5:  (-3*2^30 + 1 - 2^30) / 2^31 = -1.99.. -> -1
  //  -5 * 2^29 / 2^31 = -1.25: (-5*2^29 + 1 - 2^30) / 2^31 = -1.74.. -> -1
  EXPECT_EQ(srdhm(1, 0x40000000), 1);
  EXPECT_EQ(srdhm(3, 0x40000000), 2);
  EXPECT_EQ(srdhm(-1, 0x40000000), 0);
  EXPECT_EQ(srdhm(-3, 0x40000000), -1);
  EXPECT_EQ(srdhm(-5, 0x20000000), -1);
  // (2^31-1)^2 / 2^31 = 2^31 - 2 + 2^-31, rounds to 2147483646.
  EXPECT_EQ(srdhm(INT32_MAX, INT32_MAX), 2147483646);
  // -2^31 (2^31-1) / 2^31 = -(2^31-1) exactly.
  EXPECT_EQ(srdhm(INT32_MIN, INT32_MAX), -2147483647);
  // 100 (2^31-1) / 2^31 = 99.99999995, rounds to 100.
  EXPECT_EQ(srdhm(100, INT32_MAX), 100);
  EXPECT_EQ(srdhm(12345, 0), 0);
}

TEST(Quant, RdbpMatchesHandComputedValues) {
  using tpu::quant::rdbp;
  EXPECT_EQ(rdbp(-5, 1), -3);  // -2.5 rounds away from zero
  EXPECT_EQ(rdbp(5, 1), 3);    // 2.5
  EXPECT_EQ(rdbp(-4, 1), -2);  // exact
  EXPECT_EQ(rdbp(-1, 1), -1);  // -0.5
  EXPECT_EQ(rdbp(1, 1), 1);    // 0.5
  EXPECT_EQ(rdbp(7, 2), 2);    // 1.75
  EXPECT_EQ(rdbp(-6, 2), -2);  // -1.5
  EXPECT_EQ(rdbp(-5, 2), -1);  // -1.25
  EXPECT_EQ(rdbp(123, 0), 123);
  EXPECT_EQ(rdbp(INT32_MIN, 31), -1);  // -2^31 / 2^31
  EXPECT_EQ(rdbp(INT32_MAX, 31), 1);   // 0.99999999953
  EXPECT_EQ(rdbp(0x40000000, 31), 1);  // exactly 0.5
  EXPECT_EQ(rdbp(0x3FFFFFFF, 31), 0);  // just below 0.5
}

TEST(Quant, ActLaneMatchesHandComputedValues) {
  using namespace tpu::quant;
  QuantParams p;
  p.multiplier = 0x40000000;  // 0.5
  p.shift = 2;
  p.zero_point = -10;
  // 1000 * 0.5 = 500; 500 / 4 = 125; -10 -> 115.
  EXPECT_EQ(act_lane(1000, 0, p, Act::kNone, nullptr), 115);
  p.zero_point = 10;  // 135 clamps to 127
  EXPECT_EQ(act_lane(1000, 0, p, Act::kNone, nullptr), 127);
  // -1000 + bias 998 = -2; * 0.5 = -1; / 4 = -0.25 -> 0; +10 = 10.
  EXPECT_EQ(act_lane(-1000, 998, p, Act::kNone, nullptr), 10);
  // ReLU clamps below at the zero point: -1000 -> -500 -> -125 -> -115 -> 10.
  EXPECT_EQ(act_lane(-1000, 0, p, Act::kRelu, nullptr), 10);
  p.relu6_max = 60;  // ReLU6: 1000 -> 135 -> min(127, 60) = 60
  EXPECT_EQ(act_lane(1000, 0, p, Act::kRelu6, nullptr), 60);
}

}  // namespace
