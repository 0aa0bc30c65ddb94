"""CUDA FPS at the kernels issue's goal size (B = 32, N = 8192 -> 1024) for a
profiler: loads libdtrain_kernels.so into the wheel's torch and calls
torch.ops.dtrain.furthest_point_sample a few times on one cloud batch, which
runs the default kernel (the register kernel, fps_registers_kernel, at this
size; the experimental kernels are not registered as torch ops).
run_gpu_checks.sh runs it under Nsight Compute (ncu), which profiles one
launch after the warm-ups, then prints where the kernel's warps stall
(`--report`): the profile's details page and the SASS instructions with the
most stall samples.

    python3 profile_fps.py --library build/kernels/libdtrain_kernels.so
    python3 profile_fps.py --report profile.ncu-rep --ncu ncu
"""

import argparse
import csv
import io
import subprocess
import sys


def run(library, launches):
    import torch

    torch.ops.load_library(library)
    torch.manual_seed(0)
    xyz = torch.rand(32, 8192, 3, device="cuda")
    for _ in range(launches):
        picks = torch.ops.dtrain.furthest_point_sample(xyz, 1024, 0)
    torch.cuda.synchronize()
    print(f"{launches} launches, picks {tuple(picks.shape)}")


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def report(path, ncu, top):
    details = subprocess.run([ncu, "--import", path, "--page", "details"],
                             capture_output=True, text=True)
    print(details.stdout + details.stderr)
    source = subprocess.run([ncu, "--import", path, "--page", "source", "--csv",
                             "--print-source", "sass"], capture_output=True, text=True)
    if source.returncode != 0:
        print(source.stdout[-2000:] + source.stderr[-2000:])
        return 1
    # The CSV's first line that names columns (ncu may print notes above it).
    lines = source.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if "Source" in line and "," in line), None)
    if start is None:
        print("no source table in ncu's output:\n" + source.stdout[:2000])
        return 1
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    columns = list(rows[0].keys()) if rows else []
    stall = next((c for c in columns if "Warp Stall Sampling (All" in c), None)
    if stall is None:
        print("columns: " + ", ".join(columns))
        return 1
    total = sum(number(r[stall]) for r in rows) or 1.0
    # Besides the address and the instruction, the columns that hold samples.
    shown = [c for c in columns if c not in ("# Address", "Address", "Source")
             and any(number(r[c]) for r in rows) and ("Stall" in c or "Samples" in c)]
    print(f"top {top} of {len(rows)} SASS instructions by '{stall}' "
          f"({int(total)} samples); columns: {', '.join(shown)}")
    for r in sorted(rows, key=lambda r: -number(r[stall]))[:top]:
        address = r.get("# Address", r.get("Address", ""))
        share = 100.0 * number(r[stall]) / total
        values = " ".join(r[c] for c in shown)
        print(f"  {share:5.1f}%  {address:>6}  {r['Source'][:60]:<60}  {values}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--library", help="libdtrain_kernels.so: run the launches")
    parser.add_argument("--launches", type=int, default=3)
    parser.add_argument("--report", help="an .ncu-rep file: print where its kernel stalls")
    parser.add_argument("--ncu", default="ncu")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    if args.report:
        return report(args.report, args.ncu, args.top)
    if not args.library:
        parser.error("give --library or --report")
    run(args.library, args.launches)
    return 0


if __name__ == "__main__":
    sys.exit(main())
