#!/usr/bin/env python3
"""Fails when a program shown in the docs differs from the compiled file.

A Markdown page shows a source file whole as

    <!-- sample: apps/examples/train_tiny_pointnet.cpp -->
    ```cpp
    ... the file's text ...
    ```

and this check compares each such block with the file it names, so the
sample cannot go stale while the file compiles and its test runs.

    python3 scripts/check_doc_samples.py [ROOT] [--require PATH]...

Reads README.md and docs/*.md under ROOT (default: the repository). Each
--require names a file that some page must show. Exits 1, naming the page,
its line and the first line that differs, when a block differs from its
file, names a file that does not exist, or a required file is not shown.
"""

import difflib
import glob
import os
import re
import sys

MARKER = re.compile(r"^<!-- sample: (\S+) -->$")


def samples(page_text):
    """(line number of the marker, path, block text or None) for each marker."""
    lines = page_text.split("\n")
    found = []
    for i, line in enumerate(lines):
        match = MARKER.match(line.strip())
        if not match:
            continue
        block = None
        if i + 1 < len(lines) and lines[i + 1].startswith("```"):
            end = next((j for j in range(i + 2, len(lines)) if lines[j] == "```"), None)
            if end is not None:
                block = "\n".join(lines[i + 2:end]) + "\n"
        found.append((i + 1, match.group(1), block))
    return found


def main(argv):
    args = argv[1:]
    required = []
    while "--require" in args:
        at = args.index("--require")
        required.append(args[at + 1])
        del args[at:at + 2]
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    pages = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    problems, shown = [], set()
    for page in pages:
        if not os.path.isfile(page):
            continue
        name = os.path.relpath(page, root)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for line, path, block in samples(text):
            shown.add(path)
            target = os.path.join(root, path)
            if block is None:
                problems.append(f"{name}:{line}: the sample of {path} has no ``` block after it")
            elif not os.path.isfile(target):
                problems.append(f"{name}:{line}: {path} does not exist")
            else:
                with open(target, encoding="utf-8") as f:
                    wanted = f.read()
                if block != wanted:
                    diff = difflib.unified_diff(wanted.split("\n"), block.split("\n"), path,
                                                f"{name}:{line}", lineterm="", n=1)
                    problems.append(f"{name}:{line}: the sample differs from {path}:\n" +
                                    "\n".join(list(diff)[:12]))
    for path in required:
        if path not in shown:
            problems.append(f"no page shows {path} (<!-- sample: {path} --> and its block)")
    for problem in problems:
        print(problem)
    if not problems:
        print(f"{len(shown)} sample(s) match their files")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
