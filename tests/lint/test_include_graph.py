#!/usr/bin/env python3
"""scripts/check_include_graph.py on small trees: a cycle of modules, made
of a public include and a relative one, fails and is named with the lines
that close it; the same tree with one include removed passes."""

import sys
import tempfile

from lint_tree import report, run_check, write


def run(root):
    return run_check("check_include_graph.py", root)


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
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
