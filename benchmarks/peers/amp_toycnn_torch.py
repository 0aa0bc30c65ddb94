"""Toy CNN training step with and without torch.autocast (CPU bf16; CUDA bf16
or fp16): the PyTorch counterpart of benchmarks/amp/bench_amp_toycnn.cpp,
same model (LeNet-5 shape, dtrain::models::ToyCnn), same loop, same flags,
same columns.

One configuration per process (peak RSS is per process). After --warmup
untimed steps, --steps steps are timed one by one; the row holds their
median, the peak RSS (resource.getrusage), the RSS growth over the set-up
and on CUDA torch.cuda.max_memory_allocated() after a reset at the end of
the set-up (blank on the CPU). fp16 scales the loss with torch.amp.GradScaler.
The loss must be finite and, under autocast, the logits in the autocast dtype.

Usage:
  python amp_toycnn_torch.py --precision bf16 --batch-size 256 --csv out.csv
  python amp_toycnn_torch.py --device cuda --precision fp16 --csv out.csv
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
           "samples_per_s", "peak_rss_mb", "train_rss_growth_mb", "peak_device_mb"]
DTYPES = {"off": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def current_rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--precision", choices=list(DTYPES), default="bf16")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--csv", default="out/amp_toycnn_torch.csv")
    args = parser.parse_args()
    # The same usage errors as bench_amp_toycnn (argparse exits 2, as CLI11 there).
    if args.precision == "fp16" and args.device != "cuda":
        parser.error("--precision: fp16 needs --device cuda (on the CPU, use bf16 or off)")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device: cuda: no CUDA device is visible")
    return args


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    autocast_on = args.precision != "off"
    expected = DTYPES[args.precision]
    model = ToyCnn(in_channels=1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    # Drawn on the CPU and moved, as bench_amp_toycnn does.
    x = torch.randn(args.batch_size, 1, 32, 32).to(device)
    y = torch.randint(0, 10, (args.batch_size,)).to(device)
    scaler = torch.amp.GradScaler(args.device, enabled=args.precision == "fp16")

    def synchronize():  # device work must be finished before a clock is read
        if cuda:
            torch.cuda.synchronize(device)

    synchronize()
    rss_after_setup = current_rss_bytes()
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)

    ms = []
    for i in range(args.warmup + args.steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        with torch.autocast(args.device, dtype=expected if autocast_on else None,
                            enabled=autocast_on):
            logits = model(x)
            if logits.dtype != expected:
                raise RuntimeError(
                    f"logits came out in {logits.dtype} with --precision {args.precision}")
            loss = F.cross_entropy(logits, y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        value = loss.item()
        synchronize()
        if not math.isfinite(value):
            raise RuntimeError(f"loss is {value} at step {i}")
        if i >= args.warmup:
            ms.append(1000.0 * (time.perf_counter() - start))
    median = statistics.median(ms)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    mib = 1 << 20
    device_mb = torch.cuda.max_memory_allocated(device) / mib if cuda else None
    samples_per_s = 1000.0 * args.batch_size / median
    print(f"torch {args.device} {args.precision} batch {args.batch_size}: {median:.2f} ms/step, "
          f"{samples_per_s:.0f} samples/s, peak RSS {peak / mib:.0f} MiB"
          + (f", peak GPU {device_mb:.1f} MiB" if cuda else ""))
    with open(args.csv, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        writer.writerow(["torch", args.device, args.precision, args.batch_size, args.threads,
                         args.steps, f"{median:.6g}", f"{samples_per_s:.6g}", f"{peak / mib:.6g}",
                         f"{(peak - rss_after_setup) / mib:.6g}",
                         f"{device_mb:.6g}" if cuda else ""])


if __name__ == "__main__":
    main()
