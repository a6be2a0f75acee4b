#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The `tpu` tool end to end, against numpy (CTest cli.tpu.sim, cli.tpu.model).

    python3 cli_test.py --tpu build/bin/tpu --transport sim --workdir build/cli_test [-k NAME]

Every case runs on the transport given (--transport puts it before every
command), so the same cases hold on the RTL (sim) and on the reference model
(model).

Each case prints one line, PASS or FAIL with the reason; the exit status is
1 when any case failed. Results are checked exactly against numpy; every
failure of the tool must be a non-zero exit (not a signal), exactly one
non-empty line on stderr, and no output file left behind.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import traceback

import numpy as np

TPU = None
TRANSPORT = "sim"
WORK = None
CASES = []
INT32_MIN = -(2 ** 31)
INT32_MAX = 2 ** 31 - 1


def case(fn):
    CASES.append(fn)
    return fn


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def path(name):
    return os.path.join(WORK, name)


def tpu(*args, timeout=120):
    """Runs the tool; returns the CompletedProcess (text output)."""
    args = [str(a) for a in args]
    chosen = "--transport" in args or "--device" in args
    cmd = [TPU] + ([] if chosen else ["--transport", TRANSPORT]) + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def describe(p):
    return (f"`{' '.join(os.path.basename(a) if a == TPU else a for a in p.args)}` exited "
            f"{p.returncode}\nstdout: {p.stdout[-2000:]}\nstderr: {p.stderr[-2000:]}")


def ok(*args, **kw):
    p = tpu(*args, **kw)
    check(p.returncode == 0, describe(p))
    check(p.stderr == "", "stderr not empty on success:\n" + describe(p))
    return p


def fails(*args, code=1, outputs=(), contains=(), **kw):
    """Runs a command that must fail cleanly; outputs must not exist afterwards."""
    for o in outputs:
        if os.path.exists(o):
            os.remove(o)
    p = tpu(*args, **kw)
    check(p.returncode >= 0, f"killed by signal {-p.returncode}:\n" + describe(p))
    check(p.returncode == code, f"expected exit {code}:\n" + describe(p))
    lines = p.stderr.splitlines()
    check(len(lines) == 1 and p.stderr.endswith("\n"),
          f"expected one line on stderr, got {len(lines)}:\n" + describe(p))
    check(lines[0].startswith("tpu: error: ") and len(lines[0]) > len("tpu: error: ") + 5,
          "stderr line is not 'tpu: error: <message>': " + lines[0])
    for c in contains:
        check(c in lines[0], f"stderr lacks {c!r}: {lines[0]}")
    for o in outputs:
        check(not os.path.exists(o), f"{o} exists after a failure")
    leftovers = [f for f in os.listdir(WORK) if ".tmp." in f]
    check(not leftovers, f"temporary files left behind: {leftovers}")
    return lines[0]


def rand_i8(rng, shape):
    return rng.integers(-128, 128, size=shape, dtype=np.int64).astype(np.int8)


# ---- info, asm, disasm ----------------------------------------------------------

@case
def info():
    p = ok("info")
    for s in ("0x54505531", "TPU1", "16x16", "int8", "unified buffer", "DMA tags"):
        check(s in p.stdout, f"info lacks {s!r}:\n{p.stdout}")
    check("configuration       default" in p.stdout, "info lacks the configuration:\n" + p.stdout)
    p = ok("--config", "tiny", "info")
    check("4x4" in p.stdout and "configuration       tiny" in p.stdout, "tiny is not 4x4:\n" + p.stdout)
    fails("--config", "nosuch", "info", contains=["tiny, small, default, wide"])
    fails("--transport", "pcie", "info", contains=["unknown transport 'pcie'", "model:", "sim:"])


PROGRAM = """\
# every instruction once
rhm ub=0 rows=8 host=0x1000 stride=16
cfg QMULT 0x40000000
cfg BIAS+3 -5
rw host=0x2000 tiles=2 stride=16
loop n=2 body=1 ub_inc=8
mmc ub=0 acc=16 rows=8 acc pop
act acc=16 ub=64 rows=8 func=relu bias
vop poolmax a=64 dst=80 rows=4 shift=1
whm ub=80 rows=4 host=0x3000 stride=16
sync mem|mmc
irq
.word 0xff 0x1
halt
"""


