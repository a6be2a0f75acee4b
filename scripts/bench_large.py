# SPDX-License-Identifier: Apache-2.0
"""The large configurations (`make bench-large`): v2 (128×128) and v1 (256×256).

For each configuration: builds the tool with that device model in a build
directory of its own (Verilation and compilation timed, peak memory of the
largest process recorded), runs a random int8 GEMM through `tpu matmul` and
compares it with numpy, and runs `tpu bench` on the same shape for cycles,
utilization and simulator speed. A configuration with the bf16 datapath (v2)
also runs a random bf16 GEMM: `tpu matmul --dtype bf16 --raw-bf16` compared
bit for bit with the numpy reimplementation of docs/numerics.md (mxu_matmul
in sim/model/test/bf16_numpy_test.py), and `tpu bench --dtype bf16`, which
compares with the C++ reference model. Prints a table (one row per
configuration and datatype) and writes bench_large.csv and bench_large.md
into --out. Exits 1 if a build fails or a GEMM is not exact.

With --mxu it does the same for the 128×128 bf16 MXU alone instead:
builds mxu_bench_bf16_n128 (CMake list
TPU_MXU_LARGE_SIZES) in <build>/mxu-bf16, runs it (random bf16 tiles, every fp32
output checked against the C++ reference, tb/mxu/mxu_bench.cpp) and writes
bench_large_mxu.{csv,md}. make bench-large runs both, as separate processes,
so that each reports its own peak memory.

    python3 scripts/bench_large.py [--configs v2 v1] [--build build/large]
                                   [--out build/bench-large] [--shape M K N] [--jobs 2]
    python3 scripts/bench_large.py --mxu [--tiles 20] [--build build/large] [--out build/bench-large]
"""

import argparse
import csv
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
COLUMNS = ["config", "dtype", "n", "configure_s", "build_s", "build_peak_mb", "m", "k", "n_cols",
           "cycles", "utilization", "sim_cycles_per_second", "exact"]
MXU_COLUMNS = ["block", "n", "configure_s", "build_s", "build_peak_mb", "tiles", "rows",
               "cycles", "utilization", "sim_cycles_per_second", "exact"]


def timed(cmd, log):
    """Runs cmd with its output in log; returns (seconds, peak RSS in MB of the
    largest process this script has started so far: the kernel keeps only
    that maximum). Raises RuntimeError with the log's tail."""
    start = time.monotonic()
    with open(log, "w") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    seconds = time.monotonic() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        tail = Path(log).read_text().splitlines()[-15:]
        raise RuntimeError(f"{' '.join(map(str, cmd[:3]))} ... failed:\n" + "\n".join(tail))
    return seconds, peak / 1024


def build(config, build_dir, jobs, target="tpu", options=()):
    build_dir.mkdir(parents=True, exist_ok=True)
    configure_s, _ = timed(
        ["cmake", "-S", str(REPO), "-B", str(build_dir), "-G", "Ninja",
         "-DCMAKE_BUILD_TYPE=Release", f"-DTPU_CONFIGS={config}", *options],
        build_dir / "configure.log")
    build_s, peak_mb = timed(
        ["cmake", "--build", str(build_dir), "-j", str(jobs), "--target", target],
        build_dir / "build.log")
    return configure_s, build_s, peak_mb


def write_table(out, stem, columns, rows):
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{stem}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)
    with open(out / f"{stem}.md", "w") as f:
        f.write("| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n")
        for r in rows:
            f.write("| " + " | ".join(str(r[c]) for c in columns) + " |\n")
    print(f"bench-large: wrote {out / (stem + '.csv')} and {stem}.md")


