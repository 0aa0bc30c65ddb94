"""All-reduce bandwidth on torch.distributed (gloo, or nccl on a GPU): the
PyTorch counterpart of benchmarks/dist/bench_allreduce.cpp, with the same
conventions.

For each size, every rank checks the result once (element i of rank r holds
(i % 17) + r; each element must come back as the sum over ranks), warms up,
then times `iters` back-to-back dist.all_reduce(SUM, float32) calls per
repeat; a repeat's time is the slowest rank's, the reported time the median
over repeats. algbw = bytes / time, busbw = algbw * 2(n-1)/n.

Usage (starts --world-size ranks with torch.multiprocessing, like the seed's
run.py):
  python allreduce_torch.py [--backend gloo|nccl] [--world-size 2] [--port 29601] [--csv out.csv]

With nccl, rank r's buffers are on cuda:(r % GPUs); ranks that share a GPU
are each their own NCCL host (NCCL_HOSTID), as dtrun --share-gpu makes
dtrain's (dtrain/dist/shared_gpu.h), and a repeat ends with a device sync,
so it times the collectives, not their launch.

CSV: backend,impl,world_size,bytes,time_us,algbw_gbps,busbw_gbps (impl=torch).
"""

import argparse
import csv
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

DEFAULT_SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
COLUMNS = ["backend", "impl", "world_size", "bytes", "time_us", "algbw_gbps", "busbw_gbps"]


def iterations_for(args, nbytes):
    return max(args.min_iters, min(args.max_iters, args.budget_bytes // nbytes))


def check_result(count, rank, world, device):
    pattern = (torch.arange(count, dtype=torch.long) % 17).to(torch.float32).to(device)
    t = pattern + rank
    dist.all_reduce(t)
    expected = pattern * world + world * (world - 1) / 2.0
    if not torch.equal(t, expected):
        raise RuntimeError(
            f"all_reduce of {count * 4} bytes gave a wrong result on rank {rank}: "
            f"max error {(t - expected).abs().max().item()}")


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_size(args, nbytes, rank, world, device):
    count = nbytes // 4
    check_result(count, rank, world, device)
    buffer = torch.ones(count, dtype=torch.float32, device=device)
    for _ in range(args.warmup):
        dist.all_reduce(buffer)
    iters = iterations_for(args, nbytes)
    repeats = args.big_repeats if nbytes >= (16 << 20) else args.repeats
    per_call_us = []
    for _ in range(repeats):
        buffer.fill_(1)  # values stay finite: at most world ** iters
        dist.barrier()
        sync(device)
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(buffer)
        sync(device)
        us = (time.perf_counter() - start) * 1e6 / iters
        slowest = torch.tensor([us], dtype=torch.float64, device=device)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        per_call_us.append(slowest.item())
    time_us = statistics.median(per_call_us)
    algbw = nbytes / (time_us * 1e-6) / 1e9
    return time_us, algbw, algbw * 2.0 * (world - 1) / world, iters


def rank_device(rank, args):
    """The CPU, or for nccl this rank's GPU; ranks sharing one are NCCL hosts of their own."""
    if args.backend != "nccl":
        return torch.device("cpu")
    gpus = torch.cuda.device_count()
    if gpus == 0:
        raise RuntimeError("--backend nccl needs a CUDA device; none is visible")
    if args.world_size > gpus:
        os.environ["NCCL_HOSTID"] = f"{socket.gethostname()}/torch-shared-gpu-rank-{rank}"
        for name, value in (("NCCL_SOCKET_IFNAME", "lo"), ("NCCL_IB_DISABLE", "1"),
                            ("NCCL_NVLS_ENABLE", "0"), ("NCCL_MNNVL_ENABLE", "0")):
            os.environ.setdefault(name, value)
    device = torch.device("cuda", rank % gpus)
    torch.cuda.set_device(device)
    return device


def run_rank(rank, args):
    torch.set_num_threads(args.threads)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    device = rank_device(rank, args)
    dist.init_process_group(args.backend, rank=rank, world_size=args.world_size)
    world = dist.get_world_size()
    writer = None
    out = None
    if rank == 0:
        print(f"# all_reduce SUM float32, torch.distributed {args.backend}, {world} ranks, "
              f"torch {torch.__version__}", flush=True)
        print(f"{'bytes':>12} {'iters':>8} {'time_us':>12} {'algbw_GB/s':>12} {'busbw_GB/s':>12}",
              flush=True)
        if args.csv:
            os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
            out = open(args.csv, "w", newline="")
            writer = csv.writer(out)
            writer.writerow(COLUMNS)
    for nbytes in args.sizes:
        time_us, algbw, busbw, iters = time_size(args, nbytes, rank, world, device)
        if rank == 0:
            print(f"{nbytes:>12} {iters:>8} {time_us:>12.1f} {algbw:>12.3f} {busbw:>12.3f}",
                  flush=True)
            if writer:
                writer.writerow([args.backend, "torch", world, nbytes, f"{time_us:.6g}",
                                 f"{algbw:.6g}", f"{busbw:.6g}"])
                out.flush()
    if out:
        out.close()
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=["gloo", "nccl"], default="gloo")
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--port", type=int, default=29601)
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=DEFAULT_SIZES)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=11)
    p.add_argument("--big-repeats", type=int, default=5)
    p.add_argument("--budget-bytes", type=int, default=64 << 20)
    p.add_argument("--min-iters", type=int, default=2)
    p.add_argument("--max-iters", type=int, default=50)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--csv", default="")
    args = p.parse_args()
    if any(s % 4 for s in args.sizes):
        p.error("--sizes must be multiples of 4 bytes")
    args.max_iters = max(args.max_iters, args.min_iters)
    procs = []
    # A fresh interpreter per rank: CUDA cannot be used in a forked child.
    context = mp.get_context("spawn" if args.backend == "nccl" else "fork")
    for rank in range(args.world_size):
        proc = context.Process(target=run_rank, args=(rank, args))
        proc.start()
        procs.append(proc)
    failed = 0
    for proc in procs:
        proc.join()
        if proc.exitcode != 0:
            failed += 1
            for other in procs:
                if other.is_alive():
                    other.terminate()
    if failed:
        print(f"allreduce_torch.py: error: {failed} rank(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