@case
def asm_disasm_round_trip():
    src, bin1, bin2, txt = path("p.asm"), path("p.bin"), path("p2.bin"), path("p.txt")
    with open(src, "w") as f:
        f.write(PROGRAM)
    ok("asm", src, "-o", bin1)
    data = open(bin1, "rb").read()
    check(len(data) == 13 * 16, f"{len(data)} bytes for 13 instructions")
    # HALT is opcode 0x0B in the low byte of w0, little-endian.
    check(data[-16] == 0x0B and not any(data[-15:]), "last instruction is not HALT")
    p = ok("disasm", bin1)
    lines = p.stdout.splitlines()
    check(len(lines) == 13, f"disasm printed {len(lines)} lines:\n{p.stdout}")
    check(lines[0].startswith("rhm") and lines[-1] == "halt", p.stdout)
    ok("disasm", bin1, "-o", txt)
    check(open(txt).read() == p.stdout, "disasm -o differs from stdout")
    ok("asm", txt, "-o", bin2)
    check(open(bin2, "rb").read() == data, "asm(disasm(x)) != x")


@case
def asm_errors():
    src, out = path("bad.asm"), path("bad.bin")
    with open(src, "w") as f:
        f.write("halt\n# comment\nmmc ub=0 acc=0 rows=1 bogus\n")
    fails("asm", src, "-o", out, outputs=[out], contains=[src + ": line 3: "])
    fails("asm", path("missing.asm"), "-o", out, outputs=[out], contains=["missing.asm"])
    with open(path("odd.bin"), "wb") as f:
        f.write(b"\x0b" + bytes(16))
    fails("disasm", path("odd.bin"), contains=["17 bytes"])
    fails("asm", src, code=2)  # no -o


# ---- matmul against numpy -------------------------------------------------------

def matmul_case(m, k, n, seed, config="default", array=16):
    rng = np.random.default_rng(seed)
    a, b = rand_i8(rng, (m, k)), rand_i8(rng, (k, n))
    pa, pb, pc, ps = path("A.npy"), path("B.npy"), path("C.npy"), path("stats.json")
    np.save(pa, a)
    np.save(pb, b)
    for f in (pc, ps):
        if os.path.exists(f):
            os.remove(f)
    p = ok("--config", config, "matmul", "--a", pa, "--b", pb, "--out", pc, "--stats-json", ps)
    check(len(p.stdout.splitlines()) == 1, "summary is not one line:\n" + p.stdout)
    c = np.load(pc)
    check(c.dtype == np.int32 and c.shape == (m, n), f"C is {c.dtype} {c.shape}")
    ref = a.astype(np.int32) @ b.astype(np.int32)
    if not np.array_equal(c, ref):
        bad = np.argwhere(c != ref)
        i, j = bad[0]
        raise Failure(f"{len(bad)} elements differ; C[{i},{j}] = {c[i, j]}, numpy {ref[i, j]}")
    s = json.load(open(ps))
    for key in ("cycles", "useful_macs", "utilization", "macs", "commands", "instructions",
                "n", "config", "shape", "counters"):
        check(key in s, f"stats lack {key!r}: {s}")
    for key in ("cycles", "mxu_busy", "useful_macs", "wgt_stall", "wgt_shift", "dep_stall",
                "mem_stall"):
        check(key in s["counters"], f"counters lack {key!r}: {s['counters']}")
    check(s["shape"] == {"m": m, "k": k, "n": n}, f"shape {s['shape']}")
    check(s["config"] == config and s["n"] == array, f"config {s['config']}, n {s['n']}")
    check(s["cycles"] > 0 and s["commands"] >= 1 and s["instructions"] >= 1, str(s))
    check(s["macs"] == m * k * n, f"macs {s['macs']} != {m * k * n}")
    check(0 < s["utilization"] <= 1, f"utilization {s['utilization']}")
    check(s["useful_macs"] >= m * k * n, f"useful_macs {s['useful_macs']} < {m * k * n}")
    check(s["counters"]["cycles"] > 0, "counters.cycles is 0")


