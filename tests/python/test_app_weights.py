"""The apps' weights flags against PyTorch itself.

Usage: python test_app_weights.py DTRUN TRAIN_POINTNET2 CHECKPOINT_TO_PYTORCH LIBDTRAIN_KERNELS

- --export-weights after a two-process run writes a state dict that
  torch.load reads and the PyTorch twin takes strictly; checkpoint_to_pytorch
  turns the run's checkpoint into the same tensors;
- --init-weights starts a run from a torch.save'd state dict (at a learning
  rate too small to move them, the exported weights are still those);
- a file that does not fit (cut short, another model's, a key of another
  shape) ends in one line naming the file (and the key), and trains nothing:
  no report, no checkpoint;
- --init-weights-partial loads what fits (another head) and says so.
Exits 77 when torch cannot be imported.
"""

import os
import subprocess
import sys
import tempfile
import unittest

try:
    import torch
except ImportError as error:  # pragma: no cover - depends on the environment
    print(f"skipped: cannot import torch ({error})")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models"))
from torch_twins.pointnet2 import PointNet2Cls  # noqa: E402
from torch_twins.toy_cnn import ToyCnn  # noqa: E402

DTRUN = TRAIN = TO_PYTORCH = None
CLASSES = 3


def small_run(folder, *more):
    """A few clouds of the synthetic shapes, as the C++ end-to-end tests train them."""
    return ["--data-dir", os.path.join(folder, "shapes"), "--synthetic-classes", str(CLASSES),
            "--synthetic-train-per-class", "16", "--synthetic-test-per-class", "8",
            "--num-points", "256", "--model", "ssg-lite", "--batch-size", "8", "--threads", "1",
            "--epochs", "1", "--csv", os.path.join(folder, "report.csv"), *more]


def run(command):
    return subprocess.run(command, capture_output=True, text=True, timeout=240)


class AppWeights(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.folder = self.dir.name
        torch.manual_seed(0)

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.folder, name)

    def test_exported_weights_load_in_pytorch(self):
        result = run([DTRUN, "--standalone", "--nproc-per-node", "2", TRAIN,
                      *small_run(self.folder, "--checkpoint", self.path("run.pt"),
                                 "--export-weights", self.path("out/weights.pt"))])
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        exported = torch.load(self.path("out/weights.pt"))
        twin = PointNet2Cls("ssg-lite", CLASSES)
        twin.load_state_dict(exported)  # strict
        converted = run([TO_PYTORCH, self.path("run.pt"), self.path("converted.pt")])
        self.assertEqual(converted.returncode, 0, converted.stderr)
        self.assertIn(f'PointNet2Cls("ssg-lite", {CLASSES}, in_channels=0)', converted.stdout)
        from_checkpoint = torch.load(self.path("converted.pt"))
        self.assertEqual(list(from_checkpoint), list(exported))
        for name, tensor in exported.items():
            self.assertTrue(torch.equal(tensor, from_checkpoint[name]), name)

    def test_a_run_starts_from_pytorch_weights(self):
        twin = PointNet2Cls("ssg-lite", CLASSES)
        torch.save(twin.state_dict(), self.path("from_python.pt"))
        result = run([TRAIN, *small_run(self.folder, "--init-weights", self.path("from_python.pt"),
                                        "--lr", "1e-12", "--export-weights",
                                        self.path("after.pt"))])
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("initial weights from " + self.path("from_python.pt"), result.stdout +
                      result.stderr)
        after = torch.load(self.path("after.pt"))
        for name, parameter in twin.named_parameters():
            difference = (after[name] - parameter.detach()).abs().max().item()
            self.assertLess(difference, 1e-6, name)

    def assert_trains_nothing(self, weights_file, *words):
        result = run([TRAIN, *small_run(self.folder, "--init-weights", weights_file,
                                        "--checkpoint", self.path("never.pt"))])
        output = (result.stdout + result.stderr).strip()
        self.assertEqual(result.returncode, 1, output)
        self.assertEqual(len(output.splitlines()), 1, output)
        for word in (weights_file, *words):
            self.assertIn(word, output)
        self.assertFalse(os.path.exists(self.path("report.csv")))
        self.assertFalse(os.path.exists(self.path("never.pt")))

    def test_a_file_that_does_not_fit_trains_nothing(self):
        good = self.path("good.pt")
        torch.save(PointNet2Cls("ssg-lite", CLASSES).state_dict(), good)
        with open(good, "rb") as f:
            data = f.read()
        with open(self.path("cut.pt"), "wb") as f:
            f.write(data[: len(data) // 3])
        self.assert_trains_nothing(self.path("cut.pt"), "cannot read state dict")
        torch.save(ToyCnn().state_dict(), self.path("toycnn.pt"))
        self.assert_trains_nothing(self.path("toycnn.pt"), "does not fit the model",
                                   "'sa1.mlp0.0.weight'")
        wider = PointNet2Cls("ssg-lite", CLASSES).state_dict()
        wider["sa2.mlp0.0.weight"] = torch.zeros(64, 70, 1, 1)
        torch.save(wider, self.path("wider.pt"))
        self.assert_trains_nothing(self.path("wider.pt"), "'sa2.mlp0.0.weight'", "[64, 70, 1, 1]")

    def test_partial_weights_for_another_head(self):
        torch.save({"epoch": 9, "model": PointNet2Cls("ssg-lite", 40).state_dict()},
                   self.path("pretrained.pth"))
        result = run([TRAIN, *small_run(self.folder, "--init-weights", self.path("pretrained.pth"),
                                        "--init-weights-entry", "model",
                                        "--init-weights-partial")])
        output = result.stdout + result.stderr
        self.assertEqual(result.returncode, 0, output)
        self.assertIn("2 of other shapes", output)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__.split("\n\n")[1])
    DTRUN, TRAIN, TO_PYTORCH = sys.argv[1:4]
    torch.ops.load_library(sys.argv[4])
    unittest.main(argv=sys.argv[:1], verbosity=2)
