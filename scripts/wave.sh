#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Reruns one GoogleTest test with FST tracing and opens it in GTKWave with the
# block's saved layout. Without a display it prints the file's path.
#   scripts/wave.sh '<Suite.Test>' [seed]
#   scripts/wave.sh '<config>.<Suite.Test>' [seed]   (core and device tests)
set -euo pipefail
cd "$(dirname "$0")/.."
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

# The layout belongs to the block: MxuTest/N8.Foo -> tb/mxu/mxu.gtkw
block=$(echo "$test_name" | sed -E 's/Test.*//' | tr 'A-Z' 'a-z')
layout="tb/$block/$block.gtkw"
if [ -n "${DISPLAY:-}" ] && command -v gtkwave >/dev/null; then
  if [ -f "$layout" ]; then gtkwave "$fst" "$layout" & else gtkwave "$fst" & fi
else
  echo "wave: $fst"
  [ -f "$layout" ] && echo "wave: layout $layout  (gtkwave $fst $layout)"
fi
exit "$status"
