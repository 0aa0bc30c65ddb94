#!/usr/bin/env python3
"""Fails when the README or a guide outgrows what a reader takes in.

    python3 scripts/check_doc_limits.py [ROOT]

README.md: at most 200 lines; docs/*.md (the guides): 300; docs/design/**/*.md:
400. In README.md, no line of prose (outside code blocks and tables) over
300 characters, no commit hash and no word of a page's history ("now",
"since", "no longer"): the README describes what dtrain is, the history is
git's. Exits 1, naming each page and line at fault.
"""

import glob
import os
import re
import sys

LIMITS = [("README.md", 200), ("docs/*.md", 300), ("docs/design/**/*.md", 400)]
PROSE_WIDTH = 300
HISTORY = re.compile(r"\b(now|since|no longer)\b", re.I)
# A hash as git prints one (7 to 40 hex digits with a letter and a digit).
COMMIT = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")


def prose_lines(text):
    """(line number, line) of each line outside ``` blocks and tables."""
    inside = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            inside = not inside
            continue
        if not inside and not line.startswith("|") and not line.startswith("<!--"):
            yield number, line


def readme_problems(text):
    problems = []
    for number, line in prose_lines(text):
        if len(line) > PROSE_WIDTH:
            problems.append(f"README.md:{number}: a line of {len(line)} characters "
                            f"(at most {PROSE_WIDTH}); break it into sentences or move detail "
                            "to a guide")
        if HISTORY.search(line):
            problems.append(f"README.md:{number}: '{HISTORY.search(line).group(0)}' tells the "
                            "page's history; say what is")
        if COMMIT.search(line):
            problems.append(f"README.md:{number}: a commit hash ({COMMIT.search(line).group(0)}); "
                            "link to where the commit is recorded instead")
    return problems


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                                       ".."))
    problems, pages = [], 0
    for pattern, limit in LIMITS:
        for page in sorted(glob.glob(os.path.join(root, pattern), recursive=True)):
            pages += 1
            name = os.path.relpath(page, root)
            with open(page, encoding="utf-8") as f:
                text = f.read()
            count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
            if count > limit:
                problems.append(f"{name}: {count} lines, at most {limit}; split it by the jobs "
                                "it teaches, or move design to docs/design/")
            if name == "README.md":
                problems += readme_problems(text)
    for problem in problems:
        print(problem)
    if not problems:
        print(f"{pages} page(s) within their limits")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
