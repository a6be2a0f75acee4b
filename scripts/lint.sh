#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Lints all RTL with Verilator -Wall. Any warning fails. Waivers live only in
# rtl/lint.vlt.
#
# tpu_top instantiates every block, so it is linted at every named
# configuration of scripts/config_table.py. Every other module is also linted
# as a top of its own, once, so its default parameters elaborate cleanly too.
#
# The runs are independent, so they run in parallel (scripts/run_parallel.py),
# LINT_JOBS at a time (default: one per core); their messages come in order.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t srcs < <(sed 's|^|rtl/|' rtl/sources.list)
blocks=(stream_fifo stream_spill ram_1r1w ram_tdp ctrl_fetch ctrl_scoreboard mxu bf16_mul fp32_add vpu_act_row vpu_vop_row tpu_core tpu_regs dma_engine uart_bridge tpu_uart_top)
jobs_file=$(mktemp)
trap 'rm -f "$jobs_file"' EXIT
labels=()

lint() {  # lint <top> <config> [extra verilator arguments...]: queues one run
  local top=$1 cfg=$2
  shift 2
  labels+=("$top ($cfg $*)")
  printf '%s\n' verilator --lint-only -Wall --assert -Irtl/common "+define+TPU_CONFIG_$cfg" \
    rtl/lint.vlt "${srcs[@]}" "$@" --top-module "$top" >> "$jobs_file"
  echo >> "$jobs_file"
}

mapfile -t configs < <(python3 -c 'import sys; sys.path.insert(0, "scripts"); import config_table as t; print("\n".join(c.name.upper() for c in t.CONFIGS))')
for cfg in "${configs[@]}"; do lint tpu_top "$cfg"; done
for top in "${blocks[@]}"; do lint "$top" DEFAULT; done
# The FPGA build's MAC (scripts/fpga.sh defines TPU_ECP5_DSP), with the
# simulation model of the ECP5 multiplier it instantiates.
lint mxu DEFAULT +define+TPU_ECP5_DSP tb/fpga/MULT18X18D.sv
# The bf16 MAC (the configurations use the mixed array, gen_grid), through
# the test top that sets its enum parameter.
lint mxu_mac_bf16 DEFAULT tb/mxu/mxu_mac_bf16.sv
# The whole MXU with the bf16 and the mixed datapath, through one test top.
lint mxu_fp DEFAULT tb/mxu/mxu_fp.sv
lint mxu_fp DEFAULT tb/mxu/mxu_fp.sv -GMixed=1
# The VPU's fp32 lane functions alone, through fp_test's top.
lint vpu_fp32_ops DEFAULT tb/vpu/vpu_fp32_ops.sv
mapfile -t passed < <(python3 scripts/run_parallel.py --show-output "${LINT_JOBS:-$(nproc)}" "$jobs_file")
status=0
for i in "${!labels[@]}"; do
  if [[ " ${passed[*]} " != *" $i "* ]]; then
    echo "lint: ${labels[$i]} has warnings" >&2
    status=1
  fi
done
[ "$status" = 0 ] && echo "lint: tpu_top x ${#configs[@]} configurations, ${#blocks[@]} blocks, the ECP5 MAC, the bf16 MAC, the bf16 and mixed MXUs and the VPU's fp32 lanes, no warnings"
exit "$status"