def mxu_large(args):
    """The 128×128 bf16 MXU alone: build mxu_bench_large, run it, one row."""
    n = 128
    build_dir = args.build / "mxu-bf16"
    print(f"bench-large: bf16 MXU {n}×{n}: building mxu_bench_bf16_n{n} in {build_dir}", flush=True)
    try:
        # The smallest configuration: the build's other models are the block
        # tests' and tiny's, Verilated at configure time like the large MXU.
        configure_s, build_s, peak_mb = build("tiny", build_dir, args.jobs, f"mxu_bench_bf16_n{n}",
                                              [f"-DTPU_MXU_LARGE_SIZES={n}"])
    except RuntimeError as e:
        print(f"bench-large: bf16 MXU: {e}", file=sys.stderr)
        return 1
    cmd = [str(build_dir / "tb" / f"mxu_bench_bf16_n{n}"), "--n", str(n), "--dtype", "bf16",
           "--tiles", str(args.tiles), "--seed", str(args.seed)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    print(proc.stdout, end="")
    out = proc.stdout

    def field(pattern, cast=float):
        m = re.search(pattern, out)
        return cast(m.group(1)) if m else None

    row = dict(block="mxu bf16", n=n, configure_s=round(configure_s, 1), build_s=round(build_s, 1),
               build_peak_mb=round(peak_mb), tiles=args.tiles, rows=field(r"tiles x (\d+) rows", int),
               cycles=field(r"cycles\s+(\d+)", int),
               utilization=field(r"utilization\s+([0-9.]+)%"),
               sim_cycles_per_second=field(r"simulation speed\s+(\d+) cycles/s", int),
               exact=proc.returncode == 0 and "all outputs equal the reference" in out)
    print("  " + ", ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    write_table(args.out, "bench_large_mxu", MXU_COLUMNS, [row])
    if not row["exact"]:
        print(f"bench-large: bf16 MXU: {' '.join(cmd)} failed: {proc.stderr.strip()}", file=sys.stderr)
        return 1
    return 0


def tpu(build_dir, config, *args):
    cmd = [str(build_dir / "bin" / "tpu"), "--config", config, *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def random_bf16(rng, shape):
    """Random finite bf16 bits: normal values of both signs, exponents around 1."""
    sign = rng.integers(0, 2, size=shape, dtype=np.uint16) << 15
    exp = rng.integers(127 - 8, 127 + 8, size=shape, dtype=np.uint16) << 7
    return (sign | exp | rng.integers(0, 128, size=shape, dtype=np.uint16)).astype(np.uint16)


def bf16_reference(a, b, array_n):
    """C of bf16 bits A and B in the array's order of additions: the numpy
    reimplementation of docs/numerics.md (sim/model/test/bf16_numpy_test.py)."""
    sys.path.insert(0, str(REPO / "sim" / "model" / "test"))
    import bf16_numpy_test as ref
    pad = -a.shape[1] % array_n  # the array sums K in blocks of N; zero rows add +0
    a32 = np.pad(ref.bf16_to_f32(a), ((0, 0), (0, pad)))
    b32 = np.pad(ref.bf16_to_f32(b), ((0, pad), (0, 0)))
    return ref.mxu_matmul(a32, b32, array_n)


def gemm(config, build_dir, shape, seed, dtype, array_n):
    """A random GEMM through tpu matmul, checked bit for bit (int8: against
    numpy's int32 product; bf16: against bf16_reference), then tpu bench."""
    m, k, n = shape
    rng = np.random.default_rng(seed)
    if dtype == "int8":
        a = rng.integers(-128, 128, size=(m, k), dtype=np.int8)
        b = rng.integers(-128, 128, size=(k, n), dtype=np.int8)
        flags, matmul_flags = [], []
    else:
        a, b = random_bf16(rng, (m, k)), random_bf16(rng, (k, n))
        flags = ["--dtype", "bf16"]
        matmul_flags = [*flags, "--raw-bf16"]  # A and B are bf16 bits
    work = build_dir / f"gemm_{dtype}"
    work.mkdir(exist_ok=True)
    np.save(work / "A.npy", a)
    np.save(work / "B.npy", b)
    tpu(build_dir, config, "matmul", *matmul_flags, "--a", work / "A.npy",
        "--b", work / "B.npy", "--out", work / "C.npy")
    c = np.load(work / "C.npy")
    if dtype == "int8":
        exact = c.dtype == np.int32 and np.array_equal(c, a.astype(np.int32) @ b.astype(np.int32))
    else:
        want = bf16_reference(a, b, array_n)
        exact = c.dtype == np.float32 and np.array_equal(c.view(np.uint32), want.view(np.uint32))
    tpu(build_dir, config, "bench", *flags, "--m", m, "--k", k, "--n", n, "--json", work / "bench.json")
    stats = json.loads((work / "bench.json").read_text())
    return exact, stats


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", nargs="+", default=["v2", "v1"])
    p.add_argument("--build", type=Path, default=REPO / "build" / "large")
    p.add_argument("--out", type=Path, default=REPO / "build" / "bench-large")
    p.add_argument("--shape", type=int, nargs=3, default=[512, 512, 512], metavar=("M", "K", "N"))
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--mxu", action="store_true",
                   help="build and run the 128×128 bf16 MXU alone instead of the configurations")
    p.add_argument("--tiles", type=int, default=20, help="--mxu: tiles of 128 rows")
    args = p.parse_args()
    if args.mxu:
        return mxu_large(args)

    sys.path.insert(0, str(REPO / "scripts"))
    import config_table
    sizes = {c.name: c.array_n for c in config_table.CONFIGS}
    datapaths = {c.name: c.datapath for c in config_table.CONFIGS}
    rows, failed = [], False
    for config in args.configs:
        if config not in sizes:
            sys.exit(f"bench_large: unknown configuration '{config}'; they are {', '.join(sizes)}")
        build_dir = args.build / config
        print(f"bench-large: {config} ({sizes[config]}×{sizes[config]}): building in {build_dir}",
              flush=True)
        try:
            configure_s, build_s, peak_mb = build(config, build_dir, args.jobs)
        except RuntimeError as e:
            print(f"bench-large: {config}: {e}", file=sys.stderr)
            failed = True
            continue
        dtypes = {"int8": ["int8"], "bf16": ["bf16"], "both": ["int8", "bf16"]}[datapaths[config]]
        for dtype in dtypes:
            try:
                exact, stats = gemm(config, build_dir, args.shape, args.seed, dtype, sizes[config])
            except RuntimeError as e:
                print(f"bench-large: {config} {dtype}: {e}", file=sys.stderr)
                failed = True
                continue
            row = dict(config=config, dtype=dtype, n=sizes[config], configure_s=round(configure_s, 1),
                       build_s=round(build_s, 1), build_peak_mb=round(peak_mb),
                       m=args.shape[0], k=args.shape[1], n_cols=args.shape[2],
                       cycles=stats.get("cycles"), utilization=round(stats.get("utilization", 0), 4),
                       sim_cycles_per_second=round(stats.get("sim_cycles_per_second", 0)),
                       exact=exact and stats.get("exact", False))
            failed |= not row["exact"]
            rows.append(row)
            print("  " + ", ".join(f"{k} {v}" for k, v in row.items()), flush=True)

    write_table(args.out, "bench_large", COLUMNS, rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
