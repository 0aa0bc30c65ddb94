"""What the lint checks' own tests share: writing a small tree and running a
check of scripts/ on it."""

import os
import subprocess
import sys

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts")


def write(root, path, text):
    """Writes text to root/path, making its folders."""
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)


def run_check(script, root, *arguments):
    """(exit code, stdout + stderr) of scripts/<script> on root."""
    command = [sys.executable, os.path.join(SCRIPTS, script), root, *arguments]
    done = subprocess.run(command, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def report(failures):
    """Prints each failure; the test's exit code."""
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0