@case
def matmul_1x1x1():
    matmul_case(1, 1, 1, 1)


@case
def matmul_every_configuration():
    """Each named configuration the transport has; the simulator has the ones
    the build made (make test: tiny and default; make regress CONFIGS=...)."""
    sizes = {"tiny": 4, "small": 8, "default": 16, "wide": 32}
    ran = []
    for config, array in sizes.items():
        p = tpu("--config", config, "info")
        if p.returncode != 0 and "is not built into this simulator" in p.stderr:
            continue
        check(p.returncode == 0, describe(p))
        matmul_case(100, 300, 70, 11, config=config, array=array)
        ran.append(config)
    check("tiny" in ran and "default" in ran, f"ran only on {ran}")
    if TRANSPORT == "model":
        check(len(ran) == len(sizes), f"the model has every configuration; ran on {ran}")
    print(f"  matmul 100x300x70 exact on {', '.join(ran)}")


@case
def matmul_7x13x5():
    matmul_case(7, 13, 5, 2)


@case
def matmul_7x13x5_tiny():
    matmul_case(7, 13, 5, 12, config="tiny", array=4)


@case
def matmul_100x300x70():
    matmul_case(100, 300, 70, 3)


@case
def matmul_256x256x256():
    matmul_case(256, 256, 256, 4)


@case
def matmul_extremes():
    # -128 * -128 summed over K: the largest products, no overflow of int32.
    a = np.full((3, 40), -128, np.int8)
    b = np.full((40, 2), -128, np.int8)
    np.save(path("A.npy"), a)
    np.save(path("B.npy"), b)
    ok("matmul", "--a", path("A.npy"), "--b", path("B.npy"), "--out", path("C.npy"))
    check(np.array_equal(np.load(path("C.npy")), a.astype(np.int32) @ b.astype(np.int32)),
          "wrong extremes")


@case
def matmul_empty_dimensions():
    for (m, k, n) in ((0, 5, 3), (3, 0, 4)):
        np.save(path("A.npy"), np.zeros((m, k), np.int8))
        np.save(path("B.npy"), np.zeros((k, n), np.int8))
        ok("matmul", "--a", path("A.npy"), "--b", path("B.npy"), "--out", path("C.npy"))
        c = np.load(path("C.npy"))
        check(c.dtype == np.int32 and c.shape == (m, n) and not c.any(), f"C is {c.dtype} {c.shape}")


# ---- matmul failures ----------------------------------------------------------------

def bad_matmul(a, b, code=1, contains=(), extra=()):
    out, stats = path("out.npy"), path("out.json")
    return fails(*extra, "matmul", "--a", a, "--b", b, "--out", out, "--stats-json", stats,
                 code=code, outputs=[out, stats], contains=contains)


@case
def rejects_inner_dimension_mismatch():
    rng = np.random.default_rng(5)
    np.save(path("A.npy"), rand_i8(rng, (7, 13)))
    np.save(path("B.npy"), rand_i8(rng, (12, 5)))
    line = bad_matmul(path("A.npy"), path("B.npy"))
    check(line == "tpu: error: inner dimensions differ: A is 7x13 but B is 12x5 "
                  "(A's columns must equal B's rows)", line)


@case
def rejects_wrong_dtypes():
    rng = np.random.default_rng(6)
    np.save(path("B.npy"), rand_i8(rng, (4, 4)))
    np.save(path("F.npy"), rng.standard_normal((4, 4)))
    bad_matmul(path("F.npy"), path("B.npy"),
               contains=[path("F.npy") + ": dtype float64 is not supported", "astype(np.int8)"])
    np.save(path("S.npy"), rand_i8(rng, (4, 4)).astype(np.int16))
    bad_matmul(path("S.npy"), path("B.npy"), contains=["dtype int16 is not supported"])
    np.save(path("I.npy"), rand_i8(rng, (4, 4)).astype(np.int32))
    bad_matmul(path("B.npy"), path("I.npy"), contains=["dtype int32 where int8 is needed"])
    np.save(path("V.npy"), rand_i8(rng, (4,)))
    bad_matmul(path("V.npy"), path("B.npy"), contains=["1-d", "2-d array is needed"])
    np.save(path("T.npy"), np.asfortranarray(rand_i8(rng, (4, 4))))
    bad_matmul(path("T.npy"), path("B.npy"), contains=["Fortran"])


