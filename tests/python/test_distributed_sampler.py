"""dtrain's DistributedSampler against torch.utils.data.DistributedSampler.

Usage: python test_distributed_sampler.py path/to/dtrain_sampler_indices

Feeds a grid of (size, replicas, rank, seed, epoch, shuffle, drop_last)
cases to the C++ program, one per line, and compares every answer with
PyTorch's sampler from the same wheel: the index list, num_samples and
total_size must be equal, and an invalid rank must be an error on both
sides. Exits 1 listing the first differences, 77 (ctest's skip code) when
torch cannot be imported.
"""

import itertools
import subprocess
import sys

try:
    import torch  # noqa: F401  (the sampler below needs it)
    from torch.utils.data import DistributedSampler
except ImportError as error:  # pragma: no cover - depends on the environment
    print(f"skipped: cannot import torch ({error})")
    sys.exit(77)

# Sizes below, equal to and above the world sizes, primes, powers of two
# and their neighbours: they exercise no padding, padding shorter than the
# dataset and padding longer than it (size < replicas / 2), and drop_last
# cutting to nothing.
SIZES = [1, 2, 3, 5, 7, 8, 10, 16, 17, 33, 100, 1000, 4097]
WORLDS = [1, 2, 3, 4, 5, 8, 13]
SEEDS = [0, 1, 42, -3, 2**40 + 1]
EPOCHS = [0, 3]


def cases():
    for size, world, seed, epoch, shuffle, drop_last in itertools.product(
        SIZES, WORLDS, SEEDS, EPOCHS, [True, False], [False, True]
    ):
        for rank in range(world):
            yield (size, world, rank, seed, epoch, shuffle, drop_last)
    # A larger permutation, and seed + epoch past the int64 range (Python
    # wraps it modulo 2^64 in manual_seed; C++ must too).
    for rank in range(3):
        yield (100003, 3, rank, 7, 11, True, False)
        yield (100003, 3, rank, 7, 11, True, True)
        yield (50, 3, rank, 2**63 - 1, 5, True, False)
    # Invalid ranks: PyTorch raises ValueError, dtrain raises dtrain::Error.
    for size, world, rank in [(10, 4, 4), (10, 4, -1), (10, 1, 1), (10, 0, 0), (10, -2, 0)]:
        yield (size, world, rank, 0, 0, True, False)


def expected(case):
    size, world, rank, seed, epoch, shuffle, drop_last = case
    try:
        sampler = DistributedSampler(
            range(size),
            num_replicas=world,
            rank=rank,
            shuffle=shuffle,
            seed=seed,
            drop_last=drop_last,
        )
    except ValueError:
        return "error"
    sampler.set_epoch(epoch)
    return " ".join(["ok", str(sampler.num_samples), str(sampler.total_size)] + [str(i) for i in sampler])


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    all_cases = list(cases())
    stdin = "".join(" ".join(str(int(v)) for v in case) + "\n" for case in all_cases)
    run = subprocess.run([sys.argv[1]], input=stdin, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        print(f"{sys.argv[1]} exited {run.returncode}:\n{run.stderr}")
        return 1
    answers = run.stdout.splitlines()
    if len(answers) != len(all_cases):
        print(f"expected {len(all_cases)} answers, got {len(answers)}")
        return 1
    failures = []
    for case, answer in zip(all_cases, answers):
        want = expected(case)
        got = "error" if answer.startswith("error ") else answer
        if got != want:
            failures.append((case, want, answer))
    for case, want, got in failures[:10]:
        print(f"case (size, replicas, rank, seed, epoch, shuffle, drop_last) = {case}")
        print(f"  torch:  {want[:300]}")
        print(f"  dtrain: {got[:300]}")
    print(f"{len(all_cases) - len(failures)} of {len(all_cases)} cases equal")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
