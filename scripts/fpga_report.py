#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Utilization and timing report of one FPGA run (scripts/fpga.sh).

Reads the Yosys `stat -json` of the synthesized design and, for ECP5, the
nextpnr `--report` JSON; prints a Markdown report and writes it to --out.
Exits 1 when the achieved Fmax of the core clock is below --goal (the timing
check of `make fpga`), 2 on bad input.

    fpga_report.py --family ecp5 --title NAME --stat stat.json --goal MHZ
                   [--pnr pnr_report.json --clock NET] [--synth-seconds S]
                   [--pnr-seconds S] [--out report.md]
"""
import argparse
import json
import sys
from pathlib import Path

# Resources of the parts, from the vendors' data sheets.
ECP5_85F = {"LUT4": 83640, "TRELLIS_FF": 83640, "DP16KD": 208, "MULT18X18D": 156}
XC7A200T = {"LUT": 133800, "FF": 267600, "RAMB36": 365, "RAMB18": 730, "DSP48E1": 740}


def synth_cells(stat_path: Path) -> dict:
    stat = json.loads(stat_path.read_text())
    return {cell.lstrip("\\$"): int(n) for cell, n in stat["design"]["num_cells_by_type"].items()}


def xilinx_rows(cells: dict) -> list:
    luts = sum(n for c, n in cells.items() if c.startswith("LUT") and c[3:].isdigit())
    ffs = sum(cells.get(c, 0) for c in ("FDRE", "FDSE", "FDCE", "FDPE"))
    # A RAMB36 is two RAMB18 tiles: report both and the RAMB18 equivalent.
    r18 = cells.get("RAMB18E1", 0)
    r36 = cells.get("RAMB36E1", 0)
    rows = [("LUT (LUT1..LUT6)", luts, XC7A200T["LUT"]),
            ("FF (FDRE/FDSE/FDCE/FDPE)", ffs, XC7A200T["FF"]),
            ("RAMB36E1", r36, XC7A200T["RAMB36"]),
            ("RAMB18E1", r18, XC7A200T["RAMB18"]),
            ("block RAM as RAMB18 equivalents", r18 + 2 * r36, XC7A200T["RAMB18"]),
            ("DSP48E1", cells.get("DSP48E1", 0), XC7A200T["DSP48E1"]),
            ("LUT RAM (RAM32M/RAM64M/RAM*X1*)",
             sum(n for c, n in cells.items() if c.startswith("RAM") and not c.startswith("RAMB")), None),
            ("shift registers in LUTs (SRL16E/SRLC32E)",
             cells.get("SRL16E", 0) + cells.get("SRLC32E", 0), None)]
    return rows


def pct(used: int, avail) -> str:
    return f"{100.0 * used / avail:.1f} %" if avail else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", choices=["ecp5", "xilinx"], required=True)
    ap.add_argument("--title", required=True)
    ap.add_argument("--stat", type=Path, required=True)
    ap.add_argument("--goal", type=float, required=True, help="timing goal of the core clock, MHz")
    ap.add_argument("--target", type=float,
                    help="the design's clock target, MHz, when the goal of this build is lower; "
                         "reported, not checked")
    ap.add_argument("--pnr", type=Path, help="nextpnr --report JSON")
    ap.add_argument("--clock", default="clk_i", help="net name of the core clock")
    ap.add_argument("--synth-seconds", type=float)
    ap.add_argument("--pnr-seconds", type=float)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    try:
        cells = synth_cells(args.stat)
        pnr = json.loads(args.pnr.read_text()) if args.pnr else None
    except (OSError, ValueError, KeyError) as err:
        print(f"fpga_report: cannot read the inputs: {err}", file=sys.stderr)
        return 2

    lines = [f"# FPGA report: {args.title}", ""]
    if args.family == "xilinx":
        lines += ["Yosys `synth_xilinx -family xc7`, against an Artix-7 XC7A200T "
                  "(synthesis only, no place and route).", "",
                  "| resource | used | available | % |", "|---|---|---|---|"]
        for what, used, avail in xilinx_rows(cells):
            lines.append(f"| {what} | {used} | {avail if avail else '-'} | {pct(used, avail)} |")
    else:
        lines += ["Yosys `synth_ecp5`, nextpnr-ecp5 `--85k --package CABGA381 --speed 6` "
                  "(LFE5U-85F).", "",
                  "| resource | after synthesis | placed | available | % |", "|---|---|---|---|---|"]
        util = (pnr or {}).get("utilization", {})
        placed_of = {"LUT4": "TRELLIS_COMB", "TRELLIS_FF": "TRELLIS_FF",
                     "DP16KD": "DP16KD", "MULT18X18D": "MULT18X18D"}
        for cell, avail in ECP5_85F.items():
            placed = util.get(placed_of[cell], {})
            used = placed.get("used")
            avail = placed.get("available", avail)
            shown = cell + (" (incl. carry, PFUMX)" if cell == "LUT4" and used is not None else "")
            lines.append(f"| {shown} | {cells.get(cell, 0)} | {'-' if used is None else used} | {avail} "
                         f"| {pct(used if used is not None else cells.get(cell, 0), avail)} |")
        lines.append(f"| CCU2C (carry, 2 LUT4 each) | {cells.get('CCU2C', 0)} | | | |")
        lines.append(f"| TRELLIS_DPR16X4 (LUT RAM) | {cells.get('TRELLIS_DPR16X4', 0)} | | | |")

    lines.append("")
    times = []
    if args.synth_seconds is not None:
        times.append(f"synthesis {args.synth_seconds:.1f} s")
    if args.pnr_seconds is not None:
        times.append(f"place and route {args.pnr_seconds:.1f} s")
    if times:
        lines += ["Wall time: " + ", ".join(times) + ".", ""]

    status = 0
    if pnr is not None:
        fmax = pnr.get("fmax", {})
        lines += ["| clock | achieved Fmax (MHz) | constraint (MHz) |", "|---|---|---|"]
        for clk, f in sorted(fmax.items()):
            lines.append(f"| {clk} | {f['achieved']:.2f} | {f['constraint']:.2f} |")
        core = [f["achieved"] for clk, f in fmax.items() if args.clock in clk]
        lines.append("")
        if not core:
            lines.append(f"TIMING FAILED: no clock named like '{args.clock}' in the nextpnr report.")
            status = 1
        elif min(core) < args.goal:
            lines.append(f"TIMING FAILED: {args.clock} reaches {min(core):.2f} MHz, "
                         f"below the goal of {args.goal:.2f} MHz.")
            status = 1
        else:
            lines.append(f"Timing met: {args.clock} reaches {min(core):.2f} MHz "
                         f"(goal {args.goal:.2f} MHz).")
        if core and args.target and args.target > args.goal:
            reached = "reached" if min(core) >= args.target else "not reached"
            lines.append(f"Design target {args.target:.2f} MHz: {reached} "
                         f"(make fpga FREQ={args.target:g} checks it).")

    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    if status:
        print(f"fpga: timing goal missed; see {args.out or 'the report'} and the nextpnr log",
              file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
