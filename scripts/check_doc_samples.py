#!/usr/bin/env python3
"""Fails when C++ shown in the docs is not code the build compiles.

Every ```cpp block of README.md and docs/**/*.md follows a marker naming
the compiled file it comes from. A whole file:

    <!-- sample: apps/examples/train_tiny_pointnet.cpp -->
    ```cpp
    ... the file's text ...
    ```

or a part of one, whose lines are the file's, in order; a line `// ...`
stands for lines left out:

    <!-- excerpt: apps/examples/train_tiny_pointnet.cpp -->

so no sample can go stale while the file compiles and its test runs. A
file counts as compiled when a CMakeLists.txt in its folder or above
names it.

    python3 scripts/check_doc_samples.py [ROOT] [--require PATH]...

Reads README.md and docs/**/*.md under ROOT (default: the repository). Each
--require names a file that some page must show whole. Exits 1, naming the
page, its line and the first line that differs, when a block differs from
its file, names a file that does not exist or that no CMakeLists.txt
builds, has no marker, or a required file is not shown.
"""

import difflib
import glob
import os
import re
import sys

MARKER = re.compile(r"^<!-- (sample|excerpt): (\S+) -->$")
SKIPPED = "// ..."


def samples(page_text):
    """(line number, kind, path, block text or None) for each marker, and
    (line number, None, None, block) for each ```cpp block without one."""
    lines = page_text.split("\n")
    found, marked = [], set()
    for i, line in enumerate(lines):
        match = MARKER.match(line.strip())
        if match:
            block = None
            if i + 1 < len(lines) and lines[i + 1].startswith("```"):
                marked.add(i + 1)
                end = next((j for j in range(i + 2, len(lines)) if lines[j] == "```"), None)
                if end is not None:
                    block = "\n".join(lines[i + 2:end]) + "\n"
            found.append((i + 1, match.group(1), match.group(2), block))
        elif line.strip() == "```cpp" and i not in marked:
            found.append((i + 1, None, None, None))
    return found


def excerpt_problem(block, wanted):
    """None when the block's parts, split at `// ...` lines, are runs of the
    file's lines in order; else the first part not found."""
    lines, at = wanted.split("\n"), 0
    parts, part = [], []
    for line in block.rstrip("\n").split("\n"):
        if line.strip().startswith(SKIPPED):
            parts.append(part)
            part = []
        else:
            part.append(line)
    parts.append(part)
    for part in filter(None, parts):
        hit = next((i for i in range(at, len(lines) - len(part) + 1)
                    if lines[i:i + len(part)] == part), None)
        if hit is None:
            return "\n".join(part[:3])
        at = hit + len(part)
    return None


def names_in_foreach(text, relative):
    """True when a foreach() of `text` lists the file's stem and builds ${var}.ext."""
    stem, ext = os.path.splitext(relative)
    for loop in re.finditer(r"foreach\((\w+)([^)]*)\)(.*?)endforeach", text, re.S):
        var, words, body = loop.groups()
        if stem in words.split() and "${" + var + "}" + ext in body:
            return True
    return False


def compiled(root, path):
    """True when a CMakeLists.txt in the file's folder or above names it,
    itself or through a foreach() over the names of several files."""
    folder, name = os.path.split(path)
    while True:
        cmake = os.path.join(root, folder, "CMakeLists.txt")
        if os.path.isfile(cmake):
            with open(cmake, encoding="utf-8") as f:
                text = f.read()
            relative = os.path.relpath(path, folder or ".")
            if re.search(r"(^|[\s/(])" + re.escape(relative) + r"($|[\s)])", text, re.M):
                return True
            if names_in_foreach(text, relative):
                return True
        if not folder:
            return False
        folder = os.path.dirname(folder)


def check_block(root, name, line, kind, path, block):
    """The problem with one marked block, or None."""
    target = os.path.join(root, path)
    if block is None:
        return f"{name}:{line}: the {kind} of {path} has no ``` block after it"
    if not os.path.isfile(target):
        return f"{name}:{line}: {path} does not exist"
    if not compiled(root, path):
        return f"{name}:{line}: {path} is built by no CMakeLists.txt; show a file the build compiles"
    with open(target, encoding="utf-8") as f:
        wanted = f.read()
    if kind == "excerpt":
        missing = excerpt_problem(block, wanted)
        return (None if missing is None else
                f"{name}:{line}: the excerpt is not a part of {path}; these lines are not "
                f"there, in this order:\n{missing}")
    if block != wanted:
        diff = difflib.unified_diff(wanted.split("\n"), block.split("\n"), path,
                                    f"{name}:{line}", lineterm="", n=1)
        return f"{name}:{line}: the sample differs from {path}:\n" + "\n".join(list(diff)[:12])
    return None


def main(argv):
    args = argv[1:]
    required = []
    while "--require" in args:
        at = args.index("--require")
        required.append(args[at + 1])
        del args[at:at + 2]
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    pages = [os.path.join(root, "README.md")] + sorted(
        glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True))
    problems, shown, excerpts = [], set(), 0
    for page in pages:
        if not os.path.isfile(page):
            continue
        name = os.path.relpath(page, root)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for line, kind, path, block in samples(text):
            if kind is None:
                problems.append(f"{name}:{line}: a ```cpp block without <!-- sample: PATH --> or "
                                "<!-- excerpt: PATH --> naming the compiled file it shows")
                continue
            problem = check_block(root, name, line, kind, path, block)
            if problem:
                problems.append(problem)
            elif kind == "sample":
                shown.add(path)
            else:
                excerpts += 1
    for path in required:
        if path not in shown:
            problems.append(f"no page shows {path} (<!-- sample: {path} --> and its block)")
    for problem in problems:
        print(problem)
    if not problems:
        print(f"{len(shown)} sample(s) and {excerpts} excerpt(s) match their compiled files")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