@case
def rejects_missing_and_corrupt_files():
    rng = np.random.default_rng(7)
    np.save(path("B.npy"), rand_i8(rng, (4, 4)))
    bad_matmul(path("nosuch.npy"), path("B.npy"),
               contains=[path("nosuch.npy") + ": cannot open: No such file or directory"])
    with open(path("R.npy"), "wb") as f:
        f.write(rng.integers(0, 256, 300, dtype=np.uint8).tobytes())
    bad_matmul(path("R.npy"), path("B.npy"), contains=[path("R.npy") + ": not a .npy file"])
    whole = open(path("B.npy"), "rb").read()
    with open(path("short.npy"), "wb") as f:
        f.write(whole[:-3])
    bad_matmul(path("B.npy"), path("short.npy"), contains=[path("short.npy") + ": truncated"])
    with open(path("hdr.npy"), "wb") as f:
        f.write(whole.replace(b"'shape'", b"'shap'"))
    bad_matmul(path("hdr.npy"), path("B.npy"), contains=["malformed header"])


@case
def rejects_usage_errors():
    np.save(path("B.npy"), np.zeros((2, 2), np.int8))
    fails("matmul", "--a", path("B.npy"), "--out", path("out.npy"), code=2,
          outputs=[path("out.npy")], contains=["--b"])
    fails("frobnicate", code=2)
    fails(code=2)  # no subcommand
    fails("bench", "--m", "0", "--k", "1", "--n", "1", code=2)
    fails("--timeout", "-5", "info", code=2)


@case
def device_timeout():
    rng = np.random.default_rng(8)
    np.save(path("A.npy"), rand_i8(rng, (256, 256)))
    np.save(path("B.npy"), rand_i8(rng, (256, 256)))
    # The tool's --timeout is the device's limit for every command, the
    # operators' included: 256^3 takes ~80k cycles.
    out = path("out.npy")
    if os.path.exists(out):
        os.remove(out)
    bad_matmul(path("A.npy"), path("B.npy"), extra=["--timeout", "2000"], contains=["2000"])


# ---- run ---------------------------------------------------------------------------

@case
def run_timeout():
    src, dump = path("long.asm"), path("long.bin")
    with open(src, "w") as f:  # hundreds of millions of rows: far beyond the limit
        f.write("loop n=65535 body=1\nrhm ub=0 rows=4096 host=0x0 stride=16\nhalt\n")
    fails("--timeout", "5000", "run", src, "--dump", f"0x0:16={dump}", outputs=[dump],
          contains=["5000"])


@case
def run_copies_through_the_unified_buffer():
    src, data, dump, stats = path("copy.asm"), path("in.bin"), path("dump.bin"), path("run.json")
    with open(src, "w") as f:
        f.write("rhm ub=0 rows=4 host=0x1000 stride=16\n"
                "whm ub=0 rows=4 host=0x2000 stride=16\n"
                "halt\n")
    payload = bytes(range(64))
    with open(data, "wb") as f:
        f.write(payload)
    p = ok("run", src, "--load", f"0x1000={data}", "--dump", f"0x2000:64={dump}",
           "--stats-json", stats)
    check("OK" in p.stdout and "mem_stall" in p.stdout, p.stdout)
    check(open(dump, "rb").read() == payload, "dumped bytes differ from the loaded ones")
    s = json.load(open(stats))
    check(s["status"] == 0 and s["instructions"] == 3 and "counters" in s, str(s))
    # The same program as a binary.
    ok("asm", src, "-o", path("copy.bin"))
    os.remove(dump)
    ok("run", path("copy.bin"), "--load", f"4096={data}", "--dump", f"0x2000:0x40={dump}")
    check(open(dump, "rb").read() == payload, "binary program: dumped bytes differ")


