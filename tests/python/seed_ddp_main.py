"""The seed tutorial's main.py, on the CPU and on random one-channel
images: a PyTorch program that dtrun starts as it is, as torchrun would
(dist.init_process_group() with nothing passed, LOCAL_RANK from the
environment, DDP and DistributedSampler). Prints one line per rank for test_dtrun_python.py:

  rank R of W local L group G: params <checksum> samples <indices>
"""

import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

# The seed's ToyModel, as the peer benchmarks define it (one input channel).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "benchmarks", "peers"))
from toy_cnn import ToyCnn  # noqa: E402


def main():
    torch.set_num_threads(1)
    dist.init_process_group("gloo")  # env://, as dtrun sets it up
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.manual_seed(1 + rank)  # the seed's init_seeds(1 + rank): DDP syncs the weights
    generator = torch.Generator().manual_seed(0)
    images = torch.randn(32, 1, 32, 32, generator=generator)
    labels = torch.randint(0, 10, (32,), generator=generator)
    dataset = TensorDataset(torch.arange(32), images, labels)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    model = DDP(ToyCnn(in_channels=1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    seen = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for index, data, label in loader:
            seen.extend(index.tolist())
            optimizer.zero_grad()
            F.cross_entropy(model(data), label).backward()
            optimizer.step()
    checksum = sum(p.detach().double().sum().item() for p in model.parameters())
    # One write, newline included: the workers share dtrun's stdout, and
    # print() writes its end separately when Python runs unbuffered.
    sys.stdout.write(f"rank {rank} of {dist.get_world_size()} local {local_rank} "
                     f"group {os.environ['GROUP_RANK']}: params {checksum:.12e} "
                     f"samples {','.join(map(str, seen))}\n")
    sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
