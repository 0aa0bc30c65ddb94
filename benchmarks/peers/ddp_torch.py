"""PyTorch's DistributedDataParallel counterpart of benchmarks/ddp/bench_ddp.cpp:
the same models (toycnn, pointmlp), data shapes, optimizer, thread count,
lockstep turns and CSV rows (backward_ms_median: from the loss to the end of
backward, DDP's wait for the last all-reduce included; step_ms_mean: the
slowest rank's mean step), with
torch.nn.parallel.DistributedDataParallel over Gloo from the same wheel.

  RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 \
      python ddp_torch.py --model toycnn --mode ddp --batch 32 --csv out.csv
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from lockstep import Lockstep
from toy_cnn import ToyCnn


class PointMlp(nn.Module):
    """bench_ddp.cpp's PointMlp: shared MLP to 1024, max over points, head to 40."""

    def __init__(self):
        super().__init__()
        point = [3, 64, 64, 128, 128, 128, 256, 256, 512, 1024]
        layers = []
        for a, b in zip(point, point[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.point_mlp = nn.Sequential(*layers)
        head = [1024, 512, 256, 40]
        layers = []
        for i, (a, b) in enumerate(zip(head, head[1:])):
            layers.append(nn.Linear(a, b))
            if i + 2 < len(head):
                layers.append(nn.ReLU())
        self.head = nn.Sequential(*layers)

    def forward(self, points):
        return self.head(self.point_mlp(points).max(dim=1).values)


def percentile(values, q):
    values = sorted(values)
    return values[int(q * (len(values) - 1) + 0.5)]


def append_rounds_csv(args, world, parameters, results):
    """One CSV row per round (appended, with a header when the file is new)."""
    fresh = not os.path.exists(args.csv)
    with open(args.csv, "a") as f:
        if fresh:
            f.write("impl,model,mode,world,batch_per_rank,parameters,round,steps,"
                    "step_ms_median,step_ms_p10,step_ms_p90,step_ms_mean,backward_ms_median,"
                    "hidden_pct\n")
        for round_, (step_ms, backward_ms, slowest) in enumerate(results):
            f.write(f"torch,{args.model},{args.mode},{world},{args.batch},{parameters},"
                    f"{round_},{len(step_ms)},{percentile(step_ms, 0.5):.4f},"
                    f"{percentile(step_ms, 0.1):.4f},{percentile(step_ms, 0.9):.4f},"
                    f"{slowest:.4f},{percentile(backward_ms, 0.5):.4f},\n")


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["toycnn", "pointmlp"], default="toycnn")
    p.add_argument("--mode", choices=["local", "ddp"], default="ddp")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--lockstep", default="")
    p.add_argument("--points", type=int, default=512)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bucket-cap-mb", type=float, default=25)
    p.add_argument("--csv", default="")
    return p.parse_args()


def main():
    args = parse_args()

    torch.set_num_threads(args.threads)
    ddp_mode = args.mode == "ddp"
    # Local mode with several ranks: independent models side by side; the
    # group only keeps the ranks' lockstep turns together.
    grouped = ddp_mode or int(os.environ.get("WORLD_SIZE", "1")) > 1
    if grouped:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if grouped else 0
    world = dist.get_world_size() if grouped else 1
    generator = torch.Generator().manual_seed(1000 + rank)
    torch.manual_seed(0)
    if args.model == "toycnn":
        model = ToyCnn(in_channels=1)
        inputs = torch.randn(args.batch, 1, 32, 32, generator=generator)
        labels = torch.randint(10, (args.batch,), generator=generator)
    else:
        model = PointMlp()
        inputs = torch.randn(args.batch, args.points, 3, generator=generator)
        labels = torch.randint(40, (args.batch,), generator=generator)
    parameters = sum(p.numel() for p in model.parameters())
    if ddp_mode:
        model = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


    def train_step():
        """One step; returns the milliseconds of backward (DDP's wait included)."""
        optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs), labels)
        start = time.perf_counter()
        loss.backward()
        backward_ms = 1000.0 * (time.perf_counter() - start)
        optimizer.step()
        return backward_ms

    lockstep = Lockstep(args.lockstep, rank)
    rounds = args.rounds if lockstep.active else 1
    results = []
    for round_ in range(rounds):
        lockstep.wait_turn(round_)
        if round_ == 0:
            for _ in range(args.warmup):
                train_step()
        step_ms, backward_ms = [], []
        for _ in range(args.steps):
            start = time.perf_counter()
            backward_ms.append(train_step())
            step_ms.append(1000.0 * (time.perf_counter() - start))
        slowest = torch.tensor([sum(step_ms) / len(step_ms)], dtype=torch.float64)
        if world > 1:  # the slowest rank's mean step; also a barrier
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        lockstep.pass_turn(round_)
        results.append((step_ms, backward_ms, slowest.item()))

    median = percentile([ms for step_ms, _, _ in results for ms in step_ms], 0.5)
    samples_per_s = 1000.0 * args.batch * world / median
    print(f"[torch rank {rank}] {args.model} {args.mode} world {world} batch {args.batch}/rank: "
          f"{median:.2f} ms/step median over {rounds} rounds, {samples_per_s:.0f} samples/s",
          flush=True)
    if rank == 0 and args.csv:
        append_rounds_csv(args, world, parameters, results)
    # DDP holds the group's backend: it goes first, so that no Gloo thread is
    # left for the interpreter's exit, where torch's ProcessGroupGloo then
    # ends the process ("terminate called without an active exception").
    del train_step, optimizer, model
    if grouped:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