@case
def run_program_error():
    src, dump = path("fault.asm"), path("fault.bin")
    with open(src, "w") as f:
        f.write("cfg QMULT 0x40000000\nmmc ub=0 acc=0 rows=1\nhalt\n")
    fails("run", src, "--dump", f"0x0:16={dump}", outputs=[dump], contains=["NO_WEIGHTS"])
    # The device recovers: the next command on a fresh device is fine anyway,
    # and an error program in assembly is reported with its line.
    with open(src, "w") as f:
        f.write("halt\nnonsense\n")
    fails("run", src, contains=[src + ": line 2: "])


@case
def run_rejects_bad_regions():
    src, data = path("h.asm"), path("in.bin")
    with open(src, "w") as f:
        f.write("halt\n")
    with open(data, "wb") as f:
        f.write(bytes(32))
    fails("run", src, "--load", f"0xffffffffffffff00={data}", contains=["DMA region"])
    # `info` says where the driver's region starts; a dump reaching across it is refused.
    line = [l for l in ok("info").stdout.splitlines() if l.startswith("raw host memory")][0]
    base = int(line.split()[5], 16)
    fails("run", src, "--dump", f"{hex(base - 16)}:32=" + path("d.bin"),
          outputs=[path("d.bin")], contains=["DMA region", hex(base)])
    fails("run", src, "--load", "nonsense", code=2, contains=["ADDR=FILE"])
    fails("run", src, "--dump", "0x10=" + path("d.bin"), code=2, contains=["ADDR:LEN=FILE"])
    fails("run", src, "--dump", "0x0:0x20000000=" + path("d.bin"), code=2, contains=["split it"])
    fails("run", src, "--load", f"0x0={path('missing.bin')}", contains=["missing.bin"])


# ---- bench, perf ------------------------------------------------------------------

@case
def bench_and_perf():
    js = path("bench.json")
    p = ok("--seed", "3", "bench", "--m", "20", "--k", "40", "--n", "30", "--json", js)
    check("cycles" in p.stdout and "utilization" in p.stdout, p.stdout)
    s = json.load(open(js))
    check(s["exact"] is True and s["sim_cycles_per_second"] > 0 and s["wall_seconds"] > 0, str(s))
    check(s["shape"] == {"m": 20, "k": 40, "n": 30} and 0 < s["utilization"] <= 1, str(s))
    p = ok("perf", "--m", "33", "--k", "17", "--n", "40")
    for s in ("mxu_busy", "wgt_stall", "wgt_shift", "dep_stall", "mem_stall", "useful MACs",
              "utilization"):
        check(s in p.stdout, f"perf lacks {s!r}:\n{p.stdout}")


# ---- mlp -------------------------------------------------------------------------

def act_lane(acc, bias, layer):
    """quant.h's act_lane on int64 numpy arrays."""
    x = np.clip(acc + bias, INT32_MIN, INT32_MAX)
    m = np.int64(layer["multiplier"])
    ab = x * m
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    t = ab + nudge
    high = np.where(t >= 0, t >> 31, -((-t) >> 31))  # division truncating toward zero
    if layer["multiplier"] == INT32_MIN:
        high = np.where(x == INT32_MIN, INT32_MAX, high)
    s = layer["shift"]
    mask = (1 << s) - 1
    rem = high & mask
    threshold = (mask >> 1) + (high < 0)
    scaled = layer.get("zero_point", 0) + (high >> s) + (rem > threshold)
    lo, hi = layer.get("qmin", -128), layer.get("qmax", 127)
    if layer["act"] in ("relu", "relu6"):
        lo = max(lo, layer.get("zero_point", 0))
    if layer["act"] == "relu6":
        hi = min(hi, layer.get("relu6_max", 127))
    return np.minimum(np.maximum(scaled, lo), hi).astype(np.int8)


def write_model(name, shapes, rng):
    layers = []
    for i, (fan_in, fan_out) in enumerate(shapes):
        w, b = f"{name}_w{i}.npy", f"{name}_b{i}.npy"
        np.save(path(w), rand_i8(rng, (fan_in, fan_out)))
        np.save(path(b), rng.integers(-2000, 2000, fan_out).astype(np.int32))
        layers.append({"w": w, "bias": b, "multiplier": 1518500250, "shift": 8 + i,
                       "zero_point": -3, "qmin": -128, "qmax": 127,
                       "act": "relu" if i + 1 < len(shapes) else "none"})
    with open(path(name + ".json"), "w") as f:
        json.dump({"layers": layers}, f)
    return layers


