#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Pass/fail table from CTest JUnit files.

  report.py FILE.xml                      one run: a row per test
  report.py [--junit OUT.xml] --seed S FILE.xml [--seed S FILE.xml ...]
                                          a row per test, a column per seed;
                                          OUT.xml gets all runs merged
  --by-config                             a table per configuration (tests
                                          named <config>.Suite.Test) and one
                                          for the tests of every configuration
Exits non-zero if any test failed or no test ran.
"""
import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import config_table  # noqa: E402


def read_cases(path):
    """Returns [(name, status, seconds)] with status 'pass', 'FAIL' or 'skip'."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as err:
        sys.exit(f"report: cannot read {path}: {err}")
    cases = []
    for case in root.iter("testcase"):
        status = case.get("status", "run")
        if case.find("failure") is not None or case.find("error") is not None or status == "fail":
            result = "FAIL"
        elif case.find("skipped") is not None or status in ("notrun", "disabled"):
            result = "skip"
        else:
            result = "pass"
        cases.append((case.get("name"), result, float(case.get("time", 0) or 0)))
    return cases


def table(names, results, seeds):
    """Prints a table of these tests; returns (failed, passed)."""
    width = max([len(n) for n in names] + [4])
    multi = len(seeds) > 1
    header = f"{'test':<{width}}  " + ("  ".join(f"seed {s:>4}" for s in seeds) if multi else "result    time")
    print(header)
    print("-" * len(header))
    failed = passed = 0
    for name in names:
        row = results[name]
        if multi:
            cells = [f"{row.get(s, ('-', 0))[0]:>9}" for s in seeds]
            print(f"{name:<{width}}  " + "  ".join(cells))
        else:
            status, secs = row[seeds[0]]
            print(f"{name:<{width}}  {status:<6} {secs:6.2f}s")
        for status, _ in row.values():
            failed += status == "FAIL"
            passed += status == "pass"
    print("-" * len(header))
    print(f"{passed} passed, {failed} failed")
    return failed, passed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="JUnit file of a single run")
    ap.add_argument("--seed", nargs=2, action="append", metavar=("SEED", "FILE"), default=[],
                    help="JUnit file of the run with this seed")
    ap.add_argument("--junit", help="write the merged runs here")
    ap.add_argument("--by-config", action="store_true", help="a table per configuration")
    args = ap.parse_args()

    runs = [("", f) for f in args.files] + [(s, f) for s, f in args.seed]
    if not runs:
        ap.error("no JUnit files given")
    results = {}  # test -> {seed: (status, seconds)}
    for seed, path in runs:
        for name, status, secs in read_cases(path):
            results.setdefault(name, {})[seed] = (status, secs)

    seeds = [s for s, _ in runs]
    groups = {"": sorted(results)}
    if args.by_config:
        names = [c.name for c in config_table.CONFIGS]
        groups = {n: [] for n in names}
        groups["every configuration (blocks, tools, lint)"] = []
        for name in sorted(results):
            prefix = name.split(".", 1)[0]
            groups[prefix if prefix in names else "every configuration (blocks, tools, lint)"].append(name)
    failed = passed = 0
    for group, names in groups.items():
        if not names:
            continue
        if group:
            print(f"\n== {group} ==")
        f, p = table(names, results, seeds)
        failed += f
        passed += p
    if len(groups) > 1:
        print(f"\ntotal: {passed} passed, {failed} failed")

    if args.junit:
        suite = ET.Element("testsuite", name="regress", tests=str(passed + failed), failures=str(failed))
        for name in sorted(results):
            for seed, (status, secs) in results[name].items():
                case = ET.SubElement(suite, "testcase", name=f"{name} [seed {seed}]", time=f"{secs:.3f}")
                if status == "FAIL":
                    ET.SubElement(case, "failure", message=f"failed with TPU_SEED={seed}")
                elif status == "skip":
                    ET.SubElement(case, "skipped")
        ET.ElementTree(suite).write(args.junit, encoding="utf-8", xml_declaration=True)
        print(f"JUnit: {args.junit}")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
