"""The pointnet2_ops-style CUDA point ops (pointnet2_ops_style.cu) for
PyTorch: built once with nvcc into a shared library beside the caller's
build folder, loaded with ctypes, and wrapped as autograd functions that
run on the current CUDA stream. The GPU peer of dtrain's kernels in
pointnet2_train_torch.py.

    ops = Pointnet2OpsStyle.load("build-folder")
    idx = ops.fps(xyz, 512)                       # (B, 512) int32
"""

import ctypes
import os
import subprocess

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "pointnet2_ops_style.cu")


def build(folder):
    """The library, compiled when missing or older than its source."""
    library = os.path.join(folder, "libpointnet2_ops_style.so")
    if not os.path.exists(library) or os.path.getmtime(library) < os.path.getmtime(SOURCE):
        os.makedirs(folder, exist_ok=True)
        major, minor = torch.cuda.get_device_capability()
        arch = f"{major}{minor}"
        subprocess.run(["nvcc", "-O3", "-shared", "-Xcompiler", "-fPIC",
                        f"-gencode=arch=compute_{arch},code=sm_{arch}", "-o", library, SOURCE],
                       check=True)
    return library


def _ptr(tensor):
    return ctypes.c_void_p(tensor.data_ptr())


def _stream():
    return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


class Pointnet2OpsStyle:
    lib = None

    @classmethod
    def load(cls, folder):
        if cls.lib is None:
            cls.lib = ctypes.CDLL(build(folder))
        return cls

    @classmethod
    def _check(cls, status, what):
        if status != 0:
            raise RuntimeError(f"pointnet2_ops_style {what}: CUDA error {status}")

    @classmethod
    def fps(cls, xyz, npoint):
        xyz = xyz.float().contiguous()
        b, n, _ = xyz.shape
        temp = torch.full((b, n), 1e10, device=xyz.device)
        idx = torch.empty(b, npoint, dtype=torch.int32, device=xyz.device)
        cls._check(cls.lib.p2s_fps(b, n, npoint, _ptr(xyz), _ptr(temp), _ptr(idx), _stream()),
                   "fps")
        return idx

    @classmethod
    def ball(cls, new_xyz, xyz, radius, nsample):
        new_xyz, xyz = new_xyz.float().contiguous(), xyz.float().contiguous()
        b, m, _ = new_xyz.shape
        idx = torch.zeros(b, m, nsample, dtype=torch.int32, device=xyz.device)
        cls._check(cls.lib.p2s_ball_query(b, xyz.shape[1], m, ctypes.c_float(radius), nsample,
                                          _ptr(new_xyz), _ptr(xyz), _ptr(idx), _stream()),
                   "ball_query")
        return idx

    @classmethod
    def gather(cls, features, idx):
        return _Gather.apply(features, idx)

    @classmethod
    def group(cls, features, idx):
        b, m, nsample = idx.shape
        return _Gather.apply(features, idx.reshape(b, m * nsample)).view(
            b, features.shape[1], m, nsample)


class _Gather(torch.autograd.Function):
    """out (B, C, L) = features (B, C, N) at idx (B, L); float32, as in pointnet2_ops
    (under autocast its inputs are cast to float32)."""

    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
    def forward(ctx, features, idx):
        features, idx = features.contiguous(), idx.contiguous()
        b, c, n = features.shape
        length = idx.shape[1]
        out = torch.empty(b, c, length, device=features.device)
        Pointnet2OpsStyle._check(Pointnet2OpsStyle.lib.p2s_gather(
            b, c, n, length, _ptr(features), _ptr(idx), _ptr(out), _stream()), "gather")
        ctx.save_for_backward(idx)
        ctx.n = n
        return out

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, grad_out):
        (idx,) = ctx.saved_tensors
        grad_out = grad_out.float().contiguous()
        b, c, length = grad_out.shape
        grad = torch.zeros(b, c, ctx.n, device=grad_out.device)
        Pointnet2OpsStyle._check(Pointnet2OpsStyle.lib.p2s_gather_grad(
            b, c, ctx.n, length, _ptr(grad_out), _ptr(idx), _ptr(grad), _stream()),
            "gather backward")
        return grad, None
