# SPDX-License-Identifier: Apache-2.0
"""The instruction set as data: the single source of every encoding.

docs/isa.md describes the semantics; scripts/gen_isa.py turns this table into
rtl/ctrl/tpu_isa_pkg.sv (decoder constants) and sw/common/include/tpu/isa_table.h
(assembler, disassembler, reference model). Change the ISA here, run
gen_isa.py, and update docs/isa.md.
"""

from dataclasses import dataclass
from typing import Optional

# ---- Instruction word --------------------------------------------------------

INSTR_BITS = 128


@dataclass(frozen=True)
class WordField:
    name: str
    lsb: int  # in the 128-bit instruction (w1 holds bits 127:64)
    width: int


# Low to high; docs/isa.md "Encoding".
WORD_FIELDS = (
    WordField("op", 0, 8),
    WordField("flags", 8, 8),
    WordField("count", 16, 16),
    WordField("a", 32, 16),
    WordField("b", 48, 16),
    WordField("c", 64, 64),
)


def word_field(name: str) -> WordField:
    return next(f for f in WORD_FIELDS if f.name == name)


# ---- Enumerations --------------------------------------------------------------


@dataclass(frozen=True)
class EnumValue:
    name: str  # UPPER_SNAKE; CamelCase in SV and C++
    value: int
    asm: str  # assembler spelling


@dataclass(frozen=True)
class ActFunc(EnumValue):
    f32: bool = True  # also exists in ACT F32 (the fp32 VPU path); else BAD_FLAGS there


ACT_FUNCS = (
    ActFunc("NONE", 0, "none"),
    ActFunc("RELU", 1, "relu"),
    ActFunc("RELU6", 2, "relu6"),
    ActFunc("LUT", 3, "lut", f32=False),  # an int8 table: no fp32 form
)


@dataclass(frozen=True)
class VopOp(EnumValue):
    binary: bool = True  # reads B rows; pools read only A and require b = 0
    max_shift: int = 0  # SHIFT must be 0..max_shift
    bf16_max_shift: int = 0  # the same with the BF16 flag (bf16 MUL has no shift)


VOP_OPS = (
    VopOp("ADD", 0, "add", binary=True, max_shift=0, bf16_max_shift=0),
    VopOp("MUL", 1, "mul", binary=True, max_shift=15, bf16_max_shift=0),
    VopOp("MAX", 2, "max", binary=True, max_shift=0, bf16_max_shift=0),
    VopOp("POOL_MAX", 3, "poolmax", binary=False, max_shift=4, bf16_max_shift=4),
    VopOp("POOL_AVG", 4, "poolavg", binary=False, max_shift=4, bf16_max_shift=4),
    VopOp("MIN", 5, "min", binary=True, max_shift=0, bf16_max_shift=0),
)

# Units, numbered as the bits of SYNC's mask.
UNITS = (
    EnumValue("MEM", 0, "mem"),  # RHM, WHM
    EnumValue("WGT", 1, "wgt"),  # RW
    EnumValue("MMC", 2, "mmc"),  # MMC
    EnumValue("VPU", 3, "vpu"),  # ACT, VOP, CFG
)

ENUMS = {"act_func": ACT_FUNCS, "vop": VOP_OPS, "unit": UNITS}

# ---- Flags ---------------------------------------------------------------------

# How the assembler writes a flags field.
BARE_WORD = "word"  # 1-bit flag: present or absent (`pop`)
KEYWORD = "key"  # key=value (`func=relu`, `shift=2`)
POSITIONAL = "positional"  # right after the mnemonic (`vop add`, `sync mem|mmc`)


@dataclass(frozen=True)
class FlagField:
    name: str
    lsb: int
    width: int = 1
    enum: Optional[str] = None  # key of ENUMS when the value is named
    asm: str = BARE_WORD
    # The flag selects the bf16 form of the instruction (docs/numerics.md):
    # legal only when the core's datapath is bf16 or both, BAD_FLAGS in an
    # int8 core.
    bf16: bool = False
    # The instruction without this flag drives the int8 MXU (an int8 weight
    # tile, an int8 matrix multiply), so a bf16-only core requires the flag:
    # without it the instruction is BAD_FLAGS there.
    bf16_only_requires: bool = False

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb


