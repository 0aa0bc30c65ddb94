#!/usr/bin/env python3
"""scripts/check_doc_limits.py on a small tree: pages within their limits
pass; a long README, guide or design page, a README line of prose over 300
characters, a history word or a commit hash in the README fails, naming
the page and line."""

import sys
import tempfile

from lint_tree import report, run_check, write


def run(root):
    return run_check("check_doc_limits.py", root)


def lines(count):
    return "".join(f"line {i}\n" for i in range(count))


def main():
    failures = []
    cases = [  # (path, text, what the check must say; "" where it must pass)
        ("README.md", "# dtrain\n\n" + lines(197) + "| " + "x" * 400 + " |\n", ""),
        ("docs/guide.md", lines(300), ""),
        ("docs/design/notes.md", lines(400), ""),
        ("README.md", lines(201), "README.md: 201 lines, at most 200"),
        ("docs/guide.md", lines(301), "docs/guide.md: 301 lines, at most 300"),
        ("docs/design/deep/notes.md", lines(401), "docs/design/deep/notes.md: 401 lines, at most 400"),
        ("README.md", "# dtrain\n\n" + "word " * 61 + "\n", "README.md:3: a line of 305 characters"),
        ("README.md", "# dtrain\n\nIt now trains.\n", "README.md:3: 'now' tells the page's history"),
        ("README.md", "# dtrain\n\nAt 64aa039 it passed.\n", "README.md:3: a commit hash (64aa039)"),
    ]
    for path, text, said in cases:
        with tempfile.TemporaryDirectory() as root:
            write(root, path, text)
            code, output = run(root)
            if said and (code != 1 or said not in output):
                failures.append(f"{path}: expected exit 1 with '{said}', got {code}:\n{output}")
            if not said and code != 0:
                failures.append(f"{path} within its limits failed (exit {code}):\n{output}")
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
