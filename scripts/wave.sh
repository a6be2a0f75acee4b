#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Reruns one GoogleTest test with FST tracing and opens it in GTKWave with the
# block's saved layout (docs/verification.md, "Waveform layouts"). Without a
# display it prints the file's path and the layout's.
#   scripts/wave.sh '<Suite.Test>' [seed]
#   scripts/wave.sh '<config>.<Suite.Test>' [seed]   (core and device tests)
#   scripts/wave.sh --layout '<Suite.Test>'          the layout it would pick
set -euo pipefail
cd "$(dirname "$0")/.."

# The saved layout of a test's block, by its suite; empty when the block has
# none. tests/wave_layout_test.py checks each against real waves.
layout_for() {
  case "$1" in
    *MxuTest*)                   echo tb/mxu/mxu.gtkw ;;
    *CoreTest*|*CoreProgram*)    echo tb/core/core.gtkw ;;
    *DeviceTest*)                echo tb/host/device.gtkw ;;
    *DmaTest*)                   echo tb/host/dma.gtkw ;;
    *ActRowTest*)                echo tb/vpu/vpu_act_row.gtkw ;;
    *VopRowTest*)                echo tb/vpu/vpu_vop_row.gtkw ;;
    *UartBridge*)                echo tb/link/uart_bridge.gtkw ;;
  esac
}
if [ "${1:-}" = "--layout" ]; then layout_for "${2:-}"; exit 0; fi

test_name="${1:-}"
seed="${2:-}"
build="${BUILD:-build}"
if [ -z "$test_name" ]; then
  echo "usage: make wave TEST='<Suite.Test>' [SEED=n]   (e.g. TEST='MxuTest/8.ShortTilesBackToBack')" >&2
  echo "tests:" >&2
  for bin in "$build"/tb/*_test "$build"/tb/*_test_*; do
    [ -x "$bin" ] || continue
    echo " $(basename "$bin"):" >&2
    "$bin" --gtest_list_tests | sed 's/^/  /' >&2
  done
  exit 2
fi

# A per-configuration test, tiny.CoreTest.Foo, lives in *_test_tiny.
candidates=("$build"/tb/*_test)
config="${test_name%%.*}"
if compgen -G "$build/tb/*_test_$config" >/dev/null; then
  candidates=("$build"/tb/*_test_"$config")
  test_name="${test_name#*.}"
elif compgen -G "$build/tb/*_test_*" >/dev/null; then
  candidates+=("$build"/tb/*_test_*)
fi

# Find the test binary that has this test.
bin=""
for cand in "${candidates[@]}"; do
  if "$cand" --gtest_filter="$test_name" --gtest_list_tests | grep -q '^  '; then bin="$cand"; break; fi
done
if [ -z "$bin" ]; then
  echo "wave: no test named '$test_name' (make wave without TEST lists them)" >&2
  echo "wave: driver and tool tests run on the device through the sim: transport; trace one with" >&2
  echo "      tpu --device 'sim:?waves=out.fst' ... and view it with gtkwave out.fst tb/host/device.gtkw" >&2
  exit 2
fi

export TPU_WAVES=1 TPU_WAVE_DIR="$build/waves"
[ -n "$seed" ] && export TPU_SEED="$seed"
set +e
"$bin" --gtest_filter="$test_name"
status=$?
set -e
fst="$TPU_WAVE_DIR/$(echo "$test_name" | tr '/' '_').fst"
[ -f "$fst" ] || { echo "wave: the test wrote no wave file" >&2; exit 1; }

# The layout belongs to the block. Layouts load filter files by paths from
# the source tree, so GTKWave runs here; it opens zoomed to the whole test.
layout=$(layout_for "$test_name")
if [ -n "${DISPLAY:-}" ] && command -v gtkwave >/dev/null; then
  zoom="$TPU_WAVE_DIR/zoom_full.tcl"
  echo 'gtkwave::/Time/Zoom/Zoom_Full' > "$zoom"
  if [ -n "$layout" ]; then gtkwave -S "$zoom" "$fst" "$layout" & else gtkwave -S "$zoom" "$fst" & fi
else
  echo "wave: $fst"
  if [ -n "$layout" ]; then echo "wave: layout $layout  (gtkwave $fst $layout)"
  else echo "wave: this block has no saved layout"; fi
fi
exit "$status"
