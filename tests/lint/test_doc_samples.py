#!/usr/bin/env python3
"""scripts/check_doc_samples.py on a small tree: a page whose sample is the
file, or whose excerpt is parts of it in order, passes; a changed line, a
missing file, a file no CMakeLists.txt builds, a ```cpp block without a
marker or a required file no page shows fails, naming the page and line."""

import sys
import tempfile

from lint_tree import report, run_check, write

PROGRAM = "int main() {\n  return 0;\n}\n"


def run(root, *required):
    return run_check("check_doc_samples.py", root,
                     *[word for path in required for word in ("--require", path)])


def page(program):
    return f"# Guide\n\nThe program:\n\n<!-- sample: src/main.cpp -->\n```cpp\n{program}```\n"


def excerpt_and_marker_failures(root):
    failures = []
    excerpt = "<!-- excerpt: src/main.cpp -->\n```cpp\nint main() {\n  // ... the body\n}\n```\n"
    write(root, "docs/design/notes.md", excerpt)
    code, output = run(root)
    if code != 0:
        failures.append(f"an excerpt of the file's lines failed:\n{output}")
    write(root, "docs/design/notes.md", excerpt.replace("}", "  return 2;\n}"))
    code, output = run(root)
    if code != 1 or "docs/design/notes.md:1: the excerpt is not a part of src/main.cpp" not in output:
        failures.append(f"an excerpt with a line not in the file passed (exit {code}):\n{output}")
    write(root, "docs/design/notes.md", "Text\n\n```cpp\nint x = 1;\n```\n")
    code, output = run(root)
    if code != 1 or "docs/design/notes.md:3: a ```cpp block without" not in output:
        failures.append(f"a block without a marker passed (exit {code}):\n{output}")
    write(root, "docs/design/notes.md", "# Notes\n")
    write(root, "docs/guide.md", page(PROGRAM))
    write(root, "src/CMakeLists.txt", "add_executable(other other.cpp)\n")
    code, output = run(root)
    if code != 1 or "src/main.cpp is built by no CMakeLists.txt" not in output:
        failures.append(f"a sample of a file nothing builds passed (exit {code}):\n{output}")
    write(root, "src/CMakeLists.txt",
          "foreach(program main other)\n  add_executable(${program} ${program}.cpp)\nendforeach()\n")
    code, output = run(root)
    if code != 0:
        failures.append(f"a file built by a foreach() over names failed:\n{output}")
    return failures


def main():
    failures = []
    with tempfile.TemporaryDirectory() as root:
        write(root, "src/main.cpp", PROGRAM)
        write(root, "src/CMakeLists.txt", "add_executable(main main.cpp)\n")
        write(root, "docs/guide.md", page(PROGRAM))
        code, output = run(root, "src/main.cpp")
        if code != 0:
            failures.append(f"a matching sample failed:\n{output}")

        write(root, "docs/guide.md", page(PROGRAM.replace("return 0", "return 1")))
        code, output = run(root)
        if code != 1 or "docs/guide.md:5: the sample differs from src/main.cpp" not in output \
                or "+  return 1;" not in output:
            failures.append(f"a changed sample was not named (exit {code}):\n{output}")

        write(root, "docs/guide.md", page(PROGRAM).replace("src/main.cpp", "src/gone.cpp"))
        code, output = run(root)
        if code != 1 or "docs/guide.md:5: src/gone.cpp does not exist" not in output:
            failures.append(f"a missing file was not named (exit {code}):\n{output}")

        write(root, "docs/guide.md", "# Guide\n")
        code, output = run(root, "src/main.cpp")
        if code != 1 or "no page shows src/main.cpp" not in output:
            failures.append(f"a required sample's absence passed (exit {code}):\n{output}")
        failures += excerpt_and_marker_failures(root)
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
