"""Which source a GPU run measured, without trusting the GPU machine's .git.

The working tree travels to the GPU machine as files; a .git beside it, if
any, may be older than the tree. So before the tree travels,

    python3 tests/gpu/source_stamp.py write      # here, in the repository

records in .gpu-deps/source.txt (which travels with the carried
dependencies) the commit (git rev-parse HEAD), whether the tree differs from
it (and a hash of that difference: `git diff HEAD` plus the untracked
files), the files of the tree and a hash of their contents. On the GPU
machine,

    python3 tests/gpu/source_stamp.py check      # prints the summary's line

hashes the same files again and prints "commit: <40 hex digits>" (with
" dirty <12 hex digits>" when the tree differed from the commit), or
"commit: unknown (...)" when the files there are not the stamped ones.
Standard library only.
"""

import argparse
import hashlib
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAMP = os.path.join(REPO, ".gpu-deps", "source.txt")


def tree_hash(files):
    """sha256 over each file's name and contents, in the order given."""
    total = hashlib.sha256()
    for name in files:
        total.update(name.encode() + b"\0")
        path = os.path.join(REPO, name)
        if os.path.islink(path):
            total.update(b"link:" + os.readlink(path).encode())
        elif os.path.isfile(path):
            with open(path, "rb") as f:
                total.update(hashlib.sha256(f.read()).digest())
        else:
            total.update(b"missing")
    return total.hexdigest()


def git(*args):
    return subprocess.run(["git", "-C", REPO, *args], check=True, capture_output=True).stdout


def write():
    commit = git("rev-parse", "HEAD").decode().strip()
    files = sorted(git("ls-files", "-co", "--exclude-standard", "-z").decode().split("\0"))
    files = [f for f in files if f]
    untracked = git("ls-files", "-o", "--exclude-standard", "-z").decode().split("\0")
    difference = hashlib.sha256(git("diff", "HEAD", "--binary"))
    difference.update(tree_hash(sorted(f for f in untracked if f)).encode())
    dirty = bool(git("status", "--porcelain"))
    os.makedirs(os.path.dirname(STAMP), exist_ok=True)
    with open(STAMP, "w") as f:
        f.write(f"commit {commit}\n")
        f.write(f"dirty {difference.hexdigest()[:12] if dirty else '-'}\n")
        f.write(f"tree {tree_hash(files)}\n")
        f.writelines(f"file {name}\n" for name in files)
    print(f".gpu-deps/source.txt: commit {commit}{' (dirty)' if dirty else ''}, {len(files)} files")


def check():
    if not os.path.exists(STAMP):
        print("commit: unknown (no .gpu-deps/source.txt: run tests/gpu/source_stamp.py write "
              "before the tree travels)")
        return 0
    fields = {"file": []}
    with open(STAMP) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition(" ")
            if key == "file":
                fields["file"].append(value)
            else:
                fields[key] = value
    if tree_hash(fields["file"]) != fields.get("tree"):
        print("commit: unknown (the files here differ from those stamped at commit "
              f"{fields.get('commit', '?')}: stamp again before the tree travels)")
        return 0
    dirty = fields.get("dirty", "-")
    print(f"commit: {fields['commit']}" + ("" if dirty == "-" else f" dirty {dirty}"))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["write", "check"])
    args = parser.parse_args()
    return write() if args.mode == "write" else check()


if __name__ == "__main__":
    sys.exit(main() or 0)
