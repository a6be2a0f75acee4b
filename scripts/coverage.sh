#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make coverage (docs/verification.md, "Coverage"): the regression on
# coverage-instrumented models, in a build of its own, and its report.
#
#   BUILD=build CONFIGS="tiny default" JOBS=2 scripts/coverage.sh
#
#  1. configures and builds $BUILD/coverage/build with TPU_COVERAGE=ON: every
#     Verilated model with --coverage (lines, toggles, `COVER points), the
#     driver and the reference model with gcc --coverage;
#  2. runs the tests as make test does (ctest -LE long), but the lint ones
#     (no simulation in them) and those COVERAGE_SKIP matches (a ctest -E
#     regex; COVERAGE_SKIP= runs them all); every simulation context writes
#     its coverage file into $BUILD/coverage/dat (TPU_COVERAGE_DIR,
#     sim/verilator/coverage.h); every test with the seed TPU_SEED (default 1);
#  3. merges and reports (scripts/coverage_report.py): HTML of the RTL in
#     $BUILD/coverage/rtl/html, of the C++ (gcovr) in $BUILD/coverage/cpp,
#     and the per-block table in $BUILD/coverage/summary.{md,csv}, printed.
# Exits non-zero if a test failed (after writing the report).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

BUILD=${BUILD:-build}
CONFIGS=${CONFIGS:-tiny default}
JOBS=${JOBS:-$(nproc)}
# Skipped by default, as too slow instrumented (about ten times slower than
# in make test): the tests of the uart: transport that run whole programs
# over the simulated serial line (about 7 minutes of a normal make test; the
# link's block tests, UartBridgeTest, and the short uart: tests stay), and
# the tool's tests on the simulated device (cli.tpu.sim, .sc: each command
# has 120 s, and the large matmuls need more; the driver's own tests run the
# same device paths).
COVERAGE_SKIP=${COVERAGE_SKIP-'^(UartTest\.(Matmuls|AFaultyLine|ACutLine).*|uart\.driver_test.*|cli\.tpu\.(uart|sim|sc))$'}
out=$root/$BUILD/coverage
bdir=$out/build
configs=${CONFIGS// /;}

for tool in verilator_coverage genhtml gcovr; do
  command -v "$tool" > /dev/null || { echo "coverage: $tool not found (make setup)" >&2; exit 1; }
done

start=$(date +%s)
have=$(sed -n 's/^TPU_CONFIGS:STRING=//p' "$bdir/CMakeCache.txt" 2>/dev/null || true)
if [ ! -f "$bdir/build.ninja" ] || [ "$have" != "$configs" ]; then
  echo "coverage: configuring $bdir with models for $CONFIGS"
  mkdir -p "$bdir"
  cmake -S "$root" -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DTPU_CONFIGS=$configs" \
        -DTPU_COVERAGE=ON > "$bdir/configure.log" 2>&1 || { cat "$bdir/configure.log"; exit 1; }
fi
cmake --build "$bdir" -j "$JOBS"
built=$(date +%s)

# A fresh run: no data of an earlier one.
rm -rf "$out/dat" "$out/rtl" "$out/cpp"
find "$bdir" -name '*.gcda' -delete
mkdir -p "$out/dat" "$out/cpp"

# One seed (TPU_SEED, default 1) for every test, so that a rerun measures
# the same numbers.
status=0
TPU_SEED=${TPU_SEED:-1} TPU_COVERAGE_DIR="$out/dat" ctest --test-dir "$bdir" -j "$JOBS" -LE 'long|lint' \
  ${COVERAGE_SKIP:+-E "$COVERAGE_SKIP"} --output-on-failure > "$out/ctest.log" 2>&1 || status=$?
tail -n 4 "$out/ctest.log"
ran=$(date +%s)

# The C++ libraries' lines: sources of the driver and the reference model,
# not their tests.
gcovr --root "$root" --object-directory "$bdir" -j "$JOBS" \
  --filter "$root/sw/driver/(src|include)/" --filter "$root/sim/model/tpu_model" \
  --html-details "$out/cpp/index.html" --txt "$out/cpp/summary.txt" \
  --json-summary "$out/cpp/summary.json" "$bdir" > /dev/null

python3 scripts/coverage_report.py --root "$root" --out "$out" --cpp-json "$out/cpp/summary.json" "$out/dat"
rm -rf "$out/dat"  # about 1 GB, merged into $out/rtl/merged.dat
echo "coverage: C++ report $out/cpp/index.html"
echo "coverage: build $((built - start)) s, tests $((ran - built)) s, report $(($(date +%s) - ran)) s"
if [ "$status" != 0 ]; then
  echo "coverage: some tests failed (ctest status $status): $out/ctest.log" >&2
fi
exit "$status"
