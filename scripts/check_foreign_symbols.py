#!/usr/bin/env python3
"""Fails when a dtrain library defines a name that belongs to another library
of the process: the C library, libstdc++, libgcc, or Gloo.

The rule: a shared library exports its own names. Defining one of libc's
(pthread_mutex_trylock, malloc) or of libstdc++'s internals
(std::__once_call, __once_proxy) replaces it for every object that binds
to ours first, or -- loaded with RTLD_DEEPBIND -- for one library alone,
which AddressSanitizer refuses and which broke Gloo on a GPU image; a
definition of a gloo:: name is a second Gloo beside LibTorch's (Note [One
Gloo in the process], sdk/src/dist/gloo/torch_gloo.h). So: no strong
definition (nm types T, D, B, R, ...) that the runtime libraries also
define, and no definition at all in namespace gloo. Weak definitions
(W, V, u) of other names are left alone: they are template and inline
instantiations, such as std::vector<int>::push_back, that every object
may emit and that are the same wherever they come from.

    python3 scripts/check_foreign_symbols.py LIBRARY...

Prints each offending name with its library and exits 1; else exits 0.
"""

import subprocess
import sys

# The runtime libraries whose names are theirs alone, as the compiler finds them.
RUNTIME = ("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1")
WEAK = {"W", "w", "V", "v", "u"}


def defined(path):
    """(type, name) of each dynamic symbol `path` defines, names mangled."""
    out = subprocess.run(["nm", "-D", "--defined-only", path], check=True,
                         capture_output=True, text=True).stdout
    symbols = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            symbols.append((parts[1], parts[2].split("@")[0]))
    return symbols


def runtime_path(name):
    """Where the C++ compiler would find the runtime library `name`."""
    found = subprocess.run(["c++", f"-print-file-name={name}"], check=True,
                           capture_output=True, text=True).stdout.strip()
    return found if "/" in found else None


def main(libraries):
    if not libraries:
        print("usage: check_foreign_symbols.py LIBRARY...", file=sys.stderr)
        return 2
    theirs = set()
    for name in RUNTIME:
        path = runtime_path(name)
        if path:
            theirs.update(symbol for kind, symbol in defined(path) if kind not in WEAK)
    if not theirs:
        print("found none of the runtime libraries to compare with", file=sys.stderr)
        return 2
    problems = []
    for library in libraries:
        for kind, symbol in defined(library):
            if symbol.startswith("_ZN4gloo"):
                problems.append(f"{library}: defines {symbol} ({kind}), a name of Gloo's")
            elif kind not in WEAK and symbol in theirs:
                problems.append(f"{library}: defines {symbol} ({kind}), a runtime library's")
    for problem in problems:
        print(problem)
    print(f"{len(libraries)} libraries, {len(problems)} foreign definitions")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
