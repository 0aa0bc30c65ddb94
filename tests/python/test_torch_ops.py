"""The PointNet++ kernels as torch custom ops, from Python.

Usage: python test_torch_ops.py path/to/libdtrain_kernels.so

Loads the library with torch.ops.load_library, calls every
torch.ops.dtrain.* op on CPU against a pure-PyTorch reference, and checks
the backward passes with torch.autograd.gradcheck (float64); with a GPU,
TorchOpsCuda calls them on CUDA tensors against the CPU (`... TorchOpsCuda`
runs that class alone). Exits 77 (the SKIP_RETURN_CODE ctest is told
about) when torch cannot be imported.
"""

import sys
import unittest

try:
    import torch
except ImportError as error:  # pragma: no cover - depends on the environment
    print(f"skipped: cannot import torch ({error})")
    sys.exit(77)

LIBRARY = None


def squared_distances(query, points):
    """(B, M, N) float32 squared distances, point minus query, x + y then + z."""
    diff = points[:, None, :, :] - query[:, :, None, :]
    sq = diff * diff
    return (sq[..., 0] + sq[..., 1]) + sq[..., 2]


def fps_reference(xyz, npoint, start=0):
    xyz = xyz.float()
    batch, n, _ = xyz.shape
    out = torch.empty(batch, npoint, dtype=torch.long)
    for b in range(batch):
        dist = torch.full((n,), float("inf"))
        sel = start
        out[b, 0] = sel
        dist[sel] = -1
        for i in range(1, npoint):
            d = squared_distances(xyz[b : b + 1, sel : sel + 1], xyz[b : b + 1])[0, 0]
            dist = torch.where(dist < 0, dist, torch.minimum(dist, d))
            sel = int(torch.argmax(dist))  # first maximum
            out[b, i] = sel
            dist[sel] = -1
    return out