# ---- Operands (fields other than op and flags) -----------------------------------

# What an operand's value is; LOOP offsets and range checks follow the kind.
UB_ROW = "ub_row"
ACC_ROW = "acc_row"
HOST_ADDR = "host_addr"
STRIDE = "stride"
ROWS = "rows"
TILES = "tiles"
ITERATIONS = "iterations"
BODY_LEN = "body_len"
UB_INC = "ub_inc"
ACC_INC = "acc_inc"
HOST_INC = "host_inc"
CFG_INDEX = "cfg_index"
LANES = "lanes"
CFG_VALUE = "cfg_value"


@dataclass(frozen=True)
class Operand:
    key: str  # assembler keyword (key=value); CFG's are positional
    field: str  # count, a, b or c
    kind: str
    lsb: int = 0  # within the field
    width: Optional[int] = None  # default: the whole field
    signed: bool = False
    optional: bool = False  # the assembler defaults it to 0

    @property
    def bits(self) -> int:
        return self.width if self.width is not None else word_field(self.field).width

    @property
    def mask(self) -> int:
        return ((1 << self.bits) - 1) << self.lsb


# ---- Opcodes ---------------------------------------------------------------------

COUNT_AT_LEAST_ONE = "at_least_one"
COUNT_ZERO = "zero"


@dataclass(frozen=True)
class Opcode:
    name: str
    value: int
    count: str  # COUNT_AT_LEAST_ONE or COUNT_ZERO
    operands: tuple = ()
    flags: tuple = ()
    summary: str = ""

    @property
    def asm(self) -> str:
        return self.name.lower()

    def field_mask(self, name: str) -> int:
        """Bits of a/b/c (or flags) the instruction uses; the rest are reserved."""
        if name == "flags":
            return sum(f.mask for f in self.flags)
        return sum(o.mask for o in self.operands if o.field == name)

    @property
    def bf16_flags_mask(self) -> int:
        """Flags that need a bf16 or both datapath (BAD_FLAGS in an int8 core)."""
        return sum(f.mask for f in self.flags if f.bf16)

    @property
    def bf16_only_required_mask(self) -> int:
        """Flags a bf16-only core requires (the form without them is int8)."""
        return sum(f.mask for f in self.flags if f.bf16_only_requires)


def _transfer(tag: str, summary: str) -> Opcode:
    return Opcode(tag, {"RHM": 0x01, "WHM": 0x02}[tag], COUNT_AT_LEAST_ONE, (
        Operand("ub", "a", UB_ROW),
        Operand("rows", "count", ROWS),
        Operand("host", "c", HOST_ADDR),
        Operand("stride", "b", STRIDE),
    ), flags=(
        # A wide row: 2N host bytes <-> two UB rows (a bf16 vector of N lanes).
        FlagField("WIDE", 0, bf16=True),
    ), summary=summary)


