# SPDX-License-Identifier: Apache-2.0
"""The named configurations as data: the single source of every parameter.

scripts/gen_config.py turns this table into
  rtl/common/tpu_pkg.sv                 the SV package (CONFIG=<name> picks one)
  rtl/common/tpu_cfg_check.sv           the same legality rules, checked at elaboration
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
    datapath: str           # MXU arithmetic: "int8", "bf16" or "both" (int8 or bf16 per instruction)
    # ---- memories (rows of array_n lanes; instructions) ----
    ub_rows: int            # unified buffer, int8 rows
    acc_rows: int           # accumulators, int32 rows
    imem_depth: int         # instruction memory, 16-byte instructions
    prefetch_depth: int     # command prefetch buffer, 16-byte words: the next command's
                            # window list (8 words) and a program of up to the rest
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
    "datapath": "MXU arithmetic: int8, bf16 or both",
    "ub_rows": "unified buffer rows (N bytes each; a bf16 row takes two)",
    "acc_rows": "accumulator rows (N int32 or fp32 each)",
    "imem_depth": "instruction memory, instructions",
    "prefetch_depth": "command prefetch buffer, 16-byte words: 8 for the next command's window list, the rest for its program",
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
           array_n=4, ub_rows=256, acc_rows=128, imem_depth=256, prefetch_depth=128, wgt_fifo_tiles=4, **_COMMON),
    Config(name="small", summary="8×8, for small FPGAs",
           array_n=8, ub_rows=4096, acc_rows=1024, imem_depth=1024, prefetch_depth=512, wgt_fifo_tiles=8, **_COMMON),
    # The 16×16 configurations' prefetch buffer holds a whole program (1,024
    # instructions and the window list), so the next program of a long GEMM
    # is fetched while the one before runs (docs/host_interface.md).
    Config(name="default", summary="16×16, the reference configuration",
           array_n=16, ub_rows=4096, acc_rows=1024, imem_depth=1024, prefetch_depth=2048, wgt_fifo_tiles=16, **_COMMON),
    Config(name="wide", summary="32×32",
           array_n=32, ub_rows=4096, acc_rows=1024, imem_depth=1024, prefetch_depth=512, wgt_fifo_tiles=16, **_COMMON),
    # The headline sizes, for make bench-large (not make test): TPU v2's
    # 128×128 and TPU v1's 256×256 arrays (v1 with its four-tile weight FIFO).
    # v2 has TPU v2's arithmetic too: bf16 with fp32 accumulation, beside int8
    # so that the int8 benchmarks still run on it.
    Config(name="v2", summary="128×128, the size of a TPU v2 core's matrix unit; int8 and bf16 (fp32 accumulation)",
           array_n=128, ub_rows=4096, acc_rows=2048, imem_depth=1024, prefetch_depth=512, wgt_fifo_tiles=8,
           **{**_COMMON, "datapath": "both"}),
    Config(name="v1", summary="256×256, the size of TPU v1's matrix unit",
           array_n=256, ub_rows=4096, acc_rows=2048, imem_depth=1024, prefetch_depth=512, wgt_fifo_tiles=4, **_COMMON),
    # The bf16 datapath beside int8 (docs/numerics.md): the same memories as
    # tiny and default, the MXU's PEs with both multipliers and an fp32 adder.
    # make test builds tiny_bf16; default_bf16 is built on request
    # (CONFIGS="... default_bf16"), to keep make test's time.
    Config(name="tiny_bf16", summary="4×4, int8 and bf16 (fp32 accumulation): the bf16 path, fast to simulate",
           array_n=4, ub_rows=256, acc_rows=128, imem_depth=256, prefetch_depth=128, wgt_fifo_tiles=4,
           **{**_COMMON, "datapath": "both"}),
    Config(name="default_bf16", summary="16×16, int8 and bf16 (fp32 accumulation)",
           array_n=16, ub_rows=4096, acc_rows=1024, imem_depth=1024, prefetch_depth=2048, wgt_fifo_tiles=16,
           **{**_COMMON, "datapath": "both"}),
)

DEFAULT = "default"

# Configurations with array_n >= LARGE_N are built as device models for the
# tool only (make bench-large): no core-level or SystemC model, no
# per-configuration test executables, none of them in make test.
LARGE_N = 128

# int8: int8 x int8 -> int32 only; bf16: bf16 x bf16 -> fp32 only (RW and MMC
# need their BF16 flag); both: either, chosen per instruction.
DATAPATHS = ("int8", "bf16", "both")


@dataclass(frozen=True)
class Rule:
    """A field's legal values: lo <= value <= hi, and a power of two if pow2."""
    field: str
    lo: int
    hi: int
    pow2: bool = False
    why: str = ""  # what the limit comes from, for the message

    def ok(self, value: int) -> bool:
        return self.lo <= value <= self.hi and (not self.pow2 or value & (value - 1) == 0)

    def text(self) -> str:
        s = ("a power of two " if self.pow2 else "") + f"from {self.lo} to {self.hi}"
        return s + (f" ({self.why})" if self.why else "")


# The legal values. gen_config.py checks the table against them and also
# generates rtl/common/tpu_cfg_check.sv from them, so a hand-edited package
# stops elaboration by the same rules. The datapath must be one of DATAPATHS.
RULES = (
    Rule("array_n", 2, 256, pow2=True),
    Rule("ub_rows", 64, 32768, pow2=True, why="CAPS1 has 16 bits"),
    Rule("acc_rows", 16, 32768, pow2=True),
    Rule("imem_depth", 16, 32768, pow2=True),
    Rule("prefetch_depth", 16, 32768, pow2=True, why="the 8-word window list and a program"),
    Rule("wgt_fifo_tiles", 2, 64),
    Rule("dma_tags", 2, 128, pow2=True),
    Rule("dma_rd_xfers", 2, 256, pow2=True),
    Rule("dma_rob_bytes", 4096, 1 << 20, pow2=True, why="at least one 4 KiB read request"),
    Rule("dma_wr_buf_beats", 16, 4096, pow2=True, why="at least one 256-byte packet"),
    Rule("dma_timeout", 16, (1 << 20) - 1),
    Rule("mem_outstanding", 2, 64, pow2=True),
    Rule("link_latency", 0, 100000),
    Rule("link_bytes_per_cycle", 1, 16),
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
        if c.datapath not in DATAPATHS:
            raise ValueError(f"config_table: {c.name}.datapath = {c.datapath} must be one of "
                             + ", ".join(DATAPATHS))
        for r in RULES:
            if not r.ok(getattr(c, r.field)):
                raise ValueError(f"config_table: {c.name}.{r.field} = {getattr(c, r.field)} "
                                 f"must be {r.text()}")


def param_fields():
    """The parameter fields (everything but name and summary), in table order."""
    return [f for f in fields(Config) if f.name not in ("name", "summary")]