@case
def mlp_runs_in_batches():
    rng = np.random.default_rng(9)
    layers = write_model("net", [(24, 20), (20, 7)], rng)
    x = rand_i8(rng, (50, 24))
    np.save(path("X.npy"), x)
    out, stats = path("logits.npy"), path("mlp.json")
    p = ok("mlp", "--model", path("net.json"), "--x", path("X.npy"), "--out", out, "--batch", "16",
           "--stats-json", stats)
    progress = [l for l in p.stdout.splitlines() if "samples," in l]
    check(len(progress) == 4 and progress[-1].startswith("mlp: 50/50 samples, "), p.stdout)
    y = np.load(out)
    check(y.dtype == np.int8 and y.shape == (50, 7), f"logits are {y.dtype} {y.shape}")
    h = x
    for i, layer in enumerate(layers):
        w = np.load(path(layer["w"])).astype(np.int64)
        b = np.load(path(layer["bias"])).astype(np.int64)
        h = act_lane(h.astype(np.int64) @ w, b, layer)
    check(np.array_equal(y, h), f"{np.count_nonzero(y != h)} logits differ from numpy")
    s = json.load(open(stats))
    check(s["samples"] == 50 and s["cycles"] > 0 and s["commands"] >= 4, str(s))


@case
def mlp_rejects_shape_mismatches():
    rng = np.random.default_rng(10)
    write_model("bad", [(24, 20), (19, 7)], rng)
    np.save(path("X.npy"), rand_i8(rng, (10, 24)))
    out = path("logits.npy")
    fails("mlp", "--model", path("bad.json"), "--x", path("X.npy"), "--out", out,
          outputs=[out], contains=["layer 1", "takes 19 inputs", "gives 20 outputs"])
    write_model("good", [(24, 20), (20, 7)], rng)
    np.save(path("X2.npy"), rand_i8(rng, (10, 23)))
    fails("mlp", "--model", path("good.json"), "--x", path("X2.npy"), "--out", out,
          outputs=[out], contains=["10x23", "takes 24 inputs"])
    np.save(path("good_b1.npy"), np.zeros(6, np.int32))
    fails("mlp", "--model", path("good.json"), "--x", path("X.npy"), "--out", out,
          outputs=[out], contains=["has 6 entries", "7 outputs"])
    with open(path("junk.json"), "w") as f:
        f.write('{"layers": [')
    fails("mlp", "--model", path("junk.json"), "--x", path("X.npy"), "--out", out,
          outputs=[out], contains=["not valid JSON"])
    with open(path("typo.json"), "w") as f:
        json.dump({"layers": [{"w": "good_w0.npy", "multipler": 5, "shift": 1}]}, f)
    fails("mlp", "--model", path("typo.json"), "--x", path("X.npy"), "--out", out,
          outputs=[out], contains=['unknown key "multipler"'])


def main():
    global TPU, TRANSPORT, WORK
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tpu", required=True, help="the tpu binary")
    ap.add_argument("--transport", default="sim", help="sim or model (default sim)")
    ap.add_argument("--workdir", required=True, help="scratch directory (recreated)")
    ap.add_argument("-k", default="", help="run only cases whose name contains this")
    args = ap.parse_args()
    TPU = os.path.abspath(args.tpu)
    TRANSPORT = args.transport
    WORK = os.path.abspath(args.workdir)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)

    failed = 0
    start = time.monotonic()
    for fn in CASES:
        if args.k not in fn.__name__:
            continue
        t0 = time.monotonic()
        try:
            fn()
            print(f"PASS {fn.__name__} ({time.monotonic() - t0:.1f} s)", flush=True)
        except Failure as e:
            failed += 1
            print(f"FAIL {fn.__name__}: {e}", flush=True)
        except Exception:  # a bug in the test or a hang: still one case
            failed += 1
            print(f"FAIL {fn.__name__}: {traceback.format_exc()}", flush=True)
    print(f"{'FAILED' if failed else 'passed'}: {failed} failing case(s), "
          f"{time.monotonic() - start:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
