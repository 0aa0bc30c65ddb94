#!/usr/bin/env python3
"""Fails when a command of the README's first sections is one no test runs.

    python3 scripts/check_readme_commands.py [ROOT]

Each command in a ```sh block before "## What you get" must be one this
script knows a test for, and the test must still run it: `bash
scripts/test.sh` is what CI runs (.ci/run execs it), and `bash
scripts/run.sh` is the main job whose defaults the end-to-end test
TrainPointNet2.MainJobLearnsTheShapes repeats (the two lists must be the
same words). A new command in those sections fails until it is added
here with its test. Exits 1, naming each command at fault.
"""

import os
import re
import sys

END_OF_FIRST_SECTIONS = "## What you get"
MAIN_JOB_TEST = "tests/e2e/test_train_pointnet2.cpp"


def commands(readme):
    """The commands of the ```sh blocks before END_OF_FIRST_SECTIONS, without comments."""
    found, inside = [], False
    for line in readme.split("\n"):
        if line.startswith(END_OF_FIRST_SECTIONS):
            break
        if line.startswith("```"):
            inside = line.strip() == "```sh" if not inside else False
            continue
        command = line.split("#", 1)[0].strip()
        if inside and command:
            found.append(command)
    return found


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


def ci_runs_tests(root):
    """None when CI runs scripts/test.sh, else what is wrong."""
    if "exec bash scripts/test.sh" in read(root, ".ci/run"):
        return None
    return ".ci/run does not run bash scripts/test.sh"


def main_job_tested(root):
    """None when run.sh's train_pointnet2 defaults are the e2e test's, else what differs."""
    run_sh = re.search(r"train_pointnet2\)\s*\n\s*defaults=\(([^)]*)\)", read(root, "scripts/run.sh"))
    test = re.search(r"run_sh_defaults = \{([^}]*)\}", read(root, MAIN_JOB_TEST))
    if not run_sh or not test:
        return f"cannot find the main job's defaults in scripts/run.sh and {MAIN_JOB_TEST}"
    ours = run_sh.group(1).split()
    theirs = re.findall(r'"([^"]*)"', test.group(1))
    if ours != theirs:
        return (f"scripts/run.sh trains with {' '.join(ours)}, but "
                f"TrainPointNet2.MainJobLearnsTheShapes ({MAIN_JOB_TEST}) with {' '.join(theirs)}")
    return None


TESTED = {"bash scripts/test.sh": ci_runs_tests, "bash scripts/run.sh": main_job_tested}


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                                       ".."))
    found = commands(read(root, "README.md"))
    problems = []
    for command in found:
        check = TESTED.get(command)
        if check is None:
            problems.append(f"README.md: '{command}' is run by no test this check knows; add it "
                            "and its test to scripts/check_readme_commands.py")
        elif (problem := check(root)) is not None:
            problems.append(f"README.md: '{command}': {problem}")
    if not found:
        problems.append(f"README.md: no ```sh block before '{END_OF_FIRST_SECTIONS}'")
    for problem in problems:
        print(problem)
    if not problems:
        print(f"{len(found)} command(s), each run by a test")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
