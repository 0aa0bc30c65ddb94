#!/usr/bin/env python3
"""scripts/check_include_graph.py on small trees: a cycle of modules, made
of a public include and a relative one, fails and is named with the lines
that close it; launch depending on dist fails, naming the include, and
launch depending on the store module passes."""

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

        # No cycle, but launch still depends on dist: forbidden.
        write(root, "sdk/src/dist/spawn.cpp", '#include "dtrain/util/base.h"\n')
        code, output = run(root)
        expected = ("forbidden dependency: sdk/launch -> sdk/dist: sdk/src/launch/agent.cpp:1 "
                    "includes sdk/include/dtrain/dist/store.h")
        if code != 1 or expected not in output:
            failures.append(f"launch -> dist passed or was not named (exit {code}):\n{output}")

        # launch on the store module, dist on it too: the layering holds.
        write(root, "sdk/include/dtrain/store/store.h",
              '#pragma once\n#include "dtrain/util/base.h"\n')
        write(root, "sdk/src/launch/agent.cpp", '#include "dtrain/store/store.h"\n')
        write(root, "sdk/src/dist/spawn.cpp", '#include "dtrain/store/store.h"\n')
        code, output = run(root)
        if code != 0:
            failures.append(f"a layered tree failed (exit {code}):\n{output}")
        for expected in ("models -> sdk/dist", "sdk/launch -> sdk/store, sdk/util",
                         "sdk/dist -> sdk/store"):
            if expected not in output:
                failures.append(f"the graph does not list {expected}:\n{output}")
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
