# SPDX-License-Identifier: Apache-2.0
"""Write-or-check for generated files that are committed.

Each generator builds a {path: text} map and calls main(): without --check
it writes the files that changed; with --check it writes nothing and fails,
showing a diff, when a committed file differs from what would be generated.
"""
import argparse
import difflib
import sys
from pathlib import Path
from typing import Callable, Dict, Optional


def check(tool: str, source: str, files: Dict[Path, str], root: Path) -> int:
    stale = 0
    for path, text in files.items():
        current = path.read_text() if path.exists() else ""
        if current == text:
            continue
        stale += 1
        rel = path.relative_to(root)
        print(f"{tool}: {rel} differs from what {source} generates "
              f"(run scripts/{tool}.py):", file=sys.stderr)
        diff = difflib.unified_diff(current.splitlines(True), text.splitlines(True),
                                    f"{rel} (committed)", f"{rel} (generated)")
        sys.stderr.writelines(list(diff)[:60])
    if stale == 0:
        print(f"{tool}: {len(files)} generated files are current")
    return 1 if stale else 0


def write(tool: str, files: Dict[Path, str], root: Path) -> None:
    for path, text in files.items():
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"{tool}: wrote {path.relative_to(root)}")


def main(tool: str, source: str, doc: str, outputs: Callable[[], Dict[Path, str]], root: Path,
         after_write: Optional[Callable[[], None]] = None) -> int:
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="fail if a generated file is not current; write nothing")
    args = parser.parse_args()
    files = outputs()
    if args.check:
        return check(tool, source, files, root)
    write(tool, files, root)
    if after_write:
        after_write()
    return 0
