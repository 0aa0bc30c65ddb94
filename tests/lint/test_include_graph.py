#!/usr/bin/env python3
"""scripts/check_include_graph.py on small trees: a cycle of modules, made
of a public include and a relative one, fails and is named with the lines
that close it; the same tree with one include removed passes."""

import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "check_include_graph.py")


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)


def run(root):
    done = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def main():
    failures = []
    with tempfile.TemporaryDirectory() as root:
        write(root, "sdk/include/dtrain/util/base.h", "#pragma once\n")
        write(root, "sdk/include/dtrain/dist/store.h",
              '#pragma once\n#include "dtrain/util/base.h"\n')
        write(root, "sdk/src/launch/agent.cpp", '#include "dtrain/dist/store.h"\n')
        write(root, "sdk/src/dist/spawn.cpp",
              '#include <vector>\n#include "dtrain/config.h"\n#include "../launch/agent.h"\n')
        write(root, "sdk/src/launch/agent.h", '#pragma once\n#include "dtrain/util/base.h"\n')
        write(root, "models/src/model.cpp", '#include "dtrain/dist/store.h"\n')

        code, output = run(root)
        if code != 1:
            failures.append(f"a cycle passed (exit {code}):\n{output}")
        for expected in ("module cycle: sdk/dist -> sdk/launch -> sdk/dist",
                         "sdk/dist -> sdk/launch: sdk/src/dist/spawn.cpp:3 includes "
                         "sdk/src/launch/agent.h",
                         "sdk/launch -> sdk/dist: sdk/src/launch/agent.cpp:1 includes "
                         "sdk/include/dtrain/dist/store.h"):
            if expected not in output:
                failures.append(f"missing '{expected}' in:\n{output}")

        write(root, "sdk/src/dist/spawn.cpp", '#include "dtrain/util/base.h"\n')
        code, output = run(root)
        if code != 0:
            failures.append(f"an acyclic tree failed (exit {code}):\n{output}")
        if "models -> sdk/dist" not in output:
            failures.append(f"the graph does not list models -> sdk/dist:\n{output}")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
