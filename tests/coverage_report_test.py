#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""scripts/coverage_report.py on two small hand-made coverage files: the
per-block numbers it computes after merging them with verilator_coverage.

    coverage_report_test.py <source tree>

Block alpha (rtl/alpha/a.sv), points in two instances (h) and two files:
  lines    3: two points, one never hit        -> not covered
           4: one point hit                    -> covered
           5: hit only in the second file      -> covered
           6: hit only in the second instance  -> covered       3/4 = 75.0 %
  toggles  x[0] changed in one instance, x[1] in none, y[0]     2/3 = 66.7 %
  covers   CoverA never, CoverB in one instance                 1/2
Block beta (rtl/beta/b.sv): one line hit, one toggle bit never changed,
no cover point. tb/t.sv is no block: its points count nowhere.
"""
import csv
import subprocess
import sys
import tempfile
from pathlib import Path


def point(f, line, col, page, comment, h, count):
    fields = [("f", f), ("l", str(line)), ("n", str(col)), ("page", page), ("o", comment), ("h", h)]
    key = "".join(f"\x01{k}\x02{v}" for k, v in fields)
    return f"C '{key}' {count}\n"


def write(path, points):
    path.write_text("# SystemC::Coverage-3\n" + "".join(points))


def main():
    tree = Path(sys.argv[1]).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "src"
        a, b, t = (str(root / p) for p in ("rtl/alpha/a.sv", "rtl/beta/b.sv", "tb/t.sv"))
        dat = Path(tmp) / "dat"
        dat.mkdir()
        write(dat / "1_0.dat", [
            point(a, 3, 2, "v_line/a", "if", "TOP.a", 5),
            point(a, 3, 9, "v_line/a", "else", "TOP.a", 0),
            point(a, 4, 2, "v_line/a", "block", "TOP.a", 2),
            point(a, 5, 2, "v_line/a", "block", "TOP.a", 0),
            point(a, 6, 2, "v_line/a", "block", "TOP.u1.a", 0),
            point(a, 6, 2, "v_line/a", "block", "TOP.u2.a", 3),
            point(a, 1, 20, "v_toggle/a", "x[0]", "TOP.u1.a", 0),
            point(a, 1, 20, "v_toggle/a", "x[0]", "TOP.u2.a", 1),
            point(a, 1, 20, "v_toggle/a", "x[1]", "TOP.u1.a", 0),
            point(a, 1, 20, "v_toggle/a", "x[1]", "TOP.u2.a", 0),
            point(a, 2, 20, "v_toggle/a", "y[0]", "TOP.u1.a", 4),
            point(a, 8, 3, "v_user/a", "CoverA", "TOP.u1.a.CoverA", 0),
            point(a, 9, 3, "v_user/a", "CoverB", "TOP.u1.a.CoverB", 0),
            point(a, 9, 3, "v_user/a", "CoverB", "TOP.u2.a.CoverB", 3),
            point(b, 2, 2, "v_line/b", "block", "TOP.b", 1),
            point(b, 1, 20, "v_toggle/b", "z[0]", "TOP.b", 0),
            point(t, 2, 2, "v_line/t", "block", "TOP", 0),
            point(t, 3, 2, "v_user/t", "CoverT", "TOP.CoverT", 0),
        ])
        write(dat / "2_0.dat", [
            point(a, 5, 2, "v_line/a", "block", "TOP.a", 7),
            point(a, 3, 9, "v_line/a", "else", "TOP.a", 0),
        ])
        out = Path(tmp) / "out"
        run = subprocess.run([sys.executable, str(tree / "scripts/coverage_report.py"), "--root", str(root),
                              "--out", str(out), "--no-html", str(dat)],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stdout + run.stderr)
            return 1
        with open(out / "summary.csv") as f:
            rows = {r["block"]: r for r in csv.DictReader(f)}
        want = {
            "alpha": ("75.0", "3/4", "66.7", "2/3", "1/2"),
            "beta": ("100.0", "1/1", "0.0", "0/1", "0/0"),
            "total": ("80.0", "4/5", "50.0", "2/4", "1/2"),
        }
        failures = []
        if sorted(rows) != sorted(want):
            failures.append(f"blocks {sorted(rows)}, want {sorted(want)}")
        for block, values in want.items():
            got = tuple(rows.get(block, {}).get(k) for k in
                        ("line %", "lines hit/total", "toggle %", "toggle bits hit/total", "covers hit/total"))
            if got != values:
                failures.append(f"{block}: {got}, want {values}")
        if "CoverA" not in run.stdout or "CoverB" in run.stdout.split("never hit:")[-1]:
            failures.append("the cover points never hit are not listed as CoverA alone:\n" + run.stdout)
        if not (out / "rtl/merged.dat").is_file() or not (out / "summary.md").is_file():
            failures.append("merged.dat or summary.md missing")
        for f in failures:
            print("FAIL:", f)
        if failures:
            print(run.stdout)
            return 1
        print("coverage_report: per-block numbers of the hand-made data as expected")
        return 0


if __name__ == "__main__":
    sys.exit(main())
