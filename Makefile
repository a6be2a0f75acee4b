# SPDX-License-Identifier: Apache-2.0
# Top-level entry points. `make help` lists them.
SHELL   := /bin/bash
BUILD   ?= build
CONFIG  ?= default
CONFIGS ?= tiny default tiny_bf16
JOBS    ?= $(shell nproc)
SEEDS   ?= 1 2 3 4 5
TEST    ?=
SEED    ?=
FUZZ_TIME ?= 60
FUZZ_BUILD ?= $(BUILD)/fuzz
# FPGA flow (docs/fpga.md): TOP empty = the board top (BOARD, the only one is
# ulx3s); N for a block.
BOARD   ?= ulx3s
TOP     ?=
N       ?=
FREQ    ?=
# `make fpga` builds the small configuration unless CONFIG is given.
FPGA_CONFIG := $(if $(filter command% environment%,$(origin CONFIG)),$(CONFIG),small)
FPGA_ENV     = BOARD=$(BOARD) TOP=$(TOP) N=$(N) FREQ=$(FREQ) CONFIG=$(FPGA_CONFIG) BUILD=$(BUILD)

# The device models this build makes: CONFIGS, plus CONFIG when it is not
# among them, so that `make demo CONFIG=wide` builds the wide model. CMake
# adds tiny and tiny_bf16 when they are missing (the driver and tool suites
# run on them).
BUILT_CONFIGS := $(strip $(CONFIGS) $(filter-out $(CONFIGS),$(CONFIG)))
BUILT_LIST    := $(subst $(eval) ,;,$(BUILT_CONFIGS))
CMAKE_FLAGS   := -G Ninja -DCMAKE_BUILD_TYPE=Release "-DTPU_CONFIGS=$(BUILT_LIST)"

.DEFAULT_GOAL := build
.PHONY: help setup configure build test sim regress coverage fuzz lint regs config host-if wave synth fpga fpga-xilinx bench bench-large sim-cost demo clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-9s %s\n", $$1, $$2}'
	@echo "  variables: CONFIG=tiny|small|default|wide|tiny_bf16|default_bf16  CONFIGS=\"tiny default tiny_bf16\" (models built)"
	@echo "             TEST=<gtest name>  SEED=<n>  SEEDS=\"1 2 3\"  JOBS=<n>"
	@echo "             fpga: BOARD=ulx3s  CONFIG (default small)  TOP=<module> N=<n> (one block)  FREQ=<MHz goal>"

setup: ## Install every dependency (Debian packages, pinned PyPI packages)
	scripts/setup.sh

# Configures only when the build is new, its CONFIGS changed or the RTL file
# list changed (configuring runs Verilator on every model; ninja would
# re-Verilate a model with its old file list first); ninja reconfigures by
# itself when a CMakeLists.txt changes.
configure:
	@want="$(BUILT_LIST)"; \
	have=$$(sed -n 's/^TPU_CONFIGS:STRING=//p' $(BUILD)/CMakeCache.txt 2>/dev/null); \
	if [ ! -f $(BUILD)/build.ninja ] || [ "$$want" != "$$have" ] || [ rtl/sources.list -nt $(BUILD)/build.ninja ]; then \
	  echo "configure: $(BUILD) with models for $(BUILT_CONFIGS)"; \
	  mkdir -p $(BUILD) && cmake -S . -B $(BUILD) $(CMAKE_FLAGS) > $(BUILD)/configure.log 2>&1 \
	    || { cat $(BUILD)/configure.log; exit 1; }; \
	fi

build: configure ## Verilate the RTL (models for CONFIGS) and build testbenches and tools
	cmake --build $(BUILD) -j $(JOBS)

test: build ## Run every test (lint, unit and integration) through CTest, but the long ones (make regress)
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -LE long

sim: build ## Run the simulation regression and print a pass/fail table
	@mkdir -p $(BUILD)/reports
	-ctest --test-dir $(BUILD) -L unit -j $(JOBS) --output-junit reports/sim.xml > $(BUILD)/reports/sim.log 2>&1
	python3 scripts/report.py $(BUILD)/reports/sim.xml

regress: build ## Every simulation test for each configuration in CONFIGS and each seed in SEEDS; tables + JUnit XML
	@mkdir -p $(BUILD)/reports
	@for s in $(SEEDS); do \
	  echo "regress: seed $$s"; \
	  TPU_SEED=$$s ctest --test-dir $(BUILD) -LE lint -j $(JOBS) \
	    --output-junit reports/regress_seed$$s.xml > $(BUILD)/reports/regress_seed$$s.log 2>&1; \
	done; \
	python3 scripts/report.py --by-config --junit $(BUILD)/reports/regress.xml \
	  $(foreach s,$(SEEDS),--seed $(s) $(BUILD)/reports/regress_seed$(s).xml)
	$(MAKE) --no-print-directory fuzz FUZZ_TIME=$(FUZZ_TIME)

