#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the text layout of the repository (`make lint`, CTest lint.format).

Two checks:
  - .editorconfig, on every file git tracks (and untracked files it does not
    ignore): UTF-8, LF line ends, a final newline, no trailing whitespace,
    and indentation with spaces where the file's section says so (tabs only
    in Makefiles). The properties come from the `editorconfig` library, so
    the file is the one source of them.
  - .clang-format, on the C++ lines added since FORMAT_BASE and on new C++
    files: `clang-format-diff` must find nothing to change. The tree before
    FORMAT_BASE is not reformatted, so that `git blame` keeps its history
    (docs/decisions.md, "Formatting what a change touches").

Prints one line per problem and the command that fixes the C++ layout;
exits 1 when anything is wrong. `--files F...` checks only those files
(both checks; the C++ ones in full), which the test of the check uses.
"""
import argparse
import os
import shutil
import subprocess
import sys

import editorconfig

# The last commit before the C++ layout was checked: lines added after it are
# checked, older ones are left as they are.
FORMAT_BASE = "1a88e7d"
CXX_SUFFIXES = (".cpp", ".h", ".hpp", ".cc")


def clang_format_tool(name):
    """clang-format or clang-format-diff, with or without Debian's -14 suffix."""
    for candidate in (name, name + "-14"):
        path = shutil.which(candidate)
        if path:
            return path
    sys.exit(f"check_format: {name} not found; run `make setup` (Debian package clang-format)")


def git(*args, check=True):
    return subprocess.run(["git", *args], capture_output=True, text=True, check=check).stdout


def tracked_files():
    out = git("ls-files", "--cached", "--others", "--exclude-standard", "-z")
    return sorted({f for f in out.split("\0") if f and os.path.isfile(f) and not os.path.islink(f)})


def editorconfig_problems(path):
    """The .editorconfig rules `path` breaks, one string each."""
    props = editorconfig.get_properties(os.path.abspath(path))
    if props.get("charset") != "utf-8":  # a binary input (section with `unset`)
        return []
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return [f"not UTF-8 (byte {e.start})"]
    problems = []
    if props.get("end_of_line") == "lf" and "\r" in text:
        problems.append(f"CR line end on line {text[:text.index(chr(13))].count(chr(10)) + 1}")
    if props.get("insert_final_newline") == "true" and text and not text.endswith("\n"):
        problems.append("no newline at the end")
    style = props.get("indent_style")
    for number, line in enumerate(text.split("\n"), 1):
        if props.get("trim_trailing_whitespace") == "true" and line != line.rstrip(" \t"):
            problems.append(f"line {number}: trailing whitespace")
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if style == "space" and "\t" in indent:
            problems.append(f"line {number}: indented with a tab (this file's indent_style is space)")
        if len(problems) >= 5:
            problems.append("(more not shown)")
            break
    return problems


def generated(path):
    """A file a generator writes (its header says GENERATED): its layout is
    the generator's, and checked by the generator's staleness test."""
    with open(path, errors="replace") as f:
        return "GENERATED" in f.read(400)


def cxx_diff_problems(files=None):
    """C++ files whose added lines clang-format would change (generated
    files aside)."""
    fmt, fmt_diff = clang_format_tool("clang-format"), clang_format_tool("clang-format-diff")
    bad = []
    if files is None:
        if subprocess.run(["git", "cat-file", "-e", FORMAT_BASE + "^{commit}"], capture_output=True).returncode:
            print(f"check_format: commit {FORMAT_BASE} is not in this clone (shallow?); "
                  "the C++ layout is checked in new files only")
            base_files = set()
        else:
            base_files = set(git("ls-tree", "-r", "--name-only", FORMAT_BASE).split("\n"))
            diff = git("diff", "-U0", "--no-color", FORMAT_BASE, "--", *[f"*{s}" for s in CXX_SUFFIXES])
            out = subprocess.run([sys.executable, fmt_diff, "-p1", "-binary", fmt], input=diff,
                                 capture_output=True, text=True, check=True).stdout
            changed = {line[4:].split("\t")[0] for line in out.split("\n") if line.startswith("+++ ")}
            bad += sorted(f for f in changed if not generated(f))
        files = [f for f in tracked_files() if f.endswith(CXX_SUFFIXES) and f not in base_files]
    for f in files:
        if not f.endswith(CXX_SUFFIXES) or f in bad or generated(f):
            continue
        with open(f, "rb") as src:
            before = src.read()
        after = subprocess.run([fmt, "--style=file", "--assume-filename=" + f], input=before,
                               capture_output=True, check=True).stdout
        if after != before:
            bad.append(f)
    return bad


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", nargs="+", help="check only these files (the C++ ones in full)")
    args = parser.parse_args()
    if args.files is None:
        os.chdir(git("rev-parse", "--show-toplevel").strip())
    files = args.files if args.files is not None else tracked_files()
    status = 0
    for f in files:
        for p in editorconfig_problems(f):
            print(f"{f}: {p} (.editorconfig)")
            status = 1
    bad = cxx_diff_problems(args.files)
    for f in bad:
        print(f"{f}: C++ layout differs from .clang-format's")
        status = 1
    if bad:
        print(f"check_format: fix with `git diff -U0 {FORMAT_BASE} -- {' '.join(bad)} | clang-format-diff -p1 -i` "
              "(the lines a change added), or `clang-format -i FILE` for a new file")
    if status == 0:
        print(f"check_format: {len(files)} files follow .editorconfig; "
              f"C++ lines added since {FORMAT_BASE} follow .clang-format")
    return status


if __name__ == "__main__":
    sys.exit(main())
