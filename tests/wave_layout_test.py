#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every saved GTKWave layout (tb/**/*.gtkw) names only signals that exist.

For each layout it reruns one short test of the layout's block with waves on
(TPU_WAVES=1, as `make wave` does), lists the signals of the FST the test
wrote (fst2vcd, from the gtkwave package; only the header is read) and
checks that every signal the layout names is among them, under the same
name and bit range GTKWave looks up. The core and device layouts are checked
against every configuration the build has, and the device layout also
against the waves `tpu --device sim:?waves=F.fst` writes, whose message must
name that layout. It also checks that scripts/wave.sh picks each layout for
its block's tests, and that every filter file a layout loads exists.

  wave_layout_test.py --build BUILD --configs "tiny;default"
  wave_layout_test.py ... --self-test   a broken copy of a layout must fail
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# layout -> the tests whose waves it must match: (binary under BUILD/tb, gtest
# filter); {cfg} stands for each configuration of the build. The tests are the
# short ones of each block.
LAYOUTS = {
    "tb/mxu/mxu.gtkw": [("mxu_test", "MxuTest/4.ShortTilesBackToBack")],
    "tb/core/core.gtkw": [("core_test_{cfg}", "CoreTest.DenseBiasRequantRelu")],
    "tb/host/device.gtkw": [("device_test_{cfg}", "DeviceTest.MsiAfterCompletionUnlessMasked")],
    "tb/host/dma.gtkw": [("dma_test", "DmaTest.ManySmallReadsOverlap")],
    "tb/vpu/vpu_act_row.gtkw": [("vpu_test", "ActRowTest.EachActivationFunction")],
    "tb/vpu/vpu_vop_row.gtkw": [("vpu_test", "VopRowTest.MixedStream")],
    "tb/link/uart_bridge.gtkw": [("uart_bridge_test", "UartBridgeTest.MmioAndCompletion")],
}

# The signal lines of a save file: a name, an aliased name (+{alias} name),
# or one bit of a vector ((3)name). Group, comment and option lines are not.
def layout_signals(path):
    sigs, filters = [], []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line[0] in "[@-*":
                continue
            if line[0] == "^":  # ^N file: a translate filter file
                filters.append((n, line.split(None, 1)[1]))
                continue
            if line[0] == "#":  # #{name} a b c: a vector of several signals
                sigs += [(n, s) for s in line.split("} ", 1)[1].split()]
                continue
            if line[0] == "+":
                line = line.split("} ", 1)[1]
            line = re.sub(r"^\(\d+\)", "", line)
            sigs.append((n, line))
    return sigs, filters


