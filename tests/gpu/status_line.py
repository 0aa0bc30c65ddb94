"""The README's one line of GPU status, made from a GPU run's summary alone
(benchmarks/results/gpu_summary.txt, written by summarize.py), so that no
one writes it by hand:

    python3 tests/gpu/status_line.py benchmarks/results/gpu_summary.txt

prints e.g. "GPU status (commit 0123456789ab, NVIDIA H100 80GB HBM3): NCCL
conformance at 2/3/4 ranks passed/passed/passed; DDP against one process on
NCCL: max |dparam| 2e-07; main job on CUDA fp32/bf16/fp16 test accuracy
91.2%/90.8%/90.4%; FPS B=32 N=8192 -> 1024: 0.75 ms." A figure the run did
not produce reads "not run". `--check README.md` instead exits 1 unless the README holds that
line (python.gpu_status_line runs it).
"""

import argparse
import re
import sys


def field(text, pattern, default="not run"):
    found = re.search(pattern, text, re.M)
    return found.group(1).strip() if found else default


def status_line(summary):
    commit = field(summary, r"^commit: ([0-9a-f]{40}(?: dirty [0-9a-f]+)?)\s*$", "")
    commit = (commit[:12] + (" dirty" if "dirty" in commit else "")) if commit else "unknown"
    gpu = field(summary, r"^\s+(NVIDIA [^,]+),", "unknown GPU")
    conformance = "/".join(
        field(summary, rf"^nccl_conformance world={n}: (passed|failed|not run)") for n in (2, 3, 4))
    diffs = [field(summary, rf"^ddp_equivalence_nccl world={n}: max_abs_diff=(\S+)", "")
             for n in (2, 3)]
    ddp = (f"max |dparam| {max(float(d) for d in diffs if d):.2g}" if any(diffs) else "not run")
    accuracy = []
    for precision in ("fp32", "bf16", "fp16"):
        value = field(summary, rf"^main_job_cuda precision={precision}: test_accuracy=(\S+)", "")
        accuracy.append(f"{100 * float(value):.1f}%" if value else "not run")
    fps = field(summary, r"^fps_b32_n8192_m1024_ms=(\S+)")
    fps = f"{float(fps):.2f} ms" if fps != "not run" else fps
    return (f"GPU status (commit {commit}, {gpu}): NCCL conformance at 2/3/4 ranks {conformance}; "
            f"DDP against one process on NCCL: {ddp}; main job on CUDA fp32/bf16/fp16 test "
            f"accuracy {'/'.join(accuracy)}; FPS B=32 N=8192 -> 1024: {fps}.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("summary", help="a GPU run's gpu_summary.txt")
    parser.add_argument("--check", metavar="README", help="exit 1 unless README holds the line")
    args = parser.parse_args()
    line = status_line(open(args.summary).read())
    if not args.check:
        print(line)
        return 0
    if line in open(args.check).read().splitlines():
        return 0
    print(f"{args.check} lacks the GPU status line made from {args.summary}:\n{line}",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
