# SPDX-License-Identifier: Apache-2.0
"""The named configurations as data: the single source of every parameter.

scripts/gen_config.py turns this table into
  rtl/common/tpu_pkg.sv                 the SV package (CONFIG=<name> picks one)
  sw/common/include/tpu/config.h        the C++ table (driver, transports, tests)
  cmake/configs.cmake                   the list of names the build knows
  docs/configurations.md                the table users read
Change a value here, run gen_config.py (or `make config`), and rebuild: the
RTL, the device's CAPS registers, the driver and the tests follow.
"""

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Config:
    name: str
    summary: str
    # ---- compute ----
    array_n: int            # the MXU is array_n x array_n; UB and ACC rows hold array_n lanes
    datapath: str           # "int8", the only MXU datapath so far
    # ---- memories (rows of array_n lanes; instructions) ----
    ub_rows: int            # unified buffer, int8 rows
    acc_rows: int           # accumulators, int32 rows
    imem_depth: int         # instruction memory, 16-byte instructions
    wgt_fifo_tiles: int     # weight FIFO depth in array_n x array_n tiles
    # ---- DMA engine ----
    dma_tags: int           # read sub-requests in flight (PCIe tags)
    dma_rd_xfers: int       # read descriptors in flight
    dma_rob_bytes: int      # read reorder buffer
    dma_wr_buf_beats: int   # write packet buffer, 16-byte beats
    dma_timeout: int        # completion timeout, cycles (when the host gives none)
    mem_outstanding: int    # core memory-port bursts in flight per direction
    # ---- the simulated host link's defaults (sim: transport, benches) ----
    link_latency: int       # cycles from a read request to its first completion
    link_bytes_per_cycle: int  # each way


# What each field means, for the docs table.
FIELD_DOCS = {
    "array_n": "MXU size N (N×N PEs); UB/ACC rows hold N lanes",
    "datapath": "MXU arithmetic",
    "ub_rows": "unified buffer rows (N int8 each)",
    "acc_rows": "accumulator rows (N int32 each)",
    "imem_depth": "instruction memory, instructions",
    "wgt_fifo_tiles": "weight FIFO, N×N tiles",
    "dma_tags": "DMA read tags (sub-requests in flight)",
    "dma_rd_xfers": "DMA read descriptors in flight",
    "dma_rob_bytes": "DMA read reorder buffer, bytes",
    "dma_wr_buf_beats": "DMA write buffer, 16-byte beats",
    "dma_timeout": "DMA completion timeout, cycles",
    "mem_outstanding": "core memory-port bursts in flight",
    "link_latency": "simulated host read latency, cycles",
    "link_bytes_per_cycle": "simulated host link bandwidth each way, bytes/cycle",
}

# The weight FIFO covers the host link's read latency (about 500 cycles)
# while the MXU consumes one tile per pass of rows; see docs/decisions.md.
_COMMON = dict(datapath="int8", dma_tags=32, dma_rd_xfers=32, dma_rob_bytes=16384,
               dma_wr_buf_beats=64, dma_timeout=4096, mem_outstanding=16,
               link_latency=500, link_bytes_per_cycle=16)

CONFIGS = (
    Config(name="tiny", summary="4×4, small memories: the fastest to simulate",
           array_n=4, ub_rows=256, acc_rows=128, imem_depth=256, wgt_fifo_tiles=4, **_COMMON),
    Config(name="small", summary="8×8, for small FPGAs",
           array_n=8, ub_rows=4096, acc_rows=1024, imem_depth=1024, wgt_fifo_tiles=8, **_COMMON),
    Config(name="default", summary="16×16, the reference configuration",
           array_n=16, ub_rows=4096, acc_rows=1024, imem_depth=1024, wgt_fifo_tiles=16, **_COMMON),
    Config(name="wide", summary="32×32",
           array_n=32, ub_rows=4096, acc_rows=1024, imem_depth=1024, wgt_fifo_tiles=16, **_COMMON),
)

DEFAULT = "default"

DATAPATHS = ("int8",)


def is_pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


# Legal ranges: the same rules are $fatal checks in tpu_top/tpu_core, so a
# hand-edited package cannot slip past them either.
RULES = (
    ("array_n", lambda c: is_pow2(c.array_n) and 2 <= c.array_n <= 64,
     "a power of two from 2 to 64"),
    ("datapath", lambda c: c.datapath in DATAPATHS, "one of " + ", ".join(DATAPATHS)),
    ("ub_rows", lambda c: is_pow2(c.ub_rows) and 64 <= c.ub_rows <= 32768,
     "a power of two from 64 to 32768 (CAPS1 has 16 bits)"),
    ("acc_rows", lambda c: is_pow2(c.acc_rows) and 16 <= c.acc_rows <= 32768,
     "a power of two from 16 to 32768"),
    ("imem_depth", lambda c: is_pow2(c.imem_depth) and 16 <= c.imem_depth <= 32768,
     "a power of two from 16 to 32768"),
    ("wgt_fifo_tiles", lambda c: 2 <= c.wgt_fifo_tiles <= 64, "2 to 64"),
    ("dma_tags", lambda c: is_pow2(c.dma_tags) and 2 <= c.dma_tags <= 128,
     "a power of two from 2 to 128"),
    ("dma_rd_xfers", lambda c: is_pow2(c.dma_rd_xfers) and 2 <= c.dma_rd_xfers <= 256,
     "a power of two from 2 to 256"),
    ("dma_rob_bytes", lambda c: is_pow2(c.dma_rob_bytes) and c.dma_rob_bytes >= 4096,
     "a power of two of at least 4096 (one maximum read request of 4 KiB)"),
    ("dma_wr_buf_beats", lambda c: is_pow2(c.dma_wr_buf_beats) and c.dma_wr_buf_beats >= 16,
     "a power of two of at least 16 (one 256-byte packet)"),
    ("dma_timeout", lambda c: 16 <= c.dma_timeout < (1 << 20), "16 to 2^20 - 1"),
    ("mem_outstanding", lambda c: is_pow2(c.mem_outstanding) and 2 <= c.mem_outstanding <= 64,
     "a power of two from 2 to 64"),
    ("link_latency", lambda c: 0 <= c.link_latency <= 100000, "0 to 100000"),
    ("link_bytes_per_cycle", lambda c: 1 <= c.link_bytes_per_cycle <= 16, "1 to 16"),
)


def validate() -> None:
    names = [c.name for c in CONFIGS]
    if len(set(names)) != len(names):
        raise ValueError("config_table: configuration names repeat")
    if DEFAULT not in names:
        raise ValueError(f"config_table: DEFAULT '{DEFAULT}' is not a configuration")
    for c in CONFIGS:
        if not c.name.isidentifier() or not c.name.islower():
            raise ValueError(f"config_table: name '{c.name}' must be a lower-case identifier")
        for field, ok, what in RULES:
            if not ok(c):
                raise ValueError(f"config_table: {c.name}.{field} = {getattr(c, field)} "
                                 f"must be {what}")


def param_fields():
    """The parameter fields (everything but name and summary), in table order."""
    return [f for f in fields(Config) if f.name not in ("name", "summary")]