class TorchOps(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)

    def test_ops_are_registered(self):
        for name in ["furthest_point_sample", "gather_points", "ball_query", "knn",
                     "group_points", "three_nn", "three_interpolate", "batch_norm_relu",
                     "neighbour_max"]:
            self.assertTrue(hasattr(torch.ops.dtrain, name), name)

    def test_autocast(self):
        # Note [The PointNet++ ops under autocast]: a kernel on both autocast
        # keys; coordinate ops in float32, feature ops in their features' dtype.
        for name in ["furthest_point_sample", "ball_query", "knn", "three_nn", "gather_points",
                     "group_points", "three_interpolate", "batch_norm_relu", "neighbour_max"]:
            for key in ["AutocastCPU", "AutocastCUDA"]:
                self.assertTrue(
                    torch._C._dispatch_has_kernel_for_dispatch_key("dtrain::" + name, key),
                    (name, key))
        xyz = torch.rand(2, 50, 3)
        features = torch.randn(2, 6, 50)
        tidx = torch.randint(0, 50, (2, 9, 3))
        weight = torch.rand(2, 9, 3)
        fps32 = torch.ops.dtrain.furthest_point_sample(xyz, 12)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            low = torch.nn.functional.linear(features.transpose(1, 2), torch.eye(6))
            self.assertEqual(low.dtype, torch.bfloat16)
            self.assertTrue(torch.equal(torch.ops.dtrain.furthest_point_sample(xyz, 12), fps32))
            dist, idx = torch.ops.dtrain.three_nn(xyz.to(torch.bfloat16), xyz.to(torch.bfloat16))
            self.assertEqual(dist.dtype, torch.float32)
            got = torch.ops.dtrain.three_interpolate(low.transpose(1, 2), tidx, weight)
        self.assertEqual(got.dtype, torch.bfloat16)
        expected = torch.ops.dtrain.three_interpolate(low.transpose(1, 2).contiguous(), tidx, weight)
        self.assertTrue(torch.equal(got, expected))
        ref_dist, ref_idx = torch.ops.dtrain.three_nn(xyz.to(torch.bfloat16).float(),
                                                      xyz.to(torch.bfloat16).float())
        self.assertTrue(torch.equal(idx, ref_idx))
        self.assertTrue(torch.equal(dist, ref_dist))

    def test_furthest_point_sample(self):
        xyz = torch.rand(2, 100, 3)
        got = torch.ops.dtrain.furthest_point_sample(xyz, 30)
        self.assertEqual(got.dtype, torch.long)
        self.assertTrue(torch.equal(got, fps_reference(xyz, 30)))
        got = torch.ops.dtrain.furthest_point_sample(xyz, 30, 5)
        self.assertTrue(torch.equal(got, fps_reference(xyz, 30, 5)))

    def test_ball_query(self):
        xyz = torch.rand(2, 200, 3)
        new_xyz = torch.rand(2, 20, 3)
        idx, count = torch.ops.dtrain.ball_query(new_xyz, xyz, 0.3, 8)
        d2 = squared_distances(new_xyz, xyz)
        r2 = torch.tensor(0.3, dtype=torch.float32) ** 2
        for b in range(2):
            for i in range(20):
                hits = torch.nonzero(d2[b, i] < r2).flatten()[:8]
                self.assertEqual(int(count[b, i]), len(hits))
                expected = torch.zeros(8, dtype=torch.long)
                if len(hits) > 0:
                    expected[:] = hits[0]
                    expected[: len(hits)] = hits
                self.assertTrue(torch.equal(idx[b, i], expected))

    def test_knn_and_three_nn(self):
        xyz = torch.rand(2, 100, 3)
        new_xyz = torch.rand(2, 10, 3)
        idx, dist2 = torch.ops.dtrain.knn(new_xyz, xyz, 5)
        d2 = squared_distances(new_xyz, xyz)
        ref_dist, ref_idx = torch.sort(d2, dim=-1, stable=True)
        self.assertTrue(torch.equal(idx, ref_idx[..., :5]))
        self.assertTrue(torch.equal(dist2, ref_dist[..., :5]))
        dist3, idx3 = torch.ops.dtrain.three_nn(new_xyz, xyz)
        self.assertTrue(torch.equal(idx3, ref_idx[..., :3]))
        self.assertTrue(torch.equal(dist3, ref_dist[..., :3]))

    def test_gather_group_interpolate_forward(self):
        features = torch.randn(2, 4, 30)
        idx = torch.randint(0, 30, (2, 7))
        expected = torch.gather(features, 2, idx[:, None, :].expand(-1, 4, -1))
        self.assertTrue(torch.equal(torch.ops.dtrain.gather_points(features, idx), expected))
        gidx = torch.randint(0, 30, (2, 5, 3))
        grouped = torch.ops.dtrain.group_points(features, gidx)
        expected = torch.gather(features, 2, gidx.view(2, 1, 15).expand(-1, 4, -1)).view(2, 4, 5, 3)
        self.assertTrue(torch.equal(grouped, expected))
        tidx = torch.randint(0, 30, (2, 9, 3))
        weight = torch.rand(2, 9, 3)
        got = torch.ops.dtrain.three_interpolate(features, tidx, weight)
        picked = torch.gather(features, 2, tidx.view(2, 1, 27).expand(-1, 4, -1)).view(2, 4, 9, 3)
        expected = (picked * weight[:, None]).sum(-1)
        torch.testing.assert_close(got, expected)

    def test_gradcheck(self):
        features = torch.randn(2, 3, 8, dtype=torch.float64, requires_grad=True)
        idx = torch.randint(0, 8, (2, 6))
        gidx = torch.randint(0, 8, (2, 4, 3))
        tidx = torch.randint(0, 8, (2, 5, 3))
        weight = torch.rand(2, 5, 3, dtype=torch.float64, requires_grad=True)
        self.assertTrue(torch.autograd.gradcheck(
            lambda f: torch.ops.dtrain.gather_points(f, idx), (features,)))
        self.assertTrue(torch.autograd.gradcheck(
            lambda f: torch.ops.dtrain.group_points(f, gidx), (features,)))
        self.assertTrue(torch.autograd.gradcheck(
            lambda f, w: torch.ops.dtrain.three_interpolate(f, tidx, w), (features, weight)))

    def test_batch_norm_relu(self):
        x = (torch.randn(4, 6, 5, 3) * 2 + 1).contiguous(memory_format=torch.channels_last)
        weight, bias = torch.rand(6) + 0.5, torch.rand(6) - 0.5
        running = [torch.zeros(6), torch.ones(6)]
        expected_running = [t.clone() for t in running]
        got = torch.ops.dtrain.batch_norm_relu(x, weight, bias, *running, 0.1, 1e-5)
        expected = torch.relu(torch.nn.functional.batch_norm(
            x, *expected_running, weight, bias, training=True, momentum=0.1, eps=1e-5))
        torch.testing.assert_close(got, expected)
        self.assertTrue(got.is_contiguous(memory_format=torch.channels_last))
        # The running statistics are updated in place, as batch_norm updates its own.
        torch.testing.assert_close(running[0], expected_running[0])
        torch.testing.assert_close(running[1], expected_running[1])
        x64 = torch.randn(3, 4, 2, 5, dtype=torch.float64).contiguous(
            memory_format=torch.channels_last).requires_grad_()
        w64 = (torch.rand(4, dtype=torch.float64) + 0.5).requires_grad_()
        b64 = (torch.rand(4, dtype=torch.float64) - 0.5).requires_grad_()
        self.assertTrue(torch.autograd.gradcheck(
            lambda a, w, b: torch.ops.dtrain.batch_norm_relu(a, w, b, None, None, 0.1, 1e-5),
            (x64, w64, b64)))
        # Under torch.autocast("cpu"): bfloat16 activations, float32 parameters.
        x16 = x.to(torch.bfloat16)
        got16 = torch.ops.dtrain.batch_norm_relu(x16, weight, bias, None, None, 0.1, 1e-5)
        expected16 = torch.relu(torch.nn.functional.batch_norm(
            x16, None, None, weight, bias, training=True, momentum=0.1, eps=1e-5))
        self.assertEqual(got16.dtype, torch.bfloat16)
        torch.testing.assert_close(got16, expected16)
        with self.assertRaisesRegex(RuntimeError, r"channels \(dim 1\) innermost"):
            torch.ops.dtrain.batch_norm_relu(torch.randn(2, 6, 3, 3), weight, bias, None, None,
                                             0.1, 1e-5)

    def test_neighbour_max(self):
        grouped = torch.randn(2, 5, 7, 4).contiguous(memory_format=torch.channels_last)
        got = torch.ops.dtrain.neighbour_max(grouped)
        self.assertTrue(torch.equal(got, grouped.max(3)[0]))
        self.assertTrue(got.transpose(1, 2).is_contiguous())
        bf16 = grouped.to(torch.bfloat16)
        self.assertTrue(torch.equal(torch.ops.dtrain.neighbour_max(bf16), bf16.max(3)[0]))
        g64 = torch.randn(2, 3, 4, 5, dtype=torch.float64).contiguous(
            memory_format=torch.channels_last).requires_grad_()
        self.assertTrue(torch.autograd.gradcheck(torch.ops.dtrain.neighbour_max, (g64,)))

    def test_bad_input_raises_runtime_error(self):
        with self.assertRaisesRegex(RuntimeError, r"npoint must be in \[1, N\] = \[1, 10\], got 11"):
            torch.ops.dtrain.furthest_point_sample(torch.rand(1, 10, 3), 11)
        with self.assertRaisesRegex(RuntimeError, "radius must be a finite value > 0"):
            torch.ops.dtrain.ball_query(torch.rand(1, 2, 3), torch.rand(1, 10, 3), 0.0, 4)


