"""Code samples in the README and docs/ that cannot rot: each sample is a
file the build compiles (or a script a test runs), and the document shows
that file. A sample is written as

    <!-- sample: apps/examples/ddp_minimal.cpp -->
    ```cpp
    ...the file, from its first line that is not a comment...
    ```

    python3 scripts/docs_samples.py --check    # exit 1 naming each sample that differs
    python3 scripts/docs_samples.py --write    # copy the files into the documents

ctest's lint.docs_samples runs --check. Standard library only.
"""

import argparse
import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
MARKER = re.compile(r"<!-- sample: (\S+) -->\n```(\w*)\n(.*?)```\n", re.S)


def documents():
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def sample_text(path):
    """The file from its first line that is not a comment (its header
    comment says what the file is; the document says that in prose)."""
    lines = (REPO / path).read_text().splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines)
                  if line.strip() and not line.lstrip().startswith(("//", "#!", "# "))), 0)
    return "".join(lines[first:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--write", action="store_true")
    args = parser.parse_args()
    stale = []
    for document in documents():
        text = document.read_text()

        def replace(match):
            path, language, shown = match.group(1), match.group(2), match.group(3)
            if not (REPO / path).is_file():
                stale.append(f"{document.relative_to(REPO)}: sample {path} does not exist")
                return match.group(0)
            wanted = sample_text(path)
            if shown != wanted:
                stale.append(f"{document.relative_to(REPO)}: sample {path} differs from the file")
            return f"<!-- sample: {path} -->\n```{language}\n{wanted}```\n"

        updated = MARKER.sub(replace, text)
        if args.write and updated != text:
            document.write_text(updated)
    if args.check and stale:
        print("\n".join(stale) + "\n(python3 scripts/docs_samples.py --write copies the files "
              "into the documents)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
