#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The driver (sw/driver), the common library (sw/common) and the .tflite
# front end (sw/tflite) are plain C++:
# no Verilator header, no testbench header, and a program built from them
# with the model: transport has no Verilator code in it.
#   check_driver_deps.sh <source dir> <driver_example_model binary>
set -euo pipefail
src=$1 bin=$2
status=0
if grep -rnE '#include *[<"](verilated|V[a-z_0-9]+\.h|sim\.h|device_harness\.h|root_complex\.h)' \
     "$src/sw/driver" "$src/sw/common" "$src/sw/tflite"; then
  echo "driver.no_verilator: the lines above include simulator or testbench headers" >&2
  status=1
fi
if grep -nE '(tb|sim)/|verilat' "$src/sw/driver/CMakeLists.txt" | grep -vE '^[0-9]+:#|driver_test|tpu_transport_(sim|model)'; then
  echo "driver.no_verilator: sw/driver/CMakeLists.txt links simulator or testbench code (above)" >&2
  status=1
fi
if nm -C "$bin" | grep -qiE 'Verilated|Vtpu_'; then
  echo "driver.no_verilator: $bin contains Verilator symbols:" >&2
  nm -C "$bin" | grep -iE 'Verilated|Vtpu_' | head -5 >&2
  status=1
fi
[ "$status" = 0 ] && echo "driver.no_verilator: sw/driver, sw/common and sw/tflite include no simulator code; $(basename "$bin") has no Verilator symbol"
exit "$status"