OPCODES = (
    _transfer("RHM", "read host memory rows into the UB"),
    _transfer("WHM", "write UB rows to host memory"),
    Opcode("RW", 0x03, COUNT_AT_LEAST_ONE, (
        Operand("host", "c", HOST_ADDR),
        Operand("tiles", "count", TILES),
        Operand("stride", "b", STRIDE),
    ), flags=(
        # bf16 tiles: each weight row is 2N host bytes, N bf16 lanes.
        FlagField("BF16", 0, bf16=True, bf16_only_requires=True),
    ), summary="read weight tiles into the weight FIFO"),
    Opcode("MMC", 0x04, COUNT_AT_LEAST_ONE, (
        Operand("ub", "a", UB_ROW),
        Operand("acc", "b", ACC_ROW),
        Operand("rows", "count", ROWS),
    ), flags=(
        FlagField("ACC", 0),
        FlagField("POP", 1),
        # bf16 wide rows times a bf16 tile, fp32 accumulators.
        FlagField("BF16", 2, bf16=True, bf16_only_requires=True),
    ), summary="matrix multiply UB rows by the current weight tile into ACC"),
    Opcode("ACT", 0x05, COUNT_AT_LEAST_ONE, (
        Operand("acc", "a", ACC_ROW),
        Operand("ub", "b", UB_ROW),
        Operand("rows", "count", ROWS),
        # The lanes of each result to write, 0 = all N (1..N): only the UB
        # rows of a result that hold lanes 0..lanes-1 are written, so a
        # narrow last tile of a GEMM writes one RAW row a result, not four.
        Operand("lanes", "c", LANES, width=16, optional=True),
    ), flags=(
        FlagField("RAW", 0),
        FlagField("BIAS", 1),
        FlagField("FUNC", 2, 2, enum="act_func", asm=KEYWORD),
        # fp32 accumulators through the fp32 VPU path; bf16 (or, with RAW,
        # fp32) results.
        FlagField("F32", 4, bf16=True),
    ), summary="accumulators through the VPU into the UB"),
    Opcode("VOP", 0x06, COUNT_AT_LEAST_ONE, (
        Operand("a", "a", UB_ROW),
        Operand("b", "b", UB_ROW, optional=True),
        Operand("dst", "c", UB_ROW, width=16),
        Operand("rows", "count", ROWS),
    ), flags=(
        FlagField("OP", 0, 3, enum="vop", asm=POSITIONAL),
        # bf16 lanes on wide rows, fp32 arithmetic.
        FlagField("BF16", 3, bf16=True),
        FlagField("SHIFT", 4, 4, asm=KEYWORD),
    ), summary="element-wise operation or pooling on UB rows"),
    Opcode("CFG", 0x07, COUNT_ZERO, (
        Operand("index", "a", CFG_INDEX),
        Operand("value", "c", CFG_VALUE, width=32),
    ), summary="set a configuration register"),
    Opcode("SYNC", 0x08, COUNT_ZERO, flags=(
        FlagField("MASK", 0, 4, enum="unit", asm=POSITIONAL),
    ), summary="wait for the units in the mask (0 = all)"),
    Opcode("LOOP", 0x09, COUNT_AT_LEAST_ONE, (
        Operand("n", "count", ITERATIONS),
        Operand("body", "a", BODY_LEN),
        Operand("ub_inc", "b", UB_INC, signed=True, optional=True),
        Operand("acc_inc", "c", ACC_INC, width=16, signed=True, optional=True),
        Operand("host_inc", "c", HOST_INC, lsb=32, width=32, signed=True, optional=True),
    ), summary="repeat the next `body` instructions n times with address offsets"),
    Opcode("IRQ", 0x0A, COUNT_ZERO, summary="interrupt the host"),
    Opcode("HALT", 0x0B, COUNT_ZERO, summary="end of program"),
)

LOOP_MAX_BODY = 255

# ---- Errors ----------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorCode:
    name: str
    value: int
    description: str


ERRORS = (
    ErrorCode("OK", 0, "no error"),
    ErrorCode("ILLEGAL_OPCODE", 1, "opcode not in the table"),
    ErrorCode("BAD_FLAGS", 2, "a reserved flag or field bit is set, or a flag combination "
              "is invalid (RAW with other flags, SHIFT out of range, an ACT's lanes past N)"),
    ErrorCode("UB_RANGE", 3, "a UB row range runs past UbRows"),
    ErrorCode("ACC_RANGE", 4, "an ACC row range runs past AccRows"),
    ErrorCode("BAD_COUNT", 5, "count is 0 where >= 1 is required, count is not 0 where it "
              "must be, or a LOOP body length of 0 or past the end of instruction memory"),
    ErrorCode("NESTED_LOOP", 6, "a LOOP inside a LOOP body"),
    ErrorCode("BAD_CFG", 7, "unknown CFG register or value out of range"),
    ErrorCode("MEM_FAULT", 8, "an RHM, WHM or RW access outside the command's DMA windows, or one the memory port reported an error for"),
    ErrorCode("PC_RANGE", 9, "execution ran past the end of instruction memory (no HALT)"),
    ErrorCode("NO_WEIGHTS", 10, "an MMC when no weight tile is loaded or on its way"),
    ErrorCode("WGT_OVERFLOW", 11, "an RW that would leave more than WgtFifoTiles + 2 tiles "
              "loaded and not retired"),
    ErrorCode("WGT_FORMAT", 12, "an MMC whose BF16 flag differs from the format of its weight "
              "tile (bf16 tiles come from RW BF16, int8 tiles from RW without it)"),
)

