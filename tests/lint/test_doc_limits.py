#!/usr/bin/env python3
"""scripts/check_doc_limits.py on a small tree: pages within their limits
pass; a long README, guide or design page, a README line of prose over 300
characters, a history word or a commit hash in the README fails, naming
the page and line."""

import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "check_doc_limits.py")


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)


def run(root):
    done = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


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
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
