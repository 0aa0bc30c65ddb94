"""dtrain::amp::GradScaler against torch.amp.GradScaler from the same wheel.

Usage: python test_grad_scaler_parity.py path/to/grad_scaler_trace

For each scenario, runs the C++ trace program (grad_scaler_trace.cpp, which
documents the problem) and replays the same gradients, injected infs/NaNs,
explicit unscale_ + clipping, skipped steps and updates with
torch.amp.GradScaler("cpu"). The scale, the growth tracker and the skipped
steps must match exactly, the parameters to float32 rounding. Exits 77 (the
SKIP_RETURN_CODE ctest is told about) when torch cannot be imported.
"""

import csv
import io
import math
import subprocess
import sys
import unittest

try:
    import torch
except ImportError as error:  # pragma: no cover - depends on the environment
    print(f"skipped: cannot import torch ({error})")
    sys.exit(77)

TRACE = None

# (init_scale, growth_interval, steps, grad_factor, poison)
SCENARIOS = {
    # torch.amp's defaults; injected overflows early, late and back to back.
    "defaults": (65536.0, 2000, 40, 1e-3, "0:inf,5:nan,6:inf,33:inf"),
    # Short interval: several growths between overflows.
    "growth": (1024.0, 3, 60, 1e-2, "4:inf,11:nan,12:nan,30:inf,47:inf"),
    # No injection: the scale grows until the scaled gradients overflow float32
    # by themselves, then oscillates at the edge.
    "natural_overflow": (2.0**120, 2, 80, 20.0, "-"),
}


def parse_poison(spec):
    poison = {}
    for item in filter(None, spec.split(",")):
        if item == "-":
            continue
        step, kind = item.split(":")
        poison[int(step)] = float("nan") if kind == "nan" else float("inf")
    return poison


def torch_trace(init_scale, growth_interval, steps, grad_factor, poison_spec):
    poison = parse_poison(poison_spec)
    p = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    q = torch.tensor([0.5, -1.5], requires_grad=True)
    optimizer = torch.optim.SGD([{"params": [p]}, {"params": [q]}], lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=growth_interval)
    base = torch.tensor([1.0, -0.5, 0.25, 2.0])
    rows = []
    for i in range(steps):
        optimizer.zero_grad()
        w = base * float(grad_factor * (i % 7 + 1))
        loss = (p * w).sum() + 0.5 * (q * q).sum()
        scaler.scale(loss).backward()
        if i in poison:
            with torch.no_grad():
                p.grad[1] = poison[i]
        if i % 3 == 2:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_([p, q], 100.0)
        before = [t.detach().clone() for t in (p, q)]
        scaler.step(optimizer)
        # torch.amp's step() returns None both for a skipped step and for
        # SGD's own return value; a step happened iff the parameters moved or
        # were meant to (every unskipped step here has a non-zero gradient).
        stepped = any(not torch.equal(b, t.detach()) for b, t in zip(before, (p, q)))
        scaler.update()
        rows.append({"step": i, "stepped": int(stepped), "scale": scaler.get_scale(),
                     "growth_tracker": scaler._get_growth_tracker(),
                     "params": torch.cat([p.detach(), q.detach()]).tolist()})
    return rows


def cpp_trace(init_scale, growth_interval, steps, grad_factor, poison_spec):
    out = subprocess.run([TRACE, repr(init_scale), str(growth_interval), str(steps),
                          repr(grad_factor), poison_spec],
                         check=True, capture_output=True, text=True).stdout
    rows = []
    for row in csv.DictReader(io.StringIO(out)):
        rows.append({"step": int(row["step"]), "stepped": int(row["stepped"]),
                     "scale": float(row["scale"]), "growth_tracker": int(row["growth_tracker"]),
                     "params": [float(row[k]) for k in ("p0", "p1", "p2", "p3", "q0", "q1")]})
    return rows


class GradScalerParity(unittest.TestCase):
    def check(self, name):
        args = SCENARIOS[name]
        ours, theirs = cpp_trace(*args), torch_trace(*args)
        self.assertEqual(len(ours), args[2])
        self.assertEqual(len(ours), len(theirs))
        for a, b in zip(ours, theirs):
            where = f"{name}, step {a['step']}"
            self.assertEqual(a["stepped"], b["stepped"], f"{where}: skipped steps differ")
            self.assertEqual(a["scale"], b["scale"], f"{where}: scales differ")
            self.assertEqual(a["growth_tracker"], b["growth_tracker"], where)
            for x, y in zip(a["params"], b["params"]):
                self.assertTrue(math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-7),
                                f"{where}: params {a['params']} vs {b['params']}")
        skipped = [r["step"] for r in ours if not r["stepped"]]
        return skipped, [r["scale"] for r in ours]

    def test_defaults(self):
        skipped, scales = self.check("defaults")
        self.assertEqual(skipped, [0, 5, 6, 33])
        self.assertEqual(scales[-1], 65536.0 / 16)

    def test_growth(self):
        skipped, scales = self.check("growth")
        self.assertEqual(skipped, [4, 11, 12, 30, 47])
        self.assertGreater(max(scales), 1024.0)

    def test_natural_overflow(self):
        skipped, _ = self.check("natural_overflow")
        self.assertGreater(len(skipped), 3, "the scenario never overflowed")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: test_grad_scaler_parity.py path/to/grad_scaler_trace")
        sys.exit(2)
    TRACE = sys.argv.pop(1)
    unittest.main(verbosity=2)
