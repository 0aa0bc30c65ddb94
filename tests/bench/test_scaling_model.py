"""The scaling model's check (benchmarks/report/scaling_model.py) on made-up
blocks whose predictions can be worked out by hand: the synchronous step
as compute from 2 ranks, the engine's 1-rank cost added, and communication
hidden behind backward only where a core is left for it."""

import os
import sys
import unittest
from collections import defaultdict

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "benchmarks", "report"))
import scaling_model  # noqa: E402

PARAMETERS = 2 * scaling_model.MIB // 4  # a 2 MiB gradient: two 1 MiB buckets
ALPHA_US, BETA = 100.0, 1e-3  # 1 ns per byte: a 1 MiB bucket costs 1.05 ms on 2 ranks


def block(mean_ms, backward_ms=0.0):
    return {"mean_ms": str(mean_ms), "backward_ms": str(backward_ms),
            "parameters": str(PARAMETERS)}


def measured(ddp1=(10.5, 10.5), local1=(10.0, 10.0), sync2=(12.0, 12.0), ddp2=(15.0, 16.0)):
    """Two rounds of one model at 1 and 2 ranks."""
    rounds = lambda values, backward=0.0: {str(r): block(v, backward)  # noqa: E731
                                           for r, v in enumerate(values)}
    return {"net": {
        1: {"dtrain-local": rounds(local1, 6.0), "dtrain-ddp": rounds(ddp1)},
        2: {"dtrain-local": rounds((11.0, 11.0), 6.0), "dtrain-sync": rounds(sync2),
            "dtrain-ddp": rounds(ddp2)}}}


def row(rows, ranks, overlap):
    return next(r for r in rows if r["ranks"] == ranks and r["overlap"] == overlap)


class ScalingCheck(unittest.TestCase):
    def setUp(self):
        self.bucket_ms = scaling_model.ring_here(ALPHA_US, BETA, 2)(scaling_model.MIB)

    def test_two_ranks_add_the_engine_and_every_bucket_without_a_spare_core(self):
        rows = scaling_model.check_rows(measured(), ALPHA_US, BETA, cores=2)
        self.assertAlmostEqual(self.bucket_ms, 0.2 + 1.048576, places=6)
        for overlap in ("no", "yes"):
            predicted = row(rows, 2, overlap)
            self.assertAlmostEqual(predicted["engine_ms"], 0.5)
            self.assertAlmostEqual(predicted["step_ms"], 12.0 + 0.5 + 2 * self.bucket_ms)
        # per round: 14.797 / 15 and 14.797 / 16, whose median is their mean
        expected = 100 * ((12.5 + 2 * self.bucket_ms) * (1 / 15 + 1 / 16) / 2 - 1)
        self.assertAlmostEqual(row(rows, 2, "yes")["error_pct"], expected, places=6)

    def test_a_spare_core_hides_all_but_the_last_bucket_behind_backward(self):
        rows = scaling_model.check_rows(measured(), ALPHA_US, BETA, cores=4)
        self.assertAlmostEqual(row(rows, 2, "no")["step_ms"], 12.5 + 2 * self.bucket_ms)
        # backward (6 ms) outlasts the first bucket: only the last is exposed
        self.assertAlmostEqual(row(rows, 2, "yes")["step_ms"], 12.5 + self.bucket_ms)

    def test_one_rank_is_the_local_step_plus_the_engine(self):
        rows = scaling_model.check_rows(measured(), ALPHA_US, BETA, cores=2)
        self.assertAlmostEqual(row(rows, 1, "yes")["step_ms"], 10.5)
        self.assertAlmostEqual(row(rows, 1, "yes")["error_pct"], 0.0)

    def test_an_engine_faster_than_local_is_noise_and_costs_nothing(self):
        rows = scaling_model.check_rows(measured(ddp1=(9.0, 9.5)), ALPHA_US, BETA, cores=2)
        self.assertEqual(row(rows, 2, "no")["engine_ms"], 0.0)
        self.assertAlmostEqual(row(rows, 2, "no")["step_ms"], 12.0 + 2 * self.bucket_ms)

    def test_blocks_without_a_synchronous_baseline_are_refused_by_name(self):
        blocks = measured()
        blocks["net"][2] = defaultdict(dict, blocks["net"][2])
        del blocks["net"][2]["dtrain-sync"]
        with self.assertRaises(SystemExit) as refused:
            scaling_model.check_rows(blocks, ALPHA_US, BETA, cores=2)
        self.assertIn("no synchronous blocks (dtrain-sync) of net at 2 ranks",
                      str(refused.exception))


if __name__ == "__main__":
    unittest.main()
