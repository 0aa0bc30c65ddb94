"""The GPU part of benchmarks/results/SUMMARY.md: only the lines of
gpu_summary.txt that tests/gpu/summarize.py defines for tools (commit,
nccl_conformance, ddp_equivalence_nccl, main_job_cuda,
pointnet2_step_vs_torch, fps_b32_n8192_m1024_ms) and, with that commit, the
GPU CSVs of the same run. A line that is absent reads "not run"; without a
commit line nothing of the file is used, since a figure without its commit
cannot be placed.
"""

import os
import re

import stats

PRECISIONS = ("fp32", "bf16", "fp16")


def field(text, pattern):
    found = re.search(pattern, text, re.M)
    return found.group(1).strip() if found else None


def fps_peer(results):
    """The usual one-block-per-cloud kernel's FPS at B=32, N=8192 -> 1024 from
    gpu_pointnet2_ops.csv (bench_pointnet2_ops' row of that run), or None."""
    path = os.path.join(results, "gpu_pointnet2_ops.csv")
    if not os.path.exists(path):
        return None
    for row in stats.read_csv(path):
        if (row.get("op"), row.get("B"), row.get("N"), row.get("impl")) == \
                ("furthest_point_sample", "32", "8192", "one_block_per_cloud_global"):
            return float(row["median_ms"])
    return None


def lines(results):
    path = os.path.join(results, "gpu_summary.txt")
    text = open(path).read() if os.path.exists(path) else ""
    commit = field(text, r"^commit: ([0-9a-f]{40}(?: dirty [0-9a-f]+)?)\s*$")
    intro = ("From `gpu_summary.txt` (written by `tests/gpu/run_gpu_checks.sh` on a GPU machine), "
             "its tool lines only.")
    if not commit:
        return [intro, "", "Not run: " + ("`gpu_summary.txt` has no `commit:` line (a run in an "
                                          "older format), so none of its figures is used."
                                          if text else "there is no `gpu_summary.txt`.")]
    gpu = field(text, r"^\s+(NVIDIA [^,]+),") or "unknown GPU"
    out = [intro, "", f"Commit {commit}, {gpu}.", "", "| figure | value |", "| --- | --- |"]
    for world in (2, 3, 4):
        value = field(text, rf"^nccl_conformance world={world}: (.*)$") or "not run"
        out.append(f"| NCCL conformance, {world} ranks on one GPU | {value} |")
    for world in (2, 3):
        value = field(text, rf"^ddp_equivalence_nccl world={world}: (.*)$") or "not run"
        out.append(f"| DDP on NCCL against one process, {world} ranks | {value} |")
    for precision in PRECISIONS:
        value = field(text, rf"^main_job_cuda precision={precision}: (.*)$") or "not run"
        out.append(f"| main job on CUDA, {precision} | {value} |")
    for precision in PRECISIONS:
        value = field(text, rf"^pointnet2_step_vs_torch precision={precision}: ratio=(\S+)")
        shown = f"{value}x (torch ms / dtrain ms)" if value else "not run"
        out.append(f"| PointNet++ ssg step against the pointnet2_ops-style Python model, "
                   f"{precision} | {shown} |")
    fps = field(text, r"^fps_b32_n8192_m1024_ms=(\S+)")
    fps = fps if fps and fps != "not run" else None
    out.append(f"| FPS B=32 N=8192 -> 1024, dtrain | {fps + ' ms' if fps else 'not run'} |")
    peer = fps_peer(results)
    out.append("| FPS B=32 N=8192 -> 1024, one block per cloud in global memory (the usual "
               "extension's kernel) | " + (f"{peer:.3f} ms" + (f" ({peer / float(fps):.2f}x "
                                                             "dtrain's time)" if fps else "")
                                           if peer is not None else "not run") + " |")
    return out
