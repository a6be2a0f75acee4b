#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The RTL coverage report of `make coverage` (docs/verification.md, "Coverage").

    coverage_report.py --root . --out build/coverage [--cpp-json F] DAT...

DAT are Verilator coverage files or directories of them (one file per
simulation context, sim/verilator/coverage.h). The script

  1. merges them with verilator_coverage into OUT/rtl/merged.dat;
  2. splits the points of RTL files (under ROOT/rtl/) by kind: line (blocks
     and branches), toggle and user (`COVER); lcov files of the line and the
     toggle points come from verilator_coverage --write-info, and genhtml
     makes OUT/rtl/html (lines) and OUT/rtl/toggle_html;
  3. prints, and writes as OUT/summary.md and OUT/summary.csv, a table per
     block (the folder under rtl/): line %, toggle %, cover points hit/total;
     with --cpp-json (gcovr --json-summary), the C++ files' lines too.

How points count, whatever model (configuration, parameters, top) they come
from: a line is covered when every point on it was hit in some model (as
verilator_coverage writes the lcov file); a toggle point (one bit of one
signal, by source line and name) when the bit changed at least once in some
model; a cover point (by source line and name) when its property held in
some cycle.
"""
import argparse
import csv
import io
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

KINDS = ("line", "toggle", "user")
BATCH = 200  # .dat files per verilator_coverage run (command-line length)


def page_kind(page):
    """'v_line/mod', 'v_branch/mod' -> line; 'v_toggle/..' -> toggle; 'v_user/..' -> user."""
    kind = page.split("/", 1)[0]
    return {"v_line": "line", "v_branch": "line", "v_toggle": "toggle", "v_user": "user"}.get(kind)


def parse_dat(path):
    """The points of a coverage file: (key string, {field: value}, count)."""
    points = []
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            if not line.startswith("C '"):
                continue
            key, _, count = line[3:].rstrip("\n").rpartition("' ")
            fields = {}
            for item in key.split("\x01"):
                name, sep, value = item.partition("\x02")
                if sep:
                    fields[name] = value
            points.append((key, fields, int(count)))
    return points


def write_dat(path, points):
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write("# SystemC::Coverage-3\n")
        for key, _, count in points:
            f.write(f"C '{key}' {count}\n")


def block_of(source, root):
    """The block (folder under ROOT/rtl/) of a source file, or None."""
    try:
        rel = Path(os.path.normpath(source)).relative_to(root)
    except ValueError:
        return None
    parts = rel.parts
    return parts[1] if len(parts) > 2 and parts[0] == "rtl" else None


def dat_files(args):
    files = []
    for a in args:
        p = Path(a)
        files += sorted(p.glob("*.dat")) if p.is_dir() else [p]
    return files


def merge(files, merged):
    """verilator_coverage --write, in batches; each batch adds to the last."""
    if not files:
        sys.exit("coverage_report: no coverage data (.dat) given")
    merged.parent.mkdir(parents=True, exist_ok=True)
    done = []
    for i in range(0, len(files), BATCH):
        inputs = [str(f) for f in files[i:i + BATCH]] + done
        tmp = merged.with_suffix(".tmp")
        subprocess.run(["verilator_coverage", "--write", str(tmp)] + inputs, check=True)
        tmp.replace(merged)
        done = [str(merged)]


def write_info(points, dat, info):
    """The lcov file of some points (verilator_coverage --write-info)."""
    write_dat(dat, points)
    subprocess.run(["verilator_coverage", "--write-info", str(info), str(dat)], check=True)


def info_lines(info):
    """{source: {line: count}} from an lcov file."""
    lines = defaultdict(dict)
    source = None
    for line in Path(info).read_text(encoding="utf-8", errors="surrogateescape").splitlines():
        if line.startswith("SF:"):
            source = line[3:]
        elif line.startswith("DA:") and source is not None:
            number, count = line[3:].split(",")[:2]
            lines[source][int(number)] = int(count)
    return lines


def summarize(rtl_points, lines, root):
    """Per block: hit and total lines, toggle bits and cover points; per file
    lines; and each cover point (block, file, line, name, count)."""
    blocks = defaultdict(lambda: {k: [0, 0] for k in KINDS})
    files = defaultdict(lambda: [0, 0])
    for source, per_line in lines.items():
        block = block_of(source, root)
        if block is None:
            continue
        hit = sum(1 for c in per_line.values() if c > 0)
        blocks[block]["line"][0] += hit
        blocks[block]["line"][1] += len(per_line)
        files[source][0] += hit
        files[source][1] += len(per_line)

    # Toggle bits and cover points: one per source place and name, summed
    # over the models and instances that have it.
    merged = {"toggle": defaultdict(int), "user": defaultdict(int)}
    for _, fields, count in rtl_points:
        kind = page_kind(fields.get("page", ""))
        if kind in merged:
            place = (fields["f"], int(fields.get("l", 0)), fields.get("o", ""))
            merged[kind][place] += count
    covers = []
    for kind, places in merged.items():
        for (source, line, name), count in places.items():
            block = block_of(source, root)
            blocks[block][kind][0] += count > 0
            blocks[block][kind][1] += 1
            if kind == "user":
                covers.append((block, os.path.relpath(source, root), line, name, count))
    return blocks, files, sorted(covers)


def pct(hit, total):
    return f"{100.0 * hit / total:.1f}" if total else "-"


def table_rows(blocks):
    rows = []
    total = {k: [0, 0] for k in KINDS}
    for block in sorted(blocks):
        b = blocks[block]
        for k in KINDS:
            total[k][0] += b[k][0]
            total[k][1] += b[k][1]
        rows.append((block, b))
    rows.append(("total", total))
    return [(name,
             pct(*b["line"]), f"{b['line'][0]}/{b['line'][1]}",
             pct(*b["toggle"]), f"{b['toggle'][0]}/{b['toggle'][1]}",
             f"{b['user'][0]}/{b['user'][1]}") for name, b in rows]


HEADER = ("block", "line %", "lines hit/total", "toggle %", "toggle bits hit/total", "covers hit/total")


def cpp_rows(cpp_json, root):
    """(area, line %, lines hit/total) per area of a gcovr --json-summary."""
    data = json.loads(Path(cpp_json).read_text())
    areas = defaultdict(lambda: [0, 0])
    for f in data.get("files", []):
        name = f["filename"]
        area = "/".join(Path(name).parts[:2])  # sw/driver, sim/model
        areas[area][0] += f["line_covered"]
        areas[area][1] += f["line_total"]
    return [(a, pct(*areas[a]), f"{areas[a][0]}/{areas[a][1]}") for a in sorted(areas)]


def markdown(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dat", nargs="+", help="coverage files (.dat) or directories of them")
    ap.add_argument("--root", default=".", help="the source tree (its rtl/ folder has the blocks)")
    ap.add_argument("--out", required=True, help="report directory")
    ap.add_argument("--cpp-json", help="gcovr --json-summary of the C++ coverage, added to the summary")
    ap.add_argument("--no-html", action="store_true", help="no genhtml (the tables only)")
    args = ap.parse_args(argv)

    root = Path(args.root).resolve()
    out = Path(args.out)
    rtl = out / "rtl"
    merge(dat_files(args.dat), rtl / "merged.dat")

    points = [p for p in parse_dat(rtl / "merged.dat") if block_of(p[1].get("f", ""), root)]
    by_kind = defaultdict(list)
    for p in points:
        by_kind[page_kind(p[1].get("page", ""))].append(p)
    write_info(by_kind["line"], rtl / "line.dat", rtl / "line.info")
    write_info(by_kind["toggle"], rtl / "toggle.dat", rtl / "toggle.info")
    if not args.no_html:
        for info, html, title in ((rtl / "line.info", rtl / "html", "RTL lines"),
                                  (rtl / "toggle.info", rtl / "toggle_html", "RTL toggles")):
            subprocess.run(["genhtml", "--quiet", "--prefix", str(root), "--title", title,
                            "--output-directory", str(html), str(info)], check=True)

    blocks, files, covers = summarize(points, info_lines(rtl / "line.info"), root)
    rows = table_rows(blocks)
    cpp = cpp_rows(args.cpp_json, root) if args.cpp_json else []

    with open(out / "summary.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerows(rows)
        for area, p, n in cpp:
            w.writerow((area, p, n, "", "", ""))

    md = io.StringIO()
    md.write("# Coverage\n\n## RTL, per block\n\n" + markdown(HEADER, rows))
    if cpp:
        md.write("\n## C++ (gcovr)\n\n" + markdown(("area", "line %", "lines hit/total"), cpp))
    md.write("\n## RTL files\n\n" + markdown(
        ("file", "line %", "lines hit/total"),
        [(os.path.relpath(s, root), pct(*files[s]), f"{files[s][0]}/{files[s][1]}") for s in sorted(files)]))
    md.write("\n## Cover points\n\n" + markdown(
        ("block", "file:line", "cover", "cycles hit"),
        [(b, f"{s}:{line}", name, count) for b, s, line, name, count in covers]))
    (out / "summary.md").write_text(md.getvalue())

    print(markdown(HEADER, rows), end="")
    if cpp:
        print()
        print(markdown(("C++ area", "line %", "lines hit/total"), cpp), end="")
    missed = [f"{s}:{line} {name}" for _, s, line, name, count in covers if count == 0]
    if missed:
        print("cover points never hit: " + ", ".join(missed))
    print(f"coverage report: {out}/summary.md, {out}/summary.csv"
          + ("" if args.no_html else f", {rtl}/html/index.html"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
