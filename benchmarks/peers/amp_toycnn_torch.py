"""Toy CNN training step with and without torch.autocast (CPU bf16): the
PyTorch counterpart of benchmarks/amp/bench_amp_toycnn.cpp, same model
(LeNet-5 shape, dtrain::models::ToyCnn), same loop, same columns.

One configuration per process (peak RSS is per process). After --warmup
untimed steps, --steps steps are timed one by one; the row holds their
median, the peak RSS (resource.getrusage) and the RSS growth over the set-up.
The loss must be finite and, under bf16, the logits must be bfloat16.

Usage:
  python amp_toycnn_torch.py --precision bf16 --batch-size 256 --csv out.csv
"""

import argparse
import csv
import math
import resource
import statistics
import time

import torch
import torch.nn.functional as F
from toy_cnn import ToyCnn

COLUMNS = ["impl", "device", "precision", "batch_size", "threads", "steps", "step_ms_median",
           "samples_per_s", "peak_rss_mb", "train_rss_growth_mb"]



def current_rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precision", choices=["off", "bf16"], default="bf16")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--csv", default="out/amp_toycnn_torch.csv")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    bf16 = args.precision == "bf16"
    model = ToyCnn()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(args.batch_size, 1, 32, 32)
    y = torch.randint(0, 10, (args.batch_size,))
    rss_after_setup = current_rss_bytes()

    ms = []
    for i in range(args.warmup + args.steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(x)
            expected = torch.bfloat16 if bf16 else torch.float32
            if logits.dtype != expected:
                raise RuntimeError(
                    f"logits came out in {logits.dtype} with --precision {args.precision}")
            loss = F.cross_entropy(logits, y)
        loss.backward()
        optimizer.step()
        value = loss.item()
        if not math.isfinite(value):
            raise RuntimeError(f"loss is {value} at step {i}")
        if i >= args.warmup:
            ms.append(1000.0 * (time.perf_counter() - start))
    median = statistics.median(ms)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    mib = 1 << 20
    samples_per_s = 1000.0 * args.batch_size / median
    print(f"torch cpu {args.precision} batch {args.batch_size}: {median:.2f} ms/step, "
          f"{samples_per_s:.0f} samples/s, peak RSS {peak / mib:.0f} MiB")
    with open(args.csv, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        writer.writerow(["torch", "cpu", args.precision, args.batch_size, args.threads, args.steps,
                         f"{median:.6g}", f"{samples_per_s:.6g}", f"{peak / mib:.6g}",
                         f"{(peak - rss_after_setup) / mib:.6g}"])


if __name__ == "__main__":
    main()