# The FST's signals as GTKWave names them: scopes joined with '.', then the
# variable's name and its bit range.
def fst_signals(fst):
    proc = subprocess.Popen(["fst2vcd", fst], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    scope, names = [], set()
    for line in proc.stdout:
        t = line.split()
        if not t:
            continue
        if t[0] == "$enddefinitions":
            break
        if t[0] == "$scope":
            scope.append(t[2])
        elif t[0] == "$upscope":
            scope.pop()
        elif t[0] == "$var":
            rng = t[5] if len(t) > 6 and t[5].startswith("[") else ""
            names.add(".".join(scope + [t[4]]) + rng)
    proc.kill()
    proc.wait()
    return names


def run_test(build, binary, test, wave_dir):
    exe = os.path.join(build, "tb", binary)
    if not os.access(exe, os.X_OK):
        raise SystemExit(f"wave layouts: {exe} is missing; build it first (make build)")
    env = dict(os.environ, TPU_WAVES="1", TPU_WAVE_DIR=wave_dir, TPU_SEED="1")
    r = subprocess.run([exe, f"--gtest_filter={test}"], env=env, capture_output=True, text=True)
    fst = os.path.join(wave_dir, test.replace("/", "_") + ".fst")
    if r.returncode != 0 or not os.path.exists(fst):
        raise SystemExit(f"wave layouts: {binary} {test} failed or wrote no waves:\n{r.stdout[-2000:]}")
    return fst


# The device's waves written by the tool (sim: transport), and its message.
def run_tool(build, cfg, wave_dir):
    fst = os.path.join(wave_dir, f"tpu_{cfg}.fst")
    r = subprocess.run([os.path.join(build, "bin", "tpu"), "--device",
                        f"sim:?config={cfg}&waves={fst}", "bench", "--m", "8", "--k", "8", "--n", "8"],
                       capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(fst):
        raise SystemExit(f"wave layouts: tpu bench on sim:config={cfg} failed:\n{r.stderr[-2000:]}")
    want = "tb/host/device.gtkw"
    if not any(fst in l and want in l and "gtkwave" in l for l in r.stderr.splitlines()):
        raise SystemExit(f"wave layouts: tpu did not say how to view {fst} with {want}; stderr:\n{r.stderr}")
    return fst


def wave_sh_layout(test):
    r = subprocess.run([os.path.join(ROOT, "scripts", "wave.sh"), "--layout", test],
                       capture_output=True, text=True, cwd=ROOT)
    return r.stdout.strip()


# tb/core/opcodes.txt names the opcodes as rtl/ctrl/tpu_isa_pkg.sv numbers them.
def check_opcode_filter():
    pkg = open(os.path.join(ROOT, "rtl/ctrl/tpu_isa_pkg.sv")).read()
    want = {int(v, 16): n.upper() for n, v in re.findall(r"\bOp(\w+)\s*=\s*8'h([0-9A-Fa-f]+)", pkg)}
    have = {}
    for line in open(os.path.join(ROOT, "tb/core/opcodes.txt")):
        if line.strip() and not line.startswith("#"):
            v, n = line.split()
            have[int(v, 16)] = n
    return [] if have == want else [f"tb/core/opcodes.txt: {have} differs from tpu_isa_pkg's opcodes {want}"]


def check(layouts, build, configs, wave_dir, fst_cache):
    errors = check_opcode_filter()
    on_disk = sorted(os.path.relpath(os.path.join(d, f), ROOT)
                     for d, _, fs in os.walk(os.path.join(ROOT, "tb")) for f in fs if f.endswith(".gtkw"))
    for rel in on_disk:
        if rel not in LAYOUTS:
            errors.append(f"{rel}: not in {os.path.basename(__file__)}'s LAYOUTS; add a test of its block")
    for rel, path in layouts.items():
        sigs, filters = layout_signals(path)
        if not sigs:
            errors.append(f"{rel}: names no signal")
        for n, f in filters:
            if not os.path.exists(os.path.join(ROOT, f)):
                errors.append(f"{rel}:{n}: filter file {f} does not exist (paths are from the source tree)")
        runs = []
        for binary, test in LAYOUTS[rel]:
            for cfg in (configs if "{cfg}" in binary else [None]):
                b = binary.format(cfg=cfg)
                key = (b, test)
                if key not in fst_cache:
                    fst_cache[key] = fst_signals(run_test(build, b, test, wave_dir))
                runs.append((f"{b} {test}", fst_cache[key]))
                picked = wave_sh_layout((f"{cfg}." if cfg else "") + test)
                if picked != rel:
                    errors.append(f"{rel}: make wave picks '{picked or 'no layout'}' for {test}")
        if rel == "tb/host/device.gtkw":
            for cfg in configs:
                key = ("tpu", cfg)
                if key not in fst_cache:
                    fst_cache[key] = fst_signals(run_tool(build, cfg, wave_dir))
                runs.append((f"tpu --device sim:?config={cfg}&waves=...", fst_cache[key]))
        for what, names in runs:
            for n, s in sigs:
                if s not in names:
                    errors.append(f"{rel}:{n}: {s} is not in the waves of {what}")
        print(f"wave layouts: {rel}: {len(sigs)} signals, checked against {len(runs)} wave file(s)")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--configs", required=True, help="the build's configurations, ';'-separated")
    ap.add_argument("--self-test", action="store_true",
                    help="check that a layout naming a missing signal fails")
    args = ap.parse_args()
    if not shutil.which("fst2vcd"):
        raise SystemExit("wave layouts: fst2vcd is missing; install gtkwave (scripts/setup.sh)")
    configs = [c for c in args.configs.split(";") if c]
    layouts = {rel: os.path.join(ROOT, rel) for rel in LAYOUTS}
    with tempfile.TemporaryDirectory(prefix="wave_layouts_") as tmp:
        cache = {}
        if args.self_test:
            # A copy of the DMA layout with one signal renamed and one that
            # never existed: both must be reported, by line.
            rel = "tb/host/dma.gtkw"
            text = open(layouts[rel]).read()
            broken = text.replace("TOP.dma_engine.rq_valid_o", "TOP.dma_engine.rq_valid", 1)
            broken += "@28\n+{ghost} TOP.dma_engine.no_such_signal\n"
            assert broken != text
            copy = os.path.join(tmp, "dma.gtkw")
            open(copy, "w").write(broken)
            errors = check({rel: copy}, args.build, configs, tmp, cache)
            want = ["TOP.dma_engine.rq_valid ", "TOP.dma_engine.no_such_signal "]
            missed = [w for w in want if not any(w in e for e in errors)]
            if missed:
                print("wave layouts: self-test: the broken copy was not caught:", missed, errors)
                return 1
            print("wave layouts: self-test: the broken copy fails as it should:")
            for e in errors:
                print("  " + e)
            return 0
        errors = check(layouts, args.build, configs, tmp, cache)
    for e in errors:
        print("wave layouts: " + e)
    print(f"wave layouts: {'FAIL' if errors else 'ok'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
