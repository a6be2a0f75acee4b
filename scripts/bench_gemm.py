#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""GEMM sweep on the simulated TPU (`make bench`).

Runs `tpu bench` (a random int8 GEMM, checked bit for bit against the CPU) for cubes
16..1024, rectangular shapes (one long side, or a large K and N) and odd shapes (sides
no multiple of the array), prints one table row per shape as it finishes, and writes
gemm_sweep.csv and gemm_sweep.png into --out. Per shape: the cycles; the utilization
(M*K*N MACs over cycles x n x n) and the array utilization (zero padding of partial tiles
counted); the roofline bound (the largest of the MXU, link read and link write terms plus
the commands' fixed cost), its limiting term and the fraction bound / cycles achieved
(docs/cli.md, "bench"); the simulator's speed. Then a stream of STREAM_COUNT independent
STREAM_SHAPE products (`tpu bench --stream`), with one command in flight and with as many as
the device holds: cycles per product and the utilization over the stream, into
gemm_stream.csv. Exits 1 if any run fails or is not exact.
--quick keeps only shapes whose sides are all <= 256 and a shorter stream (a smoke test of a
few seconds).

    python3 scripts/bench_gemm.py [--tpu build/bin/tpu] [--config default]
                                  [--out build/bench] [--quick]
"""

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CUBES = [16, 32, 64, 128, 256, 512, 1024]
RECTANGLES = [(1024, 64, 64), (64, 1024, 64), (64, 64, 1024), (512, 256, 1024),
              (4096, 64, 64), (64, 4096, 64), (64, 64, 4096)]
ODD = [(1000, 300, 70), (100, 100, 100), (17, 33, 65)]  # partial tiles on every array size
QUICK_MAX = 256
HEADLINE = (512, 512, 512)
STREAM_SHAPE = (64, 64, 64)
STREAM_COUNT = 100
STREAM_DEPTHS = [1, None]  # None: as many commands in flight as the device holds
STREAM_COLUMNS = ["m", "k", "n", "products", "depth", "cycles", "cycles_per_product", "utilization",
                  "commands", "sim_cycles_per_second", "wall_seconds", "exact"]

COLUMNS = ["m", "k", "n", "macs", "cycles", "utilization", "array_utilization", "useful_macs",
           "commands", "bound_cycles", "limit", "roofline_fraction", "sim_cycles_per_second",
           "wall_seconds", "exact"]
# The roofline's columns, from the JSON's "roofline" object (null on a device that
# matches no named configuration: the columns stay empty).
ROOFLINE = {"bound_cycles": "bound_cycles", "limit": "limit", "roofline_fraction": "fraction"}


def shapes(quick):
    all_shapes = [(s, s, s) for s in CUBES] + RECTANGLES + ODD
    return [s for s in all_shapes if not quick or max(s) <= QUICK_MAX]


def run_one(tpu, config, shape, tmp, stream=None, depth=None, wrapper=()):
    """One `tpu bench` (with --stream: a stream of products); returns its JSON, or raises
    RuntimeError with the tool's output. wrapper: a command that runs the tool (e.g. valgrind
    and its options, scripts/sim_cost.py)."""
    m, k, n = shape
    out = Path(tmp) / f"bench_{m}x{k}x{n}_{stream}_{depth}.json"
    cmd = [*wrapper, str(tpu), "--config", config, "bench", "--m", str(m), "--k", str(k),
           "--n", str(n), "--json", str(out)]
    if stream:
        cmd += ["--stream", str(stream)] + (["--depth", str(depth)] if depth else [])
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise RuntimeError(f"cannot run {tpu}: {e.strerror} (build it with `make build`)")
    if proc.returncode != 0:
        msg = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        raise RuntimeError(f"exit status {proc.returncode}: {msg}")
    try:
        return json.loads(out.read_text())
    except (OSError, ValueError) as e:
        raise RuntimeError(f"unreadable JSON {out}: {e}")


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['m']}x{r['k']}x{r['n']}" for r in rows]
    x = range(len(rows))
    fig, (ax_u, ax_s) = plt.subplots(2, 1, figsize=(max(10, 0.6 * len(rows) + 2), 8), sharex=True)
    # Top: the utilization (M*K*N) and the fraction of the roofline bound achieved, side by side.
    width = 0.4
    series = [("utilization (M*K*N MACs)", "utilization", -width / 2, "tab:blue"),
              ("roofline fraction (bound / cycles)", "roofline_fraction", width / 2, "tab:green")]
    for label, key, offset, color in series:
        values = [100 * (r[key] or 0) for r in rows]
        ax_u.bar([i + offset for i in x], values, width, label=label, color=color)
        for i, v in enumerate(values):
            ax_u.annotate(f"{v:.0f}", (i + offset, v), ha="center", va="bottom", fontsize=7)
    # The array utilization (padding counted) as a mark over the utilization's bar.
    ax_u.scatter([i - width / 2 for i in x], [100 * r["array_utilization"] for r in rows], marker="_",
                 s=120, color="black", zorder=3, label="array utilization (padding counted)")
    ax_u.axhline(90, color="tab:red", linestyle="--", linewidth=1, label="90 %")
    ax_u.set_ylabel("percent")
    ax_u.set_ylim(0, 115)
    ax_u.grid(axis="y", alpha=0.3)
    ax_u.legend(loc="upper left", fontsize=8, ncol=4)
    ax_s.bar(x, [r["sim_cycles_per_second"] / 1e3 for r in rows], color="tab:orange")
    ax_s.set_ylabel("simulator speed (k cycles/s)")
    ax_s.grid(axis="y", alpha=0.3)
    ax_s.set_xticks(list(x), labels, rotation=45, ha="right")
    ax_s.set_xlabel("GEMM M x K x N (int8)")
    fig.suptitle("int8 GEMM on the simulated TPU")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_stream(args, out, failures):
    """The stream rows: STREAM_COUNT products of STREAM_SHAPE at each of STREAM_DEPTHS."""
    m, k, n = STREAM_SHAPE
    count = 10 if args.quick else STREAM_COUNT
    print(f"\nstream of {count} independent {m}x{k}x{n} products (tpu bench --stream)")
    header = f"{'in flight':>9} {'cycles':>10} {'per product':>11} {'util %':>7} {'sim cyc/s':>10} {'wall s':>7}  check"
    print(header)
    print("-" * len(header))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for depth in STREAM_DEPTHS:
            try:
                r = run_one(args.tpu, args.config, STREAM_SHAPE, tmp, stream=count, depth=depth)
            except RuntimeError as e:
                print(f"{depth or 'max':>9} FAILED: {e}", flush=True)
                failures.append(f"stream of {m}x{k}x{n} at depth {depth or 'max'}: {e}")
                continue
            st = r["stream"]
            row = {"m": m, "k": k, "n": n, "products": st["products"], "depth": st["depth"],
                   "cycles": r["cycles"], "cycles_per_product": st["cycles_per_product"],
                   "utilization": r["utilization"], "commands": r["commands"],
                   "sim_cycles_per_second": r["sim_cycles_per_second"],
                   "wall_seconds": r["wall_seconds"], "exact": r["exact"]}
            exact = r.get("exact") is True
            print(f"{st['depth']:>9} {row['cycles']:>10,} {row['cycles_per_product']:>11,.1f} "
                  f"{100 * row['utilization']:>7.1f} {row['sim_cycles_per_second']:>10,.0f} "
                  f"{row['wall_seconds']:>7.1f}  {'exact' if exact else 'NOT EXACT'}", flush=True)
            if not exact:
                failures.append(f"stream of {m}x{k}x{n}: a result differs from the CPU reference")
            rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tpu", default=str(REPO / "build/bin/tpu"), help="the tpu tool")
    ap.add_argument("--config", default="default", help="TPU configuration (tiny|small|default|wide)")
    ap.add_argument("--out", default=str(REPO / "build/bench"), help="directory for the CSV and plot")
    ap.add_argument("--quick", action="store_true", help=f"only shapes with sides <= {QUICK_MAX}")
    args = ap.parse_args()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    header = (f"{'M':>5} {'K':>5} {'N':>5} {'cycles':>10} {'util %':>7} {'array %':>7} "
              f"{'bound':>10} {'limit':<10} {'roof %':>6} {'sim cyc/s':>10} {'wall s':>7}  check")
    print(f"GEMM sweep, config {args.config}")
    print(header)
    print("-" * len(header))

    rows, failures = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in shapes(args.quick):
            m, k, n = shape
            print(f"{m:>5} {k:>5} {n:>5} ", end="", flush=True)
            try:
                r = run_one(args.tpu, args.config, shape, tmp)
            except RuntimeError as e:
                print(f"FAILED: {e}", flush=True)
                failures.append(f"{m}x{k}x{n}: {e}")
                if "cannot run" in str(e):
                    break
                continue
            row = {"m": m, "k": k, "n": n, "macs": m * k * n,
                   **{c: r.get(c) for c in COLUMNS[4:] if c not in ROOFLINE}}
            roof = r.get("roofline") or {}
            row.update({c: roof.get(key) for c, key in ROOFLINE.items()})
            exact = r.get("exact") is True
            bound = f"{row['bound_cycles']:>10,}" if roof else f"{'-':>10}"
            fraction = f"{100 * row['roofline_fraction']:>6.1f}" if roof else f"{'-':>6}"
            print(f"{row['cycles']:>10,} {100 * row['utilization']:>7.1f} "
                  f"{100 * row['array_utilization']:>7.1f} {bound} {row['limit'] or '-':<10} {fraction} "
                  f"{row['sim_cycles_per_second']:>10,.0f} {row['wall_seconds']:>7.1f}  "
                  f"{'exact' if exact else 'NOT EXACT'}", flush=True)
            if not exact:
                failures.append(f"{m}x{k}x{n}: result differs from the CPU reference")
            rows.append(row)

    if rows:
        with open(out / "gemm_sweep.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(rows)
        plot(rows, out / "gemm_sweep.png")
        print(f"\nwrote {out / 'gemm_sweep.csv'} and {out / 'gemm_sweep.png'}")
        for r in rows:
            if (r["m"], r["k"], r["n"]) == HEADLINE:
                roof = (f", {100 * r['roofline_fraction']:.1f}% of the roofline bound"
                        if r["roofline_fraction"] is not None else "")
                print(f"512x512x512: {r['cycles']:,} cycles, MXU utilization {100 * r['utilization']:.1f}%"
                      f"{roof}")
        timed = [r for r in rows if r["sim_cycles_per_second"]]
        sim_seconds = sum(r["cycles"] / r["sim_cycles_per_second"] for r in timed)
        total_cycles = sum(r["cycles"] for r in timed)
        if sim_seconds > 0:
            print(f"simulator speed: {total_cycles / sim_seconds:,.0f} device cycles/s overall "
                  f"({total_cycles:,} cycles in {sim_seconds:.1f} s of simulation)")

    stream_rows = run_stream(args, out, failures) if not any("cannot run" in f for f in failures) else []
    if stream_rows:
        with open(out / "gemm_stream.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=STREAM_COLUMNS)
            w.writeheader()
            w.writerows(stream_rows)
        print(f"wrote {out / 'gemm_stream.csv'}")

    if failures:
        print("bench_gemm: error: " + "; ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