# Extra tiles the MXU holds beyond the weight FIFO (current and next bank):
# an RW may raise the unretired tile count to WgtFifoTiles + WGT_BANKS.
WGT_BANKS = 2

# ---- Configuration registers -------------------------------------------------------

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
PER_LANE = "N"  # one register per MXU column


@dataclass(frozen=True)
class CfgReg:
    name: str
    index: int  # first index of the register (array base for BIAS and LUT)
    count: object  # entries: 1, 256, or PER_LANE
    lo: int  # accepted values of c[31:0] read as int32
    hi: int
    reset: int  # as int32
    description: str
    # Holds fp32 bits for the fp32 VPU path (ACT F32): the register exists
    # only when the core's datapath is bf16 or both (BAD_CFG in an int8 core).
    fp32: bool = False


CFG_REGS = (
    # QMULT and QSHIFT write every lane's CH_MULT / CH_SHIFT (QSHIFT s as -s).
    CfgReg("QMULT", 0x000, 1, INT32_MIN, INT32_MAX, 0x40000000, "M0 of every lane, Q31 multiplier"),
    CfgReg("QSHIFT", 0x001, 1, 0, 31, 0, "s, right shift of every lane"),
    CfgReg("QZP", 0x002, 1, INT32_MIN, INT32_MAX, 0, "output zero point"),
    CfgReg("QMIN", 0x003, 1, -128, 127, -128, "lower clamp"),
    CfgReg("QMAX", 0x004, 1, -128, 127, 127, "upper clamp"),
    CfgReg("RELU6_MAX", 0x005, 1, -128, 127, 127, "ReLU6 upper bound"),
    # ACT F32 (docs/numerics.md): y = x [+ bias], y = y * SCALE, then ReLU
    # (max with +0), ReLU6 (min with RELU6_F32) and the clamp to FMIN..FMAX.
    # Any 32-bit value is accepted; subnormals read as zero, a NaN bound
    # makes every result NaN.
    CfgReg("SCALE", 0x010, 1, INT32_MIN, INT32_MAX, 0x3F800000, "fp32 scale (1.0)", fp32=True),
    CfgReg("RELU6_F32", 0x011, 1, INT32_MIN, INT32_MAX, 0x40C00000, "fp32 ReLU6 bound (6.0)",
           fp32=True),
    CfgReg("FMIN", 0x012, 1, INT32_MIN, INT32_MAX, -0x00800000, "fp32 lower clamp (-inf)",
           fp32=True),
    CfgReg("FMAX", 0x013, 1, INT32_MIN, INT32_MAX, 0x7F800000, "fp32 upper clamp (+inf)",
           fp32=True),
    CfgReg("BIAS", 0x100, PER_LANE, INT32_MIN, INT32_MAX, 0, "bias of lane j"),
    # The value is the entry's 8 bits: c[31:8] must be 0 (read as int8 when used).
    CfgReg("LUT", 0x200, 256, 0, 255, 0, "lookup table entry i (low 8 bits)"),
    # Per output channel (lane) requantization, TFLite's convention: the
    # exponent e > 0 shifts x left by e before SRDHM, e <= 0 divides by 2^-e after.
    CfgReg("CH_MULT", 0x300, PER_LANE, INT32_MIN, INT32_MAX, 0x40000000, "M0 of lane j, Q31 multiplier"),
    CfgReg("CH_SHIFT", 0x400, PER_LANE, -31, 31, 0, "exponent of lane j: > 0 left shift, <= 0 right shift by -e"),
)
