"""PointNet++ classifier training step in Python PyTorch: the counterpart of
benchmarks/models/bench_pointnet2_train.cpp (dtrain's C++ model).

The model is dtrain::models::PointNet2Cls's PyTorch twin
(models/torch_twins/pointnet2.py: the same layers, presets and names), run
with its point ops from one of:

  torch_python        point ops in pure PyTorch, the widely copied
                      "pointnet2_utils.py" style users write without a kernel
                      package (iterative FPS loop, cdist + topk ball query,
                      torch.gather grouping; from pointnet2_ops_torch.py);
  torch_python_dtrain the same Python model calling dtrain's kernels as
                      torch.ops.dtrain.* (torch.ops.load_library);
  torch_python_dtrain_channels_last
                      that model with the memory layout dtrain's C++ model
                      uses: point-major coordinates and features, so the
                      kernels group them channels-last, and the max over
                      each neighbourhood taken on the (B, M, K, C) view. The
                      gap from here to dtrain_cpp is the frontend (Python
                      against C++), when both run under the same malloc
                      settings (run_pointnet2_train.sh sets dtrain's for
                      this script);
  torch_python_pointnet2_ops
                      (--device cuda) the model on the CUDA ops as the
                      pointnet2_ops extension writes them: one block per
                      cloud for FPS, one thread per centre for ball query,
                      atomics in the backward passes (pointnet2_ops_style.py).

--device cuda runs the step on the GPU (default impls: torch_python_pointnet2_ops
and torch_python_dtrain); --amp bf16 or fp16 (CUDA; with torch.amp.GradScaler)
runs the forward and the loss under torch.autocast.

A step: zero_grad, forward + cross-entropy, backward, Adam step, on one fixed
batch of clouds uniform in [-1, 1]^3; --warmup untimed steps, then the
median of --steps timed ones. Rows are appended to --out (same columns as
the C++ benchmark).

Usage:
  python pointnet2_train_torch.py --library build/kernels/libdtrain_kernels.so \
      [--preset ssg-lite] [--batch-size 16] [--points 512] [--threads 1] [--amp bf16] \
      [--device cuda] [--out f.csv]
"""

import argparse
import csv
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models"))
from pointnet2_ops_torch import ball_query_torch, fps_torch, gather_torch, group_torch  # noqa: E402
from torch_twins.pointnet2 import CLS_PRESETS as PRESETS  # noqa: E402
from torch_twins.pointnet2 import DtrainOps, PointNet2Cls  # noqa: E402


class TorchOps:
    fps = staticmethod(fps_torch)
    gather = staticmethod(gather_torch)
    group = staticmethod(group_torch)

    @staticmethod
    def ball(new_xyz, xyz, radius, nsample):
        return ball_query_torch(new_xyz, xyz, radius, nsample)


# impl: (point ops, channels-last set abstraction); the pointnet2_ops style
# is loaded on first use (it builds with nvcc).
IMPLS = {"torch_python": (TorchOps, False), "torch_python_dtrain": (DtrainOps, False),
         "torch_python_dtrain_channels_last": (DtrainOps, True),
         "torch_python_pointnet2_ops": (None, False)}
DEFAULT_IMPLS = {"cpu": "torch_python,torch_python_dtrain,torch_python_dtrain_channels_last",
                 "cuda": "torch_python_pointnet2_ops,torch_python_dtrain"}


def time_steps(model, points, labels, warmup, steps, amp):
    device = points.device.type
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler(device, enabled=amp == "fp16")
    dtype = torch.float16 if amp == "fp16" else torch.bfloat16
    times = []
    for i in range(warmup + steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        with torch.autocast(device, dtype=dtype, enabled=amp != "off"):
            loss = F.cross_entropy(model(points), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        value = loss.item()  # also waits for the step to finish
        if value != value or abs(value) == float("inf"):
            raise SystemExit(f"pointnet2_train_torch: loss is {value} at step {i}")
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--library", required=True, help="path to libdtrain_kernels.so")
    parser.add_argument("--preset", default="ssg-lite", choices=sorted(PRESETS))
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--points", type=int, default=512)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--impls", help="comma list (default: by --device)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--amp", default="off", choices=["off", "bf16", "fp16"],
                        help="forward and loss under torch.autocast (impl gets _bf16 or _fp16); "
                             "fp16 with torch.amp.GradScaler, CUDA only")
    parser.add_argument("--out", default="pointnet2_train_torch.csv")
    args = parser.parse_args()
    if args.amp == "fp16" and args.device != "cuda":
        parser.error("--amp fp16 needs --device cuda")
    args.impls = args.impls or DEFAULT_IMPLS[args.device]
    torch.ops.load_library(args.library)
    torch.set_num_threads(args.threads)
    header = ["impl", "preset", "batch_size", "points", "threads", "steps", "step_ms_median",
              "samples_per_s", "peak_rss_mb"]
    new_file = not os.path.exists(args.out) or os.path.getsize(args.out) == 0
    with open(args.out, "a", newline="") as f:
        writer = csv.writer(f)
        if new_file:
            writer.writerow(header)
        for impl in args.impls.split(","):
            ops, channels_last = IMPLS[impl]
            if ops is None:
                from pointnet2_ops_style import Pointnet2OpsStyle
                ops = Pointnet2OpsStyle.load(os.path.dirname(os.path.abspath(args.out)))
            torch.manual_seed(0)
            model = PointNet2Cls(args.preset, args.classes, ops=ops,
                                 channels_last=channels_last).to(args.device)
            points = (torch.rand(args.batch_size, args.points, 3) * 2 - 1).to(args.device)
            labels = torch.randint(0, args.classes, (args.batch_size,)).to(args.device)
            median = time_steps(model, points, labels, args.warmup, args.steps, args.amp)
            if args.device == "cuda":
                impl += "_cuda"
            if args.amp != "off":
                impl += "_" + args.amp
            peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{impl} {args.preset} batch {args.batch_size} x {args.points} points: "
                  f"{median:.1f} ms/step, {1000 * args.batch_size / median:.1f} clouds/s")
            writer.writerow([impl, args.preset, args.batch_size, args.points, args.threads,
                             args.steps, f"{median:.6g}",
                             f"{1000 * args.batch_size / median:.6g}", f"{peak_mb:.6g}"])
            f.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
