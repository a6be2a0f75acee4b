# SPDX-License-Identifier: Apache-2.0
"""The host interface's ring formats as data: the single source of the
submission and completion entry layouts, the window list entry, the command
opcodes and flags, the completion status codes and the window limits.

scripts/gen_host_if.py turns this table into
  rtl/host/host_if_pkg.sv               entry structs and constants (cmd_proc, dma_pkg)
  sw/common/include/tpu/host_if.h       the same for C++ (tpu/queue.h's codec)
  docs/host_interface.md                the entry and status tables (between markers)
Change a format here, run gen_host_if.py (or `make host-if`), and rebuild.
docs/host_interface.md ("Rings and commands") says what the fields mean.
"""

from dataclasses import dataclass
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import isa_table  # noqa: E402

# ---- Limits --------------------------------------------------------------------

MAX_WINDOWS = 8  # windows a command may grant (the device's window table)
WINDOW_LEN_BITS = 56  # a window's length field: 1 .. 2^56 - 1 bytes


@dataclass(frozen=True)
class Field:
    name: str
    lsb: int  # bit in the entry; byte i holds bits 8i+7 .. 8i (little-endian)
    width: int
    doc: str
    reserved: bool = False  # must be 0 (the device refuses a set bit where it checks)


@dataclass(frozen=True)
class Entry:
    name: str  # snake_case; sq_entry_t, win_entry_t, cq_entry_t in SV
    bytes: int
    fields: tuple  # low to high, every bit covered once

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)


# ---- Opcodes and flags -----------------------------------------------------------

OP_RUN = 0x01  # the only command: run a program
# RUN flags (byte 1), bit positions. KEEP_COUNTERS: the command's start does
# not clear the core's performance counters.
RUN_FLAGS = {"KEEP_COUNTERS": 0}

# A window's access byte, bit positions.
WINDOW_ACCESS = {"READ": 0, "WRITE": 1}  # READ: RHM and RW may read it; WRITE: WHM may write it

# ---- Entries -------------------------------------------------------------------

SQ_ENTRY = Entry("sq_entry", 32, (
    Field("op", 0, 8, f"opcode: 0x{OP_RUN:02X} RUN (others are BAD_COMMAND)"),
    Field("flags", 8, 8, "flags: bit 0 KEEP_COUNTERS, the others 0 (else BAD_COMMAND)"),
    Field("id", 16, 16, "command id, returned in the completion"),
    Field("len", 32, 32, "program length in instructions, 1 .. `ImemDepth`"),
    Field("addr", 64, 64, "host address of the program (16 bytes per instruction, `docs/isa.md`)"),
    Field("win_addr", 128, 64, "host address of the command's window list (16-byte aligned; "
          "ignored when the count is 0)"),
    Field("win_count", 192, 8, f"window count, 0 .. {MAX_WINDOWS}"),
    Field("reserved", 200, 56, "reserved, 0", reserved=True),
))

WIN_ENTRY = Entry("win_entry", 16, (
    Field("base", 0, 64, "base address"),
    Field("len", 64, WINDOW_LEN_BITS, f"length in bytes, 1 .. 2^{WINDOW_LEN_BITS} − 1"),
    Field("access", 120, 8, "access: bit 0 read (RHM, RW), bit 1 write (WHM); 1, 2 or 3; "
          "bits 7:2 are 0"),
))

CQ_ENTRY = Entry("cq_entry", 16, (
    Field("id", 0, 16, "command id"),
    Field("status", 16, 16, "status (below)"),
    Field("err_pc", 32, 32, "`err_pc`: index of the faulting instruction (0 when OK); with "
          "FETCH_FAULT, of the first instruction that could not be read (0 when the program "
          "never started)"),
    Field("cycles", 64, 32, "cycles the program ran (low 32 bits of `CYCLES`; 0 when it never "
          "started)"),
    Field("phase", 96, 1, "phase"),
    Field("reserved", 97, 15, "reserved, 0", reserved=True),
    Field("sq_head", 112, 16, "the device's `SQ_HEAD` after this command's entry (the index of "
          "the entry that follows it; the register may be ahead, with the next entry already "
          "fetched)"),
))

ENTRIES = (SQ_ENTRY, WIN_ENTRY, CQ_ENTRY)

# ---- Completion status --------------------------------------------------------------


@dataclass(frozen=True)
class Status:
    name: str
    value: int
    doc: str


# 0 and the program's error codes are the ISA's (isa_table.ERRORS); these are
# the command processor's own, above them.
CMD_STATUSES = (
    Status("BAD_COMMAND", 0x10, "a malformed submission entry or window list; the command "
           "does not run"),
    Status("FETCH_FAULT", 0x11, "the window list or the program could not be read by DMA"),
)


def statuses():
    """Every completion status: OK, the ISA's error codes, the command processor's."""
    isa = tuple(Status(e.name, e.value, e.description) for e in isa_table.ERRORS)
    return isa + CMD_STATUSES


def validate() -> None:
    for entry in ENTRIES:
        bit = 0
        for f in entry.fields:
            if f.lsb != bit:
                raise ValueError(f"{entry.name}.{f.name}: starts at bit {f.lsb}, expected {bit} "
                                 "(fields must cover the entry in order)")
            bit += f.width
        if bit != entry.bytes * 8:
            raise ValueError(f"{entry.name}: fields cover {bit} bits of {entry.bytes * 8}")
    values = [s.value for s in statuses()]
    if len(set(values)) != len(values):
        raise ValueError("completion status codes must be distinct")
    width = SQ_ENTRY.field("win_count").width
    if not 0 < MAX_WINDOWS < (1 << width):
        raise ValueError(f"MAX_WINDOWS = {MAX_WINDOWS} must fit win_count ({width} bits)")
    if WIN_ENTRY.field("len").width != WINDOW_LEN_BITS:
        raise ValueError("win_entry.len must be WINDOW_LEN_BITS wide")
