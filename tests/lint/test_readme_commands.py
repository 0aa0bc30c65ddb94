#!/usr/bin/env python3
"""scripts/check_readme_commands.py on a small tree: the README's two
commands, each run by its test, pass; a command no test runs, a CI that
no longer runs scripts/test.sh, or a main job whose defaults differ from
the end-to-end test's fails, naming the command."""

import sys
import tempfile

from lint_tree import report, run_check, write

README = """# dtrain

```sh
bash scripts/run.sh      # the main job
bash scripts/test.sh     # every test
```

## What you get

```sh
anything at all
```
"""
RUN_SH = "case x in\n  train_pointnet2)\n    defaults=(--epochs 5 --model ssg-lite)\n"
TEST = 'const std::vector<std::string> run_sh_defaults = {"--epochs", "5", "--model", "ssg-lite"};\n'


def run(root):
    return run_check("check_readme_commands.py", root)


def tree(root, readme=README, ci="exec bash scripts/test.sh\n", run_sh=RUN_SH, test=TEST):
    write(root, "README.md", readme)
    write(root, ".ci/run", ci)
    write(root, "scripts/run.sh", run_sh)
    write(root, "tests/e2e/test_train_pointnet2.cpp", test)


def main():
    failures = []
    cases = [
        ({}, ""),
        ({"readme": README.replace("bash scripts/test.sh", "make check")},
         "'make check' is run by no test"),
        ({"ci": "exec ctest\n"}, ".ci/run does not run bash scripts/test.sh"),
        ({"run_sh": RUN_SH.replace("--epochs 5", "--epochs 6")},
         "scripts/run.sh trains with --epochs 6 --model ssg-lite, but "
         "TrainPointNet2.MainJobLearnsTheShapes"),
    ]
    for changes, said in cases:
        with tempfile.TemporaryDirectory() as root:
            tree(root, **changes)
            code, output = run(root)
            if said and (code != 1 or said not in output):
                failures.append(f"{changes}: expected exit 1 with '{said}', got {code}:\n{output}")
            if not said and code != 0:
                failures.append(f"the README's two tested commands failed (exit {code}):\n{output}")
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