# Its own build in $(BUILD)/coverage/build (models with --coverage, the
# driver and the reference model with gcov); see docs/verification.md.
coverage: ## Regression on coverage-instrumented models; per-block line/toggle/cover table and HTML in build/coverage
	BUILD=$(BUILD) CONFIGS="$(CONFIGS)" JOBS=$(JOBS) scripts/coverage.sh

# Its own small build (no Verilator): clang++ when there is one (libFuzzer,
# coverage-guided, ASan/UBSan), else the deterministic mutation fuzzer of
# sw/fuzz/fuzz_driver.cpp. New inputs go to $(FUZZ_BUILD)/corpus, findings
# to $(FUZZ_BUILD)/crash-*.
fuzz: ## Fuzz the tool's parsers (.npy, MLP model, assembler, .tflite) for FUZZ_TIME seconds (default 60)
	@cxx=$$(command -v clang++ || true); \
	if [ ! -f $(FUZZ_BUILD)/build.ninja ]; then \
	  cmake -S sw/fuzz -B $(FUZZ_BUILD) -G Ninja $${cxx:+-DCMAKE_CXX_COMPILER=$$cxx} > /dev/null; \
	fi
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@mkdir -p $(FUZZ_BUILD)/corpus
	cd $(FUZZ_BUILD) && ./fuzz_parsers -max_total_time=$(FUZZ_TIME) -seed=1 -print_final_stats=1 \
	  corpus $(CURDIR)/sw/fuzz/corpus

lint: ## Verilator -Wall over all RTL, every configuration (zero warnings); .editorconfig and .clang-format
	scripts/lint.sh
	python3 scripts/check_format.py

regs: ## Regenerate BAR0 registers from rtl/host/tpu_regs.rdl
	python3 scripts/gen_regs.py

config: ## Regenerate the configuration files from scripts/config_table.py
	python3 scripts/gen_config.py

host-if: ## Regenerate the ring formats (RTL package, C++ header, doc tables) from scripts/host_if_table.py
	python3 scripts/gen_host_if.py

wave: build ## Rerun one test with FST waves and open GTKWave: make wave TEST=<name> [SEED=n]
	scripts/wave.sh "$(TEST)" "$(SEED)"

synth: ## Yosys synth_ecp5 of the MXU at 8x8; utilization report under build/synth
	BUILD_DIR=$(BUILD) scripts/synth.sh mxu 8

fpga: ## ULX3S (ECP5-85F) flow: Yosys, nextpnr, timing check, bitstream, report under build/fpga (TOP=mxu N=8: one block)
	$(FPGA_ENV) scripts/fpga.sh ecp5

fpga-xilinx: ## Yosys synth_xilinx (xc7, Artix-7 200T class): utilization report under build/fpga
	$(FPGA_ENV) scripts/fpga.sh xilinx

bench: build ## Benchmarks: MXU streaming, a GEMM sweep on the TPU (CSV + plot), simulator speed, serial link
	$(BUILD)/tb/mxu_bench --n 16 --tiles 20000
	$(BUILD)/tb/mxu_bench --n 8 --tiles 40000
	$(BUILD)/tb/mxu_bench --n 4 --tiles 80000
	python3 scripts/bench_gemm.py --tpu $(BUILD)/bin/tpu --config $(CONFIG) --out $(BUILD)/bench
	$(BUILD)/sim/uart_link_bench --config tiny --div 10 --clock-mhz 30

sim-cost: build ## Host instructions per simulated device cycle (Valgrind callgrind, tpu bench 128^3 minus 64^3): the simulator's cost, free of timing noise
	python3 scripts/sim_cost.py --tpu $(BUILD)/bin/tpu --config $(CONFIG)

bench-large: ## The v2 (128x128) and v1 (256x256) configurations: build each (time, memory), a 512^3 GEMM exact vs numpy, cycles/s; the 128x128 bf16 MXU alone
	python3 scripts/bench_large.py --build $(BUILD)/large --out $(BUILD)/bench-large --jobs $(JOBS)
	python3 scripts/bench_large.py --mxu --build $(BUILD)/large --out $(BUILD)/bench-large --jobs $(JOBS)

demo: build ## Main job: a digits MLP and a digits CNN (.tflite), int8 on the simulated TPU (CONFIG=<name>), checked bit for bit
	python3 demo/digits_mlp.py --tpu $(BUILD)/bin/tpu --config $(CONFIG) --workdir $(BUILD)/demo
	python3 demo/digits_cnn.py --tpu $(BUILD)/bin/tpu --config $(CONFIG) --workdir $(BUILD)/demo

clean: ## Remove all generated files
	rm -rf $(BUILD)