class TorchOpsCuda(unittest.TestCase):
    """The ops on CUDA tensors from Python, as pointnet2_ops users call
    them: indices equal to the CPU's, features and gradients within
    tolerance, autocast keeping coordinates in float32. Skipped without a
    GPU (tests/gpu/run_gpu_checks.sh runs it on one)."""

    def setUp(self):
        if not torch.cuda.is_available():
            self.skipTest("no CUDA device visible")
        torch.manual_seed(1)

    def assert_same(self, got, expected, what):
        self.assertTrue(got.is_cuda, what)
        self.assertTrue(torch.equal(got.cpu(), expected), what)

    def test_coordinate_ops_agree_with_the_cpu(self):
        ops = torch.ops.dtrain
        for n in (100, 3000, 20000):  # the register kernel, then the chunk kernel
            xyz = torch.rand(3, n, 3)
            self.assert_same(ops.furthest_point_sample(xyz.cuda(), 64, 7),
                             ops.furthest_point_sample(xyz, 64, 7), f"FPS n={n}")
        xyz = torch.rand(2, 500, 3)
        centres = torch.rand(2, 40, 3)
        for got, expected, what in zip(ops.ball_query(centres.cuda(), xyz.cuda(), 0.2, 16),
                                       ops.ball_query(centres, xyz, 0.2, 16),
                                       ("ball_query idx", "ball_query count")):
            self.assert_same(got, expected, what)
        for got, expected, what in zip(ops.knn(centres.cuda(), xyz.cuda(), 10),
                                       ops.knn(centres, xyz, 10), ("knn idx", "knn dist2")):
            self.assert_same(got, expected, what)
        for got, expected, what in zip(ops.three_nn(xyz.cuda(), centres.cuda()),
                                       ops.three_nn(xyz, centres),
                                       ("three_nn dist2", "three_nn idx")):
            self.assert_same(got, expected, what)

    def test_feature_ops_and_their_gradients_agree_with_the_cpu(self):
        ops = torch.ops.dtrain
        idx = torch.randint(0, 60, (2, 20))
        gidx = torch.randint(0, 60, (2, 20, 8))
        tidx = torch.randint(0, 20, (2, 60, 3))
        weight = torch.rand(2, 60, 3)
        weight = weight / weight.sum(-1, keepdim=True)
        for dtype, tolerance in ((torch.float32, 1e-6), (torch.float16, 1e-2),
                                 (torch.bfloat16, 2e-2)):
            features = torch.randn(2, 5, 60).to(dtype)
            coarse = torch.randn(2, 5, 20).to(dtype)
            calls = {
                "gather_points": (lambda t: ops.gather_points(t, idx.to(t.device)), features),
                "group_points": (lambda t: ops.group_points(t, gidx.to(t.device)), features),
                "three_interpolate": (
                    lambda t: ops.three_interpolate(t, tidx.to(t.device), weight.to(t.device)),
                    coarse),
            }
            for name, (call, source) in calls.items():
                what = f"{name} {dtype}"
                cpu_in = source.clone().requires_grad_()
                gpu_in = source.cuda().requires_grad_()
                cpu_out = call(cpu_in)
                gpu_out = call(gpu_in)
                self.assertEqual(gpu_out.dtype, dtype, what)
                torch.testing.assert_close(gpu_out.cpu().float(), cpu_out.float(),
                                           atol=tolerance, rtol=tolerance, msg=what)
                grad = torch.randn(cpu_out.shape).to(dtype)
                cpu_out.backward(grad)
                gpu_out.backward(grad.cuda())
                torch.testing.assert_close(gpu_in.grad.cpu().float(), cpu_in.grad.float(),
                                           atol=4 * tolerance, rtol=4 * tolerance, msg=what)

    def test_autocast_keeps_coordinates_in_float32(self):
        ops = torch.ops.dtrain
        xyz = torch.rand(2, 300, 3)
        expected = ops.furthest_point_sample(xyz, 50)
        with torch.autocast("cuda", dtype=torch.float16):
            got = ops.furthest_point_sample(xyz.cuda(), 50)
            dist2, _ = ops.three_nn(xyz.cuda(), xyz[:, :30].cuda())
        self.assert_same(got, expected, "FPS under CUDA autocast")
        self.assertEqual(dist2.dtype, torch.float32)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: test_torch_ops.py path/to/libdtrain_kernels.so")
        sys.exit(2)
    LIBRARY = sys.argv.pop(1)
    torch.ops.load_library(LIBRARY)
    unittest.main(verbosity=2)
