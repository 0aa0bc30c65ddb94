"""State dicts both ways between dtrain's models and their PyTorch twins.

Usage: python test_state_dicts.py path/to/state_dict_probe path/to/libdtrain_kernels.so

For each model the apps train (PointNet++ ssg, msg, ssg-lite, part
segmentation, the toy CNN), state_dict_probe.cpp runs the C++ model:
- dtrain -> PyTorch: the probe saves random weights with
  dtrain::train::save_state_dict; torch.load (weights_only, its default)
  reads them, the twin (models/torch_twins) takes them with a strict
  load_state_dict, and gives the C++ model's outputs on the same input;
- PyTorch -> dtrain: torch.save(twin.state_dict()) is loaded by the probe
  with dtrain::train::load_state_dict, and the C++ model gives the twin's
  outputs.
Names are the same on both sides: the table that maps them is the
identity, and the test checks it is. Bad files end in one line naming the
file and the key. Exits 77 when torch cannot be imported.
"""

import collections
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
from torch_twins.pointnet2 import PointNet2Cls, PointNet2PartSeg  # noqa: E402
from torch_twins.toy_cnn import ToyCnn  # noqa: E402

PROBE = None
TOLERANCE = 1e-5  # fp32 outputs, absolute

# name -> (the twin, the input's tensors)
MODELS = {
    "ssg": (lambda: PointNet2Cls("ssg", 10), lambda: {"input": cloud(2, 1024)}),
    "msg": (lambda: PointNet2Cls("msg", 10), lambda: {"input": cloud(2, 1024)}),
    "ssg-lite": (lambda: PointNet2Cls("ssg-lite", 10), lambda: {"input": cloud(3, 512)}),
    "partseg-ssg": (lambda: PointNet2PartSeg("ssg", 6, 3),
                    lambda: {"input": cloud(2, 1024), "categories": torch.tensor([2, 0])}),
    "partseg-ssg-lite": (lambda: PointNet2PartSeg("ssg-lite", 6, 3),
                         lambda: {"input": cloud(2, 512), "categories": torch.tensor([1, 2])}),
    "toycnn": (lambda: ToyCnn(3, 10), lambda: {"input": torch.randn(4, 3, 32, 32)}),
}


def cloud(batch, points):
    return torch.rand(batch, points, 3) * 2 - 1


def run_probe(*args):
    return subprocess.run([PROBE, *args], capture_output=True, text=True, timeout=120)


def randomize_statistics(model):
    for name, buffer in model.named_buffers():
        if name.endswith("running_mean"):
            buffer.normal_(0, 0.2)
        elif name.endswith("running_var"):
            buffer.uniform_(0.5, 1.5)
        elif name.endswith("num_batches_tracked"):
            buffer.fill_(3)


