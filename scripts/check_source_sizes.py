#!/usr/bin/env python3
"""Fails when a source file or a function has grown past what a reader takes
in at once, naming each one.

    python3 scripts/check_source_sizes.py ROOT [--max-file-lines 600] [--max-function-lines 80]

Files: every C++, CUDA, Python and shell file under the project's code
folders (sdk, kernels, models, datasets, apps, tests, benchmarks, scripts)
has at most --max-file-lines lines. Functions: every C++, CUDA and Python
function there has at most --max-function-lines lines, except CUDA kernels
(`__global__`), whose loops are kept whole on purpose so the compiler sees
one body. Function boundaries come from lizard (PyPI, in the bootstrap's
virtual environment), which parses C++ and Python without compiling them.

Exits 0 when every file and function fits; else prints one line per
offender, "path:line: what is too long", and exits 1.
"""

import argparse
import os
import sys

CODE_FOLDERS = ("sdk", "kernels", "models", "datasets", "apps", "tests", "benchmarks",
                "scripts")
FILE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".py", ".sh")
# lizard picks its parser by the file name's suffix and knows no CUDA: CUDA
# files are read as C++, which they are but for the launch syntax.
PARSED_AS = {".cu": ".cpp", ".cuh": ".h"}
SKIPPED_FOLDERS = {"build", "__pycache__", ".git"}


def code_files(root):
    for folder in CODE_FOLDERS:
        for here, dirs, files in os.walk(os.path.join(root, folder)):
            dirs[:] = sorted(d for d in dirs
                             if d not in SKIPPED_FOLDERS and not d.startswith("build"))
            for name in sorted(files):
                if name.endswith(FILE_SUFFIXES):
                    yield os.path.join(here, name)


def is_cuda_kernel(lines, function):
    """A `__global__` in the function's signature or the lines just above it
    (a template<> or launch-bounds line may sit between)."""
    first = max(0, function.start_line - 4)
    return any("__global__" in line for line in lines[first:function.start_line])


def long_functions(path, text, limit):
    import lizard  # imported here so that a missing package is one clear line

    stem, suffix = os.path.splitext(path)
    parsed_name = stem + PARSED_AS.get(suffix, suffix)
    if suffix == ".sh":
        return
    lines = text.splitlines()
    analysis = lizard.analyze_file.analyze_source_code(parsed_name, text)
    for function in analysis.function_list:
        if function.length > limit and not is_cuda_kernel(lines, function):
            yield function.start_line, f"{function.name} is {function.length} lines"


def offenders(root, max_file_lines, max_function_lines):
    for path in code_files(root):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        relative = os.path.relpath(path, root)
        line_count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if line_count > max_file_lines:
            yield f"{relative}:1: the file is {line_count} lines (at most {max_file_lines})"
        for line, what in long_functions(path, text, max_function_lines):
            yield f"{relative}:{line}: {what} (at most {max_function_lines})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root")
    parser.add_argument("--max-file-lines", type=int, default=600)
    parser.add_argument("--max-function-lines", type=int, default=80)
    args = parser.parse_args()
    try:
        import lizard  # noqa: F401
    except ImportError:
        print(f"{sys.argv[0]}: needs the Python package lizard (scripts/bootstrap.sh installs it "
              f"into the bootstrap's virtual environment)", file=sys.stderr)
        return 2
    found = list(offenders(args.root, args.max_file_lines, args.max_function_lines))
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} file(s) or function(s) too long", file=sys.stderr)
        return 1
    print("every file and function fits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
