#!/usr/bin/env bash
# Lints all RTL with Verilator -Wall, once per top module and at several array
# sizes. Any warning fails. Waivers live only in rtl/lint.vlt.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t srcs < <(sed 's|^|rtl/|' rtl/sources.list)
tops=(stream_fifo stream_spill mxu vpu_act_row vpu_vop_row tpu_core tpu_regs dma_engine tpu_top)
status=0
for top in "${tops[@]}"; do
  for cfg in TINY DEFAULT WIDE; do
    if ! verilator --lint-only -Wall --assert -Irtl/common "+define+TPU_CONFIG_${cfg}" \
        rtl/lint.vlt "${srcs[@]}" --top-module "$top"; then
      echo "lint: $top ($cfg) has warnings" >&2
      status=1
    fi
  done
done
[ "$status" = 0 ] && echo "lint: ${#tops[@]} top modules x 3 configurations, no warnings"
exit "$status"
