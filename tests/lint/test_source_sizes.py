#!/usr/bin/env python3
"""scripts/check_source_sizes.py on a small tree: a file past the line limit,
a C++ function and a Python function past the function limit are each named
with their line; a CUDA kernel as long is not; the tree without them passes."""

import os
import sys
import tempfile

from lint_tree import report, run_check, write


def run(root):
    return run_check("check_source_sizes.py", root, "--max-file-lines", "50",
                     "--max-function-lines", "10")


def cpp_function(name, lines, prefix=""):
    body = "".join(f"  x += {i};\n" for i in range(lines))
    return f"{prefix}void {name}(int x) {{\n{body}}}\n"


def python_function(name, lines):
    body = "".join(f"    x += {i}\n" for i in range(lines))
    return f"def {name}(x):\n{body}    return x\n"


def main():
    failures = []
    with tempfile.TemporaryDirectory() as root:
        write(root, "sdk/src/short.cpp", cpp_function("fits", 5))
        write(root, "sdk/src/long_function.cpp", "// a long one\n" + cpp_function("sprawls", 12))
        write(root, "kernels/src/cuda/kernel.cu",
              cpp_function("sweep_kernel", 20, prefix="template <int N>\n__global__ "))
        write(root, "benchmarks/report/tool.py", python_function("main", 12))
        write(root, "apps/long_file.h", "// line\n" * 51)
        write(root, "build/generated.cpp", "// line\n" * 500)  # build output: not scanned

        code, output = run(root)
        expected = ["sdk/src/long_function.cpp:2: sprawls is 14 lines",
                    "benchmarks/report/tool.py:1: main is 14 lines",
                    "apps/long_file.h:1: the file is 51 lines (at most 50)"]
        if code != 1:
            failures.append(f"long code passed (exit {code}):\n{output}")
        failures += [f"'{line}' missing from:\n{output}" for line in expected if line not in output]
        for quiet in ("sweep_kernel", "fits", "generated.cpp"):
            if quiet in output:
                failures.append(f"{quiet} was named:\n{output}")

        for path in ("sdk/src/long_function.cpp", "benchmarks/report/tool.py", "apps/long_file.h"):
            os.remove(os.path.join(root, path))
        code, output = run(root)
        if code != 0:
            failures.append(f"a tree that fits failed (exit {code}):\n{output}")

    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
