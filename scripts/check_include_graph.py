#!/usr/bin/env python3
"""Fails when dtrain's modules include one another in a cycle, naming it,
or when a module depends on one the layering keeps it from.

A module is a folder of the SDK (sdk/include/dtrain/<m> with sdk/src/<m>:
amp, data, ddp, dist, launch, store, train, util), a top-level library (kernels,
kernels/experimental, models, datasets) or an app's folder (apps/<name>).
Module A depends on module B when a file of A includes a file of B: by its
public path ("dtrain/store/store.h") or by a relative one ("../dist/x.h",
"membership.h"). Modules in a cycle could not be built, tested or
understood one without the other; docs/design/architecture.md gives the intended
direction (apps -> models, datasets -> sdk; kernels -> LibTorch). Beyond
cycles, FORBIDDEN names dependencies the layering rules out: launch (dtrun,
which loads no LibTorch) builds on the store module, never on dist's
process groups; the store module builds on util alone.

    python3 scripts/check_include_graph.py [ROOT]

Prints the module graph and exits 0 when it is acyclic and has no
forbidden dependency; else prints each cycle with an include line for each
of its steps, and each forbidden dependency with an include line, and
exits 1.
"""

import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
# Where "dtrain/..." includes are looked up, in order.
INCLUDE_ROOTS = ("sdk/include", "kernels/include", "kernels/experimental/include",
                 "models/include", "datasets/include")
SCANNED = ("sdk", "kernels", "models", "datasets", "apps")
# (module, module it must not depend on), as docs/design/architecture.md lays them out.
FORBIDDEN = (("sdk/launch", "sdk/dist"), ("sdk/store", "sdk/dist"), ("sdk/store", "sdk/launch"))


def module_of(path):
    """The module of a repository-relative path, or None outside them."""
    parts = path.split("/")
    if parts[0] == "sdk" and len(parts) > 3 and parts[1] == "include":
        return "sdk/" + parts[3]
    if parts[0] == "sdk" and len(parts) > 2 and parts[1] == "src":
        return "sdk/" + parts[2]
    if parts[0] == "kernels":
        return "kernels/experimental" if parts[1:2] == ["experimental"] else "kernels"
    if parts[0] in ("models", "datasets"):
        return parts[0]
    if parts[0] == "apps" and len(parts) > 2:
        return "apps/" + parts[1]
    return None


def source_files(root):
    for top in SCANNED:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(folder, name), root)


def resolve(root, including, target):
    """The repository-relative file an include names, or None (a system or
    generated header)."""
    candidates = [os.path.join(os.path.dirname(including), target)]
    candidates += [os.path.join(r, target) for r in INCLUDE_ROOTS]
    for candidate in candidates:
        path = os.path.normpath(candidate)
        if os.path.isfile(os.path.join(root, path)):
            return path
    return None


def edges(root):
    """(from_path, line, to_path) for every include between scanned files."""
    found = []
    for path in source_files(root):
        if module_of(path) is None:
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for match in INCLUDE.finditer(text):
            target = resolve(root, path, match.group(1))
            if target is not None and module_of(target) is not None:
                line = text.count("\n", 0, match.start()) + 1
                found.append((path, line, target))
    return found


def find_cycles(graph):
    """Each strongly connected component of more than one node (Tarjan's
    algorithm, iterative), as one cycle through all of its nodes' order."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return [cycle_through(graph, c) for c in sorted(components)]


def cycle_through(graph, component):
    """A shortest path from the component's first node back to itself."""
    members = set(component)
    start = component[0]
    previous = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph.get(node, ())):
                if child == start:
                    path = [node]
                    while previous[path[-1]] is not None:
                        path.append(previous[path[-1]])
                    return list(reversed(path)) + [start]
                if child in members and child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return component + [start]


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    modules, witnesses = {}, {}
    for path, line, target in edges(root):
        a, b = module_of(path), module_of(target)
        modules.setdefault(a, set())
        modules.setdefault(b, set())
        if a != b:
            modules[a].add(b)
            witnesses.setdefault((a, b), (path, line, target))
    cycles = find_cycles(modules)
    for cycle in cycles:
        print(f"module cycle: {' -> '.join(cycle)}")
        for a, b in zip(cycle, cycle[1:]):
            path, line, target = witnesses[(a, b)]
            print(f"  {a} -> {b}: {path}:{line} includes {target}")
    forbidden = [(a, b) for a, b in FORBIDDEN if b in modules.get(a, set())]
    for a, b in forbidden:
        path, line, target = witnesses[(a, b)]
        print(f"forbidden dependency: {a} -> {b}: {path}:{line} includes {target}")
    if cycles or forbidden:
        return 1
    print(f"no include cycles among {len(modules)} modules:")
    for module in sorted(modules):
        print(f"  {module} -> {', '.join(sorted(modules[module])) or '(nothing)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