class StateDicts(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        torch.manual_seed(0)

    def tearDown(self):
        self.folder.cleanup()

    def path(self, name):
        return os.path.join(self.folder.name, name)

    def twin_output(self, twin, inputs):
        twin.eval()
        with torch.no_grad():
            if "categories" in inputs:
                return twin(inputs["input"], inputs["categories"])
            return twin(inputs["input"])

    def assert_close(self, ours, theirs, what):
        self.assertEqual(ours.shape, theirs.shape, what)
        difference = (ours - theirs).abs().max().item()
        self.assertLessEqual(difference, TOLERANCE, f"{what}: max |difference| {difference}")

    def test_dtrain_to_pytorch(self):
        for name, (make_twin, make_input) in MODELS.items():
            with self.subTest(model=name):
                inputs = make_input()
                torch.save(inputs, self.path("input.pt"))
                result = run_probe(name, "--save", self.path("w.pt"), self.path("input.pt"),
                                   self.path("out.pt"))
                self.assertEqual(result.returncode, 0, result.stderr)
                weights = torch.load(self.path("w.pt"))  # weights_only: PyTorch's default
                twin = make_twin()
                # The name table is the identity: the same names, in the same order.
                self.assertEqual(list(weights.keys()), list(twin.state_dict().keys()))
                twin.load_state_dict(weights)  # strict
                self.assertTrue(all(torch.equal(weights[k], v)
                                    for k, v in twin.state_dict().items()))
                self.assert_close(torch.load(self.path("out.pt"))["output"],
                                  self.twin_output(twin, inputs), name)

    def test_pytorch_to_dtrain(self):
        for name, (make_twin, make_input) in MODELS.items():
            with self.subTest(model=name):
                inputs = make_input()
                torch.save(inputs, self.path("input.pt"))
                twin = make_twin()
                randomize_statistics(twin)
                torch.save(twin.state_dict(), self.path("w.pt"))  # an OrderedDict with _metadata
                result = run_probe(name, "--load", self.path("w.pt"), self.path("input.pt"),
                                   self.path("out.pt"))
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assert_close(torch.load(self.path("out.pt"))["output"],
                                  self.twin_output(twin, inputs), name)

    def load_into_ssg_lite(self, weights_file, *entry):
        torch.save({"input": cloud(2, 512)}, self.path("input.pt"))
        return run_probe("ssg-lite", "--load", weights_file, self.path("input.pt"),
                         self.path("out.pt"), *entry)

    def test_what_python_users_save(self):
        twin = PointNet2Cls("ssg-lite", 10)
        randomize_statistics(twin)
        expected = self.twin_output(twin, {"input": torch.zeros(1, 512, 3)})
        state = twin.state_dict()
        # A newer pickle protocol; a checkpoint dict with the model under a
        # key; a DDP model's names; parameters rather than tensors.
        cases = {
            "protocol4": (lambda p: torch.save(state, p, pickle_protocol=4), ()),
            "entry": (lambda p: torch.save({"epoch": 3, "model": state, "best": 0.9}, p),
                      ("model",)),
            "ddp": (lambda p: torch.save(
                collections.OrderedDict(("module." + k, v) for k, v in state.items()), p), ()),
            "parameters": (lambda p: torch.save(dict(twin.named_parameters()) | dict(
                twin.named_buffers()), p), ()),
        }
        for case, (save, entry) in cases.items():
            with self.subTest(case=case):
                save(self.path(case + ".pt"))
                torch.save({"input": torch.zeros(1, 512, 3)}, self.path("input.pt"))
                result = run_probe("ssg-lite", "--load", self.path(case + ".pt"),
                                   self.path("input.pt"), self.path("out.pt"), *entry)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assert_close(torch.load(self.path("out.pt"))["output"], expected, case)

    def assert_one_line_error(self, result, *words):
        self.assertEqual(result.returncode, 1, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        for word in words:
            self.assertIn(word, lines[0])

    def test_bad_files_are_named_in_one_line(self):
        twin = PointNet2Cls("ssg-lite", 10)
        good = self.path("good.pt")
        torch.save(twin.state_dict(), good)
        with open(good, "rb") as f:
            data = f.read()
        cut = self.path("cut.pt")
        with open(cut, "wb") as f:
            f.write(data[: len(data) // 2])
        self.assert_one_line_error(self.load_into_ssg_lite(cut), cut, "cannot read state dict")

        other = self.path("toycnn.pt")
        torch.save(ToyCnn(3, 10).state_dict(), other)
        self.assert_one_line_error(self.load_into_ssg_lite(other), other, "does not fit the model",
                                   "'sa1.mlp0.0.weight'")

        wrong = twin.state_dict()
        wrong["head.8.weight"] = torch.zeros(40, 128)
        wrong["head.8.bias"] = torch.zeros(40)
        torch.save(wrong, self.path("wrong.pt"))
        self.assert_one_line_error(self.load_into_ssg_lite(self.path("wrong.pt")), "wrong.pt",
                                   "'head.8.weight'", "[40, 128]", "[10, 128]")

        torch.save({"epoch": 3, "state_dict": twin.state_dict()}, self.path("nested.pt"))
        self.assert_one_line_error(self.load_into_ssg_lite(self.path("nested.pt")), "nested.pt",
                                   "epoch, state_dict")

        torch.save({"model": twin}, self.path("pickled_module.pt"))  # a whole module: code
        self.assert_one_line_error(self.load_into_ssg_lite(self.path("pickled_module.pt")),
                                   "pickled_module.pt", "Python object")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: test_state_dicts.py path/to/state_dict_probe path/to/libdtrain_kernels.so")
    PROBE = sys.argv[1]
    torch.ops.load_library(sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
