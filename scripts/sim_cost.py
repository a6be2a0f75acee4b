#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Host instructions per simulated device cycle (`make sim-cost`).

The simulator's cost without the timing noise of a shared machine: Valgrind's
callgrind counts the instructions the host executes, which are the same from
run to run for the same binary and inputs. Runs `tpu bench` (a random int8
GEMM, checked bit for bit against the CPU) for a SMALL and a LARGE cube under
callgrind and prints

    (instructions of LARGE - instructions of SMALL) / (cycles of LARGE - cycles of SMALL)

so that start-up, the model's construction and the commands' fixed work cancel.
The difference still includes the driver's CPU reference product, which grows
with the MACs (about 0.6k of 21k host instructions per device cycle on
`default` at 64 and 128), and the driver's planning and packing, which grow
with the shape (about 0.5k). docs/performance.md gives the current number;
it is the measure to compare two builds of the simulator by. Exits 1 if a
run fails or is not exact.

    python3 scripts/sim_cost.py [--tpu build/bin/tpu] [--config default]
                                [--small 64] [--large 128]
"""

import argparse
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gemm import run_one  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def run(tpu: Path, config: str, side: int, tmp: Path) -> tuple:
    """(host instructions, device cycles) of one `tpu bench` side^3 under callgrind."""
    out = tmp / f"callgrind_{side}.out"
    try:
        bench = run_one(tpu, config, (side, side, side), tmp,
                        wrapper=("valgrind", "-q", "--tool=callgrind", f"--callgrind-out-file={out}"))
    except RuntimeError as e:
        sys.exit(f"sim_cost: {side}^3 on {config}: {e}")
    if not bench.get("exact"):
        sys.exit(f"sim_cost: the {side}^3 GEMM does not match the CPU reference")
    # callgrind writes the whole run's count as "summary: N" (older: "totals: N").
    m = re.search(r"^(?:summary|totals):\s*(\d+)", out.read_text(), re.MULTILINE)
    if not m:
        sys.exit(f"sim_cost: no instruction total in {out}")
    return int(m.group(1)), int(bench["cycles"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tpu", type=Path, default=REPO / "build/bin/tpu", help="the tpu tool")
    ap.add_argument("--config", default="default", help="configuration built into the tool")
    ap.add_argument("--small", type=int, default=64, help="side of the small cube")
    ap.add_argument("--large", type=int, default=128, help="side of the large cube")
    args = ap.parse_args()
    if not 0 < args.small < args.large:
        ap.error("need 0 < --small < --large")
    if not args.tpu.exists():
        ap.error(f"{args.tpu} not found: run `make build` first")
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        rows = [(side, *run(args.tpu, args.config, side, tmp)) for side in (args.small, args.large)]
    for side, instructions, cycles in rows:
        print(f"  {side}^3 on {args.config}: {cycles:,} device cycles, {instructions:,} host instructions")
    (_, i_small, c_small), (_, i_large, c_large) = rows
    if c_large <= c_small:
        sys.exit("sim_cost: the large GEMM did not take more cycles than the small one")
    per_cycle = (i_large - i_small) / (c_large - c_small)
    print(f"host instructions per device cycle ({args.large}^3 minus {args.small}^3, "
          f"{c_large - c_small:,} cycles): {per_cycle / 1000:.2f}k")
    return 0


if __name__ == "__main__":
    sys.exit(main())
