"""PyTorch's counterpart of bench_checkpoint: how long a training step waits
for torch.save of a PointNet++ classifier's state_dict and Adam's.

The model is benchmarks/peers/pointnet2_train_torch.py's (the same presets
as dtrain's), after one Adam step on made-up gradients so the optimizer has
its moments. Modes (rows appended to --csv, bench_checkpoint's columns):
  blocking  torch.save to a temporary file, flush and fsync, os.replace:
            the guarantee dtrain's save_checkpoint gives (old file or whole
            new one, on disk);
  no_flush  torch.save straight to the path, as most training scripts do
            (a crash mid-write leaves a broken file).
Each row is the median of --repeats saves after one untimed.

Usage:
  python checkpoint_torch.py [--preset ssg] [--repeats 7] [--dir d] [--csv f.csv]
"""

import argparse
import csv
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pointnet2_train_torch import PRESETS, PointNet2Cls, TorchOps  # noqa: E402


def save_atomically(state, path):
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)


def median_ms(repeats, save):
    times = []
    for i in range(repeats + 1):
        start = time.perf_counter()
        save()
        if i > 0:
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="ssg", choices=sorted(PRESETS))
    parser.add_argument("--classes", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--dir", default="out/bench_checkpoint")
    parser.add_argument("--csv", default="out/bench_checkpoint.csv")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = PointNet2Cls(args.preset, args.classes, ops=TorchOps)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for parameter in model.parameters():
        parameter.grad = torch.randn_like(parameter)
    optimizer.step()
    parameters = sum(p.numel() for p in model.parameters())
    os.makedirs(args.dir, exist_ok=True)
    path = os.path.join(args.dir, f"torch_{args.preset}.pt")

    def state():
        return {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epochs_done": 1}

    rows = [("blocking", median_ms(args.repeats, lambda: save_atomically(state(), path)))]
    file_mb = os.path.getsize(path) / (1 << 20)
    rows.append(("no_flush", median_ms(args.repeats, lambda: torch.save(state(), path))))
    os.remove(path)

    new = not os.path.exists(args.csv)
    with open(args.csv, "a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(["impl", "preset", "parameters", "file_mb", "mode", "repeats",
                             "median_ms"])
        for mode, ms in rows:
            writer.writerow(["torch", args.preset, parameters, f"{file_mb:.2f}", mode,
                             args.repeats, f"{ms:.3f}"])
            print(f"torch {args.preset} {mode}: {ms:.3f} ms ({file_mb:.2f} MB)")


if __name__ == "__main__":
    main()
